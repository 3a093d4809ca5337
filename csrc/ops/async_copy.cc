// cp.async copies from global to shared memory, their commit groups and waits.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
void emit_copy_async(CudaEmitter& e, const Instruction& i) { e.emit_copy_async(i); }

void emit_wait_group(CudaEmitter& e, const Instruction& i) {
  e.line("tilus::cp_async_wait_group<" + std::to_string(i.int_attr) + ">();");
  e.fence_for_wgmma();
}

void emit_wait_all(CudaEmitter& e, const Instruction& i) {
  e.line("tilus::cp_async_wait_all();" + (i.text.empty() ? "" : "  // " + i.text));
  e.fence_for_wgmma();
}
}  // namespace

const OpHandler kCopyAsync = {nullptr, nullptr, interp::exec_copy_async, emit_copy_async};
const OpHandler kCopyAsyncCommitGroup = {
    nullptr, nullptr, interp::exec_copy_async_commit_group,
    [](CudaEmitter& e, const Instruction&) { e.line("tilus::cp_async_commit_group();"); }};
const OpHandler kCopyAsyncWaitGroup = {nullptr, nullptr, interp::exec_copy_async_wait_group,
                                       emit_wait_group};
// Written by a script, or placed after a free_shared by transforms/copy_waits.cc.
const OpHandler kCopyAsyncWaitAll = {nullptr, nullptr, interp::exec_copy_async_wait_all,
                                     emit_wait_all};

}  // namespace tilus::ops
