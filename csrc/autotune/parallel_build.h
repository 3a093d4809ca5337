// Building many programs at once: CUDA code generation and NVRTC compilation of every
// configuration of an autotuned script, on a thread pool, without Python.
//
// Each program is generated, checked against the GPU's limits, and compiled through the
// compile cache by the build entry a single launch uses too (runtime/build.h), so
// binaries land in memory and on disk exactly where a later launch of the same program
// looks for them. A program that does not fit
// the GPU is rejected before compiling; errors are returned per program, never thrown.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "ir/stmt.h"
#include "runtime/build.h"
#include "runtime/compile_cache.h"

namespace tilus::autotune {

struct BuildOptions {
  CodegenOptions codegen;        // runtime::codegen_options_for(arch, ...)
  std::string arch;              // NVRTC arch, "sm_90a"
  int threads = 0;               // worker threads; <= 0: one per hardware thread
  int64_t smem_limit = 0;        // dynamic shared memory one block may use; 0: unchecked
  int max_threads = 1024;        // threads one block may have; 0: unchecked
};

enum class BuildStatus {
  Ok,            // `cubin` holds the binary
  DoesNotFit,    // needs more shared memory or threads than the GPU has; not compiled
  CodegenError,  // the CUDA backend cannot express the program (a ScriptError)
  CompileError,  // NVRTC rejected the generated source, or could not be loaded
};
const char* build_status_name(BuildStatus status);  // "ok", "unfit", "codegen", "compile"

struct BuildResult {
  BuildStatus status = BuildStatus::Ok;
  std::string cubin;          // when Ok
  std::string cache_key;      // when Ok: the compile cache's key (runtime/build.h)
  std::string error;          // otherwise: why, in one message
  // When codegen raised a ScriptError: its kind, bare message and location, so that an
  // error every configuration hits alike can be reported once as that script error.
  std::string script_kind, script_message;
  SourceLoc script_loc;
  GeneratedKernel generated;  // filled unless codegen failed
  double codegen_ms = 0;      // wall time of generate_cuda
  double compile_ms = 0;      // wall time of the compile cache lookup / NVRTC
};

// Builds every program; results are in the order of `programs`. `on_progress(done)` is
// called on the calling thread (never on a worker) each time more programs finished,
// with the number finished so far, last with programs.size().
std::vector<BuildResult> build_all(const std::vector<std::shared_ptr<Program>>& programs,
                                   const BuildOptions& options, runtime::CompileCache& cache,
                                   const std::function<void(size_t)>& on_progress = nullptr);

}  // namespace tilus::autotune
