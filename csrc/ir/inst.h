// Tile instructions. The op list is the table in ir/ops.def.
//
// What each op reads (inputs are tensors, args are scalar Exprs):
//   GlobalView        args[0]=pointer                     -> output global (shape/strides on it)
//   GlobalTensor      requires_clean, workspace           -> output global (shape on it)
//   SharedTensor      -                                   -> output shared
//   RegisterTensor    args[0]=init (optional)             -> output register (layout optional)
//   SliceShared       inputs[0]=shared, args=leading indices -> output shared view
//   LoadGlobal        inputs[0]=global, args=offsets, dims -> output register
//   StoreGlobal       inputs[0]=global, inputs[1]=register, args=offsets, dims
//   LoadShared        inputs[0]=shared                    -> output register
//   StoreShared       inputs[0]=shared, inputs[1]=register
//   FreeShared        inputs[0]=shared
//   Sync, CopyAsyncCommitGroup
//   CopyAsync         inputs[0]=global src, inputs[1]=shared dst, args=offsets, dims
//   CopyAsyncWaitGroup  int_attr = groups allowed to stay in flight
//   Dot               inputs a, b, c                      -> output (new, or out=)
//   Cast              inputs[0], dtype                    -> output
//   Elementwise       binary_op; inputs a[, b]; a scalar operand is args[0], on the
//                     left when scalar_lhs                -> output (new, or out=)
//   UnaryElementwise  unary_op, inputs[0]                 -> output
//   Where             inputs cond, a, b                   -> output
//   Assign            inputs[0]=src -> output (existing)  (rebinding a register name)
//   LockSemaphore     args[0]=~int32 pointer, args[1]=value: wait until *p == value
//   ReleaseSemaphore  args[0]=~int32 pointer, args[1]=value: *p = value (release order)
//   PrintTensor       inputs[0], text = label
#pragma once
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/tensor.h"

namespace tilus {

enum class Op : uint8_t {
#define TILUS_OP(e, name, defines) e,
#include "ir/ops.def"
#undef TILUS_OP
};

const char* op_name(Op op);
bool op_defines_output(Op op);

struct Instruction {
  Op op;
  Tensor output;  // null when the op writes no tensor
  bool defines_output = false;  // false: writes into an existing tensor (out=)
  std::vector<Tensor> inputs;
  std::vector<Expr> args;
  DataType dtype;
  std::vector<int64_t> shape;
  std::vector<int> dims;
  int64_t int_attr = 0;
  bool requires_clean = false;
  int workspace = -1;
  BinaryOp binary_op = BinaryOp::Add;
  UnaryOp unary_op = UnaryOp::Neg;
  bool scalar_lhs = false;
  std::string text;
};

}  // namespace tilus
