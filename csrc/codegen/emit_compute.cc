// Register tensors, elementwise tile operations, casts and semaphores.
#include "codegen/emitter.h"

namespace tilus {

namespace {
const char* binary_helper(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Mod: return "mod";
    case BinaryOp::Min: return "min_";
    case BinaryOp::Max: return "max_";
    case BinaryOp::Lt: return "lt";
    case BinaryOp::Le: return "le";
    case BinaryOp::Gt: return "gt";
    case BinaryOp::Ge: return "ge";
    case BinaryOp::Eq: return "eq";
    case BinaryOp::Ne: return "ne";
    case BinaryOp::And: return "and_";
    case BinaryOp::Or: return "or_";
    case BinaryOp::BitXor: return "bit_xor";  // integer and boolean tiles (x ^ y)
    case BinaryOp::BitAnd: break;  // scalar-only (swizzles), never a tile op
  }
  return "?";
}

std::string cast_to(DataType to, DataType from, const std::string& x) {
  if (to == from) return x;
  return "tilus::cast<" + CudaEmitter::ctype(to) + ">(" + x + ")";
}
}  // namespace

void CudaEmitter::emit_register_tensor(const Instruction& i) {
  const Tensor& t = i.output;
  const RegisterLayout& layout = plan_.layout_of(t);
  std::string r = declare_reg(t, layout);
  if (i.args.empty()) return;
  std::string value = expr(i.args[0]);
  line("#pragma unroll");
  open("for (int i = 0; i < " + std::to_string(layout.local_size()) + "; ++i)");
  line(r + "[i] = " + value + ";");
  close();
}

// The flat loop over local elements shared by elementwise instructions whose operands
// all have the output's layout.
namespace {
void flat_loop(CudaEmitter& e, int64_t n, const std::string& body) {
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(n) + "; ++i)");
  e.line(body);
  e.close();
}
}  // namespace

void CudaEmitter::emit_cast(const Instruction& i) {
  const Tensor& x = i.inputs[0];
  const Tensor& y = i.output;
  const RegisterLayout& layout = plan_.layout_of(y);
  std::string src = reg_operand(x, layout);
  std::string dst = declare_reg(y, layout);
  flat_loop(*this, layout.local_size(), dst + "[i] = " + cast_to(y->dtype, x->dtype, src + "[i]") + ";");
}

void CudaEmitter::emit_elementwise(const Instruction& i) {
  const Tensor& out = i.output;
  const RegisterLayout& layout = plan_.layout_of(out);
  DataType operand_type = i.inputs.size() == 2 ? promote(i.inputs[0]->dtype, i.inputs[1]->dtype)
                                               : i.args[0]->dtype;
  std::string a = cast_to(operand_type, i.inputs[0]->dtype, reg_operand(i.inputs[0], layout) + "[i]");
  std::string b;
  if (i.inputs.size() == 2) {
    b = cast_to(operand_type, i.inputs[1]->dtype, reg_operand(i.inputs[1], layout) + "[i]");
  } else {
    std::string scalar = fresh("tl_scalar");
    line("const " + ctype(operand_type) + " " + scalar + " = " + expr(i.args[0]) + ";");
    b = scalar;
    if (i.scalar_lhs) std::swap(a, b);
  }
  DataType result = is_comparison(i.binary_op) || is_logical(i.binary_op) ? dtypes::boolean : operand_type;
  std::string dst = i.defines_output ? declare_reg(out, layout) : reg_name(out);
  std::string value = "tilus::" + std::string(binary_helper(i.binary_op)) + "(" + a + ", " + b + ")";
  flat_loop(*this, layout.local_size(), dst + "[i] = " + cast_to(out->dtype, result, value) + ";");
}

void CudaEmitter::emit_unary(const Instruction& i) {
  const RegisterLayout& layout = plan_.layout_of(i.output);
  std::string x = reg_operand(i.inputs[0], layout);
  std::string dst = declare_reg(i.output, layout);
  std::string value = i.unary_op == UnaryOp::Neg ? "tilus::neg(" + x + "[i])" : "!" + x + "[i]";
  flat_loop(*this, layout.local_size(), dst + "[i] = " + value + ";");
}

void CudaEmitter::emit_where(const Instruction& i) {
  const Tensor& out = i.output;
  const RegisterLayout& layout = plan_.layout_of(out);
  std::string c = reg_operand(i.inputs[0], layout);
  std::string a = cast_to(out->dtype, i.inputs[1]->dtype, reg_operand(i.inputs[1], layout) + "[i]");
  std::string b = cast_to(out->dtype, i.inputs[2]->dtype, reg_operand(i.inputs[2], layout) + "[i]");
  std::string dst = declare_reg(out, layout);
  flat_loop(*this, layout.local_size(), dst + "[i] = " + c + "[i] ? " + a + " : " + b + ";");
}

void CudaEmitter::emit_assign(const Instruction& i) {
  const Tensor& src = i.inputs[0];
  write_back(i.output, reg_name(src), plan_.layout_of(src));
}

void CudaEmitter::emit_semaphore(const Instruction& i) {
  const char* fn = i.op == Op::LockSemaphore ? "lock_semaphore" : "release_semaphore";
  line(std::string("tilus::") + fn + "(" + expr(i.args[0]) + ", " + expr(i.args[1]) + ");");
}

void CudaEmitter::emit_print(const Instruction& i) {
  const Tensor& t = i.inputs[0];
  TILUS_CHECK(t->scope == Scope::Register, "ValueError",
              "print_tensor of shared tensors runs only in the CPU interpreter");
  const RegisterLayout& layout = plan_.layout_of(t);
  std::string r = reg_name(t);
  line("// print_tensor: every thread of block (0, 0, 0) prints its elements");
  open("if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0)");
  for_each_local(layout, 1, [&](const Element& el) {
    std::string fmt = "\"" + i.text + " [";
    std::string args;
    for (size_t d = 0; d < el.coords.size(); ++d) {
      fmt += (d ? ", %d" : "%d");
      args += ", (int)(" + expr(el.coords[d]) + ")";
    }
    fmt += "] = %f\\n\"";
    line("printf(" + fmt + args + ", (double)tilus::cast<float>(" + r + "[" + expr(el.local) + "]));");
  });
  close();
}

}  // namespace tilus
