// Register layouts that layout inference and code generation choose for a whole block:
// coalesced global tiles, mma.sync operand/accumulator tiles, SIMT (FMA) dot tiles.
// Every builder is a composition of the primitives in register_layout.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "layout/register_layout.h"

namespace tilus {

// auto_global_layout(shape, T, vec): a coalesced distribution of a tile over T threads.
//   * each thread holds v contiguous elements of the last dim, v the largest power of
//     two <= vec dividing shape[-1] (16-byte accesses when vec = 16 / element bytes);
//   * threads are spread row-major over the remaining extent, innermost dims first, so
//     consecutive threads touch consecutive v-chunks;
//   * what the threads do not cover is repeated in outer local modes;
//   * if the tile has fewer chunks than threads, the extra threads replicate it
//     (outermost spatial entry).
// Result: local(rep) * spatial(threads) * local(1, .., v), prefixed by a replication.
// T = num_threads always.
RegisterLayout auto_global_layout(const std::vector<int64_t>& shape, int64_t num_threads,
                                  int64_t vector_elems);

// default_tile_layout(shape, T, vec): the layout layout inference gives a register tile
// nothing else constrains. auto_global_layout when it uses every thread (all the tiles
// whose extents are powers of two); for a tile of at least T elements that it would
// replicate (odd extents such as 37 x 70, which no thread count divides), the
// auto_global_layout of a padded extent instead: every dimension rounded up to a power
// of two, the last to v times one (v the vector of the real last extent), so the tile is
// spread over the threads. The layout's shape is then larger than the tile; the
// elements outside it hold nothing meaningful, and every instruction that reads or
// writes memory or combines elements masks them (CudaEmitter::tile_mask).
RegisterLayout default_tile_layout(const std::vector<int64_t>& shape, int64_t num_threads,
                                   int64_t vector_elems);

// ---- mma.sync ------------------------------------------------------------------------
// M16N8K16: fp16/bf16 operands, fp32 or fp16 accumulators.
// M16N8K32: s8/u8 operands, s32 accumulators.
// M16N8K8: tf32 operands, fp32 accumulators.
enum class MmaKind : uint8_t { M16N8K16, M16N8K32, M16N8K8 };
const char* mma_kind_name(MmaKind kind);           // "m16n8k16", "m16n8k32", "m16n8k8"
MmaKind parse_mma_kind(const std::string& name);   // ScriptError(ValueError) if unknown
// The atom for an operand type: float16/bfloat16 -> M16N8K16, int8/uint8 -> M16N8K32,
// tfloat32 -> M16N8K8.
std::optional<MmaKind> mma_kind_for(DataType operand);

// One warp's fragments (T = 32); register i of a fragment is local index i.
struct MmaAtom {
  MmaKind kind;
  int64_t m, n, k;
  RegisterLayout a;  // m x k
  RegisterLayout b;  // k x n
  RegisterLayout c;  // m x n
};
// From the PTX ISA fragment tables (g = lane / 4, q = lane % 4):
//   M16N8K16 A a_i: row g + 8*bit1(i), col 2q + (i&1) + 8*bit2(i)
//                   = column_local(2, 2) * spatial(8, 4) * local(1, 2)
//            B b_i: k 2q + (i&1) + 8*bit1(i), n g = local(2, 1) * column_spatial(4, 8) * local(2, 1)
//            C c_i: row g + 8*bit1(i), col 2q + (i&1) = local(2, 1) * spatial(8, 4) * local(1, 2)
//   M16N8K32 A a_i: row g + 8*bit2(i), col 4q + (i&3) + 16*bit3(i)
//                   = column_local(2, 2) * spatial(8, 4) * local(1, 4)
//            B b_i: k 4q + (i&3) + 16*bit2(i), n g = local(2, 1) * column_spatial(4, 8) * local(4, 1)
//            C as M16N8K16.
//   M16N8K8 (tf32, one element per register)
//            A a_i: row g + 8*bit0(i), col q + 4*bit1(i) = column_local(2, 2) * spatial(8, 4)
//            B b_i: k q + 4*i, n g = local(2, 1) * column_spatial(4, 8)
//            C as M16N8K16.
MmaAtom mma_atom(MmaKind kind);

// Block-level operand layouts of a dot C[m, n] += A[m, k] @ B[k, n].
struct BlockLayouts {
  RegisterLayout a, b, c;
  int64_t warps_m = 1, warps_n = 1;
  // mma: atoms per warp along m, n, k. simt: elements per thread along m, n, k.
  int64_t rep_m = 1, rep_n = 1, rep_k = 1;
};

// mma_block_layouts(kind, m, n, k, warps): a warp grid warps_m x warps_n (product =
// warps, warp tiles multiples of the atom, the most square warp tile; ties: the most
// square warp grid, then more warps along m) and (replicate(x) short for replicate(x, 2))
//   C = spatial(wm, wn) * local(rep_m, rep_n) * atom.c
//   A = spatial(wm, 1) * replicate(wn) * local(rep_m, rep_k) * atom.a
//   B = replicate(wm) * spatial(1, wn) * local(rep_k, rep_n) * atom.b
// so thread = warp * 32 + lane with warp = wm_i * wn + wn_i in all three, and the atom
// (im, in, ik) of a warp uses C registers [(im * rep_n + in) * 4, +4), A registers
// [(im * rep_k + ik) * |a|, +|a|), B registers [(ik * rep_n + in) * |b|, +|b|).
// nullopt (and *why) when no warp grid tiles the shape.
std::optional<BlockLayouts> mma_block_layouts(MmaKind kind, int64_t m, int64_t n, int64_t k,
                                              int64_t warps, std::string* why = nullptr);
// The same on a given warp grid warps_m x warps_n (nullopt when its warp tiles are not
// whole atoms): layout inference accepts an accumulator a user laid out on any grid.
std::optional<BlockLayouts> mma_block_layouts_on(MmaKind kind, int64_t m, int64_t n, int64_t k,
                                                 int64_t warps_m, int64_t warps_n);

// ---- wgmma (sm_90a) -------------------------------------------------------------------
// A dot on warpgroups: the warps form warps / 4 warpgroups in a grid wg_m x wg_n; each
// warpgroup computes a (slabs * 64) x n_inst tile of C with `slabs` wgmma.m64n<n_inst>k16
// per 16 of k. A and B are read from shared memory, so only C has a register layout:
//   C = spatial(wg_m, wg_n) * local(slabs, n_inst / 8) * spatial(4, 1) * mma_atom(M16N8K16).c
// (thread = warpgroup * 128 + warp * 32 + lane; the registers of slab s are
// [s * n_inst / 2, (s + 1) * n_inst / 2), in wgmma's accumulator order).
struct WgmmaTiling {
  int64_t wg_m = 1, wg_n = 1;
  int64_t slabs = 1;    // m64 instructions per warpgroup per k16 step, along m
  int64_t n_inst = 8;   // the N of each instruction
  int64_t k_steps = 1;  // k / 16
  RegisterLayout c;
};
// The tiling of a C[m, n] += A[m, k] @ B[k, n] dot with fp16/bf16 operands over `warps`
// warps: warps a multiple of 4, m a multiple of 64 per warpgroup row, n_inst a multiple
// of 64 (one 128-byte column block of a B tile per 64) and at most 256, k a multiple of
// 16. Warpgroups go along m first (each then shares all of B). nullopt (and *why)
// otherwise.
std::optional<WgmmaTiling> wgmma_tiling(int64_t m, int64_t n, int64_t k, int64_t warps,
                                        std::string* why = nullptr);

// simt_block_layouts(m, n, k, warps): layouts for a float32 FMA dot.
//   C = spatial(wm, wn) * local(rm, rn) * replicate(r) * spatial(lm, ln) * local(tm, tn)
//   A = spatial(wm, 1) * replicate(wn) * local(rm, 1) * replicate(r) * spatial(lm, 1)
//       * replicate(ln) * local(tm, k)
//   B = replicate(wm) * spatial(1, wn) * local(1, rn) * replicate(r * lm) * spatial(1, ln)
//       * local(k, tn)
// lanes lm x ln (x r replication when a warp tile has fewer than 32 elements), thread
// tiles tm x tn of at most 4 x 4 (contiguous along n). Every thread holds in A the rows
// and in B the columns of its C elements, for every kk < k; the local index of those is
// the same for all threads, so a.owner / b.owner at thread 0 give it.
// The warp grid is chosen as for mma (unit atom). rep_m, rep_n, rep_k report the
// elements per thread along m (rm * tm), n (rn * tn) and k (k).
std::optional<BlockLayouts> simt_block_layouts(int64_t m, int64_t n, int64_t k, int64_t warps,
                                               std::string* why = nullptr);

}  // namespace tilus
