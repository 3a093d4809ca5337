// How TMA copies see shared tiles (ops/tma.cc): the layout the layout rule gives an
// allocation a TMA copies, how a planned layout maps onto the TMA unit's boxes, and the
// code that issues the boxes (shared by self.tma and copy_async's lowering to TMA,
// ops/async_copy.cc).
//
// The TMA unit writes a box densely in row-major order and swizzles it by address bits:
// with a span of S = 32, 64 or 128 bytes, the 16-byte chunk c of the S-byte row at
// address A lands at chunk c ^ ((A / 128) % (S / 16)). For rows of exactly S bytes and a
// tile starting at a multiple of 8 * S bytes that is shared_swizzled's XOR swizzle
// (swizzle_chunks = S / 16, rows_per_phase = 128 / S): the layouts agree element for
// element. Rows wider than 128 bytes are stored in 128-byte column blocks
// (shared_wgmma_operand) and copied one block at a time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/tensor.h"
#include "layout/shared_layout.h"

namespace tilus {
class CudaEmitter;
}

namespace tilus::ops {

// Rows of 64 or 128 bytes: shared_swizzled (the 64B / 128B swizzle); rows of a multiple
// of 128 bytes: 128-byte column blocks with the 128B swizzle; anything else row-major
// (no swizzle). Rank-1 tiles and tiles of fewer than 8 rows per leading index are row-major.
SharedLayout tma_shared_layout(const std::vector<int64_t>& shape, int64_t dtype_bits);

struct TmaTiling {
  int swizzle_bytes = 0;    // the tensor map's swizzle: 0 (none), 32, 64, 128
  int64_t block_cols = 0;   // elements of the last dimension one copy moves
  int64_t blocks = 1;       // copies per tile (column blocks)
  std::string error;        // why TMA cannot write this layout ("" when it can)
};

// How a view of shape `view_shape`, `lead_dims` leading indices into an allocation laid
// out as `layout`, is copied by the TMA unit.
TmaTiling tma_tiling(const SharedLayout& layout, const std::vector<int64_t>& view_shape, int64_t dtype_bits,
                     size_t lead_dims);

// Why the TMA unit cannot copy through global view `g` ("" when it can): a view of a
// pointer parameter whose extents and strides the host computes, contiguous rows,
// strides of 16-byte multiples (`proven`: provably so, not only checked at the launch).
std::string tma_view_refusal(CudaEmitter& e, const Tensor& g, const char* what, bool proven);

// Thread 0 issues the boxes of one TMA copy of shared tile `s` from (load) or to global
// view `g` at `offsets` (global coordinates; the tile's dimension p is dims[p]), tiled
// as `tiling`; a load completes on barrier `bar` (C++), multicast to `mask` when not
// empty. `first`: a line thread 0 runs before issuing (C++, may be empty).
void emit_tma_boxes(CudaEmitter& e, const char* what, bool load, const Tensor& g, const Tensor& s,
                    const std::vector<Expr>& offsets, const std::vector<int>& dims, const TmaTiling& tiling,
                    const std::string& bar, const std::string& mask, const std::string& first);

}  // namespace tilus::ops
