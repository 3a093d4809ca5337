// dot: c + a @ b, and the wgmma commit/wait instructions of an asynchronous dot. Its planning (wgmma, mma.sync or SIMT, and the operand layouts each
// needs) is layout inference's dot planner (transforms/layout_inference.cc), its
// emission codegen/emit_dot.cc and emit_wgmma.cc; this file registers them.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
// c + a @ b; the output is new, or out= (inst.output when the builder was given one).
OutputType dot_check(Instruction& i) {
  expect_inputs(i, 3);
  const Tensor &a = i.inputs[0], &b = i.inputs[1], &c = i.inputs[2];
  require_register(a, "dot", "a");
  require_register(b, "dot", "b");
  require_register(c, "dot", "c (the accumulator)");
  TILUS_CHECK(a->shape.size() == 2 && b->shape.size() == 2 && c->shape.size() == 2, "ValueError",
              "dot: operands must be 2-D, got a ", shape_str(a->shape), ", b ", shape_str(b->shape), ", c ",
              shape_str(c->shape));
  TILUS_CHECK(a->shape[1] == b->shape[0], "ValueError", "dot: a is ", shape_str(a->shape), " and b is ",
              shape_str(b->shape), ": the inner dimensions differ (", a->shape[1], " vs ", b->shape[0], ")");
  TILUS_CHECK(c->shape[0] == a->shape[0] && c->shape[1] == b->shape[1], "ValueError", "dot: the accumulator is ",
              shape_str(c->shape), " but a @ b is [", a->shape[0], ", ", b->shape[1], "]");
  TILUS_CHECK(a->dtype == b->dtype, "TypeError", "dot: a is ", a->dtype.name(), " but b is ", b->dtype.name(),
              "; cast one of them");
  DataType in = a->dtype, acc = c->dtype;
  bool ok = (in == dtypes::float16 && (acc == dtypes::float32 || acc == dtypes::float16)) ||
            (in == dtypes::bfloat16 && acc == dtypes::float32) || (in == dtypes::int8 && acc == dtypes::int32) ||
            (in == dtypes::float32 && acc == dtypes::float32) ||
            // tf32 operands: mma.sync m16n8k8 where the tile allows, CUDA cores otherwise
            (in == dtypes::tfloat32 && acc == dtypes::float32) || (in == dtypes::float64 && acc == dtypes::float64);
  TILUS_CHECK(ok, "TypeError", "dot: ", in.name(), " x ", in.name(), " -> ", acc.name(),
              " is not supported (supported: float16 -> float16/float32, bfloat16 -> float32, "
              "int8 -> int32, tfloat32 -> float32, float32 -> float32, float64 -> float64)");
  if (const Tensor& out = i.output) {
    require_register(out, "dot", "out");
    TILUS_CHECK(out->shape == c->shape && out->dtype == acc, "ValueError", "dot: out is ", out->type_str(),
                " but the result is ", c->type_str());
  }
  return {acc, c->shape};
}

void dot_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc) {
  rules.same(inst.inputs[2], inst.output);  // the accumulator
  rules.anchor(inst, loc);
}

std::string dot_print(const Instruction& i) {
  const DotLowering l = dot_lowering(i);
  return inst_text::call(i, inst_text::operands(i) + (l == DotLowering::WgmmaSync    ? ", wgmma=sync"
                                                      : l == DotLowering::WgmmaAsync ? ", wgmma=async"
                                                                                     : ""));
}

void dot_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 3, 0, 0);
  for (const Tensor& t : i.inputs) c.scope(i, t, Scope::Register, "an operand");
  c.scope(i, i.output, Scope::Register, "the output");
  const Tensor &a = i.inputs[0], &b = i.inputs[1], &acc = i.inputs[2];
  if (a->shape.size() != 2 || b->shape.size() != 2 || acc->shape.size() != 2 || a->shape[1] != b->shape[0] ||
      acc->shape[0] != a->shape[0] || acc->shape[1] != b->shape[1])
    c.fail(op_name(i.op), ": ", c.str(a), " @ ", c.str(b), " does not give ", c.str(acc));
  c.same_dtype(i, a, b);
  c.same_shape(i, acc, i.output);
  c.same_dtype(i, acc, i.output);
}

// Placed by the async pass after it marked the dots (transforms/async_waits.cc); their
// pairing with the dots is that pass's invariant.
void wgmma_group_verify(OperandCheck& c, const Instruction& i) { c.no_output(i); }

std::string wgmma_wait_print(const Instruction& i) {
  std::string s = "n=" + std::to_string(i.int_attr);
  if (!i.inputs.empty() && i.inputs[0]->scope == Scope::Shared) {
    s += ", if_writing=" + inst_text::ref(i.inputs[0]) + ", hits=[";
    for (size_t k = 1; k < i.inputs.size(); ++k) s += (k > 1 ? ", " : "") + inst_text::ref(i.inputs[k]);
    s += "]";
  } else if (!i.inputs.empty()) {
    s += ", fence=[";
    for (size_t k = 0; k < i.inputs.size(); ++k) s += (k ? ", " : "") + inst_text::ref(i.inputs[k]);
    s += "]";
  }
  return inst_text::call(i, s) + (i.text.empty() ? "" : "   # " + i.text);
}
}  // namespace

const OpHandler kDot = {
    dot_check, dot_layout,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_dot(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_dot(i); }, dot_print, dot_verify};

// The wgmma protocol around an asynchronous dot, placed by transforms/async_waits.cc. In
// the interpreter a dot completes inside exec_dot: there is nothing to commit or wait for.
const OpHandler kWgmmaCommitGroup = {
    nullptr, nullptr, [](interp::BlockState&, const StmtNode&, const Instruction&) {},
    [](CudaEmitter& e, const Instruction&) { e.line("tilus::wgmma_commit_group();"); }, nullptr,
    wgmma_group_verify};

const OpHandler kWgmmaWaitGroup = {
    nullptr, nullptr, [](interp::BlockState&, const StmtNode&, const Instruction&) {},
    [](CudaEmitter& e, const Instruction& i) { e.emit_wgmma_wait(i); }, wgmma_wait_print, wgmma_group_verify};

}  // namespace tilus::ops
