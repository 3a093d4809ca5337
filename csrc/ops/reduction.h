// The layout algebra of reductions, shared with broadcasting (a [m, 1] operand of an
// elementwise op against [m, n] takes the layout a keepdim reduction of the output
// would have, so `x - self.max(x, dim=1, keepdim=True)` moves no data).
#pragma once
#include <string>

#include "ir/dtype.h"
#include "layout/register_layout.h"

#include "ops/op_handler.h"

namespace tilus {
class CudaEmitter;
}

namespace tilus::ops {

// How elements combine in a reduction (ops/reduction.cc) or a scan (ops/scan.cc).
// And, Or, Xor are bitwise (integer scans only); they come last so the helper names of
// the others keep their index in cuda_combine's name table.
enum class Combine { Sum, Max, Min, Any, All, Mul, And, Or, Xor };

// How partial results are kept and merged in the generated CUDA: acc_t is what
// shuffles move (float for floats up to 32 bits, double, 32- or 64-bit integers: unsigned
// for wrapping sums and products), identity the neutral element in acc_t, helper the
// name of a __device__ acc_t helper(acc_t a, acc_t b) the emitter defines once per
// kernel (max/min: a NaN wins, as in torch).
struct CudaCombine {
  std::string acc_t;
  int64_t acc_bytes = 4;  // sizeof(acc_t): what a shared-memory exchange of it takes
  std::string identity;
  std::string helper;
};
CudaCombine cuda_combine(CudaEmitter& e, Combine c, DataType t);

// `in` with dimension d reduced to size 1 (keepdim) or removed: d's local modes are
// dropped and its spatial modes become replication, so every thread that held part of
// a row holds the row's result.
RegisterLayout reduced_layout(const RegisterLayout& in, int d, bool keepdim);

// The layout of an operand of shape `shape` broadcast (numpy rules) against an output
// of shape `out_shape` laid out as `out` (which may be padded: block_layouts.h
// default_tile_layout): out's leading dimensions that `shape` lacks are removed, those
// where `shape` has size 1 are reduced with keepdim, each as reduced_layout does. Every
// thread then holds the operand elements its output elements read.
RegisterLayout broadcast_layout(const RegisterLayout& out, const std::vector<int64_t>& out_shape,
                                const std::vector<int64_t>& shape);

// Reductions and scans: with more than one warpgroup, their cross-warp exchange meets
// the other warpgroups at a barrier, so a running wgmma dot is waited for first
// (OpHandler::wgmma_hazard).
WgmmaHazard reduction_wgmma_hazard(const Instruction& inst, const LayoutPlan& plan, int warps);

}  // namespace tilus::ops
