// The builder's operand rules shared by the handlers' check stages (ops/op_handler.h)
// and IRBuilder (ir/builder.cc): each throws the ScriptError the script sees, which the
// builder locates at the script line.
#pragma once
#include <string>
#include <vector>

#include "ir/inst.h"

namespace tilus {

// "[16, 8]": how error messages write a tile's shape.
std::string shape_str(const std::vector<int64_t>& shape);
// `op` has exactly n tensor operands.
void expect_inputs(const Instruction& inst, size_t n);
// t is a register tensor: "<what>: <operand> must be a register tensor, got ...".
void require_register(const Tensor& t, const char* what, const char* operand);
// t is a shared tensor: "<what> needs a shared tensor, got ..." (whether it is still
// allocated is the builder's to check: IRBuilder::check_shared_live).
void require_shared(const Tensor& t, const char* what);
// An integer scalar operand, as int32 unless it is int64.
Expr int_operand(Expr e, const char* what);
// A tile window of a global tensor: offsets cover every global dim; the tile's dims map
// to `dims` of the global tensor (filled with the default, the last tile-rank dims, when
// empty); the offsets become integers.
void check_tile_window(const Tensor& global, std::vector<Expr>& offsets, const std::vector<int64_t>& tile_shape,
                       std::vector<int>& dims, const char* what);

}  // namespace tilus
