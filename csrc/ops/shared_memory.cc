// Shared memory: loads, stores, freeing, the block barrier.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
void emit_free_shared(CudaEmitter& e, const Instruction& i) {
  auto it = e.smem_offset_.find(i.inputs[0]->id);
  if (it != e.smem_offset_.end()) e.smem_.release(it->second);
  e.line("// free_shared(" + i.inputs[0]->name + ")");
  // Copies that may still land in the freed memory were waited for by the wait that
  // transforms/copy_waits.cc placed right after this instruction.
}
}  // namespace

const OpHandler kLoadShared = {
    nullptr, nullptr, interp::exec_load_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_load_shared(i); }};
const OpHandler kStoreShared = {
    nullptr, nullptr, interp::exec_store_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_store_shared(i); }};
const OpHandler kFreeShared = {nullptr, nullptr, interp::exec_free_shared, emit_free_shared};
const OpHandler kSync = {nullptr, nullptr, interp::exec_sync,
                         [](CudaEmitter& e, const Instruction&) { e.line(e.block_sync()); }};

}  // namespace tilus::ops
