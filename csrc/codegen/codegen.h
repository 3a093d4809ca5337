// IR -> CUDA C++: one readable __global__ function per Program.
#pragma once
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
  // Lower qualifying dots to wgmma (sm_90a only; layout_inference.h says which).
  bool wgmma = false;
  // The target is sm_90a: mbarrier transaction counts, TMA and proxy fences may be used.
  bool sm90 = false;
  // Estimated per-thread operations an unrolled loop body may reach
  // (codegen/unroll_budget.h); 0 follows every unroll= hint as written.
  int64_t unroll_budget = 64;
};
// Codegen reads no environment: its callers choose these (runtime/build.h).

struct KernelParam {
  std::string name;
  DataType dtype;
  int workspace = -1;  // >= 0: the runtime passes workspace #i, not a user argument
};

struct GeneratedKernel {
  std::string name;    // the extern "C" __global__ function
  std::string source;  // complete translation unit (includes "tilus/runtime.cuh")
  int threads = 0;
  int64_t dynamic_smem = 0;  // bytes
  std::vector<KernelParam> params;
};

// Throws ScriptError (with the script line) for what the CUDA backend cannot express.
GeneratedKernel generate_cuda(const Program& program, const CodegenOptions& options = {});

}  // namespace tilus
