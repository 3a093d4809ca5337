#include "ir/expr.h"

#include <atomic>
#include <cmath>
#include <sstream>

#include "ir/tensor.h"
#include "support/error.h"

namespace tilus {

const char* binary_op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Min: return "min";
    case BinaryOp::Max: return "max";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
  }
  return "?";
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt ||
         op == BinaryOp::Ge || op == BinaryOp::Eq || op == BinaryOp::Ne;
}
bool is_logical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }
bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::BitAnd || op == BinaryOp::BitXor || op == BinaryOp::BitOr || op == BinaryOp::Shl ||
         op == BinaryOp::Shr;
}

const char* math_fn_name(MathFn fn) {
  switch (fn) {
    case MathFn::Exp: return "exp";
    case MathFn::Log: return "log";
    case MathFn::Sqrt: return "sqrt";
    case MathFn::Sin: return "sin";
    case MathFn::Cos: return "cos";
    case MathFn::Tan: return "tan";
    case MathFn::Asin: return "asin";
    case MathFn::Acos: return "acos";
    case MathFn::Atan: return "atan";
    case MathFn::Sinh: return "sinh";
    case MathFn::Cosh: return "cosh";
    case MathFn::Tanh: return "tanh";
    case MathFn::Asinh: return "asinh";
    case MathFn::Acosh: return "acosh";
    case MathFn::Atanh: return "atanh";
    case MathFn::Ceil: return "ceil";
    case MathFn::Floor: return "floor";
    case MathFn::Trunc: return "trunc";
    case MathFn::IsNan: return "isnan";
    case MathFn::IsInf: return "isinf";
  }
  return "?";
}

bool math_fn_from_name(const std::string& name, MathFn* out) {
  for (int k = 0; k <= static_cast<int>(MathFn::IsInf); ++k) {
    auto fn = static_cast<MathFn>(k);
    if (name == math_fn_name(fn)) {
      if (out) *out = fn;
      return true;
    }
  }
  return false;
}

double math_fn_eval(MathFn fn, double x) {
  switch (fn) {
    case MathFn::Exp: return std::exp(x);
    case MathFn::Log: return std::log(x);
    case MathFn::Sqrt: return std::sqrt(x);
    case MathFn::Sin: return std::sin(x);
    case MathFn::Cos: return std::cos(x);
    case MathFn::Tan: return std::tan(x);
    case MathFn::Asin: return std::asin(x);
    case MathFn::Acos: return std::acos(x);
    case MathFn::Atan: return std::atan(x);
    case MathFn::Sinh: return std::sinh(x);
    case MathFn::Cosh: return std::cosh(x);
    case MathFn::Tanh: return std::tanh(x);
    case MathFn::Asinh: return std::asinh(x);
    case MathFn::Acosh: return std::acosh(x);
    case MathFn::Atanh: return std::atanh(x);
    case MathFn::Ceil: return std::ceil(x);
    case MathFn::Floor: return std::floor(x);
    case MathFn::Trunc: return std::trunc(x);
    case MathFn::IsNan: return std::isnan(x) ? 1.0 : 0.0;
    case MathFn::IsInf: return std::isinf(x) ? 1.0 : 0.0;
  }
  return 0.0;
}

namespace {
std::shared_ptr<ExprNode> node(ExprKind kind, DataType dtype) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->dtype = dtype;
  return n;
}

double const_as_double(const Expr& e) {
  return e->dtype.is_float() ? e->float_value : static_cast<double>(e->int_value);
}
}  // namespace

Expr make_int(int64_t v, DataType dtype) {
  auto n = node(ExprKind::Const, dtype);
  n->int_value = wrap_int(v, dtype.kind);
  n->float_value = static_cast<double>(n->int_value);
  return n;
}

Expr make_float(double v, DataType dtype) {
  auto n = node(ExprKind::Const, dtype);
  n->float_value = v;
  return n;
}

Expr make_bool(bool v) { return make_int(v ? 1 : 0, dtypes::boolean); }

Expr make_var(const std::string& name, DataType dtype) {
  static std::atomic<int> next_id{0};
  auto n = node(ExprKind::Var, dtype);
  n->var_id = next_id++;
  n->name = name;
  return n;
}

Expr make_block_idx(int axis) {
  TILUS_ASSERT(axis >= 0 && axis < 3);
  auto n = node(ExprKind::BlockIdx, dtypes::int32);
  n->axis = axis;
  return n;
}

Expr make_cast(Expr a, DataType dtype) {
  if (a->dtype == dtype) return a;
  // The one pointer cast: void_p reinterpreted as a typed pointer (global_view over an
  // untyped parameter). A typed pointer never becomes another type.
  if (a->dtype.is_void && dtype.is_pointer && !dtype.is_void) {
    auto n = node(ExprKind::Cast, dtype);
    n->a = std::move(a);
    return n;
  }
  TILUS_CHECK(!a->dtype.is_pointer && !dtype.is_pointer, "TypeError",
              "cannot cast ", a->dtype.name(), " to ", dtype.name());
  if (a->is_const()) {
    if (dtype.is_float()) return make_float(const_as_double(a), dtype);
    if (a->dtype.is_float()) return make_int(static_cast<int64_t>(a->float_value), dtype);
    return make_int(a->int_value, dtype);
  }
  auto n = node(ExprKind::Cast, dtype);
  n->a = std::move(a);
  return n;
}

Expr make_unary(UnaryOp op, Expr a) {
  if (op == UnaryOp::Not) {
    a = make_cast(std::move(a), dtypes::boolean);
    if (a->is_const()) return make_bool(a->int_value == 0);
    auto n = node(ExprKind::Unary, dtypes::boolean);
    n->unary_op = op;
    n->a = std::move(a);
    return n;
  }
  TILUS_CHECK(!a->dtype.is_pointer, "TypeError", "cannot negate a pointer");
  if (a->is_const())
    return a->dtype.is_float() ? make_float(-a->float_value, a->dtype)
                               : make_int(-a->int_value, a->dtype);
  auto n = node(ExprKind::Unary, a->dtype);
  n->unary_op = op;
  n->a = std::move(a);
  return n;
}

Expr make_math(MathFn fn, Expr a) {
  TILUS_CHECK(!a->dtype.is_pointer, "TypeError", "math.", math_fn_name(fn),
              "() needs a number, got a pointer (", a->dtype.name(), ")");
  TILUS_CHECK(!a->dtype.is_bool(), "TypeError", "math.", math_fn_name(fn),
              "() needs a number, got a boolean (", expr_str(a), ")");
  // float16, bfloat16, float32 and float64 keep their type; integers and the other
  // floats (tfloat32, the low-precision ones) are computed in float32.
  const bool keeps = a->dtype == dtypes::float16 || a->dtype == dtypes::bfloat16 ||
                     a->dtype == dtypes::float32 || a->dtype == dtypes::float64;
  if (!keeps) a = make_cast(std::move(a), dtypes::float32);
  const bool predicate = fn == MathFn::IsNan || fn == MathFn::IsInf;
  if (a->is_const()) {
    const double r = math_fn_eval(fn, a->float_value);
    return predicate ? make_bool(r != 0.0) : make_float(r, a->dtype);
  }
  auto n = node(ExprKind::Math, predicate ? dtypes::boolean : a->dtype);
  n->math_fn = fn;
  n->a = std::move(a);
  return n;
}

namespace {
Expr fold_binary(BinaryOp op, const Expr& a, const Expr& b, DataType operand_type) {
  if (operand_type.is_float()) {
    double x = const_as_double(a), y = const_as_double(b);
    switch (op) {
      case BinaryOp::Add: return make_float(x + y, operand_type);
      case BinaryOp::Sub: return make_float(x - y, operand_type);
      case BinaryOp::Mul: return make_float(x * y, operand_type);
      case BinaryOp::Div: return make_float(x / y, operand_type);
      case BinaryOp::Mod: return make_float(std::fmod(x, y), operand_type);
      case BinaryOp::Min: return make_float(std::fmin(x, y), operand_type);
      case BinaryOp::Max: return make_float(std::fmax(x, y), operand_type);
      case BinaryOp::Lt: return make_bool(x < y);
      case BinaryOp::Le: return make_bool(x <= y);
      case BinaryOp::Gt: return make_bool(x > y);
      case BinaryOp::Ge: return make_bool(x >= y);
      case BinaryOp::Eq: return make_bool(x == y);
      case BinaryOp::Ne: return make_bool(x != y);
      case BinaryOp::And: return make_bool(x != 0 && y != 0);
      case BinaryOp::Or: return make_bool(x != 0 || y != 0);
      case BinaryOp::BitAnd:
      case BinaryOp::BitXor:
      case BinaryOp::BitOr:
      case BinaryOp::Shl:
      case BinaryOp::Shr: break;  // integer-only (checked by make_binary)
    }
  }
  int64_t x = a->int_value, y = b->int_value;
  if ((op == BinaryOp::Div || op == BinaryOp::Mod) && y == 0)
    throw ScriptError("ZeroDivisionError", "integer division or modulo by zero");
  switch (op) {
    case BinaryOp::Add: return make_int(x + y, operand_type);
    case BinaryOp::Sub: return make_int(x - y, operand_type);
    case BinaryOp::Mul: return make_int(x * y, operand_type);
    case BinaryOp::Div: return make_int(x / y, operand_type);
    case BinaryOp::Mod: return make_int(x % y, operand_type);
    case BinaryOp::Min: return make_int(std::min(x, y), operand_type);
    case BinaryOp::Max: return make_int(std::max(x, y), operand_type);
    case BinaryOp::Lt: return make_bool(x < y);
    case BinaryOp::Le: return make_bool(x <= y);
    case BinaryOp::Gt: return make_bool(x > y);
    case BinaryOp::Ge: return make_bool(x >= y);
    case BinaryOp::Eq: return make_bool(x == y);
    case BinaryOp::Ne: return make_bool(x != y);
    case BinaryOp::And: return make_bool(x != 0 && y != 0);
    case BinaryOp::Or: return make_bool(x != 0 || y != 0);
    case BinaryOp::BitAnd: return make_int(x & y, operand_type);
    case BinaryOp::BitXor: return make_int(x ^ y, operand_type);
    case BinaryOp::BitOr: return make_int(x | y, operand_type);
    case BinaryOp::Shl:
    case BinaryOp::Shr: return make_int(shift_int(op == BinaryOp::Shl, x, y, operand_type.kind), operand_type);
  }
  return nullptr;
}
}  // namespace

Expr make_binary(BinaryOp op, Expr a, Expr b) {
  DataType operand_type;
  if (is_logical(op)) {
    operand_type = dtypes::boolean;
  } else if ((op == BinaryOp::Eq || op == BinaryOp::Ne) && a->dtype.is_pointer &&
             b->dtype.is_pointer) {
    operand_type = a->dtype;
  } else {
    TILUS_CHECK(!a->dtype.is_pointer && !b->dtype.is_pointer, "TypeError",
                "operator ", binary_op_symbol(op), " is not supported on pointers (",
                a->dtype.name(), ", ", b->dtype.name(), ")");
    operand_type = promote(a->dtype, b->dtype);
    TILUS_CHECK(!is_bitwise(op) || operand_type.is_integer(),
                "TypeError", "operator ", binary_op_symbol(op), " needs integers, got ",
                operand_type.name());
  }
  a = make_cast(std::move(a), operand_type);
  b = make_cast(std::move(b), operand_type);
  if (a->is_const() && b->is_const()) return fold_binary(op, a, b, operand_type);
  // Cheap algebraic identities keep printed IR and generated indices short.
  int64_t c;
  if (op == BinaryOp::Add && is_const_int(b, &c) && c == 0) return a;
  if (op == BinaryOp::Add && is_const_int(a, &c) && c == 0) return b;
  if (op == BinaryOp::Sub && is_const_int(b, &c) && c == 0) return a;
  if (op == BinaryOp::Mul && is_const_int(b, &c) && c == 1) return a;
  if (op == BinaryOp::Mul && is_const_int(a, &c) && c == 1) return b;
  if (op == BinaryOp::Mul && ((is_const_int(a, &c) && c == 0) || (is_const_int(b, &c) && c == 0)))
    return make_int(0, operand_type);
  if (op == BinaryOp::Div && is_const_int(b, &c) && c == 1) return a;
  if (op == BinaryOp::BitXor && is_const_int(b, &c) && c == 0) return a;
  if (op == BinaryOp::BitXor && is_const_int(a, &c) && c == 0) return b;
  // (x + c1) +/- c2  ->  x + (c1 +/- c2): keeps cdiv(n, 128) printing as (n + 127) / 128.
  int64_t c1;
  if ((op == BinaryOp::Add || op == BinaryOp::Sub) && is_const_int(b, &c) &&
      a->kind == ExprKind::Binary && a->binary_op == BinaryOp::Add && is_const_int(a->b, &c1)) {
    int64_t folded = op == BinaryOp::Add ? c1 + c : c1 - c;
    return folded == 0 ? a->a : make_binary(BinaryOp::Add, a->a, make_int(folded, operand_type));
  }
  if ((op == BinaryOp::Div || op == BinaryOp::Mod) && is_const_int(b, &c) && c == 0)
    throw ScriptError("ZeroDivisionError", "integer division or modulo by zero");
  auto n = node(ExprKind::Binary,
                is_comparison(op) || is_logical(op) ? dtypes::boolean : operand_type);
  n->binary_op = op;
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

Expr make_select(Expr cond, Expr a, Expr b) {
  cond = make_cast(std::move(cond), dtypes::boolean);
  DataType t = (a->dtype.is_pointer && a->dtype == b->dtype) ? a->dtype : promote(a->dtype, b->dtype);
  a = make_cast(std::move(a), t);
  b = make_cast(std::move(b), t);
  if (cond->is_const()) return cond->int_value ? a : b;
  auto n = node(ExprKind::Select, t);
  n->c = std::move(cond);
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

namespace {
void check_element_indices(const Tensor& t, std::vector<Expr>& indices, const char* what) {
  TILUS_CHECK(t->scope == Scope::Global, "TypeError", what,
              " needs a global tensor, got a ", scope_name(t->scope), " tensor");
  TILUS_CHECK(static_cast<int>(indices.size()) == t->rank(), "ValueError", what, ": tensor ",
              t->name, " has rank ", t->rank(), " but ", indices.size(), " indices were given");
  for (auto& i : indices) {
    TILUS_CHECK(i->dtype.is_integer(), "TypeError", what, ": index ", expr_str(i),
                " is ", i->dtype.name(), ", not an integer");
    if (i->dtype != dtypes::int64) i = make_cast(i, dtypes::int32);
  }
  // Constant indices outside a constant extent are wrong on every launch.
  for (size_t d = 0; d < indices.size() && d < t->global_shape.size(); ++d) {
    int64_t i, extent;
    if (!is_const_int(indices[d], &i)) continue;
    bool known = is_const_int(t->global_shape[d], &extent);
    TILUS_CHECK(i >= 0 && (!known || i < extent), "IndexError", what, ": index ", i,
                " is out of range for dimension ", d, " of ", t->name, " (",
                t->type_str(), ")");
  }  // A packed element has no byte address of its own (ir/packed.h).
  TILUS_CHECK(t->dtype.bits() % 8 == 0, "TypeError", what, " of ", t->name, ": ",
              t->dtype.name(), " elements are ", t->dtype.bits(),
              " bits, packed several to a byte; load a tile (load_global) instead");
}
}  // namespace

Expr make_element_addr(Tensor t, std::vector<Expr> indices) {
  check_element_indices(t, indices, "taking an element address");
  auto n = node(ExprKind::ElementAddr, t->dtype.pointer_to());
  n->tensor = std::move(t);
  n->indices = std::move(indices);
  return n;
}

Expr make_element_load(Tensor t, std::vector<Expr> indices) {
  check_element_indices(t, indices, "reading an element");
  auto n = node(ExprKind::ElementLoad, t->dtype);
  n->tensor = std::move(t);
  n->indices = std::move(indices);
  return n;
}

bool is_const_int(const Expr& e, int64_t* out) {
  if (!e || !e->is_const() || e->dtype.is_float()) return false;
  if (out) *out = e->int_value;
  return true;
}

namespace {
void print(std::ostringstream& os, const Expr& e) {
  switch (e->kind) {
    case ExprKind::Const:
      if (e->dtype.is_bool()) {
        os << (e->int_value ? "true" : "false");
      } else if (e->dtype.is_float()) {
        std::ostringstream f;
        f.precision(9);
        f << e->float_value;
        std::string s = f.str();
        if (s.find_first_of(".en") == std::string::npos) s += ".0";
        os << s;
        if (e->dtype != dtypes::float32) os << ":" << e->dtype.name();
      } else {
        os << e->int_value;
        if (e->dtype != dtypes::int32) os << ":" << e->dtype.name();
      }
      return;
    case ExprKind::Var: os << e->name; return;
    case ExprKind::BlockIdx: os << "blockIdx." << "xyz"[e->axis]; return;
    case ExprKind::Unary:
      os << (e->unary_op == UnaryOp::Neg ? "-" : "!");
      print(os, e->a);
      return;
    case ExprKind::Binary:
      if (e->binary_op == BinaryOp::Min || e->binary_op == BinaryOp::Max) {
        os << binary_op_symbol(e->binary_op) << "(";
        print(os, e->a);
        os << ", ";
        print(os, e->b);
        os << ")";
      } else {
        os << "(";
        print(os, e->a);
        os << " " << binary_op_symbol(e->binary_op) << " ";
        print(os, e->b);
        os << ")";
      }
      return;
    case ExprKind::Select:
      os << "(";
      print(os, e->c);
      os << " ? ";
      print(os, e->a);
      os << " : ";
      print(os, e->b);
      os << ")";
      return;
    case ExprKind::Cast:
      os << e->dtype.name() << "(";
      print(os, e->a);
      os << ")";
      return;
    case ExprKind::ElementAddr:
    case ExprKind::ElementLoad:
      if (e->kind == ExprKind::ElementAddr) os << "~";
      os << "%" << e->tensor->name << "[";
      for (size_t i = 0; i < e->indices.size(); ++i) {
        if (i) os << ", ";
        print(os, e->indices[i]);
      }
      os << "]";
      return;
    case ExprKind::Math:
      os << math_fn_name(e->math_fn) << "(";
      print(os, e->a);
      os << ")";
      return;
  }
}
}  // namespace

std::string expr_str(const Expr& e) {
  std::ostringstream os;
  print(os, e);
  return os.str();
}

}  // namespace tilus
