// Standalone tests of the layout algebra: one section per operation.
//   g++ -std=c++17 -O2 -Icsrc csrc/ir/dtype.cc csrc/ir/expr.cc csrc/ir/tensor.cc
//       csrc/layout/*.cc tests/cpp/test_layout.cc -o /tmp/test_layout && /tmp/test_layout
// Expected values come from the definitions (PTX fragment tables, row-major formulas),
// never from the code under test.
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "layout/block_layouts.h"
#include "layout/register_layout.h"
#include "layout/shared_layout.h"
#include "support/error.h"

#include "check.h"

using namespace tilus;
using V = std::vector<int64_t>;

#define CHECK_THROWS(stmt, want_kind)                     \
  do {                                               \
    bool thrown = false;                             \
    try {                                            \
      stmt;                                          \
    } catch (const ScriptError& e) {                 \
      thrown = e.kind() == (want_kind);              \
    }                                                \
    CHECK(thrown);                                   \
  } while (0)


// ---- a tiny evaluator for index expressions -------------------------------------------
static int64_t eval(const Expr& e, const std::map<int, int64_t>& env) {
  switch (e->kind) {
    case ExprKind::Const: return e->int_value;
    case ExprKind::Var: return env.at(e->var_id);
    case ExprKind::Cast: return eval(e->a, env);
    case ExprKind::Binary: {
      int64_t a = eval(e->a, env), b = eval(e->b, env);
      switch (e->binary_op) {
        case BinaryOp::Add: return a + b;
        case BinaryOp::Sub: return a - b;
        case BinaryOp::Mul: return a * b;
        case BinaryOp::Div: return a / b;
        case BinaryOp::Mod: return a % b;
        case BinaryOp::BitAnd: return a & b;
        case BinaryOp::BitXor: return a ^ b;  // shared-memory swizzles
        default: break;
      }
      break;
    }
    default: break;
  }
  throw std::runtime_error("eval: unsupported expr " + expr_str(e));
}

// Only div/mod by constants on the thread, and no other operators.
static bool only_const_divmod(const Expr& e) {
  if (e->kind == ExprKind::Const || e->kind == ExprKind::Var) return true;
  if (e->kind != ExprKind::Binary) return false;
  BinaryOp op = e->binary_op;
  if ((op == BinaryOp::Div || op == BinaryOp::Mod || op == BinaryOp::Mul) && !e->b->is_const())
    return false;
  if (op != BinaryOp::Add && op != BinaryOp::Mul && op != BinaryOp::Div && op != BinaryOp::Mod)
    return false;
  return only_const_divmod(e->a) && only_const_divmod(e->b);
}

// For every (t, l): fn(t, l, coords).
static void for_all(const RegisterLayout& l, const std::function<void(int64_t, int64_t, V)>& fn) {
  for (int64_t t = 0; t < l.num_threads(); ++t)
    for (int64_t i = 0; i < l.local_size(); ++i) fn(t, i, l.coords(t, i));
}

// How many (t, l) pairs hold each coordinate.
static std::map<V, int> coverage(const RegisterLayout& l) {
  std::map<V, int> cnt;
  for_all(l, [&](int64_t, int64_t, V c) { cnt[c]++; });
  return cnt;
}

static bool covered_exactly(const RegisterLayout& l, int times) {
  auto cnt = coverage(l);
  if (static_cast<int64_t>(cnt.size()) != l.numel()) return false;
  for (auto& [c, n] : cnt)
    if (n != times) return false;
  return true;
}

// ---- sections ----------------------------------------------------------------------------

static void test_primitives() {
  section("primitives");
  RegisterLayout s = spatial({2, 3});
  CHECK_EQ(s.num_threads(), 6);
  CHECK_EQ(s.local_size(), 1);
  CHECK((s.mode_shape == V{2, 3}));
  CHECK((s.spatial_modes == std::vector<int>{0, 1}));
  for (int64_t t = 0; t < 6; ++t) CHECK((s.coords(t, 0) == V{t / 3, t % 3}));
  RegisterLayout cs = column_spatial({2, 3});
  CHECK((cs.spatial_modes == std::vector<int>{1, 0}));
  for (int64_t t = 0; t < 6; ++t) CHECK((cs.coords(t, 0) == V{t % 2, t / 2}));
  RegisterLayout lo = local({2, 3});
  CHECK_EQ(lo.num_threads(), 1);
  CHECK_EQ(lo.local_size(), 6);
  for (int64_t i = 0; i < 6; ++i) CHECK((lo.coords(0, i) == V{i / 3, i % 3}));
  RegisterLayout cl = column_local({2, 3});
  for (int64_t i = 0; i < 6; ++i) CHECK((cl.coords(0, i) == V{i % 2, i / 2}));
  RegisterLayout r = replicate(4, 2);
  CHECK_EQ(r.num_threads(), 4);
  CHECK(r.is_replicated());
  CHECK((r.shape == V{1, 1}));
  for (int64_t t = 0; t < 4; ++t) CHECK((r.coords(t, 0) == V{0, 0}));
  CHECK_EQ(spatial({2, 3}).str(),
           "RegisterLayout(shape=[2, 3], mode_shape=[2, 3], spatial_modes=[0, 1], local_modes=[])");
  // size-1 dims carry no mode
  CHECK((spatial({1, 4}).mode_shape == V{4}));
  CHECK_THROWS(spatial({0, 2}), "ValueError");
  CHECK_THROWS(spatial({2}).coords(2, 0), "ValueError");
}

static void test_simplify() {
  section("simplify / equality");
  CHECK(spatial({4}) == spatial({2}) * spatial({2}));
  CHECK(local({2, 6}) == local({2, 2}) * local({1, 3}));
  CHECK(spatial({2, 1}) * spatial({1, 3}) == spatial({2, 3}));
  CHECK(spatial({2, 3}) != column_spatial({2, 3}));
  CHECK(replicate(2, 1) * replicate(3, 1) == replicate(6, 1));
  // hand-written fields with size-1 modes and mergeable neighbours
  RegisterLayout raw{{8, 4}, {2, 1, 4, 4}, {0, 2}, {1, 3}};
  RegisterLayout canon = raw.simplify();
  CHECK((canon.mode_shape == V{8, 4}));
  CHECK((canon.spatial_modes == std::vector<int>{0}));
  CHECK((canon.local_modes == std::vector<int>{1}));
  CHECK(canon == spatial({8, 1}) * local({1, 4}));
  CHECK(canon.simplify() == canon);
  CHECK_THROWS(make_register_layout({4}, {2, 2}, {0}, {}), "ValueError");       // mode 1 unused
  CHECK_THROWS(make_register_layout({4}, {2, 2}, {0, 0}, {1}), "ValueError");   // listed twice
  CHECK_THROWS(make_register_layout({4}, {3}, {0}, {}), "ValueError");          // wrong product
  CHECK_THROWS(make_register_layout({4}, {4}, {}, {-2, 0}), "ValueError");      // local replication
}

static void test_compose() {
  section("compose");
  // The hidet seed's accumulator: warps 4x2, warp repeat 2x2, lanes 2x16, thread 4x4.
  RegisterLayout l = spatial({4, 2}) * local({2, 2}) * spatial({2, 16}) * local({4, 4});
  CHECK((l.shape == V{64, 256}));
  CHECK_EQ(l.num_threads(), 256);
  CHECK_EQ(l.local_size(), 64);
  bool ok = true;
  for_all(l, [&](int64_t t, int64_t i, V c) {
    int64_t w = t / 32, lane = t % 32, wm = w / 2, wn = w % 2, lm = lane / 16, ln = lane % 16;
    int64_t rm = i / 32, rn = (i / 16) % 2, tm = (i / 4) % 4, tn = i % 4;
    ok = ok && c == V{wm * 16 + rm * 8 + lm * 4 + tm, wn * 128 + rn * 64 + ln * 4 + tn};
  });
  CHECK(ok);
  CHECK(covered_exactly(l, 1));
  // the contract, on a few pairs (including column and replicated layouts)
  std::vector<std::pair<RegisterLayout, RegisterLayout>> pairs = {
      {spatial({2, 3}), local({4, 2})},
      {column_local({2, 2}), column_spatial({4, 8})},
      {spatial({2, 1}) * replicate(2, 2), local({3, 2})},
      {local({2, 1}) * column_spatial({4, 8}), local({2, 1})},
  };
  for (auto& [o, in] : pairs) {
    RegisterLayout c = compose(o, in);
    CHECK_EQ(c.num_threads(), o.num_threads() * in.num_threads());
    CHECK_EQ(c.local_size(), o.local_size() * in.local_size());
    bool good = true;
    for_all(c, [&](int64_t t, int64_t i, V x) {
      V oc = o.coords(t / in.num_threads(), i / in.local_size());
      V ic = in.coords(t % in.num_threads(), i % in.local_size());
      for (size_t d = 0; d < x.size(); ++d) good = good && x[d] == oc[d] * in.shape[d] + ic[d];
    });
    CHECK(good);
  }
  CHECK_THROWS(compose(spatial({2}), local({2, 2})), "ValueError");
}

static void test_divide() {
  section("divide");
  std::vector<std::pair<RegisterLayout, RegisterLayout>> pairs = {
      {spatial({4, 2}) * local({2, 2}), spatial({2, 16}) * local({4, 4})},
      {spatial({2, 2}), spatial({2, 2})},  // merges with the outer mode: needs a split
      {local({2, 1}) * replicate(2, 2), spatial({8, 4}) * local({1, 2})},
      {spatial({3, 1}) * replicate(4, 2), replicate(2, 2) * local({1, 4})},  // split replication
      {local({2, 2}), column_local({2, 2}) * spatial({8, 4}) * local({1, 2})},
  };
  for (auto& [o, in] : pairs) {
    auto got = divide(compose(o, in), in);
    CHECK(got.has_value());
    if (got) CHECK(*got == o);
  }
  MmaAtom atom = mma_atom(MmaKind::M16N8K16);
  auto blk = mma_block_layouts(MmaKind::M16N8K16, 64, 128, 32, 4);
  auto outer = divide(blk->c, atom.c);
  CHECK(outer && *outer == spatial({2, 2}) * local({2, 8}));
  // not a suffix: the inner thread mode would be outermost
  CHECK(!divide(spatial({4}) * local({2}), spatial({4})).has_value());
  CHECK(!divide(spatial({2, 3}), spatial({2, 2})).has_value());  // shape does not divide
  CHECK(!divide(spatial({4, 4}), column_spatial({2, 2})).has_value());
  auto self = divide(spatial({4, 4}), spatial({4, 4}));
  CHECK(self && self->num_threads() == 1 && self->local_size() == 1);
}

// Random layouts built from the primitives (deterministic LCG).
static RegisterLayout random_layout(uint64_t& seed, int factors) {
  auto next = [&](int64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((seed >> 33) % n);
  };
  RegisterLayout l = local({1, 1});
  for (int f = 0; f < factors; ++f) {
    V shape{1 + next(4), 1 + next(4)};
    switch (next(5)) {
      case 0: l = l * spatial(shape); break;
      case 1: l = l * column_spatial(shape); break;
      case 2: l = l * local(shape); break;
      case 3: l = l * column_local(shape); break;
      default: l = l * replicate(1 + next(3), 2); break;
    }
  }
  return l;
}

static void test_divide_random() {
  section("divide (random compositions)");
  uint64_t seed = 12345;
  int ok = 0, total = 200;
  for (int i = 0; i < total; ++i) {
    RegisterLayout o = random_layout(seed, 1 + i % 3), in = random_layout(seed, 1 + i % 2);
    auto got = divide(o * in, in);
    ok += got && *got == o;
  }
  CHECK_EQ(ok, total);
}

static void test_coords_owner() {
  section("coords / owner");
  std::vector<RegisterLayout> ls = {
      spatial({4, 2}) * local({2, 2}) * spatial({2, 16}) * local({4, 4}),
      spatial({2, 1}) * replicate(4, 2) * local({3, 2}),
      column_local({2, 2}) * spatial({8, 4}) * local({1, 2}),
  };
  for (auto& l : ls) {
    int64_t rep = l.replication();
    bool ok = true;
    for_all(l, [&](int64_t t, int64_t i, V c) {
      auto [li, first] = l.owner(c);
      ok = ok && li == i && l.coords(first, li) == c && first <= t;
      V tc = l.coords(t, 0), lc = l.local_coords(i);
      for (size_t d = 0; d < c.size(); ++d) ok = ok && c[d] == tc[d] + lc[d];
    });
    CHECK(ok);
    CHECK(covered_exactly(l, static_cast<int>(rep)));
  }
  CHECK_THROWS(spatial({2, 2}).owner({2, 0}), "ValueError");
}

static void test_coord_exprs() {
  section("coord_exprs");
  std::vector<RegisterLayout> ls = {
      spatial({4, 2}) * local({2, 2}) * spatial({2, 16}) * local({4, 4}),
      spatial({2, 1}) * replicate(4, 2) * local({3, 2}) * column_spatial({2, 3}),
      mma_block_layouts(MmaKind::M16N8K16, 64, 128, 32, 4)->a,
      auto_global_layout({64, 64}, 128, 8),
      local({3, 5}),
  };
  Expr t = make_var("t", dtypes::int32);
  for (auto& l : ls) {
    bool ok = true, shape_ok = true;
    for (int64_t i = 0; i < l.local_size(); ++i) {
      std::vector<Expr> es = l.coord_exprs(t, i);
      for (auto& e : es) shape_ok = shape_ok && only_const_divmod(e);
      for (int64_t th = 0; th < l.num_threads(); ++th) {
        V c = l.coords(th, i);
        for (size_t d = 0; d < c.size(); ++d) ok = ok && eval(es[d], {{t->var_id, th}}) == c[d];
      }
    }
    CHECK(ok);
    CHECK(shape_ok);
  }
  // constants fold: a local-only layout gives constant coordinates
  auto es = local({3, 5}).coord_exprs(t, 7);
  CHECK(es[0]->is_const() && es[0]->int_value == 1);
  CHECK(es[1]->is_const() && es[1]->int_value == 2);
  CHECK_EQ(expr_str(spatial({8, 4}).coord_exprs(t, 0)[0]), "(t / 4)");
  CHECK_EQ(expr_str(spatial({8, 4}).coord_exprs(t, 0)[1]), "(t % 4)");
  auto c = mma_atom(MmaKind::M16N8K16).c.coord_exprs(t, 3);
  std::printf("  mma C atom, register 3: (%s, %s)\n", expr_str(c[0]).c_str(), expr_str(c[1]).c_str());
}

// PTX ISA fragment tables (g = lane >> 2, q = lane % 4).
static V ptx_a_f16(int64_t lane, int64_t i) {
  int64_t g = lane / 4, q = lane % 4;
  int64_t row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
  int64_t col = q * 2 + (i & 1) + (i >= 4 ? 8 : 0);
  return {row, col};
}
static V ptx_b_f16(int64_t lane, int64_t i) { return {(lane % 4) * 2 + (i & 1) + (i >= 2 ? 8 : 0), lane / 4}; }
static V ptx_c(int64_t lane, int64_t i) { return {lane / 4 + (i >= 2 ? 8 : 0), (lane % 4) * 2 + (i & 1)}; }
static V ptx_a_s8(int64_t lane, int64_t i) {
  int64_t g = lane / 4, q = lane % 4;
  int64_t row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
  int64_t col = q * 4 + (i & 3) + (i >= 8 ? 16 : 0);
  return {row, col};
}
static V ptx_b_s8(int64_t lane, int64_t i) { return {(lane % 4) * 4 + (i & 3) + (i >= 4 ? 16 : 0), lane / 4}; }

static void test_mma_atoms() {
  section("mma atoms");
  struct Case {
    MmaKind kind;
    V a_shape, b_shape;
    int64_t a_regs, b_regs;
    V (*a)(int64_t, int64_t);
    V (*b)(int64_t, int64_t);
  };
  for (auto cs : {Case{MmaKind::M16N8K16, {16, 16}, {16, 8}, 8, 4, ptx_a_f16, ptx_b_f16},
                  Case{MmaKind::M16N8K32, {16, 32}, {32, 8}, 16, 8, ptx_a_s8, ptx_b_s8}}) {
    MmaAtom atom = mma_atom(cs.kind);
    CHECK(atom.a.shape == cs.a_shape && atom.b.shape == cs.b_shape && (atom.c.shape == V{16, 8}));
    CHECK(atom.a.num_threads() == 32 && atom.b.num_threads() == 32 && atom.c.num_threads() == 32);
    CHECK_EQ(atom.a.local_size(), cs.a_regs);
    CHECK_EQ(atom.b.local_size(), cs.b_regs);
    CHECK_EQ(atom.c.local_size(), 4);
    bool ok = true;
    for (int64_t lane = 0; lane < 32; ++lane) {
      for (int64_t i = 0; i < cs.a_regs; ++i) ok = ok && atom.a.coords(lane, i) == cs.a(lane, i);
      for (int64_t i = 0; i < cs.b_regs; ++i) ok = ok && atom.b.coords(lane, i) == cs.b(lane, i);
      for (int64_t i = 0; i < 4; ++i) ok = ok && atom.c.coords(lane, i) == ptx_c(lane, i);
    }
    CHECK(ok);
  }
  CHECK(mma_atom(MmaKind::M16N8K16).a ==
        column_local({2, 2}) * spatial({8, 4}) * local({1, 2}));
  CHECK(mma_kind_for(dtypes::bfloat16) == MmaKind::M16N8K16);
  CHECK(mma_kind_for(dtypes::int8) == MmaKind::M16N8K32);
  CHECK(!mma_kind_for(dtypes::float32));
  CHECK(parse_mma_kind("m16n8k32") == MmaKind::M16N8K32);
  CHECK_THROWS(parse_mma_kind("m8n8k4"), "ValueError");
}

static void test_mma_block_layouts() {
  section("mma_block_layouts");
  struct Case {
    MmaKind kind;
    int64_t m, n, k, warps, wm, wn;
  };
  for (auto cs : {Case{MmaKind::M16N8K16, 64, 128, 32, 4, 2, 2},
                  Case{MmaKind::M16N8K16, 128, 128, 16, 8, 4, 2},
                  Case{MmaKind::M16N8K16, 32, 256, 32, 4, 1, 4},
                  Case{MmaKind::M16N8K16, 16, 8, 16, 1, 1, 1},
                  Case{MmaKind::M16N8K32, 64, 64, 64, 4, 2, 2}}) {
    std::string why;
    auto r = mma_block_layouts(cs.kind, cs.m, cs.n, cs.k, cs.warps, &why);
    CHECK(r.has_value());
    if (!r) continue;
    MmaAtom atom = mma_atom(cs.kind);
    CHECK_EQ(r->warps_m, cs.wm);
    CHECK_EQ(r->warps_n, cs.wn);
    CHECK((r->c.shape == V{cs.m, cs.n}) && (r->a.shape == V{cs.m, cs.k}) &&
          (r->b.shape == V{cs.k, cs.n}));
    CHECK(r->a.num_threads() == cs.warps * 32 && r->b.num_threads() == cs.warps * 32 &&
          r->c.num_threads() == cs.warps * 32);
    CHECK(covered_exactly(r->c, 1));
    CHECK(covered_exactly(r->a, static_cast<int>(cs.wn)));
    CHECK(covered_exactly(r->b, static_cast<int>(cs.wm)));
    // Every warp's atom (im, in, ik) sits where the PTX table says, in the documented
    // registers.
    const int64_t ra = atom.a.local_size(), rb = atom.b.local_size();
    bool ok = true;
    for (int64_t t = 0; t < cs.warps * 32; ++t) {
      int64_t w = t / 32, lane = t % 32, wi = w / cs.wn, wj = w % cs.wn;
      for (int64_t im = 0; im < r->rep_m; ++im)
        for (int64_t in = 0; in < r->rep_n; ++in)
          for (int64_t i = 0; i < 4; ++i) {
            V e = ptx_c(lane, i);
            V want{(wi * r->rep_m + im) * 16 + e[0], (wj * r->rep_n + in) * 8 + e[1]};
            ok = ok && r->c.coords(t, (im * r->rep_n + in) * 4 + i) == want;
          }
      for (int64_t im = 0; im < r->rep_m; ++im)
        for (int64_t ik = 0; ik < r->rep_k; ++ik)
          for (int64_t i = 0; i < ra; ++i) {
            V e = cs.kind == MmaKind::M16N8K16 ? ptx_a_f16(lane, i) : ptx_a_s8(lane, i);
            V want{(wi * r->rep_m + im) * 16 + e[0], ik * atom.k + e[1]};
            ok = ok && r->a.coords(t, (im * r->rep_k + ik) * ra + i) == want;
          }
      for (int64_t ik = 0; ik < r->rep_k; ++ik)
        for (int64_t in = 0; in < r->rep_n; ++in)
          for (int64_t i = 0; i < rb; ++i) {
            V e = cs.kind == MmaKind::M16N8K16 ? ptx_b_f16(lane, i) : ptx_b_s8(lane, i);
            V want{ik * atom.k + e[0], (wj * r->rep_n + in) * 8 + e[1]};
            ok = ok && r->b.coords(t, (ik * r->rep_n + in) * rb + i) == want;
          }
    }
    CHECK(ok);
  }
  std::string why;
  CHECK(!mma_block_layouts(MmaKind::M16N8K16, 16, 8, 8, 1, &why));  // k not a multiple of 16
  CHECK(why.find("k % 16") != std::string::npos);
  CHECK(!mma_block_layouts(MmaKind::M16N8K16, 16, 8, 16, 2, &why));  // 2 warps cannot split 16x8
  CHECK(why.find("no grid") != std::string::npos);
}

static void test_simt_block_layouts() {
  section("simt_block_layouts");
  struct Case {
    int64_t m, n, k, warps;
  };
  for (auto cs : {Case{64, 256, 8, 8}, Case{16, 16, 4, 4}, Case{4, 4, 2, 1}, Case{128, 64, 16, 4},
                  Case{32, 32, 8, 2}}) {
    auto r = simt_block_layouts(cs.m, cs.n, cs.k, cs.warps);
    CHECK(r.has_value());
    if (!r) continue;
    int64_t T = cs.warps * 32;
    CHECK(r->a.num_threads() == T && r->b.num_threads() == T && r->c.num_threads() == T);
    CHECK((r->c.shape == V{cs.m, cs.n}) && (r->a.shape == V{cs.m, cs.k}) &&
          (r->b.shape == V{cs.k, cs.n}));
    CHECK(covered_exactly(r->c, static_cast<int>(r->c.replication())));
    CHECK_EQ(r->c.local_size(), r->rep_m * r->rep_n);
    // Each thread holds the A rows / B columns of its C elements at local indices that
    // do not depend on the thread.
    bool ok = true;
    for (int64_t l = 0; l < r->c.local_size(); ++l) {
      V c0 = r->c.coords(0, l);
      for (int64_t kk = 0; kk < cs.k; ++kk) {
        int64_t la = r->a.owner({c0[0], kk}).first, lb = r->b.owner({kk, c0[1]}).first;
        for (int64_t t = 0; t < T; ++t) {
          V c = r->c.coords(t, l);
          ok = ok && r->a.coords(t, la) == V{c[0], kk} && r->b.coords(t, lb) == V{kk, c[1]};
        }
      }
    }
    CHECK(ok);
  }
  // the hidet seed's choice for 64x256 with 8 warps
  auto r = simt_block_layouts(64, 256, 8, 8);
  CHECK(r->c == spatial({2, 4}) * local({2, 2}) * spatial({4, 8}) * local({4, 4}));
}

static void test_auto_global() {
  section("auto_global_layout");
  RegisterLayout l = auto_global_layout({64, 64}, 128, 8);
  CHECK(l == local({4, 1}) * spatial({16, 8}) * local({1, 8}));
  struct Case {
    V shape;
    int64_t threads, vec, expect_vec;
  };
  for (auto cs : {Case{{64, 64}, 128, 8, 8}, Case{{32, 8}, 128, 8, 8}, Case{{128, 32}, 256, 4, 4},
                  Case{{16, 24}, 64, 16, 8}, Case{{2, 4, 16}, 32, 4, 4}, Case{{1024}, 128, 4, 4},
                  Case{{12, 12}, 32, 4, 4}}) {
    RegisterLayout g = auto_global_layout(cs.shape, cs.threads, cs.vec);
    CHECK(g.shape == cs.shape);
    CHECK_EQ(g.num_threads(), cs.threads);
    int64_t chunks = g.numel() / cs.expect_vec;
    CHECK(covered_exactly(g, static_cast<int>(g.replication())));
    if (chunks >= cs.threads && cs.shape.size() == 2 && cs.shape[1] / cs.expect_vec <= cs.threads &&
        (cs.threads % (cs.shape[1] / cs.expect_vec) == 0))
      CHECK(!g.is_replicated());
    // groups of v consecutive local indices are contiguous along the last dim
    bool ok = true;
    for_all(g, [&](int64_t t, int64_t i, V c) {
      V first = g.coords(t, i - i % cs.expect_vec);
      V want = first;
      want.back() += i % cs.expect_vec;
      ok = ok && c == want && first.back() % cs.expect_vec == 0;
    });
    CHECK(ok);
  }
  // consecutive threads take consecutive chunks of a row (coalescing)
  RegisterLayout h = auto_global_layout({64, 64}, 128, 8);
  CHECK((h.coords(1, 0) == V{0, 8}) && (h.coords(8, 0) == V{1, 0}));
  // fewer elements than threads * vec: replicated
  RegisterLayout small = auto_global_layout({4}, 128, 8);
  CHECK(small.is_replicated() && small.local_size() == 4 && small.replication() == 128);
  CHECK(auto_global_layout({}, 32, 4).num_threads() == 32);
}

static void test_shared() {
  section("shared layouts");
  SharedLayout rm = shared_row_major({4, 6});
  SharedLayout cm = shared_column_major({4, 6});
  CHECK_EQ(rm.size(), 24);
  bool ok = true;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j)
      ok = ok && rm.offset({i, j}) == i * 6 + j && cm.offset({i, j}) == i + 4 * j;
  CHECK(ok);
  CHECK_EQ(rm.str(), "SharedLayout(row_major, shape=[4, 6])");

  struct Case {
    V shape;
    int64_t bytes;
  };
  Expr vr = make_var("r", dtypes::int32), vc = make_var("c", dtypes::int32),
       vs = make_var("s", dtypes::int32);
  for (auto cs : {Case{{64, 32}, 2}, Case{{32, 64}, 2}, Case{{8, 256}, 2}, Case{{16, 16}, 4},
                  Case{{16, 96}, 2}, Case{{16, 128}, 1}, Case{{3, 16, 64}, 2}, Case{{32, 8}, 8}}) {
    SharedLayout s = shared_swizzled(cs.shape, cs.bytes * 8);  // the API takes bits
    CHECK(s.is_swizzled());
    const int64_t cols = cs.shape.back(), rows = s.size() / cols;
    CHECK_EQ(s.size(), rows * cols);
    // bijection onto [0, size), each row a permutation of itself
    std::set<int64_t> seen;
    bool in_row = true, expr_ok = true;
    for (int64_t idx = 0; idx < s.size(); ++idx) {
      V c(cs.shape.size());
      int64_t x = idx;
      for (size_t d = cs.shape.size(); d-- > 0;) c[d] = x % cs.shape[d], x /= cs.shape[d];
      int64_t off = s.offset(c);
      seen.insert(off);
      in_row = in_row && off / cols == idx / cols;
      std::vector<Expr> ce;
      std::map<int, int64_t> env;
      std::vector<Expr> vars = cs.shape.size() == 3 ? std::vector<Expr>{vs, vr, vc}
                                                   : std::vector<Expr>{vr, vc};
      for (size_t d = 0; d < c.size(); ++d) env[vars[d]->var_id] = c[d];
      expr_ok = expr_ok && eval(s.offset_expr(vars), env) == off;
    }
    CHECK(static_cast<int64_t>(seen.size()) == s.size() && *seen.begin() == 0 &&
          *seen.rbegin() == s.size() - 1);
    CHECK(in_row);
    CHECK(expr_ok);
    // 8 consecutive rows reading the same 16-byte chunk hit 8 distinct 16-byte bank
    // groups (the 32 banks are 8 groups of 16 bytes)
    const int64_t chunk = 16 / cs.bytes;
    bool conflict_free = true;
    for (int64_t r0 = 0; r0 + 8 <= rows; ++r0)
      for (int64_t col = 0; col < cols; col += chunk) {
        std::set<int64_t> groups;
        for (int64_t r = r0; r < r0 + 8; ++r) {
          V c(cs.shape.size(), 0);
          c[c.size() - 2] = r % cs.shape[cs.shape.size() - 2];
          if (c.size() == 3) c[0] = r / cs.shape[1];
          c.back() = col;
          groups.insert(s.offset(c) * cs.bytes / 16 % 8);
        }
        conflict_free = conflict_free && groups.size() == 8;
      }
    CHECK(conflict_free);
    // a row-major layout of the same shape conflicts
    if (cols * cs.bytes % 128 == 0) {
      SharedLayout plain = shared_row_major(cs.shape);
      std::set<int64_t> groups;
      for (int64_t r = 0; r < 8; ++r) {
        V c(cs.shape.size(), 0);
        c[c.size() - 2] = r;
        groups.insert(plain.offset(c) * cs.bytes / 16 % 8);
      }
      CHECK(groups.size() == 1);
    }
  }
  // constant coordinates fold to a constant
  SharedLayout s = shared_swizzled({64, 32}, 16);
  Expr e = s.offset_expr({make_int(5), make_int(16)});
  CHECK(e->is_const() && e->int_value == s.offset({5, 16}));
  CHECK_THROWS(shared_swizzled({16, 16}, 16), "ValueError");  // 32-byte rows
  CHECK_THROWS(shared_swizzled({64}, 16), "ValueError");
  CHECK(auto_shared_layout({16, 16}, 16) == shared_row_major({16, 16}));
  CHECK(auto_shared_layout({16, 64}, 16).is_swizzled());
  // 4-bit elements: a 16-byte chunk holds 32 of them; 128 per 64-byte row
  SharedLayout s4 = shared_swizzled({8, 128}, 4);
  CHECK_EQ(s4.chunk_elems, 32);
  CHECK_EQ(s4.swizzle_chunks, 4);
  CHECK(!can_swizzle({8, 64}, 4));   // 32-byte rows
  CHECK(!can_swizzle({8, 96}, 3));   // 3 bits do not divide a 16-byte chunk
  std::printf("  %s\n  offset(r, c) = %s\n", s.str().c_str(), expr_str(s.offset_expr({vr, vc})).c_str());
}

int main() {
  try {
    test_primitives();
    test_simplify();
    test_compose();
    test_divide();
    test_divide_random();
    test_coords_owner();
    test_coord_exprs();
    test_mma_atoms();
    test_mma_block_layouts();
    test_simt_block_layouts();
    test_auto_global();
    test_shared();
  } catch (const std::exception& e) {
    std::printf("uncaught exception: %s\n", e.what());
    return 1;
  }
  std::printf("%d/%d checks passed\n", g_checks - g_failed, g_checks);
  return g_failed ? 1 : 0;
}
