// The one way from a Program to a binary. A single launch (runtime/launcher.py, through
// tilus._C.runtime.build_kernel) and the autotuner's parallel build
// (autotune/parallel_build.cc) both generate with codegen_options_for and compile the
// request kernel_compile_request makes, so they key the compile cache identically: a
// binary the autotuner built is the one a later launch of that program finds.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/codegen.h"
#include "ir/stmt.h"
#include "runtime/compile_cache.h"

namespace tilus::runtime {

// The code generator's options for `arch` ("sm_90a", ...). Choices that come from the
// user's environment (TILUS_WGMMA, TILUS_UNROLL_BUDGET) are read by the caller
// (python/tilus/option.py CodegenChoices, handed to the bindings as keyword arguments and
// read by bindings::codegen_options_from) and passed in: `allow_wgmma` false keeps every dot on
// mma.sync (wgmma needs sm_90a anyway); `unroll_budget` is CodegenOptions::unroll_budget;
// `bounds_check` is CodegenOptions::bounds_check (tilus.option.debug.bounds_check);
// `copy_tma` false keeps copy_async on cp.async (TILUS_COPY_TMA=0); `ptxas_optimize`
// false compiles with ptxas -O0 (tilus.option.debug.disable_ptxas_opt); `omit` ("", "mma" or
// "loads", tilus.option.debug.omit) sets CodegenOptions::omit_mma / omit_loads;
// `hang_check_ns` is CodegenOptions::hang_check_ns (tilus.option.debug.hang_check). The
// compile cache's key is the generated source and the compile options, which differ with
// each of these, so checked and unchecked kernels never share an entry.
CodegenOptions codegen_options_for(const std::string& arch, bool pointers_aligned,
                                   bool allow_wgmma = true, int64_t unroll_budget = 64,
                                   bool bounds_check = false, bool copy_tma = true,
                                   bool ptxas_optimize = true, const std::string& omit = "",
                                   int64_t hang_check_ns = 0);

// What the compile cache is asked for a generated kernel: its source and name, `arch`, the
// kernel's extra NVRTC options, the embedded device headers. Its key is the kernel's cache key.
CompileRequest kernel_compile_request(const GeneratedKernel& kernel, const std::string& arch);

struct KernelBuild {
  GeneratedKernel generated;
  std::string cache_key;  // CompileCache::key_of(kernel_compile_request(...)), once compiled
  std::string cubin;      // once compiled
  double codegen_ms = 0;
  double compile_ms = 0;
};

// Code generation alone (a ScriptError propagates): the autotuner checks the kernel
// against the GPU's limits before it compiles.
KernelBuild generate_kernel(const Program& program, const CodegenOptions& options);

// Compiles build.generated through `cache` (memory, disk, else `via`, else the cache's own
// compiler) and fills cache_key, cubin and compile_ms.
void compile_kernel(KernelBuild& build, const std::string& arch, CompileCache& cache,
                    const CompileCache::Compiler& via = nullptr);

// Both steps, for one program.
KernelBuild build_kernel(const Program& program, const CodegenOptions& options,
                         const std::string& arch, CompileCache& cache);

}  // namespace tilus::runtime
