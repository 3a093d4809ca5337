#include "ir/shape_rules.h"

#include <algorithm>

namespace tilus {

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1) return {};
    out[i] = std::max(x, y);
  }
  return out;
}

DataType binary_result_dtype(BinaryOp op, DataType operands) {
  return is_comparison(op) || is_logical(op) ? dtypes::boolean : operands;
}

}  // namespace tilus
