#include "ir/expr_compare.h"

#include "ir/functor.h"

namespace tilus {

bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case ExprKind::Const: return a->int_value == b->int_value && a->float_value == b->float_value;
    case ExprKind::Var: return a->var_id == b->var_id;
    case ExprKind::BlockIdx: return a->axis == b->axis;
    case ExprKind::Unary: return a->unary_op == b->unary_op && same_expr(a->a, b->a);
    case ExprKind::Binary:
      return a->binary_op == b->binary_op && same_expr(a->a, b->a) && same_expr(a->b, b->b);
    case ExprKind::Select: return same_expr(a->c, b->c) && same_expr(a->a, b->a) && same_expr(a->b, b->b);
    case ExprKind::Cast: return same_expr(a->a, b->a);
    case ExprKind::Math: return a->math_fn == b->math_fn && same_expr(a->a, b->a);
    case ExprKind::ElementAddr:
    // A load from global memory may differ between two evaluations.
    case ExprKind::ElementLoad: return false;
  }
  return false;
}

bool mentions(const Expr& e, const std::unordered_set<int>& vars) {
  struct Find : ExprVisitor {
    const std::unordered_set<int>& vars;
    bool found = false;
    explicit Find(const std::unordered_set<int>& v) : vars(v) {}
    void visit_var(const Expr& e) override { found |= vars.count(e->var_id) > 0; }
  } f(vars);
  f.visit_expr(e);
  return f.found;
}

std::unordered_set<int> written_vars(const Stmt& s) {
  struct Written : StmtVisitor {
    std::unordered_set<int> vars;
    void visit_declare(const Stmt& s) override { vars.insert(s->var->var_id); }
    void visit_assign(const Stmt& s) override { vars.insert(s->var->var_id); }
    void visit_for(const Stmt& s) override {
      vars.insert(s->var->var_id);
      StmtVisitor::visit_for(s);
    }
  } w;
  w.visit_stmt(s);
  return w.vars;
}

}  // namespace tilus
