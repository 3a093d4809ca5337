// How TMA copies see shared tiles (ops/tma.cc): the layout the layout rule gives an
// allocation a TMA copies, and how a planned layout maps onto the TMA unit's boxes.
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

#include "layout/shared_layout.h"

namespace tilus::ops {

// Rows of 64 or 128 bytes: shared_swizzled (the 64B / 128B swizzle); rows of a multiple
// of 128 bytes: 128-byte column blocks with the 128B swizzle; anything else row-major
// (no swizzle). Rank-1 tiles are row-major.
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

}  // namespace tilus::ops
