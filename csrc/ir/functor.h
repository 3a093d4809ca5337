// Visitors and mutators over statements and expressions: the one place that knows which
// children each statement and expression kind has.
//
// A pass derives from one of them and overrides only the kinds it cares about; every
// other kind recurses into its children by default. The dispatch switches (functor.cc)
// list every StmtKind and ExprKind without a `default:`, and the core is compiled with
// -Werror=switch-enum, so adding a kind fails the build until it is handled here.
//
//   struct CountDots : StmtVisitor {          // an analysis: collect facts
//     int dots = 0;
//     void visit_inst(const Stmt& s) override { dots += s->inst->op == Op::Dot; }
//   };
//
// Overrides that still want the children visited call the base (StmtVisitor::visit_for).
// Nodes are immutable and shared, so a mutator returns the very node it was given when
// nothing below it changed, and a copy with the new children otherwise.
#pragma once
#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/stmt.h"

namespace tilus {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  // Dispatches on e->kind; does nothing for a null expression.
  virtual void visit_expr(const Expr& e);

 protected:
  virtual void visit_const(const Expr& e) {}
  virtual void visit_var(const Expr& e) {}
  virtual void visit_block_idx(const Expr& e) {}
  virtual void visit_unary(const Expr& e) { visit_expr(e->a); }
  virtual void visit_binary(const Expr& e);
  virtual void visit_select(const Expr& e);  // condition (c), then a, then b
  virtual void visit_cast(const Expr& e) { visit_expr(e->a); }
  virtual void visit_math(const Expr& e) { visit_expr(e->a); }
  // The indices only: the tensor's shape and strides belong to the tensor.
  virtual void visit_element_addr(const Expr& e);
  virtual void visit_element_load(const Expr& e);
};

class StmtVisitor {
 public:
  virtual ~StmtVisitor() = default;
  // Dispatches on s->kind; does nothing for a null statement (an absent else branch).
  virtual void visit_stmt(const Stmt& s);

 protected:
  // Every expression a statement holds directly (its variable, value, loop bounds,
  // condition, instruction arguments) passes through here. Nothing by default: most
  // statement analyses never look inside expressions. StmtExprVisitor recurses.
  virtual void visit_stmt_expr(const Expr& e) {}

  virtual void visit_seq(const Stmt& s);
  virtual void visit_declare(const Stmt& s);  // var, value (may be null)
  virtual void visit_assign(const Stmt& s);   // var, value
  virtual void visit_for(const Stmt& s);      // var, start, end, step, body
  virtual void visit_if(const Stmt& s);       // cond, then, else
  virtual void visit_while(const Stmt& s);    // cond, body
  virtual void visit_thread_group(const Stmt& s);  // body
  virtual void visit_break(const Stmt& s) {}
  virtual void visit_continue(const Stmt& s) {}
  virtual void visit_inst(const Stmt& s);     // args (tensors are not expressions)
};

// Statements and, through them, every expression below them.
class StmtExprVisitor : public StmtVisitor, public ExprVisitor {
 protected:
  void visit_stmt_expr(const Expr& e) override { visit_expr(e); }
};

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  // Dispatches on e->kind; a null expression stays null.
  virtual Expr mutate_expr(const Expr& e);

 protected:
  virtual Expr mutate_const(const Expr& e) { return e; }
  virtual Expr mutate_var(const Expr& e) { return e; }
  virtual Expr mutate_block_idx(const Expr& e) { return e; }
  // A changed operand gives a copy of the node with that operand replaced: kind, dtype
  // and operator stay, and nothing is folded (override and call make_binary & co. for
  // that).
  virtual Expr mutate_unary(const Expr& e);
  virtual Expr mutate_binary(const Expr& e);
  virtual Expr mutate_select(const Expr& e);
  virtual Expr mutate_cast(const Expr& e);
  virtual Expr mutate_math(const Expr& e);
  virtual Expr mutate_element_addr(const Expr& e);
  virtual Expr mutate_element_load(const Expr& e);

 private:
  Expr with_operands(const Expr& e);
};

class StmtMutator {
 public:
  virtual ~StmtMutator() = default;
  // Dispatches on s->kind; a null statement stays null.
  virtual Stmt mutate_stmt(const Stmt& s);

 protected:
  // The expressions a statement holds directly; unchanged by default. StmtExprMutator
  // sends them through an ExprMutator.
  virtual Expr mutate_stmt_expr(const Expr& e) { return e; }

  // A child mutated to null is dropped from the sequence: how a pass deletes a statement.
  virtual Stmt mutate_seq(const Stmt& s);
  virtual Stmt mutate_declare(const Stmt& s);
  virtual Stmt mutate_assign(const Stmt& s);
  virtual Stmt mutate_for(const Stmt& s);
  virtual Stmt mutate_if(const Stmt& s);
  virtual Stmt mutate_while(const Stmt& s);
  virtual Stmt mutate_thread_group(const Stmt& s);
  virtual Stmt mutate_break(const Stmt& s) { return s; }
  virtual Stmt mutate_continue(const Stmt& s) { return s; }
  // Arguments only; a changed argument gives a copy of the instruction (same tensors).
  virtual Stmt mutate_inst(const Stmt& s);

 private:
  // s itself when every field is unchanged, else a copy holding the new ones.
  Stmt rebuilt(const Stmt& s, const Expr& var, const Expr& value, const Expr& start, const Expr& end,
               const Expr& step, const Expr& cond, const Stmt& then_body, const Stmt& else_body,
               const Stmt& body);
};

class StmtExprMutator : public StmtMutator, public ExprMutator {
 protected:
  Expr mutate_stmt_expr(const Expr& e) override { return mutate_expr(e); }
};

// Calls f on every instruction statement below s, in program order (the most common
// walk: analyses that only look at instructions).
void for_each_inst(const Stmt& s, const std::function<void(const StmtNode&)>& f);

// How many times each tensor (by id) is read below s: as an instruction operand (once per
// operand slot) or through an element expression. Tensors never read are absent.
std::unordered_map<int, int> count_tensor_reads(const Stmt& s);

// Every statement sequence below s (s included), innermost ones too, in program order:
// analyses that pair an instruction with a later one of the same list.
std::vector<const StmtNode*> statement_sequences(const Stmt& s);

}  // namespace tilus
