// Scalar expressions: immutable nodes shared by pointer.
//
// Runtime scalars of a script (kernel parameters, blockIdx, loop variables, values
// computed from them) are Exprs. Compile-time Python values never reach the IR except
// as constants.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace tilus {

struct TensorNode;
using Tensor = std::shared_ptr<TensorNode>;

enum class ExprKind : uint8_t {
  Const,        // int_value / float_value by dtype
  Var,          // a named variable (parameter, loop variable, declared local)
  BlockIdx,     // axis 0..2
  Unary,        // op, a
  Binary,       // op, a, b
  Select,       // cond ? a : b
  Cast,         // (dtype) a
  ElementAddr,  // &tensor[indices]  (global tensors)
  ElementLoad,  // tensor[indices]   (global tensors)
  Math,         // math_fn(a): a scalar math function (math.exp(x) on a runtime x)
};

enum class UnaryOp : uint8_t { Neg, Not };
// Div and Mod follow C semantics on integers (truncation); kernels index with
// non-negative values, where they agree with Python's // and %.
enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, Mod, Min, Max, Lt, Le, Gt, Ge, Eq, Ne, And, Or,
  BitAnd, BitXor,  // integers only: shared-memory swizzles, script scalars (a & b, a ^ b)
  BitOr, Shl, Shr,  // integers only: script scalars (a | b, a << n, a >> n; shift_int)
};
const char* binary_op_symbol(BinaryOp op);  // "+", "min", ...
bool is_comparison(BinaryOp op);
bool is_logical(BinaryOp op);
bool is_bitwise(BinaryOp op);  // & ^ | << >>: integer operands only

// The scalar math functions of ExprKind::Math: Python's math.exp(x) ... on a runtime x.
// Their own enum: UnaryOp is shared with tile instructions. A float operand keeps its
// type (float16 and bfloat16 are computed through float32), an integer operand (and a
// tfloat32 or low-precision float one) is converted to float32 first; IsNan and IsInf
// give a boolean.
enum class MathFn : uint8_t {
  Exp, Log, Sqrt, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh, Acosh, Atanh,
  Ceil, Floor, Trunc, IsNan, IsInf,
};
const char* math_fn_name(MathFn fn);  // "exp", "isnan", ... (Python's math.<name>)
bool math_fn_from_name(const std::string& name, MathFn* out);
// The function on a double (IsNan / IsInf: 1.0 or 0.0). Constant folding and the
// interpreter both compute through this.
double math_fn_eval(MathFn fn, double x);

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  DataType dtype;
  // Const
  int64_t int_value = 0;
  double float_value = 0.0;
  // Var
  int var_id = -1;
  std::string name;
  // BlockIdx
  int axis = 0;
  // Unary / Binary
  UnaryOp unary_op = UnaryOp::Neg;
  BinaryOp binary_op = BinaryOp::Add;
  // Math
  MathFn math_fn = MathFn::Exp;
  // operands: Unary/Cast/Math use a; Binary uses a, b; Select uses cond(c), a, b
  Expr a, b, c;
  // ElementAddr / ElementLoad
  Tensor tensor;
  std::vector<Expr> indices;

  bool is_const() const { return kind == ExprKind::Const; }
  bool is_var() const { return kind == ExprKind::Var; }
};

// Constructors. They fold constants and check operand types (throw ScriptError).
Expr make_int(int64_t v, DataType dtype = dtypes::int32);
Expr make_float(double v, DataType dtype = dtypes::float32);
Expr make_bool(bool v);
Expr make_var(const std::string& name, DataType dtype);  // fresh id every call
Expr make_block_idx(int axis);
Expr make_unary(UnaryOp op, Expr a);
Expr make_binary(BinaryOp op, Expr a, Expr b);
Expr make_select(Expr cond, Expr a, Expr b);
Expr make_cast(Expr a, DataType dtype);
// fn(a). TypeError naming the function for a pointer or boolean operand; a constant
// operand folds.
Expr make_math(MathFn fn, Expr a);
Expr make_element_addr(Tensor t, std::vector<Expr> indices);
Expr make_element_load(Tensor t, std::vector<Expr> indices);

// Constant-evaluation helpers.
bool is_const_int(const Expr& e, int64_t* out = nullptr);
std::string expr_str(const Expr& e);  // readable infix text, as the IR printer prints it

}  // namespace tilus
