// Elementwise instructions: casts, binary and unary operators, where, assignment.
// Every register operand has the output's layout (LayoutRule::SameAsInputs), except a
// broadcast operand of a binary operator or where (same_layout_or_broadcast).
#include <cmath>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

// ---- exp: e**x elementwise, float types only. Types narrower than float64 compute in
// float32 (the interpreter with std::exp, CUDA with the fast __expf: ex2.approx of
// x * log2(e), within 2 ulp + a term growing with |x|); float64 uses exp() on both.
namespace {
OutputType exp_check(Instruction& inst) {
  const Tensor& x = inst.inputs.at(0);
  TILUS_CHECK(inst.inputs.size() == 1, "ValueError", "exp takes one tensor, got ", inst.inputs.size());
  TILUS_CHECK(x->scope == Scope::Register, "TypeError", "exp: x must be a register tensor, got a ",
              scope_name(x->scope), " tensor (", x->type_str(), ")");
  TILUS_CHECK(x->dtype.is_float(), "TypeError", "exp: x must be a float tensor, got ",
              x->dtype.name(), "; cast it first with self.cast(x, dtype=tilus.float32)");
  return {x->dtype, x->shape};
}

void exp_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), inst.output->dtype);
  const ScalarKind k = x.dtype.kind;
  const int b = interp::element_bytes(x.dtype);
  const bool wide = x.dtype == dtypes::float64;
  for (int64_t i = 0; i < x.numel; ++i) {
    double v = interp::load_f(x.data + i * b, k);
    double r = wide ? std::exp(v) : static_cast<double>(std::exp(static_cast<float>(v)));
    interp::store_f(y.data + i * b, k, r);
  }
}

void exp_emit(CudaEmitter& e, const Instruction& i) {
  const RegisterLayout& layout = e.plan_.layout_of(i.output);
  const DataType t = i.output->dtype;
  std::string x = e.reg_operand(i.inputs[0], layout) + "[i]";
  std::string dst = e.declare_reg(i.output, layout);
  std::string value;
  if (t == dtypes::float64) value = "exp(" + x + ")";
  else if (t == dtypes::float32) value = "__expf(" + x + ")";
  else value = "tilus::cast<" + CudaEmitter::ctype(t) + ">(__expf(tilus::cast<float>(" + x + ")))";
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(layout.local_size()) + "; ++i)");
  e.line(dst + "[i] = " + value + ";");
  e.close();
}
}  // namespace

const OpHandler kExp = {exp_check, same_layout_as_inputs, exp_interpret, exp_emit};

const OpHandler kCast = {
    nullptr, same_layout_as_inputs, interp::exec_cast,
    [](CudaEmitter& e, const Instruction& i) { e.emit_cast(i); }};
const OpHandler kElementwise = {
    nullptr, same_layout_or_broadcast,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_elementwise(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_elementwise(i); }};
const OpHandler kUnaryElementwise = {
    nullptr, same_layout_as_inputs,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_unary(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_unary(i); }};
const OpHandler kWhere = {
    nullptr, same_layout_or_broadcast,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_where(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_where(i); }};
const OpHandler kAssign = {
    nullptr, same_layout_as_inputs, interp::exec_assign,
    [](CudaEmitter& e, const Instruction& i) { e.emit_assign(i); }};

}  // namespace tilus::ops
