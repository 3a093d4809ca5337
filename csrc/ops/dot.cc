// dot: c + a @ b, and the wgmma commit/wait instructions of an asynchronous dot. Its planning (wgmma, mma.sync or SIMT, and the operand layouts each
// needs) is layout inference's dot planner (transforms/layout_inference.cc), its
// emission codegen/emit_dot.cc and emit_wgmma.cc; this file registers them.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
void dot_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc) {
  rules.same(inst.inputs[2], inst.output);  // the accumulator
  rules.anchor(inst, loc);
}
}  // namespace

const OpHandler kDot = {
    nullptr, dot_layout,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_dot(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_dot(i); }};

// The wgmma protocol around an asynchronous dot, placed by transforms/async_waits.cc. In
// the interpreter a dot completes inside exec_dot: there is nothing to commit or wait for.
const OpHandler kWgmmaCommitGroup = {
    nullptr, nullptr, [](interp::BlockState&, const StmtNode&, const Instruction&) {},
    [](CudaEmitter& e, const Instruction&) { e.line("tilus::wgmma_commit_group();"); }};

const OpHandler kWgmmaWaitGroup = {
    nullptr, nullptr, [](interp::BlockState&, const StmtNode&, const Instruction&) {},
    [](CudaEmitter& e, const Instruction& i) { e.emit_wgmma_wait(i); }};

}  // namespace tilus::ops
