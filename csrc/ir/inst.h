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
//   Dot               inputs a, b, c                      -> output (new, or out=);
//                     int_attr = DotLowering (set by transforms/async_waits.h)
//   WgmmaCommitGroup  -  (the wgmma dots issued since the last commit form one group)
//   WgmmaWaitGroup    int_attr = groups allowed to stay in flight, text = why;
//                     inputs register accumulators: fenced after the wait (their reads
//                     stay below it); or inputs[0] a shared view being written and
//                     inputs[1..] views a running dot reads: wait only when the write
//                     hits one of them (the views' leading indices are equal at run time)
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

// How a dot runs; the async pass (transforms/async_waits.h) marks each dot for a target.
enum class DotLowering : int64_t {
  Plain = 0,       // mma.sync or SIMT: done when the instruction is
  WgmmaSync = 1,   // wgmma, committed and waited for inside the dot (the result is converted)
  WgmmaAsync = 2,  // wgmma, still running after it: WgmmaCommitGroup / WgmmaWaitGroup follow
};

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

inline DotLowering dot_lowering(const Instruction& dot) { return static_cast<DotLowering>(dot.int_attr); }

}  // namespace tilus
