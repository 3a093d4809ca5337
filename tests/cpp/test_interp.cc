// Tests of the CPU interpreter (csrc/interp): programs built with IRBuilder, run on
// host buffers, checked against references computed here in double.
//
//   g++ -std=c++17 -O2 -Icsrc csrc/ir/*.cc csrc/interp/*.cc tests/cpp/test_interp.cc
//       -o /tmp/test_interp && /tmp/test_interp
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "support/float16.h"

#include "check.h"

using namespace tilus;


#define CHECK_MSG(cond, ...)                                                      \
  do {                                                                            \
    ++g_checks;                                                                   \
    if (!(cond)) {                                                                \
      ++g_failed;                                                               \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s: %s\n", __FILE__, __LINE__, #cond, \
                   cat(__VA_ARGS__).c_str());                                     \
    }                                                                             \
  } while (0)

namespace {

const DataType f16 = dtypes::float16, f32 = dtypes::float32, i32 = dtypes::int32,
               i8 = dtypes::int8;

HostArg I(int64_t v) { HostArg a; a.i = v; return a; }
HostArg P(const void* p) { HostArg a; a.ptr = reinterpret_cast<uintptr_t>(p); return a; }

template <typename T>
HostRegion region(const std::vector<T>& v, const std::string& name) {
  return {reinterpret_cast<uintptr_t>(v.data()), v.size() * sizeof(T), name};
}

Expr C(int64_t v) { return make_int(v); }
Expr add(Expr a, Expr b) { return make_binary(BinaryOp::Add, a, b); }
Expr sub(Expr a, Expr b) { return make_binary(BinaryOp::Sub, a, b); }
Expr mul(Expr a, Expr b) { return make_binary(BinaryOp::Mul, a, b); }
Expr mod(Expr a, Expr b) { return make_binary(BinaryOp::Mod, a, b); }
Expr lt(Expr a, Expr b) { return make_binary(BinaryOp::Lt, a, b); }
Expr cdiv(Expr a, int64_t b) { return make_binary(BinaryOp::Div, add(a, C(b - 1)), C(b)); }
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
Expr bidx(int axis) { return make_block_idx(axis); }

// Runs `f`, expecting a ScriptError whose message contains every one of `needles`.
bool expect_error(const std::function<void()>& f, std::vector<std::string> needles,
                  ScriptError* out = nullptr) {
  try {
    f();
  } catch (const ScriptError& e) {
    bool ok = true;
    for (const auto& n : needles)
      if (std::string(e.what()).find(n) == std::string::npos) ok = false;
    if (!ok) std::fprintf(stderr, "  unexpected message: %s\n", e.what());
    if (out) *out = e;
    return ok;
  }
  std::fprintf(stderr, "  no error was raised\n");
  return false;
}

std::vector<uint16_t> random_half(size_t n, std::mt19937& rng, double scale = 1.0) {
  std::uniform_real_distribution<double> d(-scale, scale);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = double_to_half(d(rng));
  return v;
}

// C[m, n] = A[m, k] @ B[k, n] in double from fp16 inputs.
std::vector<double> reference_matmul(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                                     int64_t m, int64_t n, int64_t k) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        c[i * n + j] += half_to_double(a[i * k + kk]) * half_to_double(b[kk * n + j]);
  return c;
}

double max_excess(const std::vector<uint16_t>& c, const std::vector<double>& ref, double atol,
                  double rtol) {
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double got = half_to_double(c[i]);
    double err = std::fabs(got - ref[i]) - (atol + rtol * std::fabs(ref[i]));
    if (!(err <= worst)) worst = std::isnan(got) ? INFINITY : err;
  }
  return worst;
}

// ---------------------------------------------------------------- fp16 / bf16

void test_float16() {
  // Every half survives a round trip through double.
  int bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    double d = half_to_double(static_cast<uint16_t>(h));
    uint16_t back = double_to_half(d);
    bool nan = std::isnan(d);
    if (nan ? (back & 0x7c00) != 0x7c00 || (back & 0x3ff) == 0 : back != h) ++bad;
    if (!nan && static_cast<double>(half_to_float(static_cast<uint16_t>(h))) != d) ++bad;
    double bd = bfloat16_to_double(static_cast<uint16_t>(h));
    uint16_t bback = double_to_bfloat16(bd);
    if (std::isnan(bd) ? !std::isnan(bfloat16_to_double(bback)) : bback != h) ++bad;
  }
  CHECK_MSG(bad == 0, bad, " round-trip mismatches");
  CHECK(double_to_half(65504.0) == 0x7bff);
  CHECK(double_to_half(65519.99) == 0x7bff);
  CHECK(double_to_half(65520.0) == 0x7c00);  // halfway to 2^16 rounds to even: infinity
  CHECK(double_to_half(-1e9) == 0xfc00);
  CHECK(double_to_half(std::ldexp(1.0, -24)) == 0x0001);
  CHECK(double_to_half(std::ldexp(1.0, -25)) == 0x0000);       // tie -> even (0)
  CHECK(double_to_half(std::ldexp(1.5, -25)) == 0x0001);
  CHECK(double_to_half(std::ldexp(3.0, -25)) == 0x0002);       // 1.5 ulp tie -> even (2)
  CHECK(double_to_half(1.0 + std::ldexp(1.0, -11)) == 0x3c00);  // tie -> even
  CHECK(double_to_half(1.0 + std::ldexp(3.0, -11)) == 0x3c02);  // tie -> even (up)
  CHECK(double_to_half(-0.0) == 0x8000);
  CHECK((double_to_half(NAN) & 0x7fff) > 0x7c00);
  CHECK(double_to_bfloat16(1.0) == 0x3f80);
  CHECK(double_to_bfloat16(1.0 + std::ldexp(1.0, -8)) == 0x3f80);  // tie -> even
  CHECK(double_to_bfloat16(1.0 + std::ldexp(3.0, -8)) == 0x3f82);
  CHECK(double_to_bfloat16(INFINITY) == 0x7f80);
#ifdef __FLT16_MAX__
  std::mt19937_64 rng(1);
  int mism = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, 8);
    int e;
    d = std::ldexp(std::frexp(d, &e), static_cast<int>(rng() % 60) - 40);  // near fp16 range
    _Float16 ref = static_cast<_Float16>(d);
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    if (!std::isnan(d) && rb != double_to_half(d)) ++mism;
  }
  CHECK_MSG(mism == 0, mism, " mismatches against _Float16");
#endif
}

// ---------------------------------------------------------------- add one

ProgramPtr build_add_one(int64_t block_n) {
  IRBuilder b("AddOneKernel", "add_one.py");
  b.set_loc(14, 4, "def __call__(self, n: int32, a_ptr: ~float32, b_ptr: ~float32):");
  Expr n = b.add_param("n", i32);
  Expr a_ptr = b.add_param("a_ptr", f32.pointer_to());
  Expr b_ptr = b.add_param("b_ptr", f32.pointer_to());
  b.set_grid({cdiv(n, block_n)});
  b.set_warps(4);
  Expr offset = b.declare("offset", i32, mul(bidx(0), C(block_n)));
  b.set_loc(22, 8, "ga = self.global_view(a_ptr, shape=[n], dtype=float32)");
  Tensor ga = b.global_view(a_ptr, f32, {n}, {}, "ga");
  Tensor gb = b.global_view(b_ptr, f32, {n}, {}, "gb");
  b.set_loc(26, 8, "a = self.load_global(ga, offsets=[offset], shape=[self.block_n])");
  Tensor a = b.load_global(ga, {offset}, {block_n}, {});
  b.set_loc(29, 8, "b = a + 1.0");
  Tensor r = b.binary_scalar(BinaryOp::Add, a, make_float(1.0), false, nullptr);
  b.set_loc(32, 8, "self.store_global(gb, b, offsets=[offset])");
  b.store_global(gb, r, {offset}, {});
  return b.finish();
}

void test_add_one() {
  ProgramPtr p = build_add_one(128);
  const int64_t n = 1000;  // not a multiple of the block
  std::vector<float> a(n + 8), out(n + 8, -7.0f);
  for (int64_t i = 0; i < n + 8; ++i) a[i] = static_cast<float>(i) * 0.5f;
  LaunchShape s = evaluate_launch_shape(*p, {I(n), P(a.data()), P(out.data())});
  CHECK(s.grid[0] == 8 && s.grid[1] == 1 && s.grid[2] == 1);
  interpret(*p, {I(n), P(a.data()), P(out.data())}, {region(a, "a"), region(out, "b")});
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += out[i] != a[i] + 1.0f;
  for (int64_t i = n; i < n + 8; ++i) bad += out[i] != -7.0f;  // beyond n: untouched
  CHECK_MSG(bad == 0, bad, " wrong elements");

  // The seed's call: n = 16 with a block of 128.
  std::vector<float> a16(16), b16(16);
  for (int i = 0; i < 16; ++i) a16[i] = static_cast<float>(i);
  interpret(*p, {I(16), P(a16.data()), P(b16.data())}, {region(a16, "a"), region(b16, "b")});
  bad = 0;
  for (int i = 0; i < 16; ++i) bad += b16[i] != static_cast<float>(i + 1);
  CHECK(bad == 0);
}

void test_out_of_region() {
  ProgramPtr p = build_add_one(128);
  std::vector<float> a(50), out(100);
  ScriptError err("", "");
  CHECK(expect_error(
      [&] { interpret(*p, {I(100), P(a.data()), P(out.data())}, {region(a, "a"), region(out, "b")}); },
      {"global memory access out of bounds", "tensor ga", "index [50]"}, &err));
  CHECK(err.kind() == "RuntimeError");
  CHECK(err.loc().line == 26);
  CHECK(err.loc().file == "add_one.py");
}

// ---------------------------------------------------------------- matmul

// The seed's Matmul (matmul_jit.py): m runtime, n and k compile-time.
ProgramPtr build_matmul(int64_t bm, int64_t bn, int64_t bk, int64_t n_size, int64_t k_size,
                        bool via_shared) {
  IRBuilder b("Matmul", "matmul.py");
  Expr m = b.add_param("m_size", i32);
  Expr a_ptr = b.add_param("a_ptr", f16.pointer_to());
  Expr b_ptr = b.add_param("b_ptr", f16.pointer_to());
  Expr c_ptr = b.add_param("c_ptr", f16.pointer_to());
  b.set_grid({cdiv(m, bm), C(cdiv(n_size, bn))});
  b.set_warps(4);
  Expr om = b.declare("offset_m", i32, mul(C(bm), bidx(0)));
  Expr on = b.declare("offset_n", i32, mul(C(bn), bidx(1)));
  Tensor ga = b.global_view(a_ptr, f16, {m, C(k_size)}, {}, "ga");
  Tensor gb = b.global_view(b_ptr, f16, {C(k_size), C(n_size)}, {}, "gb");
  Tensor acc = b.register_tensor(f32, {bm, bn}, make_float(0.0), nullptr, "acc");
  Tensor sa, sb;
  if (via_shared) {
    sa = b.shared_tensor(f16, {bm, bk}, "sa");
    sb = b.shared_tensor(f16, {bk, bn}, "sb");
  }
  Expr k = b.begin_for("k", C(0), C(cdiv(k_size, bk)), C(1), 0);
  Expr ok = b.declare("offset_k", i32, mul(k, C(bk)));
  Tensor a = b.load_global(ga, {om, ok}, {bm, bk}, {});
  Tensor bt = b.load_global(gb, {ok, on}, {bk, bn}, {});
  if (via_shared) {  // MatmulV2: through shared memory, acc = self.dot(a, b, acc)
    b.store_shared(sa, a);
    b.store_shared(sb, bt);
    b.sync();
    Tensor a2 = b.load_shared(sa), b2 = b.load_shared(sb);
    Tensor d = b.dot(a2, b2, acc, nullptr);
    b.assign_tensor(acc, d);
    b.sync();
  } else {
    b.dot(a, bt, acc, acc);
  }
  b.end_for();
  if (via_shared) {
    b.free_shared(sa);
    b.free_shared(sb);
  }
  Tensor c16 = b.cast(acc, f16);
  Tensor gc = b.global_view(c_ptr, f16, {m, C(n_size)}, {}, "gc");
  b.store_global(gc, c16, {om, on}, {});
  return b.finish();
}

void run_matmul_check(ProgramPtr p, int64_t m, int64_t n, int64_t k, const char* what) {
  std::mt19937 rng(42);
  auto a = random_half(m * k, rng), bb = random_half(k * n, rng);
  std::vector<uint16_t> c(m * n, 0xffff);
  interpret(*p, {I(m), P(a.data()), P(bb.data()), P(c.data())},
            {region(a, "a"), region(bb, "b"), region(c, "c")});
  double e = max_excess(c, reference_matmul(a, bb, m, n, k), 1e-3, 1e-3);
  CHECK_MSG(e <= 0, what, ": error exceeds tolerance by ", e);
}

void test_matmul() {
  run_matmul_check(build_matmul(16, 32, 16, 100, 72, false), 37, 100, 72, "matmul 37x100x72");
  run_matmul_check(build_matmul(64, 128, 16, 100, 72, false), 37, 100, 72, "matmul big blocks");
  run_matmul_check(build_matmul(16, 32, 16, 100, 72, true), 37, 100, 72, "matmul via shared");
}

void bench_matmul() {
  const int64_t s = 256;
  ProgramPtr p = build_matmul(64, 128, 16, s, s, false);
  std::mt19937 rng(7);
  auto a = random_half(s * s, rng), bb = random_half(s * s, rng);
  std::vector<uint16_t> c(s * s);
  auto t0 = std::chrono::steady_clock::now();
  interpret(*p, {I(s), P(a.data()), P(bb.data()), P(c.data())},
            {region(a, "a"), region(bb, "b"), region(c, "c")});
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("matmul 256^3 (block 64x128x16): %.3f s\n", sec);
  CHECK_MSG(sec < 2.0, "matmul 256^3 took ", sec, " s");
  double e = max_excess(c, reference_matmul(a, bb, s, s, s), 2e-3, 2e-3);
  CHECK_MSG(e <= 0, "matmul 256^3 error exceeds tolerance by ", e);
}

// ---------------------------------------------------------------- split-K, copy_async

// MatmulV5 (matmul_v5_splitk.py). `reverse`: blocks with larger z accumulate first, so
// earlier blocks must wait for later ones and the scheduler has to yield.
ProgramPtr build_splitk(int64_t bm, int64_t bn, int64_t bk, int64_t stages, int64_t factor,
                        int64_t n_size, int64_t k_size, bool reverse) {
  IRBuilder b("MatmulV5", "matmul_v5.py");
  Expr m = b.add_param("m_size", i32);
  Expr a_ptr = b.add_param("a_ptr", f16.pointer_to());
  Expr b_ptr = b.add_param("b_ptr", f16.pointer_to());
  Expr c_ptr = b.add_param("c_ptr", f16.pointer_to());
  b.set_grid({cdiv(m, bm), C(cdiv(n_size, bn)), C(factor)});
  b.set_warps(4);
  int64_t block_k_size = cdiv(cdiv(k_size, factor), bk) * bk;
  Expr start_k = b.declare("start_offset_k", i32, mul(bidx(2), C(block_k_size)));
  Expr end_k = b.declare("end_offset_k", i32,
                         make_binary(BinaryOp::Min, add(start_k, C(block_k_size)), C(k_size)));
  Expr om = b.declare("offset_m", i32, mul(C(bm), bidx(0)));
  Expr on = b.declare("offset_n", i32, mul(C(bn), bidx(1)));
  Tensor ga = b.global_view(a_ptr, f16, {m, C(k_size)}, {}, "ga");
  Tensor gb = b.global_view(b_ptr, f16, {C(k_size), C(n_size)}, {}, "gb");
  Tensor sa = b.shared_tensor(f16, {stages, bm, bk}, "sa");
  Tensor sb = b.shared_tensor(f16, {stages, bk, bn}, "sb");
  Tensor acc = b.register_tensor(f32, {bm, bn}, make_float(0.0), nullptr, "acc");
  for (int64_t stage = 0; stage < stages - 1; ++stage) {
    Expr ok = b.declare("offset_k", i32, add(start_k, C(stage * bk)));
    b.copy_async(ga, b.slice_shared(sa, {C(stage)}), {om, ok}, {});
    b.copy_async(gb, b.slice_shared(sb, {C(stage)}), {ok, on}, {});
    b.copy_async_commit_group();
  }
  b.copy_async_wait_group(stages - 2);
  b.sync();
  Expr cur = b.declare("current_stage", i32, C(0));
  Expr pre = b.declare("preload_stage", i32, C(stages - 1));
  Expr ok = b.begin_for("offset_k", start_k, end_k, C(bk), static_cast<int>(stages));
  {
    Tensor a = b.load_shared(b.slice_shared(sa, {cur}));
    Tensor bt = b.load_shared(b.slice_shared(sb, {cur}));
    b.dot(a, bt, acc, acc);
    Expr pk = b.declare("preload_offset_k", i32, add(ok, C((stages - 1) * bk)));
    b.begin_if(lt(pk, end_k));
    b.copy_async(ga, b.slice_shared(sa, {pre}), {om, pk}, {});
    b.copy_async(gb, b.slice_shared(sb, {pre}), {pk, on}, {});
    b.end_if();
    b.copy_async_commit_group();
    b.assign(cur, mod(add(cur, C(1)), C(stages)));
    b.assign(pre, mod(add(pre, C(1)), C(stages)));
    b.copy_async_wait_group(stages - 2);
    b.sync();
  }
  b.end_for();
  b.free_shared(sa);
  b.free_shared(sb);
  Tensor sc = b.shared_tensor(f16, {bm, bn}, "sc");
  Tensor casted = b.cast(acc, f16);
  b.store_shared(sc, casted);
  b.sync();
  Tensor rc = b.load_shared(sc);
  b.free_shared(sc);
  Tensor gc = b.global_view(c_ptr, f16, {m, C(n_size)}, {}, "gc");
  if (factor == 1) {
    b.store_global(gc, rc, {om, on}, {});
    return b.finish();
  }
  Tensor sems = b.global_tensor(i32, {cdiv(m, bm), C(cdiv(n_size, bn))}, true, "semaphores");
  Expr sem = b.declare("semaphore", i32.pointer_to(), make_element_addr(sems, {bidx(0), bidx(1)}));
  b.set_loc(120, 12, "self.lock_semaphore(semaphore, value=...)");
  if (!reverse) {
    b.begin_if(make_binary(BinaryOp::Gt, bidx(2), C(0)));
    b.lock_semaphore(sem, bidx(2));
    Tensor partial = b.load_global(gc, {om, on}, {bm, bn}, {});
    b.binary(BinaryOp::Add, rc, partial, rc);
    b.end_if();
  } else {
    b.begin_if(lt(bidx(2), C(factor - 1)));
    b.lock_semaphore(sem, sub(C(factor - 1), bidx(2)));
    Tensor partial = b.load_global(gc, {om, on}, {bm, bn}, {});
    b.binary(BinaryOp::Add, rc, partial, rc);
    b.end_if();
  }
  b.store_global(gc, rc, {om, on}, {});
  b.sync();
  Expr next = reverse ? mod(sub(C(factor), bidx(2)), C(factor))
                      : mod(add(bidx(2), C(1)), C(factor));
  b.release_semaphore(sem, next);
  return b.finish();
}

void test_pipeline_and_splitk() {
  const int64_t m = 37, n = 100, k = 72;
  run_matmul_check(build_splitk(16, 32, 16, 3, 1, n, k, false), m, n, k, "copy_async pipeline");
  run_matmul_check(build_splitk(16, 32, 16, 4, 1, n, k, false), m, n, k, "pipeline, 4 stages");
  ProgramPtr p = build_splitk(16, 32, 16, 3, 3, n, k, false);
  LaunchShape s = evaluate_launch_shape(*p, {I(m), P(nullptr), P(nullptr), P(nullptr)});
  CHECK(s.grid[0] == 3 && s.grid[1] == 4 && s.grid[2] == 3);
  CHECK(s.workspace_bytes.size() == 1 && s.workspace_bytes[0] == 3 * 4 * 4);
  // Each split's partial sum is rounded to fp16 before the next adds to it.
  std::mt19937 rng(3);
  for (bool reverse : {false, true}) {
    for (int64_t factor : {3, 4}) {
      ProgramPtr q = build_splitk(16, 32, 16, 3, factor, n, k, reverse);
      auto a = random_half(m * k, rng), bb = random_half(k * n, rng);
      std::vector<uint16_t> c(m * n, 0x7e00);
      interpret(*q, {I(m), P(a.data()), P(bb.data()), P(c.data())},
                {region(a, "a"), region(bb, "b"), region(c, "c")});
      double e = max_excess(c, reference_matmul(a, bb, m, n, k), 4e-3, 4e-3);
      CHECK_MSG(e <= 0, "split-K factor ", factor, reverse ? " (reversed)" : "",
                ": error exceeds tolerance by ", e);
    }
  }
}

// copy_async_wait_group(n) completes all but the newest n committed groups.
void test_copy_async_groups() {
  IRBuilder b("Groups", "groups.py");
  Expr x_ptr = b.add_param("x_ptr", f32.pointer_to());
  Expr y_ptr = b.add_param("y_ptr", f32.pointer_to());
  b.set_grid({C(1)});
  b.set_warps(1);
  Tensor gx = b.global_view(x_ptr, f32, {C(2), C(4)}, {}, "gx");
  Tensor gy = b.global_view(y_ptr, f32, {C(4), C(4)}, {}, "gy");
  Tensor s = b.shared_tensor(f32, {2, 4}, "s");
  b.copy_async(gx, b.slice_shared(s, {C(0)}), {C(0), C(0)}, {1});
  b.copy_async_commit_group();
  b.copy_async(gx, b.slice_shared(s, {C(1)}), {C(1), C(0)}, {1});
  b.copy_async_commit_group();
  b.copy_async_wait_group(1);
  b.store_global(gy, b.load_shared(s), {C(0), C(0)}, {});  // row 1 still pending: NaN
  b.copy_async_wait_group(0);
  b.store_global(gy, b.load_shared(s), {C(2), C(0)}, {});
  // The first read races with the pending row on purpose, which the IR verifier refuses.
  const bool verifying = verify_enabled();
  set_verify_enabled(false);
  ProgramPtr p = b.finish();
  set_verify_enabled(verifying);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y(16, 0.0f);
  // ... and the interpreter's uninitialised-read check would report (it reads poison).
  const InterpChecks checks = interp_checks();
  set_interp_checks(InterpChecks{checks.races, false});
  interpret(*p, {P(x.data()), P(y.data())}, {region(x, "x"), region(y, "y")});
  set_interp_checks(checks);
  bool ok = true;
  for (int j = 0; j < 4; ++j) {
    ok &= y[j] == x[j] && std::isnan(y[4 + j]);
    ok &= y[8 + j] == x[j] && y[12 + j] == x[4 + j];
  }
  CHECK(ok);
}

// ---------------------------------------------------------------- semaphores: errors, limits

// Blocks with z == 0 wait for value `lock_value` at sem[x]; z == 1 blocks release 1
// (after reading sems[n] out of bounds when `fail`).
ProgramPtr build_waiter(int64_t lock_value, bool fail = false) {
  IRBuilder b("Waiter", "waiter.py");
  Expr n = b.add_param("n", i32);
  Expr nb = b.declare("n_blocks", i32, add(n, C(0)));  // the workspace shape uses a local
  b.set_grid({nb, C(1), C(2)});
  b.set_warps(1);
  Tensor sems = b.global_tensor(i32, {nb}, true, "sems");
  Expr sem = b.declare("sem", i32.pointer_to(), make_element_addr(sems, {bidx(0)}));
  b.begin_if(make_binary(BinaryOp::Eq, bidx(2), C(0)));
  b.set_loc(42, 8, "self.lock_semaphore(sem, value=5)");
  b.lock_semaphore(sem, C(lock_value));
  b.begin_else();
  b.set_loc(44, 8, "self.release_semaphore(sem, value=1)");
  if (fail) b.declare("x", i32, make_element_load(sems, {add(bidx(0), n)}));
  b.release_semaphore(sem, C(1));
  b.end_if();
  return b.finish();
}

void test_deadlock_and_limits() {
  ScriptError err("", "");
  ProgramPtr p = build_waiter(5);
  CHECK(evaluate_launch_shape(*p, {I(7)}).workspace_bytes.at(0) == 28);
  CHECK(expect_error([&] { interpret(*p, {I(2)}, {}); },
                     {"deadlock", "block (0, 0, 0)", "value 5", "holds 1"}, &err));
  CHECK(err.kind() == "RuntimeError");
  CHECK(err.loc().line == 42);
  // 1000 blocks wait, are resumed once the z == 1 blocks run.
  ProgramPtr q = build_waiter(1);
  interpret(*q, {I(1000)}, {});
  CHECK(true);
  // More waiting blocks than the interpreter keeps suspended.
  CHECK(expect_error([&] { interpret(*q, {I(4100)}, {}); }, {"deadlock", "4096"}, &err));
  // An error in one block while others are suspended: they are unwound, the error
  // comes out with its location.
  ProgramPtr f = build_waiter(1, true);
  CHECK(expect_error([&] { interpret(*f, {I(3)}, {}); }, {"out of bounds", "index [3]"}, &err));
  CHECK(err.loc().line == 44);

  // A workspace shape that depends on blockIdx cannot be sized before launch.
  IRBuilder b("Bad", "bad.py");
  Expr bad = b.declare("per_block", i32, add(bidx(0), C(1)));
  b.set_grid({C(2)});
  b.set_warps(1);
  b.global_tensor(i32, {bad}, false, "ws");
  ProgramPtr pb = b.finish();
  CHECK(expect_error([&] { evaluate_launch_shape(*pb, {}); }, {"blockIdx"}));
}

// ---------------------------------------------------------------- int8 dot

void test_int8_dot() {
  const int64_t m = 5, k = 40, n = 7;
  IRBuilder b("Int8Dot", "int8.py");
  Expr a_ptr = b.add_param("a_ptr", i8.pointer_to());
  Expr b_ptr = b.add_param("b_ptr", i8.pointer_to());
  Expr c_ptr = b.add_param("c_ptr", i32.pointer_to());
  b.set_grid({C(1)});
  b.set_warps(1);
  Tensor ga = b.global_view(a_ptr, i8, {C(m), C(k)}, {}, "ga");
  Tensor gb = b.global_view(b_ptr, i8, {C(k), C(n)}, {}, "gb");
  Tensor gc = b.global_view(c_ptr, i32, {C(m), C(n)}, {}, "gc");
  Tensor a = b.load_global(ga, {C(0), C(0)}, {8, 48}, {});
  Tensor bt = b.load_global(gb, {C(0), C(0)}, {48, 8}, {});
  Tensor acc = b.register_tensor(i32, {8, 8}, C(3), nullptr, "acc");
  Tensor d = b.dot(a, bt, acc, nullptr);
  b.store_global(gc, d, {C(0), C(0)}, {});
  ProgramPtr p = b.finish();
  std::mt19937 rng(5);
  std::vector<int8_t> av(m * k), bv(k * n);
  for (auto& x : av) x = static_cast<int8_t>(rng() % 256);
  for (auto& x : bv) x = static_cast<int8_t>(rng() % 256);
  av[0] = -128;
  bv[0] = -128;
  std::vector<int32_t> cv(m * n, 0);
  interpret(*p, {P(av.data()), P(bv.data()), P(cv.data())},
            {region(av, "a"), region(bv, "b"), region(cv, "c")});
  int bad = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t r = 3;
      for (int64_t kk = 0; kk < k; ++kk) r += int64_t{av[i * k + kk]} * bv[kk * n + j];
      bad += cv[i * n + j] != static_cast<int32_t>(r);
    }
  CHECK_MSG(bad == 0, bad, " wrong int8 dot results");
}

// ---------------------------------------------------------------- scalars, control flow

void test_control_flow() {
  IRBuilder b("Flow", "flow.py");
  Expr n = b.add_param("n", i32);
  Expr in_ptr = b.add_param("in_ptr", i32.pointer_to());
  Expr out_ptr = b.add_param("out_ptr", i32.pointer_to());
  b.set_grid({C(2)});
  b.set_warps(1);
  Tensor gin = b.global_view(in_ptr, i32, {C(64)}, {}, "gin");
  Tensor gout = b.global_view(out_ptr, i32, {C(2), C(2)}, {}, "gout");
  Expr s = b.declare("s", i32, C(0));
  Expr i = b.declare("i", i32, C(0));
  b.begin_while(lt(i, C(100)));
  b.assign(i, add(i, C(1)));
  b.begin_if(make_binary(BinaryOp::Eq, mod(i, C(2)), C(0)));
  b.emit_continue();
  b.end_if();
  b.begin_if(make_binary(BinaryOp::Gt, i, n));
  b.emit_break();
  b.end_if();
  b.assign(s, add(s, i));
  b.end_while();
  Expr j = b.begin_for("j", C(0), n, C(3), 0);
  b.assign(s, add(s, make_element_load(gin, {j})));
  b.end_for();
  // blockIdx.x selects a value: -7 / 2 and -7 % 2 follow C (-3, -1).
  Expr t = b.declare("t", i32,
                     make_select(make_binary(BinaryOp::Eq, bidx(0), C(0)),
                                 make_binary(BinaryOp::Div, sub(C(0), add(C(7), bidx(0))), C(2)),
                                 mod(sub(C(0), add(C(7), bidx(0))), C(2))));
  Tensor r0 = b.register_tensor(i32, {1, 1}, s, nullptr, "r0");
  Tensor r1 = b.register_tensor(i32, {1, 1}, t, nullptr, "r1");
  b.store_global(gout, r0, {bidx(0), C(0)}, {});
  b.store_global(gout, r1, {bidx(0), C(1)}, {});
  ProgramPtr p = b.finish();
  std::vector<int32_t> in(64), out(4, 0);
  for (int q = 0; q < 64; ++q) in[q] = q * q;
  const int nv = 11;
  interpret(*p, {I(nv), P(in.data()), P(out.data())}, {region(in, "in"), region(out, "out")});
  int expect = 0;
  for (int q = 1; q <= nv; q += 2) expect += q;
  for (int q = 0; q < nv; q += 3) expect += q * q;
  CHECK_MSG(out[0] == expect && out[2] == expect, out[0], " ", out[2], " vs ", expect);
  CHECK(out[1] == -3);
  CHECK(out[3] == 0);  // -8 % 2

  // A runtime step of zero is an error.
  IRBuilder b2("Step", "step.py");
  Expr st = b2.add_param("step", i32);
  b2.set_grid({C(1)});
  b2.set_warps(1);
  b2.set_loc(7, 4, "for i in self.range(0, 4, step):");
  b2.begin_for("i", C(0), C(4), st, 0);
  b2.end_for();
  ProgramPtr p2 = b2.finish();
  ScriptError err("", "");
  CHECK(expect_error([&] { interpret(*p2, {I(0)}, {}); }, {"step"}, &err));
  CHECK(err.loc().line == 7);
}

// Broadcasting, comparisons, where, unary minus and casts.
void test_elementwise() {
  IRBuilder b("Elem", "elem.py");
  Expr x_ptr = b.add_param("x_ptr", f32.pointer_to());
  Expr y_ptr = b.add_param("y_ptr", f32.pointer_to());
  Expr o_ptr = b.add_param("o_ptr", i32.pointer_to());
  Expr h_ptr = b.add_param("h_ptr", f16.pointer_to());
  b.set_grid({C(1)});
  b.set_warps(1);
  Tensor gx = b.global_view(x_ptr, f32, {C(4), C(8)}, {}, "gx");
  Tensor gy = b.global_view(y_ptr, f32, {C(8)}, {}, "gy");
  Tensor go = b.global_view(o_ptr, i32, {C(4), C(8)}, {}, "go");
  Tensor gh = b.global_view(h_ptr, f16, {C(4), C(8)}, {}, "gh");
  Tensor x = b.load_global(gx, {C(0), C(0)}, {4, 8}, {});
  Tensor y = b.load_global(gy, {C(0)}, {8}, {});
  Tensor prod = b.binary(BinaryOp::Mul, x, y, nullptr);  // [4,8] * [8]
  Tensor pos = b.binary_scalar(BinaryOp::Gt, prod, make_float(0.0), false, nullptr);
  Tensor absv = b.where(pos, prod, b.unary(UnaryOp::Neg, prod));
  Tensor shifted = b.binary_scalar(BinaryOp::Sub, absv, make_float(0.5), true, nullptr);  // 0.5 - |p|
  b.store_global(go, b.cast(shifted, i32), {C(0), C(0)}, {});
  b.store_global(gh, b.cast(prod, f16), {C(0), C(0)}, {});
  b.print_tensor(b.cast(b.load_global(gx, {C(0), C(0)}, {2, 3}, {}), i32), "x[:2, :3]");
  ProgramPtr p = b.finish();
  std::vector<float> xv(32), yv(8);
  for (int q = 0; q < 32; ++q) xv[q] = static_cast<float>(q) * 0.75f - 9.0f;
  for (int q = 0; q < 8; ++q) yv[q] = (q % 2 ? -1.0f : 1.0f) * (1.0f + q / 3.0f);
  std::vector<int32_t> ov(32);
  std::vector<uint16_t> hv(32);
  interpret(*p, {P(xv.data()), P(yv.data()), P(ov.data()), P(hv.data())},
            {region(xv, "x"), region(yv, "y"), region(ov, "o"), region(hv, "h")});
  int bad = 0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) {
      float pr = xv[r * 8 + c] * yv[c];
      float e = 0.5f - std::fabs(pr);
      bad += ov[r * 8 + c] != static_cast<int32_t>(e);
      bad += hv[r * 8 + c] != float_to_half(pr);
    }
  CHECK_MSG(bad == 0, bad, " wrong elementwise results");
}

}  // namespace

int main() {
  struct Test {
    const char* name;
    void (*fn)();
  } tests[] = {
      {"float16", test_float16},
      {"add_one", test_add_one},
      {"out_of_region", test_out_of_region},
      {"matmul", test_matmul},
      {"pipeline_and_splitk", test_pipeline_and_splitk},
      {"copy_async_groups", test_copy_async_groups},
      {"deadlock_and_limits", test_deadlock_and_limits},
      {"int8_dot", test_int8_dot},
      {"control_flow", test_control_flow},
      {"elementwise", test_elementwise},
      {"bench_matmul", bench_matmul},
  };
  for (const Test& t : tests) {
    int before = g_failed;
    auto t0 = std::chrono::steady_clock::now();
    try {
      t.fn();
    } catch (const ScriptError& e) {
      ++g_failed;
      std::fprintf(stderr, "%s: unexpected %s: %s at %s\n", t.name, e.kind().c_str(), e.what(),
                   e.loc().str().c_str());
    } catch (const std::exception& e) {
      ++g_failed;
      std::fprintf(stderr, "%s: unexpected exception: %s\n", t.name, e.what());
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-22s %s (%.1f ms)\n", t.name, g_failed == before ? "ok" : "FAILED", ms);
  }
  std::printf("%d checks, %d failures\n", g_checks, g_failed);
  return g_failed ? 1 : 0;
}
