// Tests of the statement/expression visitors and mutators (csrc/ir/functor.h).
//   g++ -std=c++17 -O2 -Icsrc csrc/ir/*.cc tests/cpp/test_functor.cc -o /tmp/test_functor
//       && /tmp/test_functor
// The trees are built node by node here, so every statement kind appears and the
// expected visiting order is read off the construction.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "ir/functor.h"

#include "check.h"

using namespace tilus;



// ---- building blocks ------------------------------------------------------------------
static std::shared_ptr<StmtNode> node(StmtKind kind) {
  auto s = std::make_shared<StmtNode>();
  s->kind = kind;
  return s;
}
static Stmt seq(std::vector<Stmt> items) {
  auto s = node(StmtKind::Seq);
  s->seq = std::move(items);
  return s;
}
static Stmt declare(const Expr& var, const Expr& value) {
  auto s = node(StmtKind::Declare);
  s->var = var;
  s->value = value;
  return s;
}
static Stmt assign(const Expr& var, const Expr& value) {
  auto s = node(StmtKind::Assign);
  s->var = var;
  s->value = value;
  return s;
}
static Stmt for_(const Expr& var, const Expr& start, const Expr& end, const Expr& step, Stmt body) {
  auto s = node(StmtKind::For);
  s->var = var;
  s->start = start;
  s->end = end;
  s->step = step;
  s->body = std::move(body);
  return s;
}
static Stmt if_(const Expr& cond, Stmt then_body, Stmt else_body) {
  auto s = node(StmtKind::If);
  s->cond = cond;
  s->then_body = std::move(then_body);
  s->else_body = std::move(else_body);
  return s;
}
static Stmt while_(const Expr& cond, Stmt body) {
  auto s = node(StmtKind::While);
  s->cond = cond;
  s->body = std::move(body);
  return s;
}
static Stmt inst(Op op, std::vector<Expr> args, std::vector<Tensor> inputs = {}) {
  auto i = std::make_shared<Instruction>();
  i->op = op;
  i->args = std::move(args);
  i->inputs = std::move(inputs);
  auto s = node(StmtKind::Inst);
  s->inst = i;
  return s;
}

static const char* kind_name(StmtKind k) {
  switch (k) {
    case StmtKind::Seq: return "seq";
    case StmtKind::Declare: return "declare";
    case StmtKind::Assign: return "assign";
    case StmtKind::For: return "for";
    case StmtKind::If: return "if";
    case StmtKind::While: return "while";
    case StmtKind::Break: return "break";
    case StmtKind::Continue: return "continue";
    case StmtKind::Inst: return "inst";
    case StmtKind::ThreadGroup: return "thread_group";
  }
  return "?";
}

// One program holding every statement kind:
//   x = 0
//   for i in range(0, n, 1):
//     if i < n: sync(); print(~g[i]) else: break
//     while x < n: continue; x = x + i
//   lock_semaphore(y, 1)
struct Sample {
  Expr n = make_var("n", dtypes::int32), x = make_var("x", dtypes::int32);
  Expr i = make_var("i", dtypes::int32), y = make_var("y", dtypes::int32);
  Tensor g = make_global_tensor(dtypes::int32, {n}, {make_int(1)}, "g");
  Stmt then_body = seq({inst(Op::Sync, {}), inst(Op::PrintTensor, {make_element_addr(g, {i})})});
  Stmt else_body = seq({node(StmtKind::Break)});
  Stmt loop_while = while_(make_binary(BinaryOp::Lt, x, n),
                           seq({node(StmtKind::Continue), assign(x, make_binary(BinaryOp::Add, x, i))}));
  Stmt branch = if_(make_binary(BinaryOp::Lt, i, n), then_body, else_body);
  Stmt loop = for_(i, make_int(0), n, make_int(1), seq({branch, loop_while}));
  Stmt tail = inst(Op::LockSemaphore, {y, make_int(1)});
  Stmt root = seq({declare(x, make_int(0)), loop, tail});
};

// ---- StmtVisitor ------------------------------------------------------------------------

// Records each statement in preorder.
struct KindLog : StmtVisitor {
  std::vector<std::string> log;
  void visit_stmt(const Stmt& s) override {
    if (s) log.push_back(kind_name(s->kind));
    StmtVisitor::visit_stmt(s);
  }
};

static void test_default_recursion_reaches_every_statement() {
  section("StmtVisitor: default recursion reaches every statement, in program order");
  Sample p;
  KindLog v;
  v.visit_stmt(p.root);
  const std::vector<std::string> want = {"seq",  "declare", "for", "seq",   "if",       "seq",
                                         "inst", "inst",    "seq", "break", "while",    "seq",
                                         "continue", "assign", "inst"};
  CHECK(v.log == want);

  KindLog none;  // null statements (an absent else, an empty program) are no-ops
  none.visit_stmt(nullptr);
  none.visit_stmt(if_(make_bool(true), seq({}), nullptr));
  CHECK(none.log == (std::vector<std::string>{"if", "seq"}));
}

// An override that does not call the base stops the descent there.
struct SkipLoops : StmtVisitor {
  int insts = 0;
  void visit_for(const Stmt&) override {}
  void visit_inst(const Stmt&) override { ++insts; }
};

static void test_override_without_base_prunes() {
  section("StmtVisitor: an override that does not call the base prunes the subtree");
  Sample p;
  SkipLoops v;
  v.visit_stmt(p.root);
  CHECK_EQ(v.insts, 1);  // only lock_semaphore, outside the loop
}

static void test_for_each_inst() {
  section("for_each_inst: every instruction, in program order");
  Sample p;
  std::vector<Op> ops;
  for_each_inst(p.root, [&](const StmtNode& s) { ops.push_back(s.inst->op); });
  CHECK(ops == (std::vector<Op>{Op::Sync, Op::PrintTensor, Op::LockSemaphore}));
}

// ---- StmtExprVisitor / ExprVisitor ----------------------------------------------------

struct VarLog : StmtExprVisitor {
  std::vector<std::string> names;
  int consts = 0;
  void visit_var(const Expr& e) override { names.push_back(e->name); }
  void visit_const(const Expr&) override { ++consts; }
};

static void test_stmt_expr_visitor_sees_every_expression() {
  section("StmtExprVisitor: every expression of every statement, operands in order");
  Sample p;
  VarLog v;
  v.visit_stmt(p.root);
  // declare x = 0 | for i, 0, n, 1 | if i < n | print ~g[i] | while x < n | x = x + i | lock y, 1
  const std::vector<std::string> want = {"x", "i", "n", "i", "n", "i", "x", "n", "x", "x", "i", "y"};
  CHECK(v.names == want);
  CHECK_EQ(v.consts, 4);  // 0, 0, 1, 1
}

static void test_expr_visitor_operand_order() {
  section("ExprVisitor: select visits condition, then a, then b; casts and unaries recurse");
  Expr a = make_var("a", dtypes::int32), b = make_var("b", dtypes::int32), c = make_var("c", dtypes::boolean);
  Expr e = make_cast(make_unary(UnaryOp::Neg, make_select(c, a, b)), dtypes::int64);
  struct Log : ExprVisitor {
    std::string order;
    void visit_var(const Expr& e) override { order += e->name; }
  } v;
  v.visit_expr(e);
  CHECK_EQ(v.order, std::string("cab"));
}

// ---- ExprMutator -----------------------------------------------------------------------

// Replaces one variable by another expression.
struct Substitute : StmtExprMutator {
  Expr from, to;
  Substitute(Expr f, Expr t) : from(std::move(f)), to(std::move(t)) {}
  Expr mutate_var(const Expr& e) override { return e == from ? to : e; }
};

static void test_expr_mutator_shares_unchanged_nodes() {
  section("ExprMutator: unchanged trees come back as the same node; changes copy the path only");
  Expr a = make_var("a", dtypes::int32), b = make_var("b", dtypes::int32), k = make_var("k", dtypes::int32);
  Expr left = make_binary(BinaryOp::Mul, a, b);
  Expr right = make_binary(BinaryOp::Add, b, make_int(3));
  Expr e = make_binary(BinaryOp::Sub, left, right);

  Substitute none(k, make_int(7));
  CHECK(none.mutate_expr(e) == e);
  CHECK(none.mutate_expr(nullptr) == nullptr);

  Substitute sub(a, k);
  Expr m = sub.mutate_expr(e);
  CHECK(m != e);
  CHECK_EQ(expr_str(m), std::string("((k * b) - (b + 3))"));
  CHECK(m->b == right);  // the side without a is shared, not copied
  CHECK_EQ(expr_str(e), std::string("((a * b) - (b + 3))"));  // the original is untouched
  CHECK(m->kind == ExprKind::Binary && m->binary_op == BinaryOp::Sub && m->dtype == dtypes::int32);

  Tensor g = make_global_tensor(dtypes::float32, {make_int(8)}, {make_int(1)}, "g");
  Expr load = make_element_load(g, {a});
  Expr loaded = sub.mutate_expr(load);
  CHECK(loaded != load && loaded->tensor == g && loaded->indices.size() == 1 && loaded->indices[0] == k);
}

static void test_math_expressions() {
  section("Math: visited and mutated through its operand; typed, folded, printed");
  Expr x = make_var("x", dtypes::float32), k = make_var("k", dtypes::int32);
  Expr e = make_math(MathFn::Exp, x);
  CHECK(e->kind == ExprKind::Math && e->dtype == dtypes::float32);
  CHECK_EQ(expr_str(e), std::string("exp(x)"));
  struct Log : ExprVisitor {
    std::string order;
    void visit_var(const Expr& e) override { order += e->name; }
  } v;
  v.visit_expr(make_binary(BinaryOp::Add, make_math(MathFn::Sqrt, make_var("a", dtypes::float64)), e));
  CHECK_EQ(v.order, std::string("ax"));
  CHECK(make_math(MathFn::IsNan, x)->dtype == dtypes::boolean);
  CHECK(make_math(MathFn::Floor, make_var("h", dtypes::float16))->dtype == dtypes::float16);
  Expr from_int = make_math(MathFn::Log, k);  // integers are computed in float32
  CHECK(from_int->dtype == dtypes::float32 && from_int->a->kind == ExprKind::Cast);
  Expr folded = make_math(MathFn::Sqrt, make_int(16));
  CHECK(folded->is_const() && folded->dtype == dtypes::float32 && folded->float_value == 4.0);
  CHECK(make_math(MathFn::IsInf, make_float(std::numeric_limits<double>::infinity()))->int_value == 1);

  Substitute sub(x, make_var("y", dtypes::float32));
  Expr m = sub.mutate_expr(e);
  CHECK(m != e && m->kind == ExprKind::Math && m->math_fn == MathFn::Exp);
  CHECK_EQ(expr_str(m), std::string("exp(y)"));
  CHECK(sub.mutate_expr(from_int) == from_int);
}

// ---- StmtMutator -----------------------------------------------------------------------

static void test_stmt_mutator_identity_and_substitution() {
  section("StmtMutator: identity keeps the tree; a substitution rebuilds only the changed path");
  Sample p;
  Substitute none(make_var("unused", dtypes::int32), make_int(0));
  CHECK(none.mutate_stmt(p.root) == p.root);
  CHECK(none.mutate_stmt(nullptr) == nullptr);

  Expr z = make_var("z", dtypes::int32);
  Substitute sub(p.y, z);  // y appears only in the last instruction
  Stmt m = sub.mutate_stmt(p.root);
  CHECK(m != p.root);
  CHECK_EQ(m->seq.size(), 3u);
  CHECK(m->seq[0] == p.root->seq[0]);  // declare x: shared
  CHECK(m->seq[1] == p.loop);          // the loop: shared
  CHECK(m->seq[2] != p.tail);
  CHECK(m->seq[2]->inst != p.tail->inst);  // a copied instruction with the new argument
  CHECK(m->seq[2]->inst->args[0] == z && m->seq[2]->inst->op == Op::LockSemaphore);
  CHECK(p.tail->inst->args[0] == p.y);  // the original is untouched

  Substitute in_loop(p.x, z);  // x is in the declare, the while condition and the assign
  Stmt m2 = in_loop.mutate_stmt(p.root);
  CHECK(m2->seq[2] == p.tail);
  const Stmt& loop = m2->seq[1];
  CHECK(loop != p.loop && loop->var == p.i && loop->end == p.n);
  CHECK(loop->body->seq[0] == p.branch);  // the if does not mention x
  const Stmt& w = loop->body->seq[1];
  CHECK_EQ(expr_str(w->cond), std::string("(z < n)"));
  CHECK(w->body->seq[0] == p.loop_while->body->seq[0]);  // continue: shared
  CHECK(w->body->seq[1]->var == z);
  CHECK_EQ(expr_str(w->body->seq[1]->value), std::string("(z + i)"));
}

// Returning null from a statement deletes it from its sequence.
struct DropSyncs : StmtMutator {
  Stmt mutate_inst(const Stmt& s) override { return s->inst->op == Op::Sync ? nullptr : s; }
};

static void test_stmt_mutator_deletes() {
  section("StmtMutator: a statement mutated to null is dropped from its sequence");
  Sample p;
  Stmt m = DropSyncs().mutate_stmt(p.root);
  std::vector<Op> ops;
  for_each_inst(m, [&](const StmtNode& s) { ops.push_back(s.inst->op); });
  CHECK(ops == (std::vector<Op>{Op::PrintTensor, Op::LockSemaphore}));
  CHECK(m->seq[1]->body->seq[0]->else_body == p.else_body);  // untouched parts shared
  std::vector<Op> before;
  for_each_inst(p.root, [&](const StmtNode& s) { before.push_back(s.inst->op); });
  CHECK_EQ(before.size(), 3u);
}

int main() {
  test_default_recursion_reaches_every_statement();
  test_override_without_base_prunes();
  test_for_each_inst();
  test_stmt_expr_visitor_sees_every_expression();
  test_expr_visitor_operand_order();
  test_math_expressions();
  test_expr_mutator_shares_unchanged_nodes();
  test_stmt_mutator_identity_and_substitution();
  test_stmt_mutator_deletes();
  std::printf("%d checks, %d failed\n", g_checks, g_failed);
  return g_failed ? 1 : 0;
}
