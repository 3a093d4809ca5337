#include "transforms/ring_counters.h"

#include "ir/functor.h"

namespace tilus {

namespace {

// v = (v + 1) % S or v = (1 + v) % S: S, else 0.
int64_t ring_modulus(const Expr& value, int var) {
  if (!value || value->kind != ExprKind::Binary || value->binary_op != BinaryOp::Mod) return 0;
  const Expr &sum = value->a, &m = value->b;
  if (!m->is_const() || m->int_value < 1) return 0;
  if (!sum || sum->kind != ExprKind::Binary || sum->binary_op != BinaryOp::Add) return 0;
  auto is_v = [&](const Expr& e) { return e->is_var() && e->var_id == var; };
  auto is_1 = [&](const Expr& e) { return e->is_const() && e->int_value == 1; };
  return ((is_v(sum->a) && is_1(sum->b)) || (is_1(sum->a) && is_v(sum->b))) ? m->int_value : 0;
}

struct Uses {
  int declares = 0, assigns = 0;
  Expr start;
  const StmtNode* declare_loop = nullptr;  // innermost loop body around the declaration
  RingCounter ring;
};

// loop_body: the innermost loop body around the statement, when that body is a Seq
// (the only place a ring update is recognised).
struct Walk : StmtVisitor {
  std::unordered_map<int, Uses> uses;
  const StmtNode* loop_body = nullptr;

  void visit_seq(const Stmt& s) override {
    for (size_t j = 0; j < s->seq.size(); ++j) {
      const Stmt& c = s->seq[j];
      if (c && c->kind == StmtKind::Assign && s.get() == loop_body) {
        Uses& u = uses[c->var->var_id];
        ++u.assigns;
        u.ring = {ring_modulus(c->value, c->var->var_id), 0, s.get(), j};
        continue;
      }
      visit_stmt(c);
    }
  }
  void visit_declare(const Stmt& s) override {
    Uses& u = uses[s->var->var_id];
    ++u.declares;
    u.start = s->value;
    u.declare_loop = loop_body;
  }
  void visit_assign(const Stmt& s) override { uses[s->var->var_id].assigns += 2; }  // not a ring update
  void visit_for(const Stmt& s) override {
    uses[s->var->var_id].assigns += 2;
    loop(s->body);
  }
  void visit_while(const Stmt& s) override { loop(s->body); }
  void loop(const Stmt& body) {
    const StmtNode* outer = loop_body;
    loop_body = body && body->kind == StmtKind::Seq ? body.get() : nullptr;
    visit_stmt(body);
    loop_body = outer;
  }
};

}  // namespace

std::unordered_map<int, RingCounter> find_ring_counters(const Stmt& body) {
  Walk walk;
  walk.visit_stmt(body);
  std::unordered_map<int, RingCounter> rings;
  for (auto& [var, u] : walk.uses) {
    if (u.declares != 1 || u.assigns != 1 || u.ring.modulus < 1 || !u.start || !u.start->is_const()) continue;
    if (u.declare_loop == u.ring.body) continue;  // reset every iteration
    if (u.start->int_value < 0 || u.start->int_value >= u.ring.modulus) continue;
    u.ring.start = u.start->int_value;
    u.ring.declared_in = u.declare_loop;
    rings[var] = u.ring;
  }
  return rings;
}

bool stages_differ(const std::unordered_map<int, RingCounter>& rings, const StageOrigin& a,
                   const StageOrigin& b) {
  const RingCounter &ra = rings.at(a.ring_var), &rb = rings.at(b.ring_var);
  // same loop, same period, reset together (declared in the same enclosing loop body)
  if (ra.body != rb.body || ra.modulus != rb.modulus || ra.declared_in != rb.declared_in) return false;
  // In one iteration ring x holds x0 + i (+1 once past its update), all mod S.
  const int64_t va = ra.start + (a.position > ra.update ? 1 : 0);
  const int64_t vb = rb.start + (b.position > rb.update ? 1 : 0);
  return ((va - vb) % ra.modulus + ra.modulus) % ra.modulus != 0;
}

}  // namespace tilus
