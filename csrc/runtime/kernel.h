// A compiled kernel loaded into CUDA, ready to launch.
//
// The cubin is loaded into the current context on construction and, lazily, into any
// other context that is current at a later launch (a CUmodule belongs to one context,
// and tensors on cuda:1 run with cuda:1's primary context current). The launch path is
// the hot path measured against torch: one TLS read of the current context, a lock-free
// scan of the loaded contexts, a few integer checks, cuLaunchKernel.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "runtime/cuda_driver.h"

namespace tilus::runtime {

// A launch the kernel's limits refuse before the driver sees it (grid, threads, shared
// memory, argument bytes); Python's LaunchRefusedError, which the script layer reports at
// the script's `def __call__`.
class LaunchRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LaunchDims {
  int64_t grid[3] = {1, 1, 1};
  int64_t block_threads = 1;  // a 1-D block: tilus kernels index threads linearly
  int64_t dynamic_smem_bytes = 0;
};

class LoadedKernel {
 public:
  // Loads `cubin` into the current context (retaining device 0's primary context if
  // the thread has none) and looks up `function_name` (an extern "C" __global__ name).
  LoadedKernel(std::string cubin, std::string function_name);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  // Launches on `stream` (a CUstream as an integer; 0 is the legacy default stream).
  // `params` holds one pointer per kernel parameter, to its value, as cuLaunchKernel
  // wants. A grid with a zero dimension launches nothing. Limits are checked first and
  // reported with the numbers: grid x <= 2^31-1, y,z <= 65535; threads within the
  // function's maximum; static + dynamic shared memory within the device's opt-in limit.
  void launch(const LaunchDims& dims, uintptr_t stream, void** params);

  // The same with argument values packed in one buffer. Without `sizes`, `blob` holds
  // `count` 8-byte slots, each value at the start of its slot (little-endian, so an
  // int32 is its first 4 bytes). With `sizes`, the values lie back to back with those
  // byte sizes (any size, e.g. a 128-byte CUtensorMap).
  void launch_packed(const LaunchDims& dims, uintptr_t stream, const void* blob,
                     size_t blob_bytes, const uint32_t* sizes, size_t count);

  const std::string& name() const { return name_; }
  int num_regs() const { return num_regs_; }
  int static_smem_bytes() const { return static_smem_; }
  int local_bytes() const { return local_bytes_; }  // per-thread local memory (spills)
  int const_bytes() const { return const_bytes_; }
  int max_threads_per_block() const { return max_threads_; }

 private:
  struct ContextEntry {
    std::atomic<cuda::CUcontext> context{nullptr};
    cuda::CUmodule module = nullptr;
    cuda::CUfunction function = nullptr;
    int device = -1;
    int smem_optin = 0;                     // device's per-block opt-in limit
    std::atomic<int> dynamic_smem_allowed{0};  // current MAX_DYNAMIC_SHARED_SIZE_BYTES
  };
  static constexpr int kMaxContexts = 32;

  ContextEntry& entry_for_current_context();
  ContextEntry& load_into(cuda::CUcontext context);  // slow path, under load_mutex_
  void allow_dynamic_smem(ContextEntry& entry, int bytes);
  [[noreturn]] void fail_launch(const LaunchDims& dims, const std::string& why) const;

  std::string cubin_;
  std::string name_;
  int num_regs_ = 0;
  int static_smem_ = 0;
  int local_bytes_ = 0;
  int const_bytes_ = 0;
  int max_threads_ = 0;

  std::array<ContextEntry, kMaxContexts> entries_;
  std::atomic<int> num_entries_{0};  // entries_[0, n) are complete; published with release
  std::mutex load_mutex_;            // loading into a new context, raising smem limits
};

}  // namespace tilus::runtime
