#include "transforms/host_launch_shape.h"

#include <unordered_set>

#include "ir/functor.h"
#include "ir/launch_limits.h"

namespace tilus {

namespace {
struct Assigned : StmtVisitor {
  std::unordered_set<int> vars;
  void visit_assign(const Stmt& s) override { vars.insert(s->var->var_id); }
};
}  // namespace

HostEvaluator::HostEvaluator(const Program& program) : program_(program) {
  for (size_t i = 0; i < program.params.size(); ++i) param_index_[program.params[i]->var_id] = static_cast<int>(i);
  // Variables declared at the top level and never reassigned (m_blocks = cdiv(m, 64))
  // may size a workspace: substitute their values.
  Assigned assigned_walk;
  assigned_walk.visit_stmt(program.body);
  const std::unordered_set<int>& assigned = assigned_walk.vars;
  for_each_top_level(program.body, [&](const StmtNode& s) {
    if (s.kind == StmtKind::Declare && s.value && !assigned.count(s.var->var_id))
      top_declares_[s.var->var_id] = s.value;
  });
}

bool HostEvaluator::eval(const Expr& e, const std::vector<HostArg>& args, int64_t& out) const {
  int64_t a, b;
  switch (e->kind) {
    case ExprKind::Const:
      if (e->dtype.is_float()) return false;
      out = e->int_value;
      return true;
    case ExprKind::Var: {
      auto p = param_index_.find(e->var_id);
      if (p != param_index_.end()) {
        if (e->dtype.is_float() || e->dtype.is_pointer) return false;
        out = args[p->second].i;
        return true;
      }
      auto d = top_declares_.find(e->var_id);
      return d != top_declares_.end() && eval(d->second, args, out);
    }
    case ExprKind::Cast:
      if (e->dtype.is_pointer || !eval(e->a, args, a)) return false;
      switch (e->dtype.kind) {
        case ScalarKind::Int32: out = static_cast<int32_t>(a); break;
        case ScalarKind::UInt32: out = static_cast<uint32_t>(a); break;
        case ScalarKind::Bool: out = a != 0; break;
        case ScalarKind::Int8:
        case ScalarKind::Int16:
        case ScalarKind::Int64:
        case ScalarKind::UInt8:
        case ScalarKind::UInt16:
        case ScalarKind::UInt64:
        case ScalarKind::Float16:
        case ScalarKind::BFloat16:
        case ScalarKind::Float32:
        case ScalarKind::TFloat32:
        case ScalarKind::Float64: out = a; break;
        TILUS_LOWP_INT_CASES: out = wrap_int(a, e->dtype.kind); break;
        TILUS_LOWP_FLOAT_CASES: return false;  // not an integer the host can size with
      }
      return true;
    case ExprKind::Select:
      if (!eval(e->c, args, a)) return false;
      return eval(a ? e->a : e->b, args, out);
    case ExprKind::Binary:
      if (!eval(e->a, args, a) || !eval(e->b, args, b)) return false;
      switch (e->binary_op) {
        case BinaryOp::Add: out = a + b; break;
        case BinaryOp::Sub: out = a - b; break;
        case BinaryOp::Mul: out = a * b; break;
        case BinaryOp::Div:
          if (b == 0) return false;
          out = a / b;
          break;
        case BinaryOp::Mod:
          if (b == 0) return false;
          out = a % b;
          break;
        case BinaryOp::Min: out = a < b ? a : b; break;
        case BinaryOp::Max: out = a > b ? a : b; break;
        case BinaryOp::Lt: out = a < b; break;
        case BinaryOp::Le: out = a <= b; break;
        case BinaryOp::Gt: out = a > b; break;
        case BinaryOp::Ge: out = a >= b; break;
        case BinaryOp::Eq: out = a == b; break;
        case BinaryOp::Ne: out = a != b; break;
        case BinaryOp::And: out = a && b; break;
        case BinaryOp::Or: out = a || b; break;
        case BinaryOp::BitAnd: out = a & b; break;
        case BinaryOp::BitXor: out = a ^ b; break;
        case BinaryOp::BitOr: out = a | b; break;
        case BinaryOp::Shl:
        case BinaryOp::Shr: out = shift_int(e->binary_op == BinaryOp::Shl, a, b, e->dtype.kind); break;
      }
      // Wrapped around: the interpreter's evaluator reports it with the script line.
      if (e->dtype == dtypes::int32 && out != static_cast<int32_t>(out)) return false;
      return true;
    case ExprKind::BlockIdx:
    case ExprKind::Unary:
    case ExprKind::ElementAddr:
    case ExprKind::ElementLoad:
    case ExprKind::Math: return false;  // floats and booleans do not size a launch
  }
  return false;
}

bool HostEvaluator::evaluable(const Expr& e) const {
  if (!e) return false;
  switch (e->kind) {
    case ExprKind::Const: return !e->dtype.is_float();
    case ExprKind::Var: {
      if (e->dtype.is_float() || e->dtype.is_pointer) return false;
      if (param_index_.count(e->var_id)) return true;
      auto d = top_declares_.find(e->var_id);
      return d != top_declares_.end() && evaluable(d->second);
    }
    case ExprKind::Cast: return !e->dtype.is_pointer && !e->dtype.is_float() && evaluable(e->a);
    case ExprKind::Select: return evaluable(e->c) && evaluable(e->a) && evaluable(e->b);
    case ExprKind::Binary: return evaluable(e->a) && evaluable(e->b);
    case ExprKind::BlockIdx:
    case ExprKind::Unary:
    case ExprKind::ElementAddr:
    case ExprKind::ElementLoad:
    case ExprKind::Math: return false;  // floats and booleans do not size a launch
  }
  return false;
}

int HostEvaluator::pointer_param(const Expr& e) const {
  // A view over a void_p parameter holds the parameter cast to a typed pointer.
  if (e && e->kind == ExprKind::Cast && e->a->dtype.is_void) return pointer_param(e->a);
  if (!e || e->kind != ExprKind::Var || !e->dtype.is_pointer) return -1;
  auto p = param_index_.find(e->var_id);
  if (p != param_index_.end()) return p->second;
  auto d = top_declares_.find(e->var_id);
  return d == top_declares_.end() ? -1 : pointer_param(d->second);
}

bool HostEvaluator::launch_shape(const std::vector<HostArg>& args, LaunchShape& shape) const {
  for (int d = 0; d < 3; ++d)
    if (!eval(program_.grid[d], args, shape.grid[d]) || shape.grid[d] < 0 || shape.grid[d] > max_grid_size(d))
      return false;  // the Python path refuses it at the script line
  shape.workspace_bytes.resize(program_.workspaces.size());
  for (size_t w = 0; w < program_.workspaces.size(); ++w) {
    const Tensor& t = program_.workspaces[w].tensor;
    int64_t bits = t->dtype.bits(), v;
    for (auto& s : t->global_shape) {
      if (!eval(s, args, v) || v < 0) return false;
      bits *= v;
    }
    shape.workspace_bytes[w] = storage_bytes(bits);
  }
  return true;
}

}  // namespace tilus
