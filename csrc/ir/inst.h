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
//   CopyAsyncWaitAll    every copy, committed or not; text = why (when a pass placed it)
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
//   Exp               inputs[0]                           -> output (float)
//   Sum               inputs[0], dims[0] = the reduced dim, int_attr = keepdim -> output
//   LockSemaphore     args[0]=~int32 pointer, args[1]=value: wait until *p == value
//   ReleaseSemaphore  args[0]=~int32 pointer, args[1]=value: *p = value (release order)
//   PrintTensor       inputs[0], text = label
//   Printf            args = values (int64 / float64), text = C format (one per block)
//   Assume            args[0] = bool the program promises is true
//   IndexTile         shape, dims[0] = d              -> output int32, element = its index d
//   math family (ops/math.cc):
//   Abs Exp2 Log Sin Cos Round Square Sqrt Rsqrt
//                     inputs[0]; int_attr = 1: the approximate variant (log, sin, cos,
//                     sqrt)                               -> output (x's dtype)
//   Clip              inputs[0], args = {lo, hi} of x's dtype -> output
//   TensorItem        inputs[0], args = one scalar Var per element (row-major) it sets
//   SharedItemPtr     inputs[0] shared (one element), args[0] = the ~dtype Var it sets to
//                     the element's address (ops/shared_item.cc)
//   -- views (ops/reshape.cc, ops/views.cc)
//   Reshape           inputs[0] register, shape = the new shape (squeeze, unsqueeze, flatten) -> output
//   Permute           inputs[0] register, dims = output dim i is input dim dims[i]  -> output
//   View              inputs[0] register, dtype, shape = the layout's shape; int_attr = 1
//                     when layout= was given (the output carries it)  -> output
//   Repeat            inputs[0] register, shape = repeat count per dim            -> output
//   RepeatInterleave  inputs[0] register, shape = repeat count per dim            -> output
//   ReshapeShared     inputs[0] shared, shape = the new shape  -> output shared view (same memory)
//   PermuteShared     inputs[0] shared, dims = output dim i is input dim dims[i] -> output shared view
//   -- register tensors indexed at runtime positions (ops/register_slices.cc)
//   SliceRegister     inputs[0] register, args = one offset per dim (0 where kept), dims =
//                     the kept dims                         -> output (x[i], x[i, :])
//   SliceAssignRegister  inputs[0] = the value (the slice's shape) -> output (existing),
//                     args and dims as SliceRegister        (x[i] = v, x[i] ^= 1)
//   hopper family (ops/mbarrier.cc, ops/tma.cc); a barrier is a uint32 shared address:
//   MbarrierAlloc     args[0] = the uint32 Var set to the first barrier's address, args[1..]
//                     = arrival counts (barrier i at address + 8 i)
//   MbarrierArrive    args = {barrier, count}; int_attr = sem + 4 * scope (0 cta, 1 cluster)
//   MbarrierArriveExpectTx  args = {barrier, transaction bytes}; int_attr as arrive
//   MbarrierWait      args = {barrier, phase parity}; int_attr as arrive
//   TmaGlobalToShared inputs global src, shared dst; args = {barrier, offsets...}; dims
//   TmaSharedToGlobal inputs shared src, global dst; args = offsets; dims
//   TmaCommitGroup, TmaWaitGroup (int_attr = groups left in flight, dims[0] = read only)
//   FenceProxyAsync   text = "shared" or "global";  FenceProxyAsyncRelease  -
//   wgmma family (ops/wgmma.cc): Tilus 0.2's explicit self.wgmma, written by the script
//   (the async pass neither adds nor removes any of these):
//   WgmmaFence        -
//   WgmmaMma          inputs a (shared [M, K]), b (shared [K, N]), d (register [M, N]);
//                     output = d (written in place, defines_output false): d += a @ b,
//                     complete at the wgmma_wait that retires its commit group
//   WgmmaCommit       -  (the wgmma_mma issued since the last commit form one group)
//   WgmmaWait         int_attr = groups allowed to stay in flight
//   thread groups and clusters (ops/clusters.cc):
//   SetMaxNReg        int_attr = registers per thread, dims[0] = 1 inc / 0 dec
//   ClusterSync       -
//   ClusterQuery      args[0] = the uint32 Var it sets; int_attr = what (ClusterWhat)
//   ClusterMapSharedAddr  args = {the uint32 Var it sets, a shared address, target rank}
//   MbarrierArriveCluster args = {barrier, transaction bytes, target rank or CTA mask};
//                     dims[0] = 0 one peer CTA (remote) / 1 the CTAs of the mask (multicast);
//                     int_attr as arrive
//   ClusterStoreShared    inputs shared dst, register value; args[0] = target rank: the value
//                     lands in the block of that rank's instance of dst (st.shared::cluster)
//   ClusterLoadShared     inputs shared src; args[0] = target rank; output the register tile
//                     read from that block's instance of src (ld.shared::cluster)
#pragma once
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/tensor.h"

namespace tilus {

// What an instruction does besides computing its register results (the effects column
// of ir/ops.def). Passes read these instead of listing ops: which parameters a kernel
// may write (transforms/written_params.h), what a reordering must keep in order.
// Scratch memory a lowering uses internally (a layout conversion's, a reduction's) is
// not an effect: no other instruction can observe it.
namespace eff {
enum : uint32_t {
  None = 0,
  ReadsGlobal = 1u << 0,   // reads memory through a global tensor or pointer operand
  WritesGlobal = 1u << 1,  // writes every global tensor and pointer operand it has
  ReadsShared = 1u << 2,
  WritesShared = 1u << 3,  // writes a shared operand (or, no operand, shared memory it sets up)
  Barrier = 1u << 4,       // orders memory between the threads of a block
  Async = 1u << 5,         // starts, groups or completes work that finishes later
  HostOutput = 1u << 6,    // visible outside the kernel's memory (printing)
  EndsShared = 1u << 7,    // ends the lifetime of its shared operand (free_shared)
  // The cp.async channel of the verifier's pairing check (ir/verify_async.cc): the op
  // starts a copy into its shared operand, commits the copies started since the last
  // commit as a group, or waits (int_attr = groups left in flight). A new channel (TMA
  // bulk groups, wgmma) adds its three flags and a row there.
  CpAsyncIssue = 1u << 8,
  CpAsyncCommit = 1u << 9,
  CpAsyncWait = 1u << 10,
};
// The verifier's async check treats an op that reads or writes a shared operand right
// where it stands, (ReadsShared | WritesShared) without Async or EndsShared, as an access
// that must not race with a copy in flight into the same elements.
}  // namespace eff

// The unroll budget's per-thread estimate of an instruction (codegen/unroll_budget.cc).
enum class OpCost : uint8_t {
  Fixed,           // one operation
  OutputElements,  // one per local element of the output
  InputElements,   // one per local element of inputs[0] (a reduction)
  OutputVectors,   // one per 16-byte vector of the output (a load)
  StoredVectors,   // one per 16-byte vector of inputs[1] (a store's value)
  CopyChunks,      // the shared destination inputs[1] in 16-byte pieces over the block
  Dot,             // by the dot's plan: wgmma / mma atoms, or SIMT multiply-adds
  PartOfDot,       // none of its own: placed by the async pass, counted with its dot
};

// How layout inference (transforms/layout_inference.cc) treats an instruction's
// register tensors; the family handler's layout rule implements it (ops/op_handler.h).
enum class LayoutRule : uint8_t {
  None,          // no constraint between its register tensors
  SameAsInputs,  // every register input has the output's layout
  Derived,       // the output's layout is computed from an input's (a reduction's; a cast's,
                 // which may reorder each thread's registers of sub-byte codes)
  Anchored,      // the instruction fixes its operands' layouts itself (dot)
  Shared,        // chooses a shared layout or maps a shared view to its allocation
};

enum class Op : uint8_t {
#define TILUS_OP(e, name, defines, family, effects, cost, layout) e,
#include "ir/ops.def"
#undef TILUS_OP
};

constexpr int kNumOps = 0
#define TILUS_OP(e, name, defines, family, effects, cost, layout) +1
#include "ir/ops.def"
#undef TILUS_OP
    ;

const char* op_name(Op op);
bool op_defines_output(Op op);
uint32_t op_effects(Op op);
inline bool op_has_effect(Op op, uint32_t flags) { return (op_effects(op) & flags) != 0; }
OpCost op_cost(Op op);
LayoutRule op_layout_rule(Op op);
const char* op_family(Op op);
// The op whose script name is `name`; ScriptError(ValueError) for none.
Op op_from_name(const std::string& name);

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

// The op defines a shared view of inputs[0] (slice_shared, reshape_shared,
// permute_shared): it owns no memory, its allocation is inputs[0]'s.
inline bool defines_shared_view(const Instruction& i) {
  return i.op == Op::SliceShared || i.op == Op::ReshapeShared || i.op == Op::PermuteShared;
}
// A shared view that is not a trailing part of its allocation (slices of it included are
// reached through one of these ops).
inline bool transforms_shared_view(const Instruction& i) {
  return i.op == Op::ReshapeShared || i.op == Op::PermuteShared;
}

inline DotLowering dot_lowering(const Instruction& dot) { return static_cast<DotLowering>(dot.int_attr); }

// ops/clusters.cc: the name ClusterQuery's int_attr prints as ("blockRank", ...).
const char* cluster_what_name(int64_t what);

}  // namespace tilus
