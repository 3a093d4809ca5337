// Views and allocations: global views and workspaces, shared and register tensors,
// shared slices.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"
#include "transforms/layout_inference.h"

namespace tilus::ops {

namespace {
void shared_tensor_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  rules.plan().shared[inst.output->id] = auto_shared_layout(inst.output->shape, inst.output->dtype.bits());
}

// A view's layout is its allocation's: record the allocation (root) it slices.
void slice_shared_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  LayoutPlan& plan = rules.plan();
  auto it = plan.shared_root.find(inst.inputs[0]->id);
  plan.shared_root[inst.output->id] = it == plan.shared_root.end() ? inst.inputs[0]->id : it->second;
}
}  // namespace

const OpHandler kGlobalView = {
    nullptr, nullptr, interp::exec_global_view,
    [](CudaEmitter& e, const Instruction& i) { e.emit_global_view(i); }};
const OpHandler kGlobalTensor = {
    nullptr, nullptr, interp::exec_global_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_global_tensor(i); }};
const OpHandler kSharedTensor = {
    nullptr, shared_tensor_layout, interp::exec_shared_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_shared_tensor(i); }};
const OpHandler kRegisterTensor = {
    nullptr, nullptr, interp::exec_register_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_register_tensor(i); }};
const OpHandler kSliceShared = {
    nullptr, slice_shared_layout, interp::exec_slice_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_slice_shared(i); }};

}  // namespace tilus::ops
