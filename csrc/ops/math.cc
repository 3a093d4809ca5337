// Elementwise math of Tilus 0.2 (abs, exp2, log, sin, cos, round, square, sqrt, rsqrt,
// clip) and reading a one-element tile as a scalar (x.item()).
//
// One rule for every function, on both backends: float16, bfloat16 and float32 compute
// in float32 and round once to the dtype; float64 computes in double. The interpreter
// evaluates the float32 function of the C library (correctly rounded for sqrt, round,
// abs and square); CUDA uses the instruction each docstring names (math.cuh holds the
// approximations), so results agree within the tolerance the docstring states.
// Operands: inputs = {x}; clip: args = {lo, hi} (already of x's dtype); int_attr = 1
// selects the approximate variant of log, sin, cos and sqrt, and for exp2 the variant that
// flushes subnormal results to zero (one MUFU.EX2 instead of four instructions).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_math.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {

// Which dtypes a function takes.
enum class Domain { Float, Numeric };

Domain domain_of(Op op) {
  return op == Op::Abs || op == Op::Square || op == Op::Clip ? Domain::Numeric : Domain::Float;
}

bool has_approx_variant(Op op) {
  return op == Op::Exp2 || op == Op::Log || op == Op::Sin || op == Op::Cos || op == Op::Sqrt;
}

OutputType unary_check(Instruction& inst) {
  const char* name = op_name(inst.op);
  TILUS_CHECK(inst.inputs.size() == 1, "ValueError", name, " takes one tensor, got ", inst.inputs.size());
  const Tensor& x = inst.inputs[0];
  TILUS_CHECK(x->scope == Scope::Register, "TypeError", name, ": x must be a register tensor, got a ",
              scope_name(x->scope), " tensor (", x->type_str(), ")");
  TILUS_CHECK(!x->dtype.is_pointer, "TypeError", name, ": x holds pointers (", x->dtype.name(), ")");
  if (domain_of(inst.op) == Domain::Float) {
    TILUS_CHECK(x->dtype.is_float(), "TypeError", name, ": x must be a float tensor, got ",
                x->dtype.name(), "; cast it first with x.to(tilus.float32)");
  } else {
    TILUS_CHECK(x->dtype.is_float() || x->dtype.is_integer(), "TypeError", name,
                ": x must be a float or integer tensor, got ", x->dtype.name());
  }
  TILUS_CHECK(inst.int_attr == 0 || (inst.int_attr == 1 && has_approx_variant(inst.op)), "ValueError",
              name, ": approx is not an option of this function");
  const size_t nargs = inst.op == Op::Clip ? 2 : 0;
  TILUS_CHECK(inst.args.size() == nargs, "ValueError", name, " takes ", nargs, " scalars, got ",
              inst.args.size());
  for (const Expr& a : inst.args)
    TILUS_CHECK(a->dtype == x->dtype, "TypeError", name, ": the bound ", expr_str(a), " is a ",
                a->dtype.name(), "; it must be of x's dtype ", x->dtype.name());
  return {x->dtype, x->shape};
}

// ---- interpreter

// The interpreter evaluates the exact function for both variants (approx or not); only
// exp2(approx=True) also flushes as CUDA does (unary_interpret).
float float_function(Op op, float v) {
  if (op == Op::Abs) return std::fabs(v);
  if (op == Op::Exp2) return std::exp2(v);
  if (op == Op::Log) return std::log(v);
  if (op == Op::Sin) return std::sin(v);
  if (op == Op::Cos) return std::cos(v);
  if (op == Op::Round) return std::nearbyint(v);  // ties to even (the default rounding mode)
  if (op == Op::Square) return v * v;
  if (op == Op::Sqrt) return std::sqrt(v);
  if (op == Op::Rsqrt) return 1.0f / std::sqrt(v);
  TILUS_ASSERT(false, "not a float function: ", op_name(op));
  return 0;
}

double double_function(Op op, double v) {
  if (op == Op::Abs) return std::fabs(v);
  if (op == Op::Exp2) return std::exp2(v);
  if (op == Op::Log) return std::log(v);
  if (op == Op::Sin) return std::sin(v);
  if (op == Op::Cos) return std::cos(v);
  if (op == Op::Round) return std::nearbyint(v);
  if (op == Op::Square) return v * v;
  if (op == Op::Sqrt) return std::sqrt(v);
  if (op == Op::Rsqrt) return 1.0 / std::sqrt(v);
  TILUS_ASSERT(false, "not a float function: ", op_name(op));
  return 0;
}

void unary_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  const DataType t = x.dtype;
  const ScalarKind k = t.kind;
  const int b = interp::element_bytes(t);
  const int64_t n = x.numel;
  // Read everything first: the output may reuse x's buffer.
  std::vector<uint8_t> in(x.data, x.data + n * b);
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), t);
  if (t.is_float()) {
    double lo = 0, hi = 0;
    if (inst.op == Op::Clip) {
      lo = interp::eval(st, inst.args[0]).f;
      hi = interp::eval(st, inst.args[1]).f;
    }
    const bool wide = t == dtypes::float64;
    for (int64_t i = 0; i < n; ++i) {
      double v = interp::load_f(in.data() + i * b, k), r;
      if (inst.op == Op::Clip) r = std::fmax(std::fmin(v, hi), lo);  // fminf/fmaxf as on CUDA
      else if (wide) r = double_function(inst.op, v);
      else r = float_function(inst.op, static_cast<float>(v));
      // exp2(approx=True) on CUDA (ex2.approx.ftz) gives 0 for results below 2^-126
      if (inst.op == Op::Exp2 && inst.int_attr == 1 && !wide && r < FLT_MIN) r = 0;
      interp::store_f(y.data + i * b, k, r);
    }
    return;
  }
  int64_t lo = 0, hi = 0;
  if (inst.op == Op::Clip) {
    lo = interp::eval(st, inst.args[0]).i;
    hi = interp::eval(st, inst.args[1]).i;
  }
  const bool is_unsigned = !t.is_signed();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = interp::load_i(in.data() + i * b, k);
    const auto u = static_cast<uint64_t>(v);
    int64_t r = v;
    if (inst.op == Op::Abs) {
      r = v < 0 ? wrap_int(static_cast<int64_t>(0 - u), k) : v;
    } else if (inst.op == Op::Square) {
      r = wrap_int(static_cast<int64_t>(u * u), k);
    } else if (is_unsigned) {  // clip
      r = static_cast<int64_t>(std::max(std::min(u, static_cast<uint64_t>(hi)), static_cast<uint64_t>(lo)));
    } else {
      r = std::max(std::min(v, hi), lo);
    }
    interp::store_i(y.data + i * b, k, r);
  }
}

// ---- CUDA

// The float32 expression of the function applied to `a` (a float).
std::string float32_call(Op op, bool approx, const std::string& a) {
  if (op == Op::Exp2) return (approx ? "tilus::ex2_approx_ftz(" : "tilus::ex2_approx(") + a + ")";
  if (op == Op::Log) return approx ? "(tilus::lg2_approx(" + a + ") * 0.69314718055994531f)" : "logf(" + a + ")";
  if (op == Op::Sin) return approx ? "tilus::sin_approx(" + a + ")" : "sinf(" + a + ")";
  if (op == Op::Cos) return approx ? "tilus::cos_approx(" + a + ")" : "cosf(" + a + ")";
  if (op == Op::Round) return "rintf(" + a + ")";
  // __fsqrt_rn: correctly rounded whatever the compile flags (the interpreter's std::sqrt)
  if (op == Op::Sqrt) return approx ? "tilus::sqrt_approx(" + a + ")" : "__fsqrt_rn(" + a + ")";
  if (op == Op::Rsqrt) return "tilus::rsqrt_approx(" + a + ")";
  TILUS_ASSERT(false, "not a float32 function: ", op_name(op));
  return "";
}

std::string float64_call(Op op, const std::string& a) {
  if (op == Op::Exp2) return "exp2(" + a + ")";
  if (op == Op::Log) return "log(" + a + ")";
  if (op == Op::Sin) return "sin(" + a + ")";
  if (op == Op::Cos) return "cos(" + a + ")";
  if (op == Op::Round) return "rint(" + a + ")";
  if (op == Op::Sqrt) return "sqrt(" + a + ")";
  if (op == Op::Rsqrt) return "rsqrt(" + a + ")";
  TILUS_ASSERT(false, "not a float64 function: ", op_name(op));
  return "";
}

void unary_emit(CudaEmitter& e, const Instruction& i) {
  const RegisterLayout& layout = e.plan_.layout_of(i.output);
  const DataType t = i.output->dtype;
  const std::string ct = CudaEmitter::ctype(t);
  std::string x = e.reg_operand(i.inputs[0], layout) + "[i]";
  std::string value;
  if (i.op == Op::Abs) {
    value = "tilus::abs_(" + x + ")";
  } else if (i.op == Op::Square) {
    value = "tilus::mul(" + x + ", " + x + ")";
  } else if (i.op == Op::Clip) {
    std::string lo = e.fresh("tl_lo"), hi = e.fresh("tl_hi");
    e.line("const " + ct + " " + lo + " = " + e.expr(i.args[0]) + ";");
    e.line("const " + ct + " " + hi + " = " + e.expr(i.args[1]) + ";");
    value = "tilus::max_(tilus::min_(" + x + ", " + hi + "), " + lo + ")";
  } else if (t == dtypes::float64) {
    value = float64_call(i.op, x);
  } else if (t == dtypes::float32) {
    value = float32_call(i.op, i.int_attr == 1, x);
  } else {
    value = "tilus::cast<" + ct + ">(" + float32_call(i.op, i.int_attr == 1, "tilus::cast<float>(" + x + ")") + ")";
  }
  std::string dst = e.declare_reg(i.output, layout);
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(layout.local_size()) + "; ++i)");
  e.line(dst + "[i] = " + value + ";");
  e.close();
}

// ---- tensor_item: args = one declared scalar of x's dtype per element of x (row-major),
// each set to its element: x.item() (one element) and x.tolist() (Tilus 0.2: a flat list).
OutputType item_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() == 1 && !inst.args.empty(), "ValueError",
              "item takes one tensor and the variables it sets");
  const Tensor& x = inst.inputs[0];
  TILUS_CHECK(x->scope == Scope::Register, "TypeError", "item: x must be a register tensor, got a ",
              scope_name(x->scope), " tensor (", x->type_str(), ")");
  TILUS_CHECK(static_cast<int64_t>(inst.args.size()) == x->numel(), "ValueError", "item: x must have exactly ",
              inst.args.size(), " element(s), got a ", x->type_str(), " tensor; reduce it first (e.g. self.sum)");
  for (const Expr& v : inst.args)
    TILUS_CHECK(v->kind == ExprKind::Var && v->dtype == x->dtype, "TypeError",
                "item: the target must be a variable of dtype ", x->dtype.name());
  return {x->dtype, {}};
}

void item_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  const int b = interp::element_bytes(x.dtype);
  for (size_t k = 0; k < inst.args.size(); ++k) {
    interp::Value& v = st.var(inst.args[k].get());
    const uint8_t* p = x.data + static_cast<int64_t>(k) * b;
    if (x.dtype.is_float()) v = interp::Value::of_float(interp::load_f(p, x.dtype.kind));
    else v = interp::Value::of_int(interp::load_i(p, x.dtype.kind));
  }
}

// A one-element tile has no spatial modes, so every thread holds it; so does every
// element of a tile replicated over all threads. Otherwise the elements go through
// shared memory once and every thread reads them all.
void item_emit(CudaEmitter& e, const Instruction& i) {
  const Tensor& x = i.inputs[0];
  const RegisterLayout& layout = e.plan_.layout_of(x);
  const std::string src = e.reg_name(x);
  if (i.args.size() == 1) {
    TILUS_ASSERT(layout.local_size() == 1, "item: a one-element tile with ", layout.local_size(),
                 " elements per thread");
    e.line(e.expr(i.args[0]) + " = " + src + "[0];");
    return;
  }
  auto coords_of = [&](int64_t k) {
    std::vector<int64_t> c(x->shape.size());
    for (size_t d = x->shape.size(); d-- > 0;) {
      c[d] = k % x->shape[d];
      k /= x->shape[d];
    }
    return c;
  };
  if (layout.replication() == layout.num_threads()) {
    for (size_t k = 0; k < i.args.size(); ++k)
      e.line(e.expr(i.args[k]) + " = " + src + "[" + std::to_string(layout.owner(coords_of(k)).first) + "];");
    return;
  }
  const std::string ctype = CudaEmitter::ctype(x->dtype);
  const int64_t offset = e.smem_.allocate(storage_bytes(x->numel() * x->dtype.bits()));
  e.open("{  // tolist: every thread reads " + x->name + "'s elements through shared memory");
  const std::string buf = e.fresh("tl_list");
  e.line(ctype + "* " + buf + " = reinterpret_cast<" + ctype + "*>(tl_smem + " + std::to_string(offset) + ");");
  e.line(e.block_sync());
  const std::string leader = e.replica_leader(layout);
  if (!leader.empty()) e.open("if (" + leader + ")");
  e.for_each_local(layout, 1, [&](const CudaEmitter::Element& el) {
    Expr flat = make_int(0);
    int64_t stride = 1;
    for (int d = static_cast<int>(x->shape.size()) - 1; d >= 0; --d) {
      flat = make_binary(BinaryOp::Add, flat, make_binary(BinaryOp::Mul, el.coords[d], make_int(stride)));
      stride *= x->shape[d];
    }
    const std::string mask = e.tile_mask(layout, x->shape, el);
    e.line((mask.empty() ? "" : "if (" + mask + ") ") + buf + "[" + e.expr(flat) + "] = " + src + "[" +
           e.expr(el.local) + "];");
  });
  if (!leader.empty()) e.close();
  e.line(e.block_sync());
  for (size_t k = 0; k < i.args.size(); ++k) e.line(e.expr(i.args[k]) + " = " + buf + "[" + std::to_string(k) + "];");
  e.line(e.block_sync());
  e.close();
  e.smem_.release(offset);
}

// ---- IR text and the verifier's operand checks
std::string unary_print(const Instruction& i) {
  std::string s = inst_text::ref(i.inputs[0]);
  if (i.op == Op::Clip) s += ", min=" + expr_str(i.args[0]) + ", max=" + expr_str(i.args[1]);
  if (i.int_attr == 1) s += ", approx=True";
  return inst_text::call(i, s);
}
void unary_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, i.op == Op::Clip ? 2 : 0, i.op == Op::Clip ? 2 : 0);
  c.scope(i, i.inputs[0], Scope::Register, "the operand");
  c.scope(i, i.output, Scope::Register, "the output");
  c.same_shape(i, i.inputs[0], i.output);
  c.same_dtype(i, i.inputs[0], i.output);
}
// x.item() sets one variable; x.tolist() one per element.
std::string item_print(const Instruction& i) {
  std::string s;
  for (size_t k = 0; k < i.args.size(); ++k) s += (k ? ", " : "") + expr_str(i.args[k]);
  return s + " = " + inst_text::ref(i.inputs[0]) + (i.args.size() > 1 ? ".tolist()" : ".item()");
}
void item_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 1, static_cast<size_t>(std::max<int64_t>(1, i.inputs.empty() ? 1 : i.inputs[0]->numel())));
  c.no_output(i);
  c.scope(i, i.inputs[0], Scope::Register, "the operand");
}

}  // namespace

const OpHandler kAbs = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kExp2 = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kLog = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kSin = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kCos = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kRound = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kSquare = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kSqrt = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kRsqrt = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kClip = {unary_check, same_layout_as_inputs, unary_interpret, unary_emit, unary_print, unary_verify};
const OpHandler kTensorItem = {item_check, nullptr, item_interpret, item_emit, item_print, item_verify};

}  // namespace tilus::ops
