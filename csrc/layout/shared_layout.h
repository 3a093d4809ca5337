// Shared-memory layouts: where each element of a shared tile lives, in elements from
// the start of its buffer.
//
// Strided layouts (row_major, column_major) plus one swizzled layout for tiles that
// ldmatrix and 16-byte cp.async touch. Without a swizzle, the 8 rows that one ldmatrix
// 8x8 matrix (or 8 threads of a 16-byte access) read at the same 16-byte column sit in
// the same banks when rows are 128 bytes apart: an 8-way bank conflict. The swizzle XORs
// the 16-byte chunk index within each 128-byte segment with the row (the idea of CuTe's
// Swizzle<B,M,S>, keyed here by the row index instead of address bits), so any 8
// consecutive rows at one chunk column hit 8 different 16-byte bank groups, while each
// row stays a permutation of its own chunks (full rows still conflict-free).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace tilus {

struct SharedLayout {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements, before the swizzle
  // The XOR swizzle (none when swizzle_chunks == 0) permutes 16-byte chunks of the last
  // dim. It is keyed by the flattened row index R = sum_{d < rank-1} coords[d] * strides[d]
  // / shape[rank-1] (leading dims are stacked matrices, e.g. pipeline stages):
  //   chunk c -> (c / n) * n + ((c % n) ^ ((R / rows_per_phase) % n)),  n = swizzle_chunks
  int64_t chunk_elems = 0;     // elements per 16-byte chunk
  int64_t swizzle_chunks = 0;  // chunks in one swizzled segment: 8 (128 bytes) or 4 (64)
  int64_t rows_per_phase = 1;  // rows sharing one XOR value: 128 / segment bytes
  // Column blocks (0: none). With col_block = b, each matrix of the last two dims [R, C]
  // is stored as C / b blocks of [R, b], one after the other, each row-major (and
  // swizzled within its rows of b elements): element (r, c) of a matrix sits at
  //   (c / b) * R * b + r * b + (c % b)   (before the swizzle).
  // This is the shape wgmma's 128-byte swizzle needs when a tile is wider than 128 bytes
  // along its contiguous dimension (shared_wgmma_operand).
  int64_t col_block = 0;

  int rank() const { return static_cast<int>(shape.size()); }
  bool is_swizzled() const { return swizzle_chunks > 0; }
  // The strides are shape's row-major ones: no padding (before the swizzle and the column
  // blocks).
  bool has_dense_strides() const;
  int64_t size() const;  // elements the buffer needs
  // Offset of an in-range coordinate (ScriptError(ValueError) otherwise).
  int64_t offset(const std::vector<int64_t>& coords) const;
  // The same as an expression (only +, -, *, /, % by constants; folds for constants).
  Expr offset_expr(const std::vector<Expr>& coords) const;
  // "SharedLayout(row_major, shape=[64, 32])",
  // "SharedLayout(swizzled, shape=[64, 32], chunk_elems=8, swizzle_chunks=4, rows_per_phase=2)"
  std::string str() const;
  bool operator==(const SharedLayout& o) const;
  bool operator!=(const SharedLayout& o) const { return !(*this == o); }
};

// offset = sum coords[d] * prod(shape[d+1:])
SharedLayout shared_row_major(const std::vector<int64_t>& shape);
// offset = sum coords[d] * prod(shape[:d])
SharedLayout shared_column_major(const std::vector<int64_t>& shape);
// Row-major plus the XOR swizzle on the last two dims. Needs rank >= 2 and rows (the
// last dim) of a multiple of 64 bytes; segments are 128 bytes when the row size is a
// multiple of 128, else 64 bytes (then 2 rows share one XOR value, since two 64-byte
// rows already fill the 32 banks). Slicing leading dims (sa[stage]) keeps the layout
// when the row count of the slice is a multiple of 8. Element sizes are in bits and
// must divide the 128-bit chunk (sub-byte elements included).
SharedLayout shared_swizzled(const std::vector<int64_t>& shape, int64_t dtype_bits);
// True when shared_swizzled(shape, dtype_bits) applies.
bool can_swizzle(const std::vector<int64_t>& shape, int64_t dtype_bits);
// shared_swizzled when it applies and the tile has more than one row per leading index,
// else shared_row_major: the default for shared tiles.
SharedLayout auto_shared_layout(const std::vector<int64_t>& shape, int64_t dtype_bits);

// The layout wgmma reads an operand tile [..., R, C] (C the contiguous dimension) from:
// rows of 64 bytes with the 64-byte swizzle (C * bytes == 64), or column blocks of 128
// bytes with the 128-byte swizzle (C * bytes a multiple of 128). nullopt otherwise.
// It is shared_swizzled's layout whenever the rows are 64 or 128 bytes.
std::optional<SharedLayout> shared_wgmma_operand(const std::vector<int64_t>& shape, int64_t dtype_bits);
// The unswizzled offset of coordinate `coords` in `layout` (what a wgmma descriptor's
// start address holds): equal to offset() for coordinates at a swizzle-period boundary.
int64_t unswizzled_offset(const SharedLayout& layout, const std::vector<int64_t>& coords);

}  // namespace tilus
