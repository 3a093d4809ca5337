// Pieces of an instruction's IR text: the printer (ir/printer.cc) and the handlers'
// print stages (ops/op_handler.h) build each line from these, so every op prints its
// tensors, lists and the `%out = name(...)` frame the same way.
#pragma once
#include <string>
#include <vector>

#include "ir/inst.h"

namespace tilus::inst_text {

std::string ref(const Tensor& t);                   // %name
std::string exprs(const std::vector<Expr>& xs);     // [a, b]
std::string ints(const std::vector<int64_t>& xs);  // [1, 2]
std::string ints(const std::vector<int>& xs);
// "%out = name(attrs)" when the op defines its output, else "name(attrs)".
std::string call(const Instruction& i, const std::string& attrs);
// The tensor operands, then out= when the op writes into an existing tensor.
std::string operands(const Instruction& i);
// ", dims=[...]" when a tile's dims are not the default (the last tile_rank dims of a
// rank global_rank tensor), else "".
std::string dims_attr(const Instruction& i, int global_rank, size_t tile_rank);
// The generic text of an op without a print stage: call(i, operands(i)).
std::string generic(const Instruction& i);

}  // namespace tilus::inst_text
