// Shared memory: loads, stores, freeing, the block barrier.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
// Whether a shared operand is still allocated is the builder's (IRBuilder::tile_op).
OutputType load_check(Instruction& i) {
  expect_inputs(i, 1);
  require_shared(i.inputs[0], "load_shared");
  return {i.inputs[0]->dtype, i.inputs[0]->shape};
}

OutputType store_check(Instruction& i) {
  expect_inputs(i, 2);
  const Tensor &shared = i.inputs[0], &value = i.inputs[1];
  require_shared(shared, "store_shared");
  require_register(value, "store_shared", "the value");
  TILUS_CHECK(value->shape == shared->shape, "ValueError", "store_shared: the value has shape ",
              shape_str(value->shape), " but shared tensor ", shared->name, " has shape ", shape_str(shared->shape));
  TILUS_CHECK(value->dtype == shared->dtype, "TypeError", "store_shared: cannot store a ", value->dtype.name(),
              " tile into shared tensor ", shared->name, " of ", shared->dtype.name(), "; cast it first");
  return {};
}

// Not a view, and marked freed: the builder's (IRBuilder::tile_op, eff::EndsShared).
OutputType free_check(Instruction& i) {
  expect_inputs(i, 1);
  require_shared(i.inputs[0], "free_shared");
  return {};
}

OutputType sync_check(Instruction& i) {
  expect_inputs(i, 0);
  return {};
}

void emit_free_shared(CudaEmitter& e, const Instruction& i) {
  auto it = e.smem_offset_.find(i.inputs[0]->id);
  if (it != e.smem_offset_.end()) e.smem_.release(it->second);
  e.line("// free_shared(" + i.inputs[0]->name + ")");
  // Copies that may still land in the freed memory were waited for by the wait that
  // transforms/copy_waits.cc placed right after this instruction.
}

void load_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.scope(i, i.inputs[0], Scope::Shared, "the source");
  c.scope(i, i.output, Scope::Register, "the output");
  c.same_shape(i, i.inputs[0], i.output);
  c.same_dtype(i, i.inputs[0], i.output);
}
void store_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 2, 0, 0);
  c.no_output(i);
  c.scope(i, i.inputs[0], Scope::Shared, "the destination");
  c.scope(i, i.inputs[1], Scope::Register, "the value");
  c.same_shape(i, i.inputs[0], i.inputs[1]);
  c.same_dtype(i, i.inputs[0], i.inputs[1]);
}
void free_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.no_output(i);
  c.scope(i, i.inputs[0], Scope::Shared, "the freed tensor");
  if (c.root_of(i.inputs[0]) != i.inputs[0]->id)
    c.fail(op_name(i.op), ": ", i.inputs[0]->name, " is a slice; only an allocation can be freed");
}
void no_operands_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.no_output(i);
}

// A store into a view a running wgmma dot may read: compared by leading indices.
WgmmaHazard store_hazard(const Instruction&, const LayoutPlan&, int) { return {WgmmaHazard::WritesTile, 0, nullptr}; }
// After the barrier other warpgroups may write what this one's dot reads, and their
// waits do not cover it.
WgmmaHazard sync_hazard(const Instruction&, const LayoutPlan&, int warps) {
  if (warps > 4) return {WgmmaHazard::Waits, -1, "other warpgroups may write its tiles after the barrier"};
  return {};
}
}  // namespace

const OpHandler kLoadShared = {
    load_check, nullptr, interp::exec_load_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_load_shared(i); }, nullptr, load_verify};
const OpHandler kStoreShared = {
    store_check, nullptr, interp::exec_store_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_store_shared(i); }, nullptr, store_verify, store_hazard};
const OpHandler kFreeShared = {free_check, nullptr, interp::exec_free_shared, emit_free_shared,
                               nullptr, free_verify};
const OpHandler kSync = {sync_check, nullptr, interp::exec_sync,
                         [](CudaEmitter& e, const Instruction&) { e.line(e.block_sync()); },
                         nullptr, no_operands_verify, sync_hazard};

}  // namespace tilus::ops
