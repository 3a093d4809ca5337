// Kernel utilities: printf, assume, and the index tile behind register_tensor(init=f).
#include <cstdio>
#include <sstream>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/state.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {

// ---- printf: text = a C format whose conversions the Python side normalised (lang/
// inst_utilities.py): integer conversions carry the `ll` length and take int64 args,
// float conversions take float64 args, `%s` was substituted at compile time. Both the
// interpreter and CUDA format the same string with the C library's printf rules, so they
// print the same text. One thread of each block prints (thread 0), as in Tilus 0.2.

// The conversion characters of the format, in order ('d' for the integer ones, 'f' for
// the float ones); ScriptError for anything the normaliser would not produce.
std::vector<char> printf_conversions(const std::string& fmt) {
  std::vector<char> out;
  for (size_t k = 0; k < fmt.size(); ++k) {
    if (fmt[k] != '%') continue;
    if (k + 1 < fmt.size() && fmt[k + 1] == '%') {
      ++k;
      continue;
    }
    size_t j = k + 1;
    while (j < fmt.size() && std::string("-+ #0123456789.l").find(fmt[j]) != std::string::npos) ++j;
    TILUS_CHECK(j < fmt.size(), "ValueError", "printf: the format ends inside a conversion");
    const char c = fmt[j];
    if (std::string("diouxXc").find(c) != std::string::npos) out.push_back('d');
    else if (std::string("fFeEgGaA").find(c) != std::string::npos) out.push_back('f');
    else TILUS_CHECK(false, "ValueError", "printf: unsupported conversion %", c);
    k = j;
  }
  return out;
}

OutputType printf_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.empty(), "TypeError", "printf takes scalars, not tensors");
  std::vector<char> conv = printf_conversions(inst.text);
  TILUS_CHECK(conv.size() == inst.args.size(), "ValueError", "printf: the format has ", conv.size(),
              " conversions but ", inst.args.size(), " values were given");
  for (size_t k = 0; k < conv.size(); ++k) {
    const DataType want = conv[k] == 'd' ? dtypes::int64 : dtypes::float64;
    TILUS_CHECK(inst.args[k]->dtype == want, "TypeError", "printf: value ", k, " must be ",
                want.name(), " for its conversion, got ", inst.args[k]->dtype.name());
  }
  return {};
}

void printf_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const std::string& fmt = inst.text;
  std::string out;
  size_t arg = 0, k = 0;
  char buf[512];
  while (k < fmt.size()) {
    if (fmt[k] != '%') {
      out += fmt[k++];
      continue;
    }
    if (k + 1 < fmt.size() && fmt[k + 1] == '%') {
      out += '%';
      k += 2;
      continue;
    }
    size_t j = k + 1;
    while (std::string("-+ #0123456789.l").find(fmt[j]) != std::string::npos) ++j;
    const std::string spec = fmt.substr(k, j - k + 1);
    const interp::Value v = interp::eval(st, inst.args[arg++]);
    if (inst.args[arg - 1]->dtype == dtypes::int64)
      std::snprintf(buf, sizeof buf, spec.c_str(), static_cast<long long>(v.i));
    else
      std::snprintf(buf, sizeof buf, spec.c_str(), v.f);
    out += buf;
    k = j + 1;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

std::string c_string_literal(const std::string& s) {
  std::ostringstream os;
  os << '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\t': os << "\\t"; break;
      case '\r': os << "\\r"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "\\%03o", c);
          os << b;
        } else {
          os << c;
        }
    }
  }
  os << '"';
  return os.str();
}

void printf_emit(CudaEmitter& e, const Instruction& i) {
  std::string call = "printf(" + c_string_literal(i.text);
  for (const Expr& a : i.args)
    call += std::string(a->dtype == dtypes::int64 ? ", (long long)(" : ", (double)(") + e.expr(a) + ")";
  e.line("if (threadIdx.x == " + std::to_string(e.group_begin()) + ") " + call + ");");
}

// ---- assume: args[0] a bool the program promises is true. CUDA gets __builtin_assume;
// the interpreter checks the promise, so a wrong one fails at its script line instead of
// silently miscompiling on the GPU.
OutputType assume_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.empty() && inst.args.size() == 1, "TypeError",
              "assume takes one condition");
  TILUS_CHECK(inst.args[0]->dtype == dtypes::boolean, "TypeError",
              "assume: the condition must be a bool, got ", inst.args[0]->dtype.name());
  return {};
}

void assume_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& inst) {
  if (interp::eval(st, inst.args[0]).i) return;
  throw ScriptError("ValueError",
                    cat("assume: the condition ", expr_str(inst.args[0]), " is false in block (",
                        st.block_idx[0], ", ", st.block_idx[1], ", ", st.block_idx[2], ")"),
                    stmt.loc);
}

void assume_emit(CudaEmitter& e, const Instruction& i) {
  e.line("__builtin_assume(" + e.expr(i.args[0]) + ");");
}

// ---- index_tile: the int32 register tile of `shape` whose element (i0, ..., in) holds
// i_d, d = dims[0]. register_tensor(init=f) calls f on one per dimension, so f's
// arithmetic on them (ordinary tile operators) gives each element its value.
OutputType index_tile_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.empty() && inst.args.empty(), "TypeError", "index_tile takes no operands");
  TILUS_CHECK(!inst.shape.empty(), "ValueError", "index_tile: the shape is empty");
  for (int64_t s : inst.shape)
    TILUS_CHECK(s > 0, "ValueError", "index_tile: shape entries must be positive, got ", s);
  TILUS_CHECK(inst.dims.size() == 1 && inst.dims[0] >= 0 &&
                  inst.dims[0] < static_cast<int>(inst.shape.size()),
              "ValueError", "index_tile: dims must name one dimension of the shape");
  return {dtypes::int32, inst.shape};
}

void index_tile_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), dtypes::int32);
  const auto& shape = inst.output->shape;
  const int d = inst.dims[0];
  int64_t inner = 1;
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  for (int64_t i = 0; i < y.numel; ++i)
    interp::store_i(y.data + i * 4, ScalarKind::Int32, (i / inner) % shape[d]);
}

void index_tile_emit(CudaEmitter& e, const Instruction& i) {
  const RegisterLayout& layout = e.plan_.layout_of(i.output);
  std::string r = e.declare_reg(i.output, layout);
  const int d = i.dims[0];
  e.for_each_local(layout, 1, [&](const CudaEmitter::Element& el) {
    e.line(r + "[" + e.expr(el.local) + "] = (int)(" + e.expr(el.coords[d]) + ");");
  });
}

// ---- IR text and the verifier's operand checks
std::string printf_print(const Instruction& i) {
  std::string s = "\"" + i.text + "\"";
  for (const Expr& a : i.args) s += ", " + expr_str(a);
  return inst_text::call(i, s);
}
void printf_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, i.args.size());
  c.no_output(i);
}
std::string assume_print(const Instruction& i) { return inst_text::call(i, expr_str(i.args[0])); }
void assume_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 1, 1);
  c.no_output(i);
  if (i.args[0]->dtype != dtypes::boolean) c.fail(op_name(i.op), ": the condition is not a bool");
}
std::string index_tile_print(const Instruction& i) { return inst_text::call(i, "dim=" + std::to_string(i.dims.at(0))); }
void index_tile_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.scope(i, i.output, Scope::Register, "the output");
  c.positive_shape(i, i.output);
  if (i.dims.size() != 1 || i.dims[0] < 0 || i.dims[0] >= i.output->rank())
    c.fail(op_name(i.op), ": dims must name one dimension of ", c.str(i.output));
}

}  // namespace

const OpHandler kPrintf = {printf_check, nullptr, printf_interpret, printf_emit, printf_print, printf_verify};
const OpHandler kAssume = {assume_check, nullptr, assume_interpret, assume_emit, assume_print, assume_verify};
const OpHandler kIndexTile = {index_tile_check, nullptr, index_tile_interpret, index_tile_emit,
                               index_tile_print, index_tile_verify};

}  // namespace tilus::ops
