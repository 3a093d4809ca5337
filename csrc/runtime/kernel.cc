#include "runtime/kernel.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "ir/launch_limits.h"
#include "runtime/device.h"

namespace tilus::runtime {
namespace {

// Room for the common case without touching the heap: 64 arguments, 1 KiB of values.
constexpr size_t kInlineArgs = 64;
constexpr size_t kInlineBytes = 1024;

int function_attribute(cuda::CUfunction function, int which, const char* what) {
  int value = 0;
  cuda::check(cuda::driver().cuFuncGetAttribute(&value, which, function), what);
  return value;
}

size_t align_up(size_t offset, size_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

// Natural alignment for a value of `size` bytes; 64 caps it (CUtensorMap wants 64).
size_t alignment_for(size_t size) {
  size_t alignment = 1;
  while (alignment < size && alignment < 64) alignment *= 2;
  return alignment;
}

std::string dims_text(const LaunchDims& dims) {
  return "grid=(" + std::to_string(dims.grid[0]) + ", " + std::to_string(dims.grid[1]) + ", " +
         std::to_string(dims.grid[2]) + "), threads=" + std::to_string(dims.block_threads) +
         ", dynamic smem=" + std::to_string(dims.dynamic_smem_bytes) + " bytes";
}

}  // namespace

LoadedKernel::LoadedKernel(std::string cubin, std::string function_name)
    : cubin_(std::move(cubin)), name_(std::move(function_name)) {
  ContextEntry& entry = load_into(cuda::ensure_context());
  num_regs_ = function_attribute(entry.function, cuda::CU_FUNC_ATTRIBUTE_NUM_REGS, "num regs");
  static_smem_ = function_attribute(entry.function, cuda::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                    "static smem");
  local_bytes_ = function_attribute(entry.function, cuda::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                    "local bytes");
  const_bytes_ = function_attribute(entry.function, cuda::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
                                    "const bytes");
  max_threads_ = function_attribute(
      entry.function, cuda::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads");
  // The default dynamic limit is what is left of the non-opt-in 48 KiB after static smem.
  const DeviceInfo& device = device_info(entry.device);
  entry.dynamic_smem_allowed.store(std::max(0, device.smem_per_block - static_smem_));
}

LoadedKernel::~LoadedKernel() {
  // Errors are ignored: at interpreter exit the driver may already be shutting down.
  const cuda::DriverApi& api = cuda::driver();
  cuda::CUcontext previous = nullptr;
  if (api.cuCtxGetCurrent(&previous) != cuda::CUDA_SUCCESS) return;
  int count = num_entries_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    cuda::CUcontext context = entries_[i].context.load(std::memory_order_relaxed);
    if (context != previous && api.cuCtxSetCurrent(context) != cuda::CUDA_SUCCESS) continue;
    api.cuModuleUnload(entries_[i].module);
  }
  api.cuCtxSetCurrent(previous);
}

LoadedKernel::ContextEntry& LoadedKernel::load_into(cuda::CUcontext context) {
  std::lock_guard<std::mutex> lock(load_mutex_);
  int count = num_entries_.load(std::memory_order_relaxed);
  for (int i = 0; i < count; ++i) {
    if (entries_[i].context.load(std::memory_order_relaxed) == context) return entries_[i];
  }
  if (count == kMaxContexts) {
    throw std::runtime_error("kernel '" + name_ + "' was launched from more than " +
                             std::to_string(kMaxContexts) + " CUDA contexts");
  }
  ContextEntry& entry = entries_[count];
  const cuda::DriverApi& api = cuda::driver();
  cuda::CUdevice device = 0;
  TILUS_CU_CHECK(cuCtxGetDevice(&device));
  const DeviceInfo& info = device_info(device);
  cuda::CUresult loaded = api.cuModuleLoadData(&entry.module, cubin_.data());
  if (loaded != cuda::CUDA_SUCCESS) {
    entry.module = nullptr;
    throw cuda::CudaError(
        loaded, "loading kernel '" + name_ + "' on device " + std::to_string(device) + " (" +
                    info.name + ", " + arch_string(info.cc_major, info.cc_minor) + "): " +
                    cuda::describe_error(loaded, "cuModuleLoadData") +
                    (loaded == cuda::CUDA_ERROR_NO_BINARY_FOR_GPU ? " -- the cubin was compiled for another architecture" : ""));
  }
  cuda::CUresult found = api.cuModuleGetFunction(&entry.function, entry.module, name_.c_str());
  if (found != cuda::CUDA_SUCCESS) {
    api.cuModuleUnload(entry.module);
    entry.module = nullptr;
    throw cuda::CudaError(found, "kernel function '" + name_ + "' not found in its cubin: " +
                                     cuda::describe_error(found, "cuModuleGetFunction"));
  }
  entry.device = device;
  entry.smem_optin = info.smem_per_block_optin;
  if (count > 0) {  // the constructor fills the first entry's limit itself
    entry.dynamic_smem_allowed.store(std::max(0, info.smem_per_block - static_smem_));
  }
  entry.context.store(context, std::memory_order_relaxed);
  num_entries_.store(count + 1, std::memory_order_release);
  return entry;
}

LoadedKernel::ContextEntry& LoadedKernel::entry_for_current_context() {
  cuda::CUcontext context = nullptr;
  cuda::check(cuda::driver().cuCtxGetCurrent(&context), "cuCtxGetCurrent");
  if (!context) context = cuda::ensure_context();
  int count = num_entries_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    if (entries_[i].context.load(std::memory_order_relaxed) == context) return entries_[i];
  }
  return load_into(context);
}

void LoadedKernel::allow_dynamic_smem(ContextEntry& entry, int bytes) {
  std::lock_guard<std::mutex> lock(load_mutex_);
  if (entry.dynamic_smem_allowed.load(std::memory_order_relaxed) >= bytes) return;
  cuda::check(cuda::driver().cuFuncSetAttribute(
                  entry.function, cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  entry.dynamic_smem_allowed.store(bytes, std::memory_order_release);
}

void LoadedKernel::fail_launch(const LaunchDims& dims, const std::string& why) const {
  throw LaunchRefused("cannot launch kernel '" + name_ + "' (" + dims_text(dims) +
                           "): " + why);
}

void LoadedKernel::launch(const LaunchDims& dims, uintptr_t stream, void** params) {
  const int64_t* grid = dims.grid;
  if (grid[0] < 0 || grid[1] < 0 || grid[2] < 0) fail_launch(dims, "negative grid dimension");
  if (grid[0] > kMaxGridX || grid[1] > kMaxGridYZ || grid[2] > kMaxGridYZ) {
    fail_launch(dims, "the grid exceeds the limits (2147483647, 65535, 65535)");
  }
  if (dims.block_threads <= 0 || dims.block_threads > max_threads_) {
    fail_launch(dims, "threads per block must be in [1, " + std::to_string(max_threads_) +
                          "] for this kernel (it uses " + std::to_string(num_regs_) +
                          " registers per thread)");
  }
  if (dims.dynamic_smem_bytes < 0) fail_launch(dims, "negative dynamic shared memory");
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return;

  ContextEntry& entry = entry_for_current_context();
  int64_t total_smem = static_smem_ + dims.dynamic_smem_bytes;
  if (total_smem > entry.smem_optin) {
    fail_launch(dims, "it needs " + std::to_string(total_smem) +
                          " bytes of shared memory per block (static " +
                          std::to_string(static_smem_) + " + dynamic " +
                          std::to_string(dims.dynamic_smem_bytes) + ") but device " +
                          std::to_string(entry.device) + " allows at most " +
                          std::to_string(entry.smem_optin));
  }
  int dynamic = int(dims.dynamic_smem_bytes);
  if (dynamic > entry.dynamic_smem_allowed.load(std::memory_order_acquire)) {
    allow_dynamic_smem(entry, dynamic);
  }
  cuda::CUresult launched = cuda::driver().cuLaunchKernel(
      entry.function, unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]),
      unsigned(dims.block_threads), 1, 1, unsigned(dynamic),
      reinterpret_cast<cuda::CUstream>(stream), params, nullptr);
  if (launched != cuda::CUDA_SUCCESS) {
    throw cuda::CudaError(launched, "launching kernel '" + name_ + "' (" + dims_text(dims) +
                                        "): " + cuda::describe_error(launched, "cuLaunchKernel"));
  }
}

void LoadedKernel::launch_packed(const LaunchDims& dims, uintptr_t stream, const void* blob,
                                 size_t blob_bytes, const uint32_t* sizes, size_t count) {
  const auto* source = static_cast<const unsigned char*>(blob);
  // Where each value will sit in the aligned copy, and how many bytes that takes.
  size_t needed = 0;
  if (sizes) {
    size_t total = 0;
    for (size_t i = 0; i < count; ++i) {
      needed = align_up(needed, alignment_for(sizes[i])) + sizes[i];
      total += sizes[i];
    }
    if (total != blob_bytes) {
      fail_launch(dims, "argument sizes add up to " + std::to_string(total) +
                            " bytes but the packed arguments hold " +
                            std::to_string(blob_bytes));
    }
  } else {
    if (blob_bytes != 8 * count) {
      fail_launch(dims, "packed arguments must be 8 bytes per argument (" +
                            std::to_string(count) + " arguments, " +
                            std::to_string(blob_bytes) + " bytes)");
    }
    needed = blob_bytes;
  }

  alignas(64) unsigned char inline_values[kInlineBytes];
  void* inline_pointers[kInlineArgs];
  std::unique_ptr<unsigned char[]> heap_values;
  std::unique_ptr<void*[]> heap_pointers;
  unsigned char* values = inline_values;
  void** pointers = inline_pointers;
  if (needed > kInlineBytes || count > kInlineArgs) {
    // Over-allocate so the start can be aligned to 64 by hand.
    heap_values.reset(new unsigned char[needed + 64]);
    values = reinterpret_cast<unsigned char*>(
        align_up(reinterpret_cast<uintptr_t>(heap_values.get()), 64));
    heap_pointers.reset(new void*[count]);
    pointers = heap_pointers.get();
  }
  if (!sizes && blob_bytes > 0) std::memcpy(values, source, blob_bytes);
  if (sizes) {
    size_t offset = 0, read = 0;
    for (size_t i = 0; i < count; ++i) {
      offset = align_up(offset, alignment_for(sizes[i]));
      std::memcpy(values + offset, source + read, sizes[i]);
      pointers[i] = values + offset;
      offset += sizes[i];
      read += sizes[i];
    }
  } else {
    for (size_t i = 0; i < count; ++i) pointers[i] = values + 8 * i;
  }
  launch(dims, stream, pointers);
}

}  // namespace tilus::runtime
