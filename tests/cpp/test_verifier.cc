// Tests of the IR verifier (csrc/ir/verifier.h, verify_async.cc, transforms/verify_layouts.h).
// Every rule gets a program that breaks it, built through the IRBuilder (which does not
// check what the transpiler checks) or by corrupting a valid program, and each failure
// must be located at the offending statement's file:line. Valid programs (a cp.async
// pipeline, branches, loops) must pass.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/functor.h"
#include "ir/verifier.h"
#include "transforms/layout_inference.h"
#include "transforms/verify_layouts.h"

#include "check.h"

using namespace tilus;



// Runs f, which must throw the verifier's error at kernel.py:line with `words` in the
// message; prints what happened otherwise.
static void expect_failure(const std::function<void()>& f, int line, const std::string& words,
                           int test_line) {
  ++g_checks;
  try {
    f();
  } catch (const ScriptError& e) {
    const std::string what = e.what();
    const bool ok = e.kind() == "InternalError" && e.loc().str() == "kernel.py:" + std::to_string(line) &&
                    what.find("IR verifier (after ") == 0 && what.find(words) != std::string::npos;
    if (!ok) {
      ++g_failed;
      std::printf("  FAILED %s:%d: got %s at %s: %s\n", __FILE__, test_line, e.kind().c_str(),
                  e.loc().str().c_str(), what.c_str());
    }
    return;
  }
  ++g_failed;
  std::printf("  FAILED %s:%d: nothing thrown (wanted \"%s\" at line %d)\n", __FILE__, test_line,
              words.c_str(), line);
}
#define EXPECT_FAILURE(stmt, line, words) expect_failure([&] { stmt; }, line, words, __LINE__)

static void expect_pass(const std::function<void()>& f, int test_line) {
  ++g_checks;
  try {
    f();
  } catch (const ScriptError& e) {
    ++g_failed;
    std::printf("  FAILED %s:%d: %s at %s\n", __FILE__, test_line, e.what(), e.loc().str().c_str());
  }
}
#define EXPECT_PASS(stmt) expect_pass([&] { stmt; }, __LINE__)

// A kernel under construction: one source line per statement.
struct Kernel {
  IRBuilder b{"k", "kernel.py"};
  Expr n, x, y;  // n: int32, x/y: ~float32
  Kernel() {
    b.set_loc(1, 0, "def __call__(self, n, x, y):");
    n = b.add_param("n", dtypes::int32);
    x = b.add_param("x", dtypes::float32.pointer_to());
    y = b.add_param("y", dtypes::float32.pointer_to());
    b.set_grid({make_int(1)});
    b.set_warps(4);
  }
  Kernel& at(int line) {
    b.set_loc(line, 4, "line " + std::to_string(line));
    return *this;
  }
  Tensor view(const Expr& p, int64_t size) { return b.global_view(p, dtypes::float32, {make_int(size)}, {}, "g"); }
  std::shared_ptr<Program> finish() { return b.finish(); }
};

static void verify_p(const std::shared_ptr<Program>& p) { verify(*p, "a test"); }

// The program with the top-level statements reordered / replaced by `edit`.
static std::shared_ptr<Program> edit_top(const std::shared_ptr<Program>& p,
                                         const std::function<void(std::vector<Stmt>&)>& edit) {
  auto out = std::make_shared<Program>(*p);
  auto body = std::make_shared<StmtNode>(*p->body);
  edit(body->seq);
  out->body = body;
  return out;
}

// The program with the first instruction of `op` replaced by a corrupted copy.
static std::shared_ptr<Program> corrupt(const std::shared_ptr<Program>& p, Op op,
                                        const std::function<void(Instruction&)>& edit) {
  struct Corrupt : StmtMutator {
    Op op;
    const std::function<void(Instruction&)>& edit;
    bool done = false;
    Corrupt(Op o, const std::function<void(Instruction&)>& e) : op(o), edit(e) {}
    Stmt mutate_inst(const Stmt& s) override {
      if (done || s->inst->op != op) return s;
      done = true;
      auto inst = std::make_shared<Instruction>(*s->inst);
      edit(*inst);
      auto copy = std::make_shared<StmtNode>(*s);
      copy->inst = inst;
      return copy;
    }
  } c(op, edit);
  auto out = std::make_shared<Program>(*p);
  out->body = c.mutate_stmt(p->body);
  CHECK(c.done);
  return out;
}

// ---- scoping --------------------------------------------------------------------------

static void test_scoping() {
  section("scoping");
  {  // a register tile defined inside an if, used after it
    Kernel k;
    Tensor g = k.at(2).view(k.x, 128);
    k.at(3).b.begin_if(make_binary(BinaryOp::Gt, k.n, make_int(0)));
    Tensor r = k.at(4).b.load_global(g, {make_int(0)}, {128}, {});
    k.b.end_if();
    k.at(6).b.store_global(g, r, {make_int(0)}, {});
    EXPECT_FAILURE(verify_p(k.finish()), 6, "defined inside a block that has ended (at kernel.py:4)");
  }
  {  // the same tile used inside the if is fine
    Kernel k;
    Tensor g = k.at(2).view(k.x, 128);
    k.at(3).b.begin_if(make_binary(BinaryOp::Gt, k.n, make_int(0)));
    Tensor r = k.at(4).b.load_global(g, {make_int(0)}, {128}, {});
    k.at(5).b.store_global(g, r, {make_int(0)}, {});
    k.b.end_if();
    EXPECT_PASS(verify_p(k.finish()));
  }
  {  // a scalar that was never declared
    Kernel k;
    Tensor g = k.at(2).view(k.x, 128);
    Expr ghost = make_var("ghost", dtypes::int32);
    k.at(3).b.load_global(g, {ghost}, {128}, {});
    EXPECT_FAILURE(verify_p(k.finish()), 3, "'ghost' is used before it is declared");
  }
  {  // a scalar declared in a branch stays visible after it (function-wide, as in Python)
    Kernel k;
    Tensor g = k.at(2).view(k.x, 128);
    k.at(3).b.begin_if(make_binary(BinaryOp::Gt, k.n, make_int(0)));
    Expr off = k.at(4).b.declare("off", dtypes::int32, make_int(0));
    k.b.begin_else();
    k.at(6).b.assign(off, make_int(1));
    k.b.end_if();
    Tensor r = k.at(7).b.load_global(g, {off}, {128}, {});
    k.at(8).b.store_global(g, r, {off}, {});
    EXPECT_PASS(verify_p(k.finish()));
  }
  {  // a scalar used before its declaration in program order
    Kernel k;
    Expr v = k.at(2).b.declare("v", dtypes::int32, make_int(1));
    k.at(3).b.declare("w", dtypes::int32, v);
    auto p = edit_top(k.finish(), [](std::vector<Stmt>& s) { std::swap(s[0], s[1]); });
    EXPECT_FAILURE(verify_p(p), 3, "'v' is used before it is declared");
  }
  {  // a loop variable read after its loop (it is scoped to the CUDA for)
    Kernel k;
    Expr i = k.at(2).b.begin_for("i", make_int(0), k.n, make_int(1), 0);
    k.b.end_for();
    k.at(4).b.declare("last", dtypes::int32, i);
    EXPECT_FAILURE(verify_p(k.finish()), 4, "the variable of a loop that has ended");
  }
  {  // a tensor defined twice
    Kernel k;
    Tensor g = k.at(2).view(k.x, 128);
    k.at(3).b.load_global(g, {make_int(0)}, {128}, {});
    auto p = edit_top(k.finish(), [](std::vector<Stmt>& s) {
      auto again = std::make_shared<StmtNode>(*s[1]);
      again->loc.line = 9;
      s.push_back(again);
    });
    EXPECT_FAILURE(verify_p(p), 9, "defines r again (first at kernel.py:3)");
  }
  {  // a workspace sized by something only the device knows
    Kernel k;
    k.at(2).b.global_tensor(dtypes::int32, {make_block_idx(0)}, false, "ws");
    EXPECT_FAILURE(verify_p(k.finish()), 2, "which the host cannot evaluate before launch");
  }
}

// ---- operands ---------------------------------------------------------------------------

static std::shared_ptr<Program> elementwise_program() {
  Kernel k;
  Tensor g = k.at(2).view(k.x, 64);
  Tensor a = k.at(3).b.load_global(g, {make_int(0)}, {64}, {});
  Tensor s = k.at(4).b.binary(BinaryOp::Add, a, a, nullptr);
  Tensor c = k.at(5).b.cast(s, dtypes::float16);
  k.at(6).b.store_global(g, k.b.cast(c, dtypes::float32), {make_int(0)}, {});
  return k.finish();
}

static void test_operands() {
  section("operands");
  auto p = elementwise_program();
  EXPECT_PASS(verify_p(p));
  EXPECT_FAILURE(verify_p(corrupt(p, Op::Elementwise, [](Instruction& i) {
                   i.inputs[1] = make_tensor(Scope::Register, dtypes::float32, {32}, "short");
                 })),
                 4, "uses short before it is defined");
  // operands that are defined but disagree: shapes of an elementwise op
  EXPECT_FAILURE(verify_p(corrupt(p, Op::Elementwise, [](Instruction& i) {
                   i.output = make_tensor(Scope::Register, dtypes::float32, {32}, "out");
                 })),
                 4, "do not give out (register[float32, 32])");
  // dtype of a cast's result
  EXPECT_FAILURE(verify_p(corrupt(p, Op::Cast, [](Instruction& i) { i.dtype = dtypes::int32; })), 5,
                 "cast: to int32 but the output is");
  // arity
  EXPECT_FAILURE(verify_p(corrupt(p, Op::StoreGlobal, [](Instruction& i) { i.inputs.pop_back(); })), 6,
                 "store_global takes 2 tensor operands, got 1");
  // a load whose tile dims do not fit the global tensor
  EXPECT_FAILURE(verify_p(corrupt(p, Op::LoadGlobal, [](Instruction& i) { i.dims = {1}; })), 3,
                 "dims must be increasing dimensions of a rank-1 tensor");
  // dtype of a store's value
  {
    Kernel k;
    Tensor g = k.at(2).view(k.x, 64);
    Tensor a = k.at(3).b.load_global(g, {make_int(0)}, {64}, {});
    Tensor h = k.at(4).b.cast(a, dtypes::float16);
    k.at(5).b.store_global(g, a, {make_int(0)}, {});
    auto q = corrupt(k.finish(), Op::StoreGlobal, [&](Instruction& i) { i.inputs[1] = h; });
    EXPECT_FAILURE(verify_p(q), 5, "differ in dtype");
  }
  // a dot whose inner dimensions differ
  {
    Kernel k;
    Tensor a = k.at(2).b.register_tensor(dtypes::float16, {16, 16}, make_float(0), nullptr, "a");
    Tensor b = k.at(3).b.register_tensor(dtypes::float16, {16, 8}, make_float(0), nullptr, "b");
    Tensor bad = k.at(4).b.register_tensor(dtypes::float16, {32, 8}, make_float(0), nullptr, "bad");
    Tensor c = k.at(5).b.register_tensor(dtypes::float32, {16, 8}, make_float(0), nullptr, "c");
    k.at(6).b.dot(a, b, c, nullptr);
    auto q = k.finish();
    EXPECT_PASS(verify_p(q));
    EXPECT_FAILURE(verify_p(corrupt(q, Op::Dot, [&](Instruction& i) { i.inputs[1] = bad; })), 6,
                   "does not give c");
  }
  // An op without a verify stage (exp) is checked by its builder check run again: its
  // errors, and an output whose type the operands do not give.
  {
    Kernel k;
    Tensor g = k.at(2).view(k.x, 64);
    Tensor a = k.at(3).b.load_global(g, {make_int(0)}, {64}, {});
    Tensor i32 = k.at(4).b.cast(a, dtypes::int32);
    k.at(5).b.tile_op(Op::Exp, {{a}});
    auto q = k.finish();
    EXPECT_PASS(verify_p(q));
    EXPECT_FAILURE(verify_p(corrupt(q, Op::Exp, [&](Instruction& i) { i.inputs = {i32}; })), 5,
                   "exp: exp: x must be a float tensor, got int32");
    EXPECT_FAILURE(verify_p(corrupt(q, Op::Exp, [&](Instruction& i) {
                     i.output = make_tensor(Scope::Register, dtypes::float16, {64}, "half");
                   })),
                   5, "exp: its operands give a register float32[64] tensor, not");
  }
}

// ---- shared memory and async copies ------------------------------------------------------

static void test_free_shared() {
  section("free_shared");
  Kernel k;
  Tensor s = k.at(2).b.shared_tensor(dtypes::float32, {64}, "s");
  Tensor z = k.at(3).b.register_tensor(dtypes::float32, {64}, make_float(0), nullptr, "z");
  k.at(4).b.store_shared(s, z);
  k.at(5).b.load_shared(s);
  k.at(6).b.free_shared(s);
  auto p = k.finish();
  EXPECT_PASS(verify_p(p));
  // the free moved above the load: the load reads freed memory
  auto q = edit_top(p, [](std::vector<Stmt>& st) { std::swap(st[3], st[4]); });
  EXPECT_FAILURE(verify_p(q), 5, "after its free_shared at kernel.py:6");
}

// copy_async of x[0:64] into s; `commit` / `wait` choose what follows.
static std::shared_ptr<Program> copy_program(bool commit, int wait, bool read) {
  Kernel k;
  Tensor g = k.at(2).view(k.x, 64);
  Tensor s = k.at(3).b.shared_tensor(dtypes::float32, {64}, "s");
  k.at(4).b.copy_async(g, s, {make_int(0)}, {});
  if (commit) k.at(5).b.copy_async_commit_group();
  if (wait >= 0) k.at(6).b.copy_async_wait_group(wait);
  if (read) k.at(7).b.load_shared(s);
  return k.finish();
}

static void test_async_pairing() {
  section("async pairing");
  EXPECT_PASS(verify_p(copy_program(true, 0, true)));
  EXPECT_FAILURE(verify_p(copy_program(false, 0, true)), 6,
                 "does not wait for the copy_async at kernel.py:4: it is not committed");
  EXPECT_FAILURE(verify_p(copy_program(false, -1, false)), 4, "is not committed");
  EXPECT_FAILURE(verify_p(copy_program(true, -1, true)), 7,
                 "accesses s while the copy_async at kernel.py:4 into it may still be in flight");
  // wait_group(1) leaves the newest group, this one, in flight
  EXPECT_FAILURE(verify_p(copy_program(true, 1, true)), 7, "may still be in flight");
  EXPECT_FAILURE(verify_p(copy_program(false, -1, true)), 7, "neither committed nor waited");

  // A 3-stage pipeline as the examples write it: prologue copies, then per iteration a
  // wait for the oldest stage, a read of it, and the next copy. It must pass.
  {
    const int64_t stages = 3;
    Kernel k;
    Tensor g = k.at(2).b.global_view(k.x, dtypes::float32, {k.n, make_int(64)}, {}, "g");
    Tensor s = k.at(3).b.shared_tensor(dtypes::float32, {stages, 64}, "s");
    for (int64_t st = 0; st < stages - 1; ++st) {
      Tensor v = k.at(4).b.slice_shared(s, {make_int(st)});
      k.at(5).b.copy_async(g, v, {make_int(st), make_int(0)}, {1});
      k.at(6).b.copy_async_commit_group();
    }
    Expr i = k.at(7).b.begin_for("i", make_int(0), k.n, make_int(1), 0);
    k.at(8).b.copy_async_wait_group(stages - 2);
    k.at(9).b.sync();
    Tensor cur = k.at(10).b.slice_shared(s, {make_binary(BinaryOp::Mod, i, make_int(stages))});
    k.at(11).b.load_shared(cur);
    Expr next = make_binary(BinaryOp::Mod, make_binary(BinaryOp::Add, i, make_int(stages - 1)),
                            make_int(stages));
    Tensor nv = k.at(12).b.slice_shared(s, {next});
    k.at(13).b.copy_async(g, nv, {make_binary(BinaryOp::Add, i, make_int(stages - 1)), make_int(0)}, {1});
    k.at(14).b.copy_async_commit_group();
    k.b.end_for();
    k.at(16).b.copy_async_wait_group(0);
    auto p = k.finish();
    EXPECT_PASS(verify_p(p));
    // Without the commit in the loop, the next iteration's wait misses the copy.
    struct DropLoopCommit : StmtMutator {
      int depth = 0;
      Stmt mutate_for(const Stmt& s) override {
        ++depth;
        Stmt out = StmtMutator::mutate_for(s);
        --depth;
        return out;
      }
      Stmt mutate_inst(const Stmt& s) override {
        return depth && s->inst->op == Op::CopyAsyncCommitGroup ? nullptr : s;
      }
    } drop;
    auto r = std::make_shared<Program>(*p);
    r->body = drop.mutate_stmt(p->body);
    EXPECT_FAILURE(verify_p(r), 8, "does not wait for the copy_async at kernel.py:13");
  }
  // A copy in one branch, committed and waited for after the if: fine.
  {
    Kernel k;
    Tensor g = k.at(2).view(k.x, 64);
    Tensor s = k.at(3).b.shared_tensor(dtypes::float32, {64}, "s");
    k.at(4).b.begin_if(make_binary(BinaryOp::Gt, k.n, make_int(0)));
    k.at(5).b.copy_async(g, s, {make_int(0)}, {});
    k.b.end_if();
    k.at(7).b.copy_async_commit_group();
    k.at(8).b.copy_async_wait_group(0);
    k.at(9).b.load_shared(s);
    EXPECT_PASS(verify_p(k.finish()));
  }
  // A copy in a loop whose commit comes after the loop: the second iteration's copy
  // joins the first one's uncommitted group, and the loop ends; a wait inside the loop
  // would miss it.
  {
    Kernel k;
    Tensor g = k.at(2).view(k.x, 64);
    Tensor s = k.at(3).b.shared_tensor(dtypes::float32, {64}, "s");
    k.at(4).b.begin_for("i", make_int(0), k.n, make_int(1), 0);
    k.at(5).b.copy_async_wait_group(0);
    k.at(6).b.copy_async(g, s, {make_int(0)}, {});
    k.b.end_for();
    k.at(8).b.copy_async_commit_group();
    EXPECT_FAILURE(verify_p(k.finish()), 5, "does not wait for the copy_async at kernel.py:6");
  }
}

// ---- layouts -----------------------------------------------------------------------------

static void test_layouts() {
  section("layouts");
  Kernel k;
  Tensor ga = k.at(2).b.global_view(k.x, dtypes::float32, {make_int(64), make_int(32)}, {}, "ga");
  Tensor a = k.at(3).b.load_global(ga, {make_int(0), make_int(0)}, {64, 32}, {});
  Tensor sa = k.at(4).b.shared_tensor(dtypes::float32, {64, 32}, "sa");
  k.at(5).b.store_shared(sa, a);
  Tensor a2 = k.at(6).b.load_shared(sa);
  Tensor b = k.at(7).b.register_tensor(dtypes::float32, {32, 16}, make_float(1), nullptr, "b");
  Tensor c = k.at(8).b.register_tensor(dtypes::float32, {64, 16}, make_float(0), nullptr, "c");
  Tensor d = k.at(9).b.dot(a2, b, c, nullptr);
  Tensor e = k.at(10).b.binary_scalar(BinaryOp::Mul, d, make_float(2), false, nullptr);
  k.at(11).b.store_global(k.b.global_view(k.y, dtypes::float32, {make_int(64), make_int(16)}, {}, "gy"),
                          e, {make_int(0), make_int(0)}, {});
  auto p = k.finish();
  const LayoutPlan plan = infer_layouts(*p);
  EXPECT_PASS(verify_layouts(*p, plan, "a test"));
  {  // a layout of another shape
    LayoutPlan bad = plan;
    bad.reg.at(a->id) = auto_global_layout({32, 64}, 128, 4);
    EXPECT_FAILURE(verify_layouts(*p, bad, "a test"), 3, "has shape [32, 64]");
  }
  {  // a layout over the wrong number of threads
    LayoutPlan bad = plan;
    bad.reg.at(a->id) = auto_global_layout({64, 32}, 64, 4);
    EXPECT_FAILURE(verify_layouts(*p, bad, "a test"), 3, "spreads over 64 threads, the kernel has 128");
  }
  {  // elementwise operands whose layouts differ
    LayoutPlan bad = plan;
    bad.reg.at(e->id) = auto_global_layout({64, 16}, 128, 1);
    if (bad.reg.at(e->id) == plan.reg.at(e->id)) bad.reg.at(e->id) = auto_global_layout({64, 16}, 128, 2);
    EXPECT_FAILURE(verify_layouts(*p, bad, "a test"), 10, "must share a layout");
  }
  {  // a tensor the plan forgot
    LayoutPlan bad = plan;
    bad.reg.erase(b->id);
    EXPECT_FAILURE(verify_layouts(*p, bad, "a test"), 7, "register tensor b has no layout");
  }
  {  // a shared allocation laid out for another shape
    LayoutPlan bad = plan;
    bad.shared.at(sa->id) = shared_row_major({32, 32});
    EXPECT_FAILURE(verify_layouts(*p, bad, "a test"), 4, "has shape [32, 32]");
  }
  {  // a dot without a plan
    LayoutPlan bad = plan;
    bad.dots.clear();
    EXPECT_FAILURE(verify_layouts(*p, bad, "a test"), 9, "dot has no plan");
  }
}

// ---- where it runs -------------------------------------------------------------------------

static void test_switch() {
  section("switch");
  set_verify_enabled(true);
  {  // finish() runs the verifier: the error names the builder as the pass
    Kernel k;
    Tensor g = k.at(2).view(k.x, 64);
    Tensor s = k.at(3).b.shared_tensor(dtypes::float32, {64}, "s");
    k.at(4).b.copy_async(g, s, {make_int(0)}, {});
    ++g_checks;
    try {
      k.finish();
      ++g_failed;
      std::printf("  FAILED %s:%d: finish() did not verify\n", __FILE__, __LINE__);
    } catch (const ScriptError& e) {
      CHECK(std::string(e.what()).find("IR verifier (after the builder)") == 0);
      CHECK(e.loc().str() == "kernel.py:4");
    }
  }
  set_verify_enabled(false);
  {
    Kernel k;
    Tensor g = k.at(2).view(k.x, 64);
    Tensor s = k.at(3).b.shared_tensor(dtypes::float32, {64}, "s");
    k.at(4).b.copy_async(g, s, {make_int(0)}, {});
    EXPECT_PASS(k.finish());
  }
}

int main() {
  // Broken programs are built through the builder, which would verify them at finish().
  set_verify_enabled(false);
  test_scoping();
  test_operands();
  test_free_shared();
  test_async_pairing();
  test_layouts();
  test_switch();
  std::printf("%d checks, %d failed\n", g_checks, g_failed);
  return g_failed ? 1 : 0;
}
