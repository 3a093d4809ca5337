#include "runtime/build.h"

#include <chrono>

#include "codegen/device_headers.h"

namespace tilus::runtime {
namespace {

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

CodegenOptions codegen_options_for(const std::string& arch, bool pointers_aligned,
                                   bool allow_wgmma, int64_t unroll_budget, bool bounds_check,
                                   bool copy_tma, bool ptxas_optimize, const std::string& omit,
                                   int64_t hang_check_ns) {
  TILUS_CHECK(omit.empty() || omit == "mma" || omit == "loads", "ValueError",
              "omit must be '', 'mma' or 'loads' (tilus.option.debug.omit), got '", omit, "'");
  CodegenOptions options;
  options.pointers_aligned = pointers_aligned;
  options.wgmma = allow_wgmma && arch == "sm_90a";
  options.sm90 = arch == "sm_90a";
  options.unroll_budget = unroll_budget;
  options.bounds_check = bounds_check;
  options.copy_tma = copy_tma;
  options.ptxas_optimize = ptxas_optimize;
  options.omit_mma = omit == "mma";
  options.omit_loads = omit == "loads";
  TILUS_CHECK(hang_check_ns >= 0, "ValueError", "hang_check_ns must be >= 0, got ", hang_check_ns);
  options.hang_check_ns = hang_check_ns;
  return options;
}

CompileRequest kernel_compile_request(const GeneratedKernel& kernel, const std::string& arch) {
  return {kernel.source, kernel.name, arch, kernel.nvrtc_options, embedded_device_headers()};
}

KernelBuild generate_kernel(const Program& program, const CodegenOptions& options) {
  KernelBuild build;
  auto start = std::chrono::steady_clock::now();
  build.generated = generate_cuda(program, options);
  build.codegen_ms = milliseconds_since(start);
  return build;
}

void compile_kernel(KernelBuild& build, const std::string& arch, CompileCache& cache,
                    const CompileCache::Compiler& via) {
  auto start = std::chrono::steady_clock::now();
  CompileRequest request = kernel_compile_request(build.generated, arch);
  build.cache_key = cache.key_of(request);
  build.cubin = via ? cache.get_or_compile(request, via) : cache.get_or_compile(request);
  build.compile_ms = milliseconds_since(start);
}

KernelBuild build_kernel(const Program& program, const CodegenOptions& options,
                         const std::string& arch, CompileCache& cache) {
  KernelBuild build = generate_kernel(program, options);
  compile_kernel(build, arch, cache);
  return build;
}

}  // namespace tilus::runtime
