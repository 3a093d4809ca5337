// Register layouts: how the elements of a register tile are spread over the threads of
// a block.
//
// A layout of a tile of shape S (rank r) maps (thread t in [0, T), local index l in
// [0, L)) to a coordinate in S. Following Tilus, it is stored as *modes*:
//
//   * every dimension d of S is split into modes, sizes whose product is S[d], listed
//     outer to inner; `mode_shape` holds the modes of dim 0, then those of dim 1, ...
//   * `spatial_modes` lists the modes indexed by the thread id (outer to inner, mixed
//     radix); an entry -k (k >= 2) is a *replication*: k groups of threads that hold
//     the same data (mma operand A is shared by the warps along n).
//   * `local_modes` lists the modes indexed by the local index (outer to inner).
//
// Every mode appears exactly once in spatial_modes or local_modes. T is the product of
// the spatial sizes (replications included), L the product of the local mode sizes.
//
// The algebra is CuTe-like: a few primitives (spatial, column_spatial, local,
// column_local, replicate), and derived operations built from them (compose = Kronecker
// product, divide = its inverse). All layouts are kept in a canonical form (no modes of
// size 1, adjacent modes that act as one merged), so operator== is equality of the
// (thread, local) -> coordinate maps.
//
// Example, the hidet seed's 64x256 accumulator of 8 warps:
//   spatial(4, 2) * local(2, 2) * spatial(2, 16) * local(4, 4)
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace tilus {

struct RegisterLayout {
  std::vector<int64_t> shape;
  std::vector<int64_t> mode_shape;  // grouped by dimension, outer to inner within one
  std::vector<int> spatial_modes;   // mode index, or -k: replication over k thread groups
  std::vector<int> local_modes;     // mode index

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;        // product of shape
  int64_t num_threads() const;  // T
  int64_t local_size() const;   // L
  int64_t replication() const;  // product of the replication entries (1: none)
  bool is_replicated() const { return replication() > 1; }
  std::vector<int> mode_dims() const;  // the dimension of every mode

  // The coordinate that thread t holds at local index l. 0 <= t < T, 0 <= l < L.
  // Contract: coords(t, l)[d] == coords(t, 0)[d] + coords(0, l)[d].
  std::vector<int64_t> coords(int64_t thread, int64_t local) const;
  // coords(0, l): the part of the coordinate selected by the local index alone.
  std::vector<int64_t> local_coords(int64_t local) const;
  // coords(t, 0) as expressions of a thread-index expr (div/mod by constants only).
  // The thread must lie in [0, T): the outermost spatial mode is not reduced modulo.
  std::vector<Expr> thread_coord_exprs(const Expr& thread) const;
  // coords(thread, local) as expressions: thread_coord_exprs(thread) + local_coords(local),
  // built with make_binary so constants fold.
  std::vector<Expr> coord_exprs(const Expr& thread, int64_t local) const;
  // The inverse map: for an in-range coordinate, (local index, first thread) holding it.
  // The other holders of a replicated layout differ only in the replication digits.
  std::pair<int64_t, int64_t> owner(const std::vector<int64_t>& coords) const;

  // The canonical form (idempotent). Layouts built by this module are already canonical;
  // this is for layouts whose fields were filled in by hand.
  RegisterLayout simplify() const;

  // "RegisterLayout(shape=[16, 8], mode_shape=[2, 8, 4, 2], spatial_modes=[1, 2],
  // local_modes=[0, 3])"
  std::string str() const;
  bool operator==(const RegisterLayout& o) const;
  bool operator!=(const RegisterLayout& o) const { return !(*this == o); }
};

// Checks the fields (each mode listed once, mode products equal the shape, replication
// entries -k with k >= 1) and returns the canonical layout; ScriptError(ValueError)
// otherwise.
RegisterLayout make_register_layout(std::vector<int64_t> shape, std::vector<int64_t> mode_shape,
                                    std::vector<int> spatial_modes, std::vector<int> local_modes);

// ---- primitives -------------------------------------------------------------------
// spatial(S): thread t holds the one element at the row-major coordinate of t in S.
//   T = prod(S), L = 1.  spatial(2, 3): t -> (t / 3, t % 3).
RegisterLayout spatial(const std::vector<int64_t>& shape);
// column_spatial(S): like spatial, column-major (dim 0 fastest).
//   column_spatial(2, 3): t -> (t % 2, t / 2).
RegisterLayout column_spatial(const std::vector<int64_t>& shape);
// local(S): one thread holds the whole tile; l is the row-major index.
//   T = 1, L = prod(S).  local(2, 3): l -> (l / 3, l % 3).
RegisterLayout local(const std::vector<int64_t>& shape);
// column_local(S): like local, column-major.  column_local(2, 3): l -> (l % 2, l / 2).
RegisterLayout column_local(const std::vector<int64_t>& shape);
// replicate(k, rank): shape [1]*rank held by k threads, all at coordinate 0.
//   T = k, L = 1. Composed next to a spatial layout it makes k thread groups share data:
//   spatial(2, 1) * replicate(4, 2): threads 4i..4i+3 all hold row i.
RegisterLayout replicate(int64_t k, int rank);

// ---- derived operations -------------------------------------------------------------
// compose(outer, inner), the Kronecker product (operator* too): the tile is outer's tile
// of inner's tiles.
//   shape  = outer.shape * inner.shape (per dim)
//   coord  = outer_coord * inner.shape + inner_coord
//   thread = outer_thread * inner.T + inner_thread
//   local  = outer_local * inner.L + inner_local
// Ranks must match, else ScriptError(ValueError).
RegisterLayout compose(const RegisterLayout& outer, const RegisterLayout& inner);
RegisterLayout operator*(const RegisterLayout& outer, const RegisterLayout& inner);

// divide(layout, inner): the outer with compose(outer, inner) == layout, when one exists
// (inner's modes must be the innermost spatial and local modes of layout and the
// innermost modes of each dimension); nullopt otherwise.
std::optional<RegisterLayout> divide(const RegisterLayout& layout, const RegisterLayout& inner);
// in_thread_sources(from, to): when the two layouts give every thread the same elements,
// only in another register order (or `to` a subset of `from`'s), src with
// to.coords(t, l) == from.coords(t, src[l]) for every thread t: converting between them
// is a move within each thread's registers. nullopt otherwise (different shapes or
// thread counts, or an element some thread would need from another).
std::optional<std::vector<int64_t>> in_thread_sources(const RegisterLayout& from, const RegisterLayout& to);

}  // namespace tilus
