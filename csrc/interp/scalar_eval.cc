// Scalar expression evaluation, and the launch shape (grid, workspace sizes) that is
// evaluated from the parameters alone.
#include <cmath>
#include <limits>

#include "interp/buffer.h"
#include "interp/state.h"
#include "ir/launch_limits.h"
#include "support/error.h"

namespace tilus::interp {

Value convert(Value v, DataType from, DataType to) {
  if (from == to) return v;
  if (to.is_float()) {
    double d;
    if (from.is_float()) d = v.f;
    else if (from.kind == ScalarKind::UInt64 && !from.is_pointer)
      d = static_cast<double>(static_cast<uint64_t>(v.i));
    else d = static_cast<double>(v.i);
    return Value::of_float(round_float(d, to.kind));
  }
  if (to.is_pointer) return Value::of_int(from.is_float() ? 0 : v.i);
  if (to.is_bool()) return Value::of_int(from.is_float() ? v.f != 0.0 : v.i != 0);
  if (from.is_float()) return Value::of_int(float_to_int(v.f, to.kind));
  return Value::of_int(wrap_int(v.i, to.kind));
}

bool truthy(Value v, DataType t) { return t.is_float() ? v.f != 0.0 : v.i != 0; }

int64_t as_int64(Value v, DataType t) {
  return t.is_float() ? float_to_int(v.f, ScalarKind::Int64) : v.i;
}

int64_t int_binary(BinaryOp op, int64_t x, int64_t y, ScalarKind k) {
  const bool is_unsigned = k == ScalarKind::UInt64;
  auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  switch (op) {
    // Arithmetic in uint64 so that overflow wraps instead of being undefined.
    case BinaryOp::Add: return wrap_int(static_cast<int64_t>(ux + uy), k);
    case BinaryOp::Sub: return wrap_int(static_cast<int64_t>(ux - uy), k);
    case BinaryOp::Mul: return wrap_int(static_cast<int64_t>(ux * uy), k);
    case BinaryOp::Div:
    case BinaryOp::Mod: {
      if (y == 0) throw ScriptError("ZeroDivisionError", "integer division or modulo by zero");
      if (is_unsigned)
        return static_cast<int64_t>(op == BinaryOp::Div ? ux / uy : ux % uy);
      if (y == -1)  // INT_MIN / -1 traps on x86; the GPU wraps
        return op == BinaryOp::Div ? wrap_int(static_cast<int64_t>(0 - ux), k) : 0;
      return wrap_int(op == BinaryOp::Div ? x / y : x % y, k);
    }
    case BinaryOp::Min: return is_unsigned ? static_cast<int64_t>(ux < uy ? ux : uy) : (x < y ? x : y);
    case BinaryOp::Max: return is_unsigned ? static_cast<int64_t>(ux > uy ? ux : uy) : (x > y ? x : y);
    case BinaryOp::Lt: return is_unsigned ? ux < uy : x < y;
    case BinaryOp::Le: return is_unsigned ? ux <= uy : x <= y;
    case BinaryOp::Gt: return is_unsigned ? ux > uy : x > y;
    case BinaryOp::Ge: return is_unsigned ? ux >= uy : x >= y;
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::And: return x != 0 && y != 0;
    case BinaryOp::Or: return x != 0 || y != 0;
    case BinaryOp::BitAnd: return wrap_int(static_cast<int64_t>(ux & uy), k);
    case BinaryOp::BitXor: return wrap_int(static_cast<int64_t>(ux ^ uy), k);
    case BinaryOp::BitOr: return wrap_int(static_cast<int64_t>(ux | uy), k);
    case BinaryOp::Shl:
    case BinaryOp::Shr: return shift_int(op == BinaryOp::Shl, x, y, k);
  }
  return 0;
}

double float_binary(BinaryOp op, double x, double y) {
  switch (op) {
    case BinaryOp::Add: return x + y;
    case BinaryOp::Sub: return x - y;
    case BinaryOp::Mul: return x * y;
    case BinaryOp::Div: return x / y;
    case BinaryOp::Mod: return std::fmod(x, y);
    case BinaryOp::Min: return std::fmin(x, y);
    case BinaryOp::Max: return std::fmax(x, y);
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Le: return x <= y;
    case BinaryOp::Gt: return x > y;
    case BinaryOp::Ge: return x >= y;
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::And: return x != 0.0 && y != 0.0;
    case BinaryOp::Or: return x != 0.0 || y != 0.0;
    case BinaryOp::BitAnd:
    case BinaryOp::BitXor:
    case BinaryOp::BitOr:
    case BinaryOp::Shl:
    case BinaryOp::Shr: break;  // integer-only (checked in make_binary)
  }
  return 0.0;
}

namespace {

std::string index_str(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

}  // namespace

uintptr_t element_address(BlockState& st, const ExprNode* e, const TensorValue*& tv,
                          std::vector<int64_t>& index) {
  TILUS_CHECK(!st.launch_only, "ValueError", "the grid and workspace shapes may only use the ",
              "kernel's parameters, not elements of ", e->tensor->name);
  const TensorValue& t = st.tensor(e->tensor.get());
  TILUS_CHECK(t.defined, "RuntimeError", "global tensor ", e->tensor->name,
              " is used before its definition ran");
  index.resize(e->indices.size());
  int64_t offset = 0;
  for (size_t d = 0; d < e->indices.size(); ++d) {
    index[d] = eval_int(st, e->indices[d]);
    offset += index[d] * (d < t.gstrides.size() ? t.gstrides[d] : 0);
  }
  tv = &t;
  return t.base + static_cast<uintptr_t>(offset * element_bytes(t.dtype));
}

int64_t eval_int(BlockState& st, const Expr& e) { return as_int64(eval(st, e.get()), e->dtype); }

Value eval(BlockState& st, const ExprNode* e) {
  TILUS_ASSERT(e != nullptr, "null expression");
  switch (e->kind) {
    case ExprKind::Const:
      return e->dtype.is_float() ? Value::of_float(e->float_value) : Value::of_int(e->int_value);
    case ExprKind::Var: {
      if (st.launch_only) {
        const Prepared& p = st.launch->prep;
        auto it = p.var_slot.find(e->var_id);
        if (it == p.var_slot.end() || !p.var_is_param[it->second]) {
          auto def = p.launch_defs.find(e->var_id);
          TILUS_CHECK(def != p.launch_defs.end(), "ValueError",
                      "the grid and workspace shapes may only use the kernel's parameters and "
                      "constants, but they use '", e->name, "'");
          return convert(eval(st, def->second), def->second->dtype, e->dtype);
        }
      }
      return st.var(e);
    }
    case ExprKind::BlockIdx:
      TILUS_CHECK(!st.launch_only, "ValueError",
                  "the grid and workspace shapes may not depend on blockIdx");
      return Value::of_int(st.block_idx[e->axis]);
    case ExprKind::Unary: {
      Value a = eval(st, e->a.get());
      if (e->unary_op == UnaryOp::Not) return Value::of_int(!truthy(a, e->a->dtype));
      if (e->dtype.is_float()) return Value::of_float(-convert(a, e->a->dtype, e->dtype).f);
      Value x = convert(a, e->a->dtype, e->dtype);
      return Value::of_int(wrap_int(static_cast<int64_t>(0 - static_cast<uint64_t>(x.i)), e->dtype.kind));
    }
    case ExprKind::Binary: {
      DataType ta = e->a->dtype, tb = e->b->dtype;
      Value a = eval(st, e->a.get());
      // && and || short-circuit, as in C: `i < n && x[i] > 0` must not read x[n].
      if (is_logical(e->binary_op)) {
        bool x = truthy(a, ta);
        if (e->binary_op == BinaryOp::And && !x) return Value::of_int(0);
        if (e->binary_op == BinaryOp::Or && x) return Value::of_int(1);
        return Value::of_int(truthy(eval(st, e->b.get()), tb));
      }
      Value b = eval(st, e->b.get());
      DataType t = ta;
      if (ta != tb) {
        if (ta.is_pointer || tb.is_pointer) {
          t = dtypes::uint64;
        } else {
          t = promote(ta, tb);
        }
        a = convert(a, ta, t);
        b = convert(b, tb, t);
      }
      if (t.is_float()) {
        double r = float_binary(e->binary_op, a.f, b.f);
        if (is_comparison(e->binary_op)) return Value::of_int(r != 0.0);
        return Value::of_float(round_float(r, e->dtype.kind));
      }
      int64_t r = int_binary(e->binary_op, a.i, b.i, t.is_pointer ? ScalarKind::UInt64 : t.kind);
      // A grid or workspace size that wrapped around is garbage, not a size: say where.
      if (st.launch_only && !t.is_pointer && t.kind != ScalarKind::UInt64 && !is_comparison(e->binary_op) &&
          r != int_binary(e->binary_op, a.i, b.i, ScalarKind::Int64))
        throw ScriptError("ValueError",
                          cat(expr_str(e->a), " ", binary_op_symbol(e->binary_op), " ",
                              expr_str(e->b), " overflows ", t.name(), " (", a.i, " ",
                              binary_op_symbol(e->binary_op), " ", b.i,
                              "); declare the parameters it uses as int64 for sizes this large"));
      if (!is_comparison(e->binary_op) && e->dtype != t) return convert(Value::of_int(r), t, e->dtype);
      return Value::of_int(r);
    }
    case ExprKind::Select: {
      bool c = truthy(eval(st, e->c.get()), e->c->dtype);
      const ExprNode* pick = c ? e->a.get() : e->b.get();
      return convert(eval(st, pick), pick->dtype, e->dtype);
    }
    case ExprKind::Cast:
      return convert(eval(st, e->a.get()), e->a->dtype, e->dtype);
    case ExprKind::Math: {
      // In double, rounded once to the result type: float16 and bfloat16 match the
      // GPU's float32 function rounded to them, float32 its function within its error.
      const double x = convert(eval(st, e->a.get()), e->a->dtype, dtypes::float64).f;
      const double r = math_fn_eval(e->math_fn, x);
      if (e->dtype.is_bool()) return Value::of_int(r != 0.0);
      return Value::of_float(round_float(r, e->dtype.kind));
    }
    case ExprKind::ElementAddr: {
      const TensorValue* tv;
      std::vector<int64_t> index;
      return Value::of_int(static_cast<int64_t>(element_address(st, e, tv, index)));
    }
    case ExprKind::ElementLoad: {
      const TensorValue* tv;
      std::vector<int64_t> index;
      uintptr_t addr = element_address(st, e, tv, index);
      for (size_t d = 0; d < index.size() && d < tv->gshape.size(); ++d)
        TILUS_CHECK(index[d] >= 0 && index[d] < tv->gshape[d], "RuntimeError", "index ",
                    index_str(index), " is out of bounds for global tensor ", tv->node->name,
                    " of shape ", index_str(tv->gshape));
      size_t bytes = static_cast<size_t>(element_bytes(tv->dtype));
      check_global_access(*st.launch, addr, bytes, "reading an element", tv, index);
      if (st.launch->debug) global_scalar_read(st, *tv, addr, index, st.current);
      const void* p = reinterpret_cast<const void*>(addr);
      if (e->dtype.is_float()) return Value::of_float(load_f(p, e->dtype.kind));
      return Value::of_int(load_i(p, e->dtype.kind));
    }
  }
  TILUS_ASSERT(false, "unknown expression kind");
  return {};
}

}  // namespace tilus::interp

namespace tilus::interp {

LaunchShape launch_shape(const Launch& l) {
  BlockState st;
  st.reset(l, {0, 0, 0});
  st.launch_only = true;
  LaunchShape shape;
  for (int axis = 0; axis < 3; ++axis) {
    const Expr& g = l.program->grid[axis];
    if (!g) continue;
    try {
      int64_t n = eval_int(st, g);
      TILUS_CHECK(n >= 0, "ValueError", "the grid's ", "xyz"[axis], " size ", expr_str(g),
                  " evaluates to ", n, ", which is negative");
      TILUS_CHECK(n <= max_grid_size(axis), "ValueError", "the grid's ", "xyz"[axis], " size ",
                  expr_str(g), " evaluates to ", n, ", more than a CUDA launch takes (",
                  max_grid_size(axis), ")");
      shape.grid[axis] = n;
    } catch (ScriptError& e) {
      e.set_loc_if_unknown(l.program->grid_loc);
      throw;
    }
  }
  for (const Workspace& w : l.program->workspaces) {
    try {
      // counted in bits (sub-byte types), rounded up to bytes once at the end
      int64_t bits = w.tensor->dtype.bits();
      for (const Expr& d : w.tensor->global_shape) {
        int64_t n = eval_int(st, d);
        TILUS_CHECK(n >= 0, "ValueError", "global_tensor ", w.tensor->name, ": dimension ",
                    expr_str(d), " evaluates to ", n, ", which is negative");
        TILUS_CHECK(n == 0 || bits <= std::numeric_limits<int64_t>::max() / n, "ValueError",
                    "global_tensor ", w.tensor->name, ": its size in bits overflows int64");
        bits *= n;
      }
      shape.workspace_bytes.push_back(storage_bytes(bits));
    } catch (ScriptError& e) {
      e.set_loc_if_unknown(w.loc);
      throw;
    }
  }
  return shape;
}

}  // namespace tilus::interp
