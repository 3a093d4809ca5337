#include "transforms/divisibility.h"

#include <numeric>

#include "ir/functor.h"
#include "transforms/vector_extents.h"

namespace tilus {

namespace {

int64_t gcd0(int64_t a, int64_t b) { return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b); }

// Collects every (var id, assigned expr) pair of the program.
class AssignedValues : public StmtVisitor {
 public:
  std::vector<std::pair<int, Expr>> out;

 protected:
  void visit_declare(const Stmt& s) override {
    if (s->value) out.push_back({s->var->var_id, s->value});
  }
  void visit_assign(const Stmt& s) override { out.push_back({s->var->var_id, s->value}); }
  void visit_for(const Stmt& s) override {
    out.push_back({s->var->var_id, s->start});
    out.push_back({s->var->var_id, s->step});
    StmtVisitor::visit_for(s);
  }
};

}  // namespace

Divisibility::Divisibility(const Program& program, const std::vector<int>& assumed) {
  for (auto& p : program.params) vars_[p->var_id] = 1;
  for (int k : assumed) vars_[program.params.at(k)->var_id] = kVectorExtentMultiple;
  AssignedValues collect;
  collect.visit_stmt(program.body);
  const std::vector<std::pair<int, Expr>>& assigns = collect.out;
  // Start from "any" (0) and lower to the gcd until nothing changes: assignments only
  // ever lower a variable's divisibility, so this terminates.
  for (auto& [id, e] : assigns) vars_.emplace(id, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [id, e] : assigns) {
      int64_t d = gcd0(vars_[id], of(e));
      if (d != vars_[id]) {
        vars_[id] = d;
        changed = true;
      }
    }
  }
}

int64_t Divisibility::of(const Expr& e) const {
  if (!e->dtype.is_integer()) return 1;
  switch (e->kind) {
    case ExprKind::Const: return e->int_value < 0 ? -e->int_value : e->int_value;
    case ExprKind::Var: {
      auto it = vars_.find(e->var_id);
      return it == vars_.end() ? 1 : it->second;
    }
    case ExprKind::Cast: return e->a->dtype.is_integer() ? of(e->a) : 1;
    case ExprKind::Unary: return e->unary_op == UnaryOp::Neg ? of(e->a) : 1;
    case ExprKind::Binary: {
      int64_t a = of(e->a), b = of(e->b);
      switch (e->binary_op) {
        case BinaryOp::Add:
        case BinaryOp::Sub:
        case BinaryOp::Min:
        case BinaryOp::Max: return gcd0(a, b);
        case BinaryOp::Mul: return (a == 0 || b == 0) ? 0 : a * b;
        case BinaryOp::Div: {
          int64_t c;
          // (x * k) / c is a multiple of k / c when c divides k.
          if (is_const_int(e->b, &c) && c > 0 && a != 0 && a % c == 0) return a / c;
          return 1;
        }
        case BinaryOp::Mod: {
          int64_t c;
          if (is_const_int(e->b, &c) && c > 0) return gcd0(a, c);
          return 1;
        }
        case BinaryOp::Shl: return a & -a;  // x's power of two survives (and the wrap-around)
        case BinaryOp::Shr: return 1;
        case BinaryOp::BitAnd:
        case BinaryOp::BitXor:
        case BinaryOp::BitOr: {
          // both multiples of 2^j -> so is the result; keep the common power of two
          int64_t g = gcd0(a, b);
          if (g == 0) return 0;
          return g & -g;
        }
        case BinaryOp::Lt:
        case BinaryOp::Le:
        case BinaryOp::Gt:
        case BinaryOp::Ge:
        case BinaryOp::Eq:
        case BinaryOp::Ne:
        case BinaryOp::And:
        case BinaryOp::Or: return 1;
      }
      return 1;
    }
    case ExprKind::Select: return gcd0(of(e->a), of(e->b));
    case ExprKind::BlockIdx:
    case ExprKind::ElementAddr:
    case ExprKind::ElementLoad:
    case ExprKind::Math: return 1;
  }
  return 1;
}

bool Divisibility::is_multiple(const Expr& e, int64_t n) const {
  int64_t d = of(e);
  return d == 0 || d % n == 0;
}

}  // namespace tilus
