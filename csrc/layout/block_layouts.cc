#include "layout/block_layouts.h"

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <tuple>

#include "support/error.h"

namespace tilus {

RegisterLayout auto_global_layout(const std::vector<int64_t>& shape, int64_t num_threads,
                                  int64_t vector_elems) {
  TILUS_CHECK(num_threads >= 1, "ValueError", "auto_global_layout needs num_threads >= 1");
  TILUS_CHECK(vector_elems >= 1, "ValueError", "auto_global_layout needs vector_elems >= 1");
  for (auto s : shape) TILUS_CHECK(s >= 1, "ValueError", "auto_global_layout needs sizes >= 1");
  const int r = static_cast<int>(shape.size());
  if (r == 0) return replicate(num_threads, 0);
  // Powers of two only: a 6-element chunk would not be one aligned vector access.
  int64_t v = 1;
  while (v * 2 <= vector_elems && shape[r - 1] % (v * 2) == 0) v *= 2;
  std::vector<int64_t> reps = shape, threads(r, 1), chunk(r, 1);
  reps[r - 1] /= v;
  chunk[r - 1] = v;
  int64_t left = num_threads;
  for (int d = r - 1; d >= 0; --d) {
    threads[d] = std::gcd(reps[d], left);
    reps[d] /= threads[d];
    left /= threads[d];
  }
  return replicate(left, r) * local(reps) * spatial(threads) * local(chunk);
}

RegisterLayout default_tile_layout(const std::vector<int64_t>& shape, int64_t num_threads,
                                   int64_t vector_elems) {
  RegisterLayout exact = auto_global_layout(shape, num_threads, vector_elems);
  if (!exact.is_replicated() || exact.numel() < num_threads) return exact;
  const int r = static_cast<int>(shape.size());
  auto pow2_at_least = [](int64_t x) {
    int64_t p = 1;
    while (p < x) p *= 2;
    return p;
  };
  int64_t v = 1;
  while (v * 2 <= vector_elems && shape[r - 1] % (v * 2) == 0) v *= 2;
  std::vector<int64_t> padded(shape);
  for (int d = 0; d < r - 1; ++d) padded[d] = pow2_at_least(shape[d]);
  padded[r - 1] = v * pow2_at_least((shape[r - 1] + v - 1) / v);
  RegisterLayout spread = auto_global_layout(padded, num_threads, v);
  return spread.local_size() < exact.local_size() ? spread : exact;
}

// ---- mma.sync ------------------------------------------------------------------------

const char* mma_kind_name(MmaKind kind) {
  switch (kind) {
    case MmaKind::M16N8K16: return "m16n8k16";
    case MmaKind::M16N8K32: return "m16n8k32";
    case MmaKind::M16N8K8: return "m16n8k8";
  }
  return "?";
}

MmaKind parse_mma_kind(const std::string& name) {
  if (name == "m16n8k16") return MmaKind::M16N8K16;
  if (name == "m16n8k32") return MmaKind::M16N8K32;
  if (name == "m16n8k8") return MmaKind::M16N8K8;
  throw ScriptError("ValueError",
                    cat("unknown mma kind '", name, "' (expected m16n8k16, m16n8k32 or m16n8k8)"));
}

std::optional<MmaKind> mma_kind_for(DataType operand) {
  if (operand.is_pointer) return std::nullopt;
  switch (operand.kind) {
    case ScalarKind::Float16:
    case ScalarKind::BFloat16: return MmaKind::M16N8K16;
    case ScalarKind::Int8:
    case ScalarKind::UInt8: return MmaKind::M16N8K32;
    case ScalarKind::Bool:
    case ScalarKind::Int16:
    case ScalarKind::Int32:
    case ScalarKind::Int64:
    case ScalarKind::UInt16:
    case ScalarKind::UInt32:
    case ScalarKind::UInt64:
    case ScalarKind::TFloat32: return MmaKind::M16N8K8;
    case ScalarKind::Float32:
    case ScalarKind::Float64:
    TILUS_LOWP_INT_CASES:
    TILUS_LOWP_FLOAT_CASES: return std::nullopt;
  }
  return std::nullopt;
}

MmaAtom mma_atom(MmaKind kind) {
  // The atoms place lane l at group g = l / 4 (rows of A and C, columns of B) and
  // q = l % 4 (the k or n chunk); they differ in the elements per 32-bit register.
  const int64_t per_reg = kind == MmaKind::M16N8K16 ? 2 : kind == MmaKind::M16N8K32 ? 4 : 1;
  MmaAtom atom{kind, 16, 8, 8 * per_reg, {}, {}, {}};
  atom.a = column_local({2, 2}) * spatial({8, 4}) * local({1, per_reg});
  atom.b = local({2, 1}) * column_spatial({4, 8}) * local({per_reg, 1});
  atom.c = local({2, 1}) * spatial({8, 4}) * local({1, 2});
  return atom;
}

namespace {

void set_why(std::string* why, const std::string& s) {
  if (why) *why = s;
}

// The warp grid (wm, wn), wm * wn = warps, whose warp tile (m / wm, n / wn) is a
// multiple of (unit_m, unit_n) and most square (least perimeter for its area, hence the
// least shared-memory traffic per warp); ties go to the squarer grid, then to more warps
// along m.
std::optional<std::pair<int64_t, int64_t>> choose_warp_grid(int64_t m, int64_t n, int64_t warps,
                                                            int64_t unit_m, int64_t unit_n) {
  std::optional<std::pair<int64_t, int64_t>> best;
  std::tuple<int64_t, int64_t, int64_t> best_key;
  for (int64_t wm = 1; wm <= warps; ++wm) {
    if (warps % wm) continue;
    int64_t wn = warps / wm;
    if (m % (wm * unit_m) || n % (wn * unit_n)) continue;
    auto key = std::make_tuple(m / wm + n / wn, std::llabs(wm - wn), -wm);
    if (!best || key < best_key) {
      best = std::make_pair(wm, wn);
      best_key = key;
    }
  }
  return best;
}

}  // namespace

std::optional<BlockLayouts> mma_block_layouts(MmaKind kind, int64_t m, int64_t n, int64_t k,
                                              int64_t warps, std::string* why) {
  MmaAtom atom = mma_atom(kind);
  if (warps < 1 || m < 1 || n < 1 || k < 1) {
    set_why(why, "mma needs positive m, n, k and warps");
    return std::nullopt;
  }
  if (m % atom.m || n % atom.n || k % atom.k) {
    set_why(why, cat("mma ", mma_kind_name(kind), " needs m % ", atom.m, " == 0, n % ", atom.n,
                     " == 0 and k % ", atom.k, " == 0; got m=", m, ", n=", n, ", k=", k));
    return std::nullopt;
  }
  auto grid = choose_warp_grid(m, n, warps, atom.m, atom.n);
  if (!grid) {
    set_why(why, cat("no grid of ", warps, " warps tiles a ", m, "x", n, " block with ", atom.m,
                     "x", atom.n, " mma atoms"));
    return std::nullopt;
  }
  return mma_block_layouts_on(kind, m, n, k, grid->first, grid->second);
}

std::optional<BlockLayouts> mma_block_layouts_on(MmaKind kind, int64_t m, int64_t n, int64_t k,
                                                 int64_t wm, int64_t wn) {
  MmaAtom atom = mma_atom(kind);
  if (wm < 1 || wn < 1 || m % (wm * atom.m) || n % (wn * atom.n) || k < 1 || k % atom.k) return std::nullopt;
  BlockLayouts r;
  r.warps_m = wm;
  r.warps_n = wn;
  r.rep_m = m / (wm * atom.m);
  r.rep_n = n / (wn * atom.n);
  r.rep_k = k / atom.k;
  r.c = spatial({wm, wn}) * local({r.rep_m, r.rep_n}) * atom.c;
  r.a = spatial({wm, 1}) * replicate(wn, 2) * local({r.rep_m, r.rep_k}) * atom.a;
  r.b = replicate(wm, 2) * spatial({1, wn}) * local({r.rep_k, r.rep_n}) * atom.b;
  return r;
}

std::optional<WgmmaTiling> wgmma_tiling(int64_t m, int64_t n, int64_t k, int64_t warps,
                                        std::string* why) {
  if (warps < 4 || warps % 4) {
    set_why(why, cat("wgmma needs a multiple of 4 warps (whole warpgroups); got ", warps));
    return std::nullopt;
  }
  if (k < 16 || k % 16) {
    set_why(why, cat("wgmma needs k % 16 == 0; got k=", k));
    return std::nullopt;
  }
  const int64_t groups = warps / 4;
  for (int64_t wg_m = groups; wg_m >= 1; --wg_m) {
    if (groups % wg_m) continue;
    const int64_t wg_n = groups / wg_m;
    if (m % (64 * wg_m) || n % wg_n) continue;
    const int64_t n_inst = n / wg_n;
    if (n_inst % 64 || n_inst > 256) continue;
    WgmmaTiling t;
    t.wg_m = wg_m;
    t.wg_n = wg_n;
    t.slabs = m / (64 * wg_m);
    t.n_inst = n_inst;
    t.k_steps = k / 16;
    t.c = spatial({wg_m, wg_n}) * local({t.slabs, n_inst / 8}) * spatial({4, 1}) *
          mma_atom(MmaKind::M16N8K16).c;
    return t;
  }
  set_why(why, cat("no grid of ", groups, " warpgroups tiles a ", m, "x", n,
                   " block with m64 slabs and n a multiple of 64 (at most 256) per warpgroup"));
  return std::nullopt;
}

std::optional<BlockLayouts> simt_block_layouts(int64_t m, int64_t n, int64_t k, int64_t warps,
                                               std::string* why) {
  if (warps < 1 || m < 1 || n < 1 || k < 1) {
    set_why(why, "a dot needs positive m, n, k and warps");
    return std::nullopt;
  }
  auto grid = choose_warp_grid(m, n, warps, 1, 1);
  if (!grid) {
    set_why(why, cat("no grid of ", warps, " warps tiles a ", m, "x", n, " block"));
    return std::nullopt;
  }
  auto [wm, wn] = *grid;
  const int64_t tile_m = m / wm, tile_n = n / wn;
  // Lanes lm x ln with the least replication, then the squarest per-lane tile (fewest
  // operand loads per FMA), then more lanes along n (contiguous B and C accesses).
  int64_t lm = 0, ln = 0, rep = 0;
  double best_skew = 0;
  for (int64_t rr = 1; rr <= 32 && !lm; rr *= 2) {
    for (int64_t a = 1; a <= 32 / rr; a *= 2) {
      int64_t b = 32 / rr / a;
      if (tile_m % a || tile_n % b) continue;
      double skew = std::fabs(std::log2(double(tile_m / a)) - std::log2(double(tile_n / b)));
      if (!lm || skew < best_skew || (skew == best_skew && b > ln)) {
        lm = a, ln = b, rep = rr, best_skew = skew;
      }
    }
  }
  if (!lm) {  // only when a warp tile dimension is odd-sized and tiny; never for 2^i shapes
    set_why(why, cat("cannot place 32 lanes on a ", tile_m, "x", tile_n, " warp tile"));
    return std::nullopt;
  }
  const int64_t pm = tile_m / lm, pn = tile_n / ln;
  const int64_t tm = std::gcd(pm, int64_t(4)), tn = std::gcd(pn, int64_t(4));
  const int64_t rm = pm / tm, rn = pn / tn;
  BlockLayouts r;
  r.warps_m = wm;
  r.warps_n = wn;
  r.rep_m = pm;
  r.rep_n = pn;
  r.rep_k = k;
  r.c = spatial({wm, wn}) * local({rm, rn}) * replicate(rep, 2) * spatial({lm, ln}) *
        local({tm, tn});
  r.a = spatial({wm, 1}) * replicate(wn, 2) * local({rm, 1}) * replicate(rep, 2) *
        spatial({lm, 1}) * replicate(ln, 2) * local({tm, k});
  r.b = replicate(wm, 2) * spatial({1, wn}) * local({1, rn}) * replicate(rep * lm, 2) *
        spatial({1, ln}) * local({k, tn});
  return r;
}

}  // namespace tilus
