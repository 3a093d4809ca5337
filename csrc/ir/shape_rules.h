// Shape and dtype rules of tile arithmetic, shared by the builder (which applies them)
// and the verifier (which checks a finished instruction against them).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/dtype.h"
#include "ir/expr.h"

namespace tilus {

// numpy broadcasting of two compile-time shapes; empty result: incompatible.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// The element type of `a op b` whose operands were promoted to `operands`: boolean for
// comparisons and logical operators, else the operands' type.
DataType binary_result_dtype(BinaryOp op, DataType operands);

}  // namespace tilus
