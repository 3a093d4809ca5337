// Compile worker processes for parallel builds. NVRTC compiles of one process contend
// with each other (on a 16-core H200 host: 280 ms median per MatmulV5 config with 16
// threads against 213 ms with 16 processes; benchmarks/nvrtc_scaling.py), so build_all's
// threads hand their compiles to worker processes (csrc/tools/compile_worker.cc), one
// per thread, started with posix_spawn on first use and kept for later builds. When the
// worker executable is unknown or a worker cannot be started or dies, the compile runs
// in the calling thread instead: same result, only slower.
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"

namespace tilus::autotune {

class CompileWorkers {
 public:
  static CompileWorkers& instance();  // process-wide, never destroyed

  // The worker executable ("" turns workers off). The Python side sets it at import.
  void set_executable(std::string path);
  std::string executable() const;

  // Compiles `request` in a worker process, or in this thread when no worker is usable.
  // Throws nvrtc::CompileError / std::runtime_error as nvrtc::compile_to_cubin does.
  std::string compile(const runtime::CompileRequest& request);

  int workers_started() const;  // processes spawned so far (for tests)

 private:
  struct Worker {
    int pid = -1;
    int socket = -1;
  };
  bool spawn(Worker& worker);  // requires nothing locked
  static void retire(Worker& worker);

  mutable std::mutex mutex_;
  std::string executable_;
  std::vector<Worker> idle_;
  int owner_ = 0;  // the pid whose workers idle_ holds (a forked child starts its own)
  int started_ = 0;
};

}  // namespace tilus::autotune
