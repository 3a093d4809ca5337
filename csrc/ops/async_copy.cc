// cp.async copies from global to shared memory, their commit groups and waits.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
// The destination's allocation being live is the builder's (IRBuilder::copy_async).
OutputType copy_check(Instruction& i) {
  expect_inputs(i, 2);
  const Tensor &src = i.inputs[0], &dst = i.inputs[1];
  require_shared(dst, "copy_async (dst)");
  check_tile_window(src, i.args, dst->shape, i.dims, "copy_async");
  TILUS_CHECK(src->dtype == dst->dtype, "TypeError", "copy_async: src is ", src->dtype.name(), " but dst is ",
              dst->dtype.name());
  const int64_t row_bits = dst->shape.back() * dst->dtype.bits();
  TILUS_CHECK(dst->dtype.bits() <= 128 && row_bits >= 32, "ValueError",
              "copy_async: the innermost dimension of dst must span at least 4 bytes (32 bits), got ", row_bits,
              " bits");
  return {};
}

OutputType group_check(Instruction& i) {
  expect_inputs(i, 0);
  return {};
}

OutputType wait_group_check(Instruction& i) {
  expect_inputs(i, 0);
  TILUS_CHECK(i.int_attr >= 0, "ValueError", "copy_async_wait_group: n must be >= 0, got ", i.int_attr);
  return {};
}

void emit_copy_async(CudaEmitter& e, const Instruction& i) { e.emit_copy_async(i); }

void emit_wait_group(CudaEmitter& e, const Instruction& i) {
  e.line("tilus::cp_async_wait_group<" + std::to_string(i.int_attr) + ">();");
  e.fence_for_wgmma();
}

void emit_wait_all(CudaEmitter& e, const Instruction& i) {
  e.line("tilus::cp_async_wait_all();" + (i.text.empty() ? "" : "  // " + i.text));
  e.fence_for_wgmma();
}

using inst_text::call;
using inst_text::ref;

std::string copy_print(const Instruction& i) {
  return call(i, "src=" + ref(i.inputs[0]) + ", dst=" + ref(i.inputs[1]) + ", offsets=" + inst_text::exprs(i.args) +
                     inst_text::dims_attr(i, i.inputs[0]->rank(), i.inputs[1]->shape.size()));
}
std::string wait_group_print(const Instruction& i) { return call(i, "n=" + std::to_string(i.int_attr)); }
std::string wait_all_print(const Instruction& i) { return call(i, "") + (i.text.empty() ? "" : "   # " + i.text); }

void copy_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 2, 0, i.args.size());
  c.no_output(i);
  c.scope(i, i.inputs[0], Scope::Global, "the source");
  c.scope(i, i.inputs[1], Scope::Shared, "the destination");
  c.window(i, i.inputs[0], i.inputs[1]->shape);
  c.same_dtype(i, i.inputs[0], i.inputs[1]);
}
void no_operands_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.no_output(i);
}
void wait_group_verify(OperandCheck& c, const Instruction& i) {
  no_operands_verify(c, i);
  if (i.int_attr < 0) c.fail(op_name(i.op), ": ", i.int_attr, " groups (must be >= 0)");
}

// Its destination view, compared with a running wgmma dot's tiles by leading indices.
WgmmaHazard copy_hazard(const Instruction&, const LayoutPlan&, int) { return {WgmmaHazard::WritesTile, 1, nullptr}; }
}  // namespace

const OpHandler kCopyAsync = {copy_check, nullptr, interp::exec_copy_async, emit_copy_async,
                              copy_print, copy_verify, copy_hazard};
const OpHandler kCopyAsyncCommitGroup = {
    group_check, nullptr, interp::exec_copy_async_commit_group,
    [](CudaEmitter& e, const Instruction&) { e.line("tilus::cp_async_commit_group();"); }, nullptr,
    no_operands_verify};
const OpHandler kCopyAsyncWaitGroup = {wait_group_check, nullptr, interp::exec_copy_async_wait_group,
                                       emit_wait_group, wait_group_print, wait_group_verify};
// Written by a script, or placed after a free_shared by transforms/copy_waits.cc.
const OpHandler kCopyAsyncWaitAll = {group_check, nullptr, interp::exec_copy_async_wait_all,
                                     emit_wait_all, wait_all_print, no_operands_verify};

}  // namespace tilus::ops
