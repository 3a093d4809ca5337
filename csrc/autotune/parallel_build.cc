#include "autotune/parallel_build.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "autotune/compile_workers.h"
#include "support/error.h"
#include "support/thread_pool.h"

namespace tilus::autotune {
namespace {

std::string describe_script_error(const ScriptError& e) {
  const SourceLoc& loc = e.loc();
  if (!loc.known()) return e.what();
  std::string where = loc.str();
  if (!loc.text.empty()) where += " (" + loc.text + ")";
  return std::string(e.what()) + " at " + where;
}

// Why `kernel` cannot run on the GPU described by `options`, or "" when it can.
std::string misfit(const GeneratedKernel& kernel, const BuildOptions& options) {
  if (options.max_threads > 0 && kernel.threads > options.max_threads) {
    return "needs " + std::to_string(kernel.threads) + " threads per block; this GPU allows " +
           std::to_string(options.max_threads);
  }
  if (options.smem_limit > 0 && kernel.dynamic_smem > options.smem_limit) {
    return "needs " + std::to_string(kernel.dynamic_smem) +
           " bytes of shared memory per block; this GPU allows " +
           std::to_string(options.smem_limit);
  }
  return "";
}

BuildResult build_one(const Program& program, const BuildOptions& options,
                      runtime::CompileCache& cache) {
  BuildResult result;
  runtime::KernelBuild build;
  try {
    build = runtime::generate_kernel(program, options.codegen);
  } catch (const ScriptError& e) {
    result.status = BuildStatus::CodegenError;
    result.error = describe_script_error(e);
    result.script_kind = e.kind();
    result.script_message = e.what();
    result.script_loc = e.loc();
    return result;
  } catch (const std::exception& e) {
    result.status = BuildStatus::CodegenError;
    result.error = e.what();
    return result;
  }
  result.generated = build.generated;
  result.codegen_ms = build.codegen_ms;
  if (std::string why = misfit(result.generated, options); !why.empty()) {
    result.status = BuildStatus::DoesNotFit;
    result.error = std::move(why);
    return result;
  }
  try {
    runtime::CompileCache::Compiler via;
    if (cache.uses_default_compiler()) {
      via = [](const runtime::CompileRequest& r) { return CompileWorkers::instance().compile(r); };
    }
    runtime::compile_kernel(build, options.arch, cache, via);
    result.cubin = std::move(build.cubin);
    result.cache_key = std::move(build.cache_key);
    result.compile_ms = build.compile_ms;
  } catch (const std::exception& e) {
    result.status = BuildStatus::CompileError;
    result.error = e.what();
  }
  return result;
}

}  // namespace

const char* build_status_name(BuildStatus status) {
  switch (status) {
    case BuildStatus::Ok: return "ok";
    case BuildStatus::DoesNotFit: return "unfit";
    case BuildStatus::CodegenError: return "codegen";
    case BuildStatus::CompileError: return "compile";
  }
  return "?";
}

std::vector<BuildResult> build_all(const std::vector<std::shared_ptr<Program>>& programs,
                                   const BuildOptions& options, runtime::CompileCache& cache,
                                   const std::function<void(size_t)>& on_progress) {
  std::vector<BuildResult> results(programs.size());
  if (programs.empty()) {
    if (on_progress) on_progress(0);
    return results;
  }
  for (const auto& program : programs) TILUS_ASSERT(program != nullptr, "build_all: null program");

  std::mutex mutex;
  std::condition_variable finished_one;
  size_t finished = 0;
  // Set when the progress callback throws (Ctrl-C in Python): queued builds are then
  // skipped, so leaving only waits for the compilations already running.
  std::atomic<bool> cancelled{false};
  {
    // No more workers than programs; <= 0 lets the pool use every hardware thread.
    int threads = options.threads;
    if (threads > 0 && size_t(threads) > programs.size()) threads = int(programs.size());
    ThreadPool pool(threads);
    for (size_t i = 0; i < programs.size(); ++i) {
      pool.submit([&, i] {
        BuildResult built;
        if (cancelled) {
          built.status = BuildStatus::CompileError;
          built.error = "cancelled";
        } else {
          built = build_one(*programs[i], options, cache);
        }
        std::lock_guard<std::mutex> lock(mutex);
        results[i] = std::move(built);
        ++finished;
        finished_one.notify_one();
      });
    }
    // Report progress from this thread, so the callback may call into Python.
    size_t reported = 0;
    while (reported < programs.size()) {
      size_t now;
      {
        std::unique_lock<std::mutex> lock(mutex);
        finished_one.wait(lock, [&] { return finished > reported; });
        now = finished;
      }
      reported = now;
      if (!on_progress) continue;
      try {
        on_progress(reported);
      } catch (...) {
        cancelled = true;
        throw;  // the pool joins its workers as this leaves the block
      }
    }
  }  // joins the workers
  return results;
}

}  // namespace tilus::autotune
