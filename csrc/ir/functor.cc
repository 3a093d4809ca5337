#include "ir/functor.h"

namespace tilus {

// ------------------------------------------------------------------ ExprVisitor

void ExprVisitor::visit_expr(const Expr& e) {
  if (!e) return;
  switch (e->kind) {
    case ExprKind::Const: return visit_const(e);
    case ExprKind::Var: return visit_var(e);
    case ExprKind::BlockIdx: return visit_block_idx(e);
    case ExprKind::Unary: return visit_unary(e);
    case ExprKind::Binary: return visit_binary(e);
    case ExprKind::Select: return visit_select(e);
    case ExprKind::Cast: return visit_cast(e);
    case ExprKind::ElementAddr: return visit_element_addr(e);
    case ExprKind::ElementLoad: return visit_element_load(e);
    case ExprKind::Math: return visit_math(e);
  }
}

void ExprVisitor::visit_binary(const Expr& e) {
  visit_expr(e->a);
  visit_expr(e->b);
}

void ExprVisitor::visit_select(const Expr& e) {
  visit_expr(e->c);
  visit_expr(e->a);
  visit_expr(e->b);
}

void ExprVisitor::visit_element_addr(const Expr& e) {
  for (const Expr& i : e->indices) visit_expr(i);
}

void ExprVisitor::visit_element_load(const Expr& e) {
  for (const Expr& i : e->indices) visit_expr(i);
}

// ------------------------------------------------------------------ StmtVisitor

void StmtVisitor::visit_stmt(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::Seq: return visit_seq(s);
    case StmtKind::Declare: return visit_declare(s);
    case StmtKind::Assign: return visit_assign(s);
    case StmtKind::For: return visit_for(s);
    case StmtKind::If: return visit_if(s);
    case StmtKind::While: return visit_while(s);
    case StmtKind::ThreadGroup: return visit_thread_group(s);
    case StmtKind::Break: return visit_break(s);
    case StmtKind::Continue: return visit_continue(s);
    case StmtKind::Inst: return visit_inst(s);
  }
}

void StmtVisitor::visit_seq(const Stmt& s) {
  for (const Stmt& c : s->seq) visit_stmt(c);
}

void StmtVisitor::visit_declare(const Stmt& s) {
  visit_stmt_expr(s->var);
  if (s->value) visit_stmt_expr(s->value);
}

void StmtVisitor::visit_assign(const Stmt& s) {
  visit_stmt_expr(s->var);
  visit_stmt_expr(s->value);
}

void StmtVisitor::visit_for(const Stmt& s) {
  visit_stmt_expr(s->var);
  visit_stmt_expr(s->start);
  visit_stmt_expr(s->end);
  visit_stmt_expr(s->step);
  visit_stmt(s->body);
}

void StmtVisitor::visit_if(const Stmt& s) {
  visit_stmt_expr(s->cond);
  visit_stmt(s->then_body);
  visit_stmt(s->else_body);
}

void StmtVisitor::visit_while(const Stmt& s) {
  visit_stmt_expr(s->cond);
  visit_stmt(s->body);
}

void StmtVisitor::visit_thread_group(const Stmt& s) { visit_stmt(s->body); }

void StmtVisitor::visit_inst(const Stmt& s) {
  for (const Expr& a : s->inst->args) visit_stmt_expr(a);
}

// ------------------------------------------------------------------ ExprMutator

Expr ExprMutator::mutate_expr(const Expr& e) {
  if (!e) return e;
  switch (e->kind) {
    case ExprKind::Const: return mutate_const(e);
    case ExprKind::Var: return mutate_var(e);
    case ExprKind::BlockIdx: return mutate_block_idx(e);
    case ExprKind::Unary: return mutate_unary(e);
    case ExprKind::Binary: return mutate_binary(e);
    case ExprKind::Select: return mutate_select(e);
    case ExprKind::Cast: return mutate_cast(e);
    case ExprKind::ElementAddr: return mutate_element_addr(e);
    case ExprKind::ElementLoad: return mutate_element_load(e);
    case ExprKind::Math: return mutate_math(e);
  }
  return e;
}

// Every operand slot (a, b, c, indices) is mutated: the unused ones are null and stay so.
Expr ExprMutator::with_operands(const Expr& e) {
  Expr a = mutate_expr(e->a), b = mutate_expr(e->b), c = mutate_expr(e->c);
  bool changed = a != e->a || b != e->b || c != e->c;
  std::vector<Expr> indices;
  indices.reserve(e->indices.size());
  for (const Expr& i : e->indices) {
    indices.push_back(mutate_expr(i));
    changed = changed || indices.back() != i;
  }
  if (!changed) return e;
  auto copy = std::make_shared<ExprNode>(*e);
  copy->a = std::move(a);
  copy->b = std::move(b);
  copy->c = std::move(c);
  copy->indices = std::move(indices);
  return copy;
}

Expr ExprMutator::mutate_unary(const Expr& e) { return with_operands(e); }
Expr ExprMutator::mutate_binary(const Expr& e) { return with_operands(e); }
Expr ExprMutator::mutate_select(const Expr& e) { return with_operands(e); }
Expr ExprMutator::mutate_cast(const Expr& e) { return with_operands(e); }
Expr ExprMutator::mutate_math(const Expr& e) { return with_operands(e); }
Expr ExprMutator::mutate_element_addr(const Expr& e) { return with_operands(e); }
Expr ExprMutator::mutate_element_load(const Expr& e) { return with_operands(e); }

// ------------------------------------------------------------------ StmtMutator

Stmt StmtMutator::mutate_stmt(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::Seq: return mutate_seq(s);
    case StmtKind::Declare: return mutate_declare(s);
    case StmtKind::Assign: return mutate_assign(s);
    case StmtKind::For: return mutate_for(s);
    case StmtKind::If: return mutate_if(s);
    case StmtKind::While: return mutate_while(s);
    case StmtKind::ThreadGroup: return mutate_thread_group(s);
    case StmtKind::Break: return mutate_break(s);
    case StmtKind::Continue: return mutate_continue(s);
    case StmtKind::Inst: return mutate_inst(s);
  }
  return s;
}

Stmt StmtMutator::rebuilt(const Stmt& s, const Expr& var, const Expr& value, const Expr& start,
                          const Expr& end, const Expr& step, const Expr& cond, const Stmt& then_body,
                          const Stmt& else_body, const Stmt& body) {
  if (var == s->var && value == s->value && start == s->start && end == s->end && step == s->step &&
      cond == s->cond && then_body == s->then_body && else_body == s->else_body && body == s->body)
    return s;
  auto copy = std::make_shared<StmtNode>(*s);
  copy->var = var;
  copy->value = value;
  copy->start = start;
  copy->end = end;
  copy->step = step;
  copy->cond = cond;
  copy->then_body = then_body;
  copy->else_body = else_body;
  copy->body = body;
  return copy;
}

Stmt StmtMutator::mutate_seq(const Stmt& s) {
  std::vector<Stmt> seq;
  seq.reserve(s->seq.size());
  bool changed = false;
  for (const Stmt& c : s->seq) {
    Stmt m = mutate_stmt(c);
    changed = changed || m != c;
    if (m) seq.push_back(std::move(m));
  }
  if (!changed) return s;
  auto copy = std::make_shared<StmtNode>(*s);
  copy->seq = std::move(seq);
  return copy;
}

Stmt StmtMutator::mutate_declare(const Stmt& s) {
  return rebuilt(s, mutate_stmt_expr(s->var), s->value ? mutate_stmt_expr(s->value) : s->value, s->start,
                 s->end, s->step, s->cond, s->then_body, s->else_body, s->body);
}

Stmt StmtMutator::mutate_assign(const Stmt& s) {
  return rebuilt(s, mutate_stmt_expr(s->var), mutate_stmt_expr(s->value), s->start, s->end, s->step, s->cond,
                 s->then_body, s->else_body, s->body);
}

Stmt StmtMutator::mutate_for(const Stmt& s) {
  Expr var = mutate_stmt_expr(s->var), start = mutate_stmt_expr(s->start);
  Expr end = mutate_stmt_expr(s->end), step = mutate_stmt_expr(s->step);
  return rebuilt(s, var, s->value, start, end, step, s->cond, s->then_body, s->else_body, mutate_stmt(s->body));
}

Stmt StmtMutator::mutate_if(const Stmt& s) {
  Expr cond = mutate_stmt_expr(s->cond);
  Stmt then_body = mutate_stmt(s->then_body);
  Stmt else_body = mutate_stmt(s->else_body);
  return rebuilt(s, s->var, s->value, s->start, s->end, s->step, cond, then_body, else_body, s->body);
}

Stmt StmtMutator::mutate_while(const Stmt& s) {
  Expr cond = mutate_stmt_expr(s->cond);
  return rebuilt(s, s->var, s->value, s->start, s->end, s->step, cond, s->then_body, s->else_body,
                 mutate_stmt(s->body));
}

Stmt StmtMutator::mutate_thread_group(const Stmt& s) {
  return rebuilt(s, s->var, s->value, s->start, s->end, s->step, s->cond, s->then_body, s->else_body,
                 mutate_stmt(s->body));
}

Stmt StmtMutator::mutate_inst(const Stmt& s) {
  std::vector<Expr> args;
  args.reserve(s->inst->args.size());
  bool changed = false;
  for (const Expr& a : s->inst->args) {
    args.push_back(mutate_stmt_expr(a));
    changed = changed || args.back() != a;
  }
  if (!changed) return s;
  auto inst = std::make_shared<Instruction>(*s->inst);
  inst->args = std::move(args);
  auto copy = std::make_shared<StmtNode>(*s);
  copy->inst = std::move(inst);
  return copy;
}

// ------------------------------------------------------------------ helpers

void for_each_inst(const Stmt& s, const std::function<void(const StmtNode&)>& f) {
  struct Walk : StmtVisitor {
    const std::function<void(const StmtNode&)>& f;
    explicit Walk(const std::function<void(const StmtNode&)>& f) : f(f) {}
    void visit_inst(const Stmt& s) override { f(*s); }
  } walk(f);
  walk.visit_stmt(s);
}

std::unordered_map<int, int> count_tensor_reads(const Stmt& s) {
  struct Reads : StmtExprVisitor {
    std::unordered_map<int, int> count;
    void visit_inst(const Stmt& s) override {
      for (const Tensor& t : s->inst->inputs)
        if (t) ++count[t->id];
      StmtExprVisitor::visit_inst(s);
    }
    void visit_element_addr(const Expr& e) override {
      ++count[e->tensor->id];
      StmtExprVisitor::visit_element_addr(e);
    }
    void visit_element_load(const Expr& e) override {
      ++count[e->tensor->id];
      StmtExprVisitor::visit_element_load(e);
    }
  } reads;
  reads.visit_stmt(s);
  return std::move(reads.count);
}

std::vector<const StmtNode*> statement_sequences(const Stmt& s) {
  struct Sequences : StmtVisitor {
    std::vector<const StmtNode*> seqs;
    void visit_seq(const Stmt& s) override {
      seqs.push_back(s.get());
      StmtVisitor::visit_seq(s);
    }
  } sequences;
  sequences.visit_stmt(s);
  return std::move(sequences.seqs);
}

}  // namespace tilus
