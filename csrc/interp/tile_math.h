// Tile arithmetic (dot, elementwise, unary, where) and the operand helpers the tile
// instructions share. Internal to csrc/interp.
#pragma once
#include "interp/state.h"

namespace tilus::interp {

// A fresh buffer for `node` (the previous one is reused when nothing else refers to it).
TensorValue& define_output(BlockState& st, const TensorNode* node, DataType dtype);
// An operand that must already hold a value.
const TensorValue& input(BlockState& st, const Tensor& t, const Instruction& inst);
// Where an instruction writes: a new tensor, or the existing one for out=.
TensorValue& existing_output(BlockState& st, const Instruction& inst);

void exec_dot(BlockState& st, const Instruction& inst);
void exec_elementwise(BlockState& st, const Instruction& inst);
void exec_unary(BlockState& st, const Instruction& inst);
void exec_where(BlockState& st, const Instruction& inst);

}  // namespace tilus::interp
