// Global memory: tile windows moved between global tensors and dense tile buffers,
// every access checked against the buffer its view was made from (see
// TensorValue::region).
#include <cstring>
#include <algorithm>
#include <cstdio>

#include "interp/buffer.h"
#include "interp/state.h"
#include "ir/packed.h"
#include "support/error.h"

namespace tilus::interp {

namespace {
bool in_region(const HostRegion& r, uintptr_t addr, size_t bytes) {
  return addr >= r.begin && addr - r.begin <= r.bytes && bytes <= r.bytes - (addr - r.begin);
}
}  // namespace

const HostRegion* find_region(const Launch& l, uintptr_t addr, size_t bytes) {
  for (const HostRegion& r : l.regions)
    if (in_region(r, addr, bytes)) return &r;
  return nullptr;
}

namespace {

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string index_str(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

[[noreturn]] void out_of_bounds(const Launch& l, uintptr_t addr, size_t bytes, const char* what,
                                const TensorValue* tensor, const std::vector<int64_t>& index) {
  std::string shape_note;
  if (tensor && !tensor->gshape.empty())
    shape_note = cat("; is the global view's shape ", index_str(tensor->gshape),
                     " larger than the buffer passed in?");
  const std::string name = tensor && tensor->node ? tensor->node->name : std::string("?");
  if (tensor && tensor->region >= 0) {
    const HostRegion& r = l.regions[static_cast<size_t>(tensor->region)];
    throw ScriptError(
        "RuntimeError",
        cat("global memory access out of bounds: ", what, " through the view ", name, " touches ",
            bytes, " bytes at ", hex(addr), " (index ", index_str(index),
            "), outside the buffer passed as '", r.name, "' (", r.bytes, " bytes at ",
            hex(r.begin), ")", shape_note));
  }
  throw ScriptError(
      "RuntimeError",
      cat("global memory access out of bounds: ", what, " touches ", bytes, " bytes at ",
          hex(addr), ", outside every buffer passed to the kernel", shape_note, " (tensor ",
          name, ", index ", index_str(index), ")"));
}

// Copies one element between a global address and a tile slot.
inline void move_element(uint8_t* dst, const uint8_t* src, int bytes) {
  switch (bytes) {
    case 1: *dst = *src; return;
    case 2: std::memcpy(dst, src, 2); return;
    case 4: std::memcpy(dst, src, 4); return;
    case 8: std::memcpy(dst, src, 8); return;
    default: std::memcpy(dst, src, static_cast<size_t>(bytes)); return;
  }
}

// A window of a packed sub-byte tensor (ir/packed.h), element by element over the
// in-range box [lo, hi): each element's bits are read from, or written into, the one or
// two bytes holding them, checked against the tensor's buffer.
void transfer_packed(const Launch& l, const TensorValue& g, const std::vector<int64_t>& offsets,
                     const std::vector<int>& dims, uint8_t* tile, DataType tile_dtype,
                     const std::vector<int64_t>& tile_shape, const std::vector<int64_t>& lo,
                     const std::vector<int64_t>& hi, int64_t base_elem, Transfer dir, const char* what) {
  const int t = static_cast<int>(tile_shape.size());
  const int bits = g.dtype.bits();
  const int tb = element_bytes(tile_dtype);
  const bool same = tile_dtype == g.dtype;
  std::vector<int64_t> tstride(t, 1);
  for (int p = t - 2; p >= 0; --p) tstride[p] = tstride[p + 1] * tile_shape[p + 1];
  auto* base = reinterpret_cast<uint8_t*>(g.base);
  std::vector<int64_t> j(lo);
  while (true) {
    int64_t ge = base_elem, te = 0;
    for (int p = 0; p < t; ++p) {
      ge += j[p] * g.gstrides[dims[p]];
      te += j[p] * tstride[p];
    }
    const int64_t bit = ge * bits;
    const int64_t first = packed_first_byte(bit), end = packed_end_byte(bit + bits);
    const uintptr_t addr = g.base + static_cast<uintptr_t>(first);
    if (!allowed_access(l, g, addr, static_cast<size_t>(end - first))) {
      std::vector<int64_t> index(offsets);
      for (int p = 0; p < t; ++p) index[dims[p]] += j[p];
      out_of_bounds(l, addr, static_cast<size_t>(end - first), what, &g, index);
    }
    uint8_t* tp = tile + te * tb;
    if (dir == Transfer::Load) {
      const uint8_t code = packed_get(base, bit, bits);
      if (same) *tp = code;
      else convert_elements(&code, g.dtype, tp, tile_dtype, 1);
    } else {
      uint8_t code = *tp;
      if (!same) convert_elements(tp, tile_dtype, &code, g.dtype, 1);
      packed_set(base, bit, bits, code);
    }
    int p = t - 1;
    for (; p >= 0; --p) {
      if (++j[p] < hi[p]) break;
      j[p] = lo[p];
    }
    if (p < 0) break;
  }
}

}  // namespace

bool allowed_access(const Launch& l, const TensorValue& tensor, uintptr_t addr, size_t bytes) {
  // A view may not reach into a neighbouring argument even though that memory is
  // the kernel's too: on the GPU the neighbour is wherever the allocator put it.
  if (tensor.region >= 0) return in_region(l.regions[static_cast<size_t>(tensor.region)], addr, bytes);
  return find_region(l, addr, bytes) != nullptr;
}

void check_global_access(const Launch& l, uintptr_t addr, size_t bytes, const char* what,
                         const TensorValue* tensor, const std::vector<int64_t>& index) {
  bool ok = tensor ? allowed_access(l, *tensor, addr, bytes) : find_region(l, addr, bytes) != nullptr;
  if (!ok) out_of_bounds(l, addr, bytes, what, tensor, index);
}

void convert_elements(const uint8_t* src, DataType src_dtype, uint8_t* dst, DataType dst_dtype,
                      int64_t n) {
  if (src_dtype == dst_dtype) {
    std::memmove(dst, src, static_cast<size_t>(n) * element_bytes(src_dtype));
    return;
  }
  ScalarKind sk = src_dtype.kind, dk = dst_dtype.kind;
  int sb = element_bytes(src_dtype), db = element_bytes(dst_dtype);
  if (is_float_kind(sk) || is_float_kind(dk)) {
    for (int64_t i = 0; i < n; ++i) store_f(dst + i * db, dk, load_f(src + i * sb, sk));
  } else {
    for (int64_t i = 0; i < n; ++i) store_i(dst + i * db, dk, load_i(src + i * sb, sk));
  }
}

void transfer_window(const Launch& l, const TensorValue& g, const std::vector<int64_t>& offsets,
                     const std::vector<int>& dims_in, uint8_t* tile, DataType tile_dtype,
                     const std::vector<int64_t>& tile_shape, Transfer dir, const char* what) {
  const int r = static_cast<int>(g.gshape.size());
  const int t = static_cast<int>(tile_shape.size());
  std::vector<int> dims = dims_in;
  if (dims.empty())  // the tile covers the trailing global dims
    for (int p = 0; p < t; ++p) dims.push_back(r - t + p);
  TILUS_CHECK(static_cast<int>(dims.size()) == t && t <= r &&
                  static_cast<int>(offsets.size()) == r,
              "ValueError", what, ": a rank-", t, " tile of a rank-", r, " tensor needs ", r,
              " offsets and ", t, " dims");
  int64_t tile_numel = 1;
  for (int64_t s : tile_shape) tile_numel *= s;
  const int tb = element_bytes(tile_dtype);
  const int gb = element_bytes(g.dtype);
  const bool same = tile_dtype == g.dtype;

  // Which tile positions land inside the global shape: a box [lo, hi) per tile dim.
  std::vector<int64_t> lo(t), hi(t), stride(t);
  bool empty = false;
  int64_t base_elem = 0;  // element offset of the tile's origin
  std::vector<bool> is_tile_dim(r, false);
  for (int p = 0; p < t; ++p) is_tile_dim[dims[p]] = true;
  for (int d = 0; d < r; ++d) {
    base_elem += offsets[d] * g.gstrides[d];
    if (!is_tile_dim[d] && (offsets[d] < 0 || offsets[d] >= g.gshape[d])) empty = true;
  }
  bool full = true;
  for (int p = 0; p < t; ++p) {
    int d = dims[p];
    lo[p] = std::clamp<int64_t>(-offsets[d], 0, tile_shape[p]);
    hi[p] = std::clamp<int64_t>(g.gshape[d] - offsets[d], 0, tile_shape[p]);
    stride[p] = g.gstrides[d];
    if (lo[p] >= hi[p]) empty = true;
    if (lo[p] != 0 || hi[p] != tile_shape[p]) full = false;
  }
  if (dir == Transfer::Load && (!full || empty))
    std::memset(tile, 0, static_cast<size_t>(tile_numel) * tb);
  if (empty || tile_numel == 0) return;

  if (is_packed(g.dtype)) {
    transfer_packed(l, g, offsets, dims, tile, tile_dtype, tile_shape, lo, hi, base_elem, dir, what);
    return;
  }

  // The bytes the in-range box touches; one region holding them all means no
  // per-element checks are needed.
  int64_t min_e = base_elem, max_e = base_elem;
  for (int p = 0; p < t; ++p) {
    int64_t a = lo[p] * stride[p], b = (hi[p] - 1) * stride[p];
    min_e += std::min(a, b);
    max_e += std::max(a, b);
  }
  const uintptr_t min_addr = g.base + static_cast<uintptr_t>(min_e * gb);
  const size_t span = static_cast<size_t>((max_e - min_e + 1) * gb);
  const bool checked = allowed_access(l, g, min_addr, span);

  // Row-major tile strides.
  std::vector<int64_t> tstride(t, 1);
  for (int p = t - 2; p >= 0; --p) tstride[p] = tstride[p + 1] * tile_shape[p + 1];

  std::vector<int64_t> j(lo);  // current tile index over the box (odometer)
  const int inner = t - 1;
  const int64_t inner_n = t ? hi[inner] - lo[inner] : 1;
  const int64_t inner_gs = t ? stride[inner] : 0;
  while (true) {
    int64_t ge = base_elem, te = 0;
    for (int p = 0; p < inner; ++p) {
      ge += j[p] * stride[p];
      te += j[p] * tstride[p];
    }
    if (t) {
      ge += lo[inner] * inner_gs;
      te += lo[inner];
    }
    uint8_t* tp = tile + te * tb;
    auto* gp = reinterpret_cast<uint8_t*>(g.base + static_cast<uintptr_t>(ge * gb));
    if (!checked) {
      for (int64_t q = 0; q < inner_n; ++q) {
        auto addr = reinterpret_cast<uintptr_t>(gp + q * inner_gs * gb);
        if (!allowed_access(l, g, addr, static_cast<size_t>(gb))) {
          std::vector<int64_t> index(offsets);
          for (int p = 0; p < t; ++p) index[dims[p]] += (p == inner ? lo[p] + q : j[p]);
          out_of_bounds(l, addr, static_cast<size_t>(gb), what, &g, index);
        }
      }
    }
    if (same && inner_gs == 1) {
      size_t n = static_cast<size_t>(inner_n * gb);
      if (dir == Transfer::Load) std::memcpy(tp, gp, n);
      else std::memcpy(gp, tp, n);
    } else if (same) {
      const int64_t step = inner_gs * gb;
      for (int64_t q = 0; q < inner_n; ++q) {
        if (dir == Transfer::Load) move_element(tp + q * tb, gp + q * step, gb);
        else move_element(gp + q * step, tp + q * tb, gb);
      }
    } else {
      const int64_t step = inner_gs * gb;
      for (int64_t q = 0; q < inner_n; ++q) {
        if (dir == Transfer::Load) convert_elements(gp + q * step, g.dtype, tp + q * tb, tile_dtype, 1);
        else convert_elements(tp + q * tb, tile_dtype, gp + q * step, g.dtype, 1);
      }
    }
    // advance the outer dims
    int p = inner - 1;
    for (; p >= 0; --p) {
      if (++j[p] < hi[p]) break;
      j[p] = lo[p];
    }
    if (p < 0) break;
  }
}

void perform_copy(const Launch& l, const PendingCopy& c) {
  try {
    if (!c.dst_offsets) {
      transfer_window(l, c.src, c.offsets, c.dims, c.dst, c.dst_dtype, c.dst_shape, Transfer::Load,
                      "copy_async");
    } else {  // into a permuted view: the tile row-major, then each element to its place
      const int b = element_bytes(c.dst_dtype);
      std::vector<uint8_t> tile(c.dst_offsets->size() * b);
      transfer_window(l, c.src, c.offsets, c.dims, tile.data(), c.dst_dtype, c.dst_shape, Transfer::Load,
                      "copy_async");
      for (size_t i = 0; i < c.dst_offsets->size(); ++i)
        std::memcpy(c.dst + (*c.dst_offsets)[i] * b, tile.data() + i * b, b);
    }
  } catch (ScriptError& e) {
    if (c.stmt) e.set_loc_if_unknown(c.stmt->loc);
    throw;
  }
}

}  // namespace tilus::interp
