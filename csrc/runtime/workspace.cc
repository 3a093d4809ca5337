#include "runtime/workspace.h"

#include <map>
#include <mutex>
#include <tuple>

#include "runtime/cuda_driver.h"

namespace tilus::runtime {
namespace {

struct WorkspaceKey {
  std::string name;
  size_t bytes;
  bool clean;
  int device;
  bool operator<(const WorkspaceKey& other) const {
    return std::tie(name, bytes, clean, device) <
           std::tie(other.name, other.bytes, other.clean, other.device);
  }
};

struct WorkspacePool {
  std::mutex mutex;
  std::map<WorkspaceKey, cuda::CUdeviceptr> allocations;
  size_t total_bytes = 0;
};

WorkspacePool& pool() {
  static auto* instance = new WorkspacePool;  // leaked on purpose, see workspace.h
  return *instance;
}

}  // namespace

uintptr_t get_workspace(const std::string& key, size_t bytes, bool clean, uintptr_t stream) {
  if (bytes == 0) return 0;
  int device = cuda::current_device();  // also makes sure a context is current
  WorkspacePool& workspaces = pool();
  std::lock_guard<std::mutex> lock(workspaces.mutex);
  WorkspaceKey pool_key{key, bytes, clean, device};
  if (auto found = workspaces.allocations.find(pool_key); found != workspaces.allocations.end()) {
    return uintptr_t(found->second);
  }
  cuda::CUdeviceptr pointer = 0;
  cuda::CUresult allocated = cuda::driver().cuMemAlloc(&pointer, bytes);
  if (allocated != cuda::CUDA_SUCCESS) {
    throw cuda::CudaError(allocated, "allocating workspace '" + key + "' of " +
                                         std::to_string(bytes) + " bytes on device " +
                                         std::to_string(device) + ": " +
                                         cuda::describe_error(allocated, "cuMemAlloc"));
  }
  if (clean) {
    cuda::CUresult zeroed = cuda::driver().cuMemsetD8Async(
        pointer, 0, bytes, reinterpret_cast<cuda::CUstream>(stream));
    if (zeroed != cuda::CUDA_SUCCESS) {
      cuda::driver().cuMemFree(pointer);
      cuda::check(zeroed, "cuMemsetD8Async(workspace)");
    }
  }
  workspaces.allocations.emplace(std::move(pool_key), pointer);
  workspaces.total_bytes += bytes;
  return uintptr_t(pointer);
}

size_t workspace_bytes() {
  WorkspacePool& workspaces = pool();
  std::lock_guard<std::mutex> lock(workspaces.mutex);
  return workspaces.total_bytes;
}

void release_workspaces() {
  WorkspacePool& workspaces = pool();
  std::lock_guard<std::mutex> lock(workspaces.mutex);
  if (workspaces.allocations.empty()) return;
  cuda::ensure_context();
  TILUS_CU_CHECK(cuCtxSynchronize());
  for (const auto& [key, pointer] : workspaces.allocations) cuda::driver().cuMemFree(pointer);
  workspaces.allocations.clear();
  workspaces.total_bytes = 0;
}

}  // namespace tilus::runtime
