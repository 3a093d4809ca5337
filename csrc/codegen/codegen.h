// IR -> CUDA C++: one readable __global__ function per Program.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/stmt.h"

namespace tilus {

struct CodegenOptions {
  // The launcher checks every pointer argument is 16-byte aligned, and every vector
  // extent parameter (transforms/vector_extents.h) a multiple of 16, before using a
  // kernel built with this set; otherwise it uses one built without it.
  bool pointers_aligned = true;
  // With pointers_aligned: the parameters (indices into Program::params) this build may
  // not assume that of -- a pointer not 16-byte aligned, a vector extent not a multiple
  // of 16 -- so only the views using them move element by element (a partly aligned
  // build; transforms/vector_extents.h scalar_globals). Increasing; empty: all aligned.
  std::vector<int> unaligned_params;
  // Whether this build assumes parameter #param meets the aligned build's assumption.
  bool assumes_aligned(int param) const {
    return pointers_aligned && !std::binary_search(unaligned_params.begin(), unaligned_params.end(), param);
  }
  // Lower qualifying dots to wgmma (sm_90a only; layout_inference.h says which).
  bool wgmma = false;
  // The target is sm_90a: mbarrier transaction counts, TMA and proxy fences may be used.
  bool sm90 = false;
  // On sm_90a, copy_async lowers to TMA when every copy of the kernel can (ops/async_copy.cc).
  bool copy_tma = true;
  // Estimated per-thread operations an unrolled loop body may reach
  // (codegen/unroll_budget.h); 0 follows every unroll= hint as written.
  int64_t unroll_budget = 64;
  // tilus.option.debug.bounds_check: every global access is checked against the tensor
  // passed for its pointer (codegen/device/bounds.cuh). The kernel then takes the hidden
  // parameters KernelParam::bounds_of / bounds_record and fills GeneratedKernel::bounds_sites.
  // Off, the generated source is exactly what it is without this field.
  bool bounds_check = false;
  // tilus.option.debug.disable_ptxas_opt: false compiles the same source with ptxas -O0
  // (GeneratedKernel::nvrtc_options; part of the compile request, so of the cache key).
  bool ptxas_optimize = true;
  // tilus.option.debug.omit: a build that leaves one part of the kernel out, to time the
  // rest (its results are wrong by design). omit_mma: no tensor-core or CUDA-core products
  // (dot, wgmma.mma): a dot's output is its accumulator. omit_loads: no copies into shared
  // memory (copy_async, TMA loads), and transaction-count arrivals arrive without
  // expecting bytes, so that every wait still completes.
  bool omit_mma = false;
  bool omit_loads = false;
  // tilus.option.debug.hang_check: > 0, every mbarrier wait (copy_async's TMA waits too)
  // gives up after this many nanoseconds: it prints its script line, the barrier, the
  // phase, its block and thread, and traps (codegen/device/hang.cuh). 0: plain waits.
  int64_t hang_check_ns = 0;
  // Small-float conversions hand their rebias multiplication to a scale that multiplies
  // them (CudaEmitter::emit_scale_fold); bit for bit the same results. False
  // (TILUS_FOLD_SCALES=0) keeps it in the conversion.
  bool fold_scales = true;
};
// Codegen reads no environment: its callers choose these (runtime/build.h).

struct KernelParam {
  std::string name;
  DataType dtype;
  int workspace = -1;  // >= 0: the runtime passes workspace #i, not a user argument
  // Bounds-checked kernels only: >= 0, the byte size of the tensor passed for user
  // parameter #bounds_of (an int64); bounds_record, the BoundsRecord* the host reads.
  int bounds_of = -1;
  bool bounds_record = false;
};

// Where a bounds-checked access is in the script: the host's message names it.
struct BoundsSite {
  std::string op;     // "store_global", "load_global", "element load", ...
  std::string view;   // the global tensor accessed (its script name)
  std::string param;  // the kernel parameter whose tensor bounds it
  std::vector<std::string> view_shape;  // the view's extents as the script wrote them
  SourceLoc loc;
};

// A tensor map (CUtensorMap) the kernel takes by value after its workspaces, for the TMA
// copies of one (global view, box, swizzle) (ops/tma.cc). The host encodes it before
// each launch from the view's pointer, extents and strides (runtime/tma_maps.h); all
// dimension lists are outermost first, as in the IR.
struct TmaMapSpec {
  int view = -1;                     // the global view's tensor id
  std::string view_name;             // for messages: "ga"
  int pointer_param = -1;            // the parameter the view's pointer is
  std::vector<Expr> shape, strides;  // the view's extents and strides, in elements
  DataType dtype;
  std::vector<int64_t> box;          // elements per dimension; 1 outside the tile's dims
  int swizzle_bytes = 0;             // 0 (none), 32, 64 or 128
  std::string where;                 // 'tma.global_to_shared at "file", line N' for messages
};

struct GeneratedKernel {
  std::string name;    // the extern "C" __global__ function
  std::string source;  // complete translation unit (includes "tilus/runtime.cuh")
  int threads = 0;
  int64_t dynamic_smem = 0;  // bytes
  std::vector<KernelParam> params;
  std::vector<TmaMapSpec> tma_maps;  // parameters after the workspaces, in order
  std::vector<BoundsSite> bounds_sites;  // index = BoundsRecord::site
  bool copy_tma = false;  // copy_async was lowered to TMA (CodegenOptions::copy_tma)
  std::vector<std::string> nvrtc_options;  // extra compile options the options ask for
};

// Throws ScriptError (with the script line) for what the CUDA backend cannot express.
GeneratedKernel generate_cuda(const Program& program, const CodegenOptions& options = {});

}  // namespace tilus
