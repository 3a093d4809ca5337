#include "layout/shared_layout.h"

#include <sstream>

#include "support/error.h"

namespace tilus {

namespace {

void check_shape(const std::vector<int64_t>& shape, const char* what) {
  for (auto s : shape) TILUS_CHECK(s >= 1, "ValueError", what, " needs sizes >= 1, got ", s);
}

Expr add(Expr a, Expr b) { return make_binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, int64_t c) { return make_binary(BinaryOp::Mul, std::move(a), make_int(c)); }
Expr div(Expr a, int64_t c) { return make_binary(BinaryOp::Div, std::move(a), make_int(c)); }
Expr mod(Expr a, int64_t c) { return make_binary(BinaryOp::Mod, std::move(a), make_int(c)); }

// a ^ b for 0 <= a, b < n (n a power of two), bit by bit: the IR has no bitwise ops.
// With b constant (the usual ldmatrix case) this is a few shifts and adds after NVRTC.
// a ^ b for a, b in [0, n), n a power of two.
Expr xor_expr(const Expr& a, const Expr& b, int64_t n) {
  (void)n;
  return make_binary(BinaryOp::BitXor, a, b);
}


// Column-blocked layouts (col_block = b > 0): the row a coordinate lies in is its
// *physical* row of b elements, phys = lead / b + (c / b) * R + r, and the swizzle XORs
// the chunk within that row by (phys / rows_per_phase) % n -- the address bits wgmma's
// hardware swizzle uses.
int64_t blocked_offset(const SharedLayout& l, const std::vector<int64_t>& coords, bool swizzle) {
  const int r_dim = l.rank() - 2, c_dim = l.rank() - 1;
  const int64_t b = l.col_block, rows = l.shape[r_dim];
  int64_t lead = 0;
  for (int d = 0; d < r_dim; ++d) lead += coords[d] * l.strides[d];
  const int64_t r = coords[r_dim], c = coords[c_dim];
  const int64_t row_start = lead + (c / b) * rows * b + r * b;
  const int64_t in_row = c % b;
  if (!swizzle || !l.is_swizzled()) return row_start + in_row;
  const int64_t n = l.swizzle_chunks, chunk = in_row / l.chunk_elems;
  const int64_t phase = (row_start / b / l.rows_per_phase) % n;
  return row_start + ((chunk % n) ^ phase) * l.chunk_elems + (chunk / n) * n * l.chunk_elems +
         in_row % l.chunk_elems;
}

Expr blocked_offset_expr(const SharedLayout& l, const std::vector<Expr>& coords) {
  const int r_dim = l.rank() - 2, c_dim = l.rank() - 1;
  const int64_t b = l.col_block, rows = l.shape[r_dim];
  Expr lead_rows = make_int(0);  // lead / b, in physical rows
  for (int d = 0; d < r_dim; ++d) lead_rows = add(lead_rows, mul(coords[d], l.strides[d] / b));
  const Expr &r = coords[r_dim], &c = coords[c_dim];
  Expr phys = add(add(lead_rows, mul(div(c, b), rows)), r);
  Expr in_row = mod(c, b);
  if (!l.is_swizzled()) return add(mul(phys, b), in_row);
  const int64_t n = l.swizzle_chunks;
  Expr chunk = div(in_row, l.chunk_elems);
  Expr phase = mod(div(phys, l.rows_per_phase), n);
  Expr off = add(mul(phys, b), mul(div(chunk, n), n * l.chunk_elems));
  off = add(off, mul(xor_expr(mod(chunk, n), phase, n), l.chunk_elems));
  return add(off, mod(in_row, l.chunk_elems));
}

}  // namespace

int64_t SharedLayout::size() const {
  int64_t last = 0;  // the largest offset + 1; the swizzle permutes within rows
  for (int d = 0; d < rank(); ++d) last += (shape[d] - 1) * strides[d];
  return last + 1;
}

int64_t SharedLayout::offset(const std::vector<int64_t>& coords) const {
  TILUS_CHECK(static_cast<int>(coords.size()) == rank(), "ValueError", "shared offset: ",
              coords.size(), " coordinates for a layout of rank ", rank());
  int64_t off = 0;
  for (int d = 0; d < rank(); ++d) {
    TILUS_CHECK(coords[d] >= 0 && coords[d] < shape[d], "ValueError", "shared offset: coordinate ",
                coords[d], " is out of range for dim ", d, " of size ", shape[d]);
    off += coords[d] * strides[d];
  }
  if (col_block > 0) return blocked_offset(*this, coords, true);
  if (!is_swizzled()) return off;
  const int64_t n = swizzle_chunks, col = coords.back();
  const int64_t row = (off - col) / shape.back();
  const int64_t chunk = col / chunk_elems, phase = (row / rows_per_phase) % n;
  return off + (((chunk % n) ^ phase) - chunk % n) * chunk_elems;
}

Expr SharedLayout::offset_expr(const std::vector<Expr>& coords) const {
  TILUS_CHECK(static_cast<int>(coords.size()) == rank(), "ValueError", "shared offset: ",
              coords.size(), " coordinates for a layout of rank ", rank());
  if (col_block > 0) return blocked_offset_expr(*this, coords);
  if (!is_swizzled()) {
    Expr off = make_int(0);
    for (int d = 0; d < rank(); ++d) off = add(off, mul(coords[d], strides[d]));
    return off;
  }
  const int64_t cols = shape.back(), n = swizzle_chunks;
  Expr row = make_int(0);
  for (int d = 0; d + 1 < rank(); ++d) row = add(row, mul(coords[d], strides[d] / cols));
  const Expr& col = coords.back();
  // row * cols + (segment start) + (swizzled chunk) * chunk_elems + (offset in chunk)
  Expr chunk = mod(div(col, chunk_elems), n);
  Expr phase = mod(div(row, rows_per_phase), n);
  Expr off = add(mul(row, cols), mul(div(col, n * chunk_elems), n * chunk_elems));
  off = add(off, mul(xor_expr(chunk, phase, n), chunk_elems));
  return add(off, mod(col, chunk_elems));
}

bool SharedLayout::has_dense_strides() const {
  int64_t expect = 1;
  for (int d = rank(); d-- > 0;) {
    if (strides[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}

std::string SharedLayout::str() const {
  std::ostringstream os;
  const bool row_major = has_dense_strides();
  os << "SharedLayout(" << (is_swizzled() ? "swizzled" : row_major ? "row_major" : "strided")
     << ", shape=[";
  for (int d = 0; d < rank(); ++d) os << (d ? ", " : "") << shape[d];
  os << "]";
  if (!row_major) {
    os << ", strides=[";
    for (int d = 0; d < rank(); ++d) os << (d ? ", " : "") << strides[d];
    os << "]";
  }
  if (is_swizzled())
    os << ", chunk_elems=" << chunk_elems << ", swizzle_chunks=" << swizzle_chunks
       << ", rows_per_phase=" << rows_per_phase;
  if (col_block > 0) os << ", col_block=" << col_block;
  os << ")";
  return os.str();
}

bool SharedLayout::operator==(const SharedLayout& o) const {
  return shape == o.shape && strides == o.strides && chunk_elems == o.chunk_elems &&
         swizzle_chunks == o.swizzle_chunks && rows_per_phase == o.rows_per_phase &&
         col_block == o.col_block;
}

SharedLayout shared_row_major(const std::vector<int64_t>& shape) {
  check_shape(shape, "row_major");
  SharedLayout l;
  l.shape = shape;
  l.strides.assign(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    l.strides[d] = l.strides[d + 1] * shape[d + 1];
  return l;
}

SharedLayout shared_column_major(const std::vector<int64_t>& shape) {
  check_shape(shape, "column_major");
  SharedLayout l;
  l.shape = shape;
  l.strides.assign(shape.size(), 1);
  for (size_t d = 1; d < shape.size(); ++d) l.strides[d] = l.strides[d - 1] * shape[d - 1];
  return l;
}

bool can_swizzle(const std::vector<int64_t>& shape, int64_t dtype_bits) {
  if (shape.size() < 2 || dtype_bits < 1 || 128 % dtype_bits) return false;
  for (auto s : shape)
    if (s < 1) return false;
  return shape.back() * dtype_bits % 512 == 0;
}

SharedLayout shared_swizzled(const std::vector<int64_t>& shape, int64_t dtype_bits) {
  check_shape(shape, "swizzled");
  TILUS_CHECK(can_swizzle(shape, dtype_bits), "ValueError",
              "a swizzled shared layout needs rank >= 2, an element size dividing 16 bytes and "
              "rows of a multiple of 64 bytes; got ", shape.size(), " dims, ",
              shape.empty() ? 0 : shape.back(), " elements of ", dtype_bits, " bits per row");
  SharedLayout l = shared_row_major(shape);
  const int64_t segment = shape.back() * dtype_bits % 1024 == 0 ? 128 : 64;  // bytes
  l.chunk_elems = 128 / dtype_bits;
  l.swizzle_chunks = segment / 16;
  l.rows_per_phase = 128 / segment;
  return l;
}

SharedLayout auto_shared_layout(const std::vector<int64_t>& shape, int64_t dtype_bits) {
  // Tiles of one row per leading index ([stages, 1, n]: a scale row per pipeline stage)
  // are read one row at a time, which never conflicts; a swizzle would only make every
  // address depend on the stage through the XOR instead of by a stride.
  const bool single_rows = shape.size() >= 2 && shape[shape.size() - 2] == 1;
  return can_swizzle(shape, dtype_bits) && !single_rows ? shared_swizzled(shape, dtype_bits)
                                                        : shared_row_major(shape);
}


std::optional<SharedLayout> shared_wgmma_operand(const std::vector<int64_t>& shape, int64_t dtype_bits) {
  if (!can_swizzle(shape, dtype_bits)) return std::nullopt;
  const int64_t row_bits = shape.back() * dtype_bits;
  if (row_bits != 512 && row_bits % 1024 != 0) return std::nullopt;  // 64 or k * 128 bytes
  SharedLayout l = shared_swizzled(shape, dtype_bits);
  if (row_bits > 1024) l.col_block = 1024 / dtype_bits;
  return l;
}

int64_t unswizzled_offset(const SharedLayout& layout, const std::vector<int64_t>& coords) {
  TILUS_CHECK(static_cast<int>(coords.size()) == layout.rank() && layout.rank() >= 2, "ValueError",
              "unswizzled_offset: ", coords.size(), " coordinates for a layout of rank ", layout.rank());
  if (layout.col_block > 0) return blocked_offset(layout, coords, false);
  int64_t off = 0;
  for (int d = 0; d < layout.rank(); ++d) off += coords[d] * layout.strides[d];
  return off;
}

}  // namespace tilus
