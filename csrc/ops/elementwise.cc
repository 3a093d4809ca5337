// Elementwise instructions: casts, binary and unary operators, where, assignment.
// Every register operand has the output's layout (LayoutRule::SameAsInputs), except a
// broadcast operand of a binary operator or where (same_layout_or_broadcast) and the
// sub-byte input of a cast (LayoutRule::Derived, cast_layout).
#include <cmath>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ir/packed.h"
#include "ir/shape_rules.h"
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

// ---- the builder's checks, IR text and the verifier's operand checks
namespace {
OutputType cast_check(Instruction& i) {
  expect_inputs(i, 1);
  require_register(i.inputs[0], "cast", "x");
  TILUS_CHECK(!i.dtype.is_pointer, "TypeError", "cast: cannot cast to a pointer type");
  return {i.dtype, i.inputs[0]->shape};
}

OutputType unary_check(Instruction& i) {
  expect_inputs(i, 1);
  const Tensor& x = i.inputs[0];
  require_register(x, i.unary_op == UnaryOp::Neg ? "negation" : "not", "the operand");
  return {i.unary_op == UnaryOp::Not ? dtypes::boolean : x->dtype, x->shape};
}

// a op b with numpy broadcasting, or a tensor and a scalar (args[0], on the left when
// scalar_lhs; made the operand type). The output is new, or out= (inst.output).
OutputType binary_check(Instruction& i) {
  const char* sym = binary_op_symbol(i.binary_op);
  const Tensor& out = i.output;
  std::vector<int64_t> shape;
  DataType operands;
  if (i.inputs.size() == 2) {
    TILUS_CHECK(i.args.empty(), "ValueError", "operator ", sym, " takes two tensors or a tensor and a scalar");
    const Tensor &a = i.inputs[0], &b = i.inputs[1];
    require_register(a, sym, "the left operand");
    require_register(b, sym, "the right operand");
    shape = broadcast_shapes(a->shape, b->shape);
    TILUS_CHECK(!shape.empty(), "ValueError", "operator ", sym, ": shapes ", shape_str(a->shape), " and ",
                shape_str(b->shape), " cannot be broadcast together");
    operands = promote(a->dtype, b->dtype);
  } else {
    TILUS_CHECK(i.inputs.size() == 1 && i.args.size() == 1, "ValueError", "operator ", sym,
                " takes two tensors or a tensor and a scalar");
    const Tensor& x = i.inputs[0];
    const Expr& scalar = i.args[0];
    require_register(x, sym, "the tensor operand");
    TILUS_CHECK(!scalar->dtype.is_pointer, "TypeError", "operator ", sym, ": a pointer cannot be combined with a tensor");
    // A Python constant takes the tensor's type (a float32 tile + 1.0 stays float32); a
    // runtime scalar promotes with it. A boolean tile is hidet's integer of one bit: a
    // number makes it int32 (an int constant) or float32 (a float one), so bool_tile * 3
    // is 0 or 3, as bool_tile * int32_tile is int32.
    const bool numeric_const = scalar->is_const() && !scalar->dtype.is_bool();
    operands = scalar->is_const() && !(scalar->dtype.is_float() && x->dtype.is_integer()) ? x->dtype
                                                                                           : promote(x->dtype, scalar->dtype);
    if (scalar->is_const() && scalar->dtype.is_float() && (x->dtype.is_integer() || x->dtype.is_bool()))
      operands = dtypes::float32;
    else if (numeric_const && x->dtype.is_bool())
      operands = scalar->dtype.is_integer() ? scalar->dtype : dtypes::int32;
    shape = x->shape;
  }
  if (out) {
    require_register(out, sym, "out");
    TILUS_CHECK(out->shape == shape, "ValueError", "out has shape ", shape_str(out->shape),
                " but the result has shape ", shape_str(shape));
  }
  if (i.inputs.size() == 1) i.args[0] = make_cast(i.args[0], operands);
  return {binary_result_dtype(i.binary_op, operands), shape};
}

// Rebinding a register name: inputs[0] is written into the existing output.
OutputType assign_check(Instruction& i) {
  expect_inputs(i, 1);
  const Tensor &dst = i.output, &src = i.inputs[0];
  require_register(dst, "assignment", "the target");
  require_register(src, "assignment", "the value");
  TILUS_CHECK(dst->shape == src->shape && dst->dtype == src->dtype, "TypeError", "cannot assign a ", src->type_str(),
              " to '", dst->name, "', a ", dst->type_str(), ": a register tensor keeps its dtype and shape; use a new name");
  return {};
}

OutputType where_check(Instruction& i) {
  expect_inputs(i, 3);
  const Tensor &cond = i.inputs[0], &a = i.inputs[1], &b = i.inputs[2];
  require_register(cond, "where", "cond");
  require_register(a, "where", "x");
  require_register(b, "where", "y");
  TILUS_CHECK(cond->dtype.is_bool(), "TypeError", "where: cond must be a boolean tensor, got ", cond->dtype.name());
  auto shape = broadcast_shapes(broadcast_shapes(cond->shape, a->shape), b->shape);
  TILUS_CHECK(!shape.empty(), "ValueError", "where: shapes ", shape_str(cond->shape), ", ", shape_str(a->shape),
              " and ", shape_str(b->shape), " cannot be broadcast together");
  return {promote(a->dtype, b->dtype), shape};
}

using inst_text::ref;

std::string cast_print(const Instruction& i) { return inst_text::call(i, ref(i.inputs[0]) + ", dtype=" + i.dtype.name()); }
// a + b, min(a, b), x * 2.0, 1.0 - x; "-> %out" when writing into an existing tensor
std::string binary_print(const Instruction& i) {
  std::string s = i.defines_output ? ref(i.output) + " = " : std::string();
  const std::string sym = binary_op_symbol(i.binary_op);
  std::string lhs = ref(i.inputs[0]);
  std::string rhs = i.inputs.size() > 1 ? ref(i.inputs[1]) : expr_str(i.args[0]);
  if (i.inputs.size() == 1 && i.scalar_lhs) std::swap(lhs, rhs);
  s += sym == "min" || sym == "max" ? sym + "(" + lhs + ", " + rhs + ")" : lhs + " " + sym + " " + rhs;
  if (!i.defines_output) s += "  -> " + ref(i.output);
  return s;
}
std::string unary_print(const Instruction& i) {
  return ref(i.output) + " = " + (i.unary_op == UnaryOp::Neg ? "-" : "!") + ref(i.inputs[0]);
}
std::string assign_print(const Instruction& i) { return ref(i.output) + " := " + ref(i.inputs[0]); }

void cast_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.scope(i, i.inputs[0], Scope::Register, "the operand");
  c.scope(i, i.output, Scope::Register, "the output");
  c.same_shape(i, i.inputs[0], i.output);
  if (i.dtype != i.output->dtype || i.dtype.is_pointer)
    c.fail(op_name(i.op), ": to ", i.dtype.name(), " but the output is ", c.str(i.output));
}

void binary_verify(OperandCheck& c, const Instruction& i) {
  const bool with_scalar = i.inputs.size() == 1;
  c.arity(i, with_scalar ? 1 : 2, with_scalar ? 1 : 0, with_scalar ? 1 : 0);
  for (const Tensor& t : i.inputs) c.scope(i, t, Scope::Register, "an operand");
  c.scope(i, i.output, Scope::Register, "the output");
  std::vector<int64_t> shape =
      with_scalar ? i.inputs[0]->shape : broadcast_shapes(i.inputs[0]->shape, i.inputs[1]->shape);
  if (shape.empty() || shape != i.output->shape)
    c.fail("operator ", binary_op_symbol(i.binary_op), ": operands ", c.str(i.inputs[0]),
           with_scalar ? std::string() : " and " + c.str(i.inputs[1]), " do not give ", c.str(i.output));
  if (with_scalar && i.args[0]->dtype.is_pointer) c.fail("operator ", binary_op_symbol(i.binary_op), ": a pointer operand");
  DataType operands = with_scalar ? i.args[0]->dtype : promote(i.inputs[0]->dtype, i.inputs[1]->dtype);
  // Writing into an existing tensor (out=) converts; a new one has the result type.
  if (i.defines_output && binary_result_dtype(i.binary_op, operands) != i.output->dtype)
    c.fail("operator ", binary_op_symbol(i.binary_op), " gives ", binary_result_dtype(i.binary_op, operands).name(),
           ", not ", c.str(i.output));
}

void unary_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.scope(i, i.inputs[0], Scope::Register, "the operand");
  c.scope(i, i.output, Scope::Register, "the output");
  c.same_shape(i, i.inputs[0], i.output);
  if (i.output->dtype != (i.unary_op == UnaryOp::Not ? dtypes::boolean : i.inputs[0]->dtype))
    c.fail(op_name(i.op), ": ", c.str(i.inputs[0]), " does not give ", c.str(i.output));
}

void where_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 3, 0, 0);
  for (const Tensor& t : i.inputs) c.scope(i, t, Scope::Register, "an operand");
  c.scope(i, i.output, Scope::Register, "the output");
  if (!i.inputs[0]->dtype.is_bool()) c.fail(op_name(i.op), ": the condition ", c.str(i.inputs[0]), " is not boolean");
  auto shape = broadcast_shapes(broadcast_shapes(i.inputs[0]->shape, i.inputs[1]->shape), i.inputs[2]->shape);
  if (shape.empty() || shape != i.output->shape || promote(i.inputs[1]->dtype, i.inputs[2]->dtype) != i.output->dtype)
    c.fail(op_name(i.op), ": its operands do not give ", c.str(i.output));
}

void assign_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.scope(i, i.inputs[0], Scope::Register, "the value");
  c.scope(i, i.output, Scope::Register, "the target");
  c.same_shape(i, i.inputs[0], i.output);
  c.same_dtype(i, i.inputs[0], i.output);
}
}  // namespace

namespace {
// A cast of sub-byte codes keeps its input's layout unless a consumer (a dot) or the user
// fixed another for its result: then it converts as it casts (a view that orders 4-bit
// codes for the paired-nibble conversion, CudaEmitter::emit_cast). Others: one layout.
void cast_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc) {
  const Tensor& x = inst.inputs[0];
  if (x->scope != Scope::Register || !is_packed(x->dtype)) return same_layout_as_inputs(rules, inst, loc);
  rules.derive(
      x, inst.output, [](const RegisterLayout& l) { return l; },
      [](const RegisterLayout& l) -> std::optional<RegisterLayout> { return l; });
}
}  // namespace

const OpHandler kCast = {
    cast_check, cast_layout, interp::exec_cast,
    [](CudaEmitter& e, const Instruction& i) { e.emit_cast(i); }, cast_print, cast_verify};
const OpHandler kElementwise = {
    binary_check, same_layout_or_broadcast,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_elementwise(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_elementwise(i); }, binary_print, binary_verify};
const OpHandler kUnaryElementwise = {
    unary_check, same_layout_as_inputs,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_unary(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_unary(i); }, unary_print, unary_verify};
const OpHandler kWhere = {
    where_check, same_layout_or_broadcast,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_where(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_where(i); }, nullptr, where_verify};
const OpHandler kAssign = {
    assign_check, same_layout_as_inputs, interp::exec_assign,
    [](CudaEmitter& e, const Instruction& i) { e.emit_assign(i); }, assign_print, assign_verify};

}  // namespace tilus::ops
