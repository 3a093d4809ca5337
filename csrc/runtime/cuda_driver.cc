#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace tilus::cuda {
namespace {

// Resolves `name` (or the first of several names that exists) into `slot`.
template <typename Fn>
bool resolve(void* library, Fn*& slot, std::initializer_list<const char*> names,
             std::string* missing) {
  for (const char* name : names) {
    if (void* symbol = dlsym(library, name)) {
      slot = reinterpret_cast<Fn*>(symbol);
      return true;
    }
  }
  if (!missing->empty()) *missing += ", ";
  *missing += *names.begin();
  return false;
}

DriverApi* load_driver() {
  // RTLD_NOLOAD first: reuse the copy torch (or anyone) already mapped.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!library) library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* reason = dlerror();
    throw CudaError(CUDA_ERROR_NOT_INITIALIZED,
                    std::string("no CUDA driver: could not load libcuda.so.1 (") +
                        (reason ? reason : "unknown reason") + ")");
  }
  // The library stays loaded for the life of the process: kernels and workspaces may
  // still call into it from destructors at exit.
  auto api = std::make_unique<DriverApi>();
  std::string missing;
  resolve(library, api->cuInit, {"cuInit"}, &missing);
  resolve(library, api->cuDriverGetVersion, {"cuDriverGetVersion"}, &missing);
  resolve(library, api->cuGetErrorName, {"cuGetErrorName"}, &missing);
  resolve(library, api->cuGetErrorString, {"cuGetErrorString"}, &missing);
  resolve(library, api->cuDeviceGet, {"cuDeviceGet"}, &missing);
  resolve(library, api->cuDeviceGetCount, {"cuDeviceGetCount"}, &missing);
  resolve(library, api->cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, &missing);
  resolve(library, api->cuDeviceGetName, {"cuDeviceGetName"}, &missing);
  resolve(library, api->cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, &missing);
  resolve(library, api->cuCtxGetCurrent, {"cuCtxGetCurrent"}, &missing);
  resolve(library, api->cuCtxSetCurrent, {"cuCtxSetCurrent"}, &missing);
  resolve(library, api->cuCtxGetDevice, {"cuCtxGetDevice"}, &missing);
  resolve(library, api->cuCtxSynchronize, {"cuCtxSynchronize"}, &missing);
  resolve(library, api->cuModuleLoadData, {"cuModuleLoadData"}, &missing);
  resolve(library, api->cuModuleUnload, {"cuModuleUnload"}, &missing);
  resolve(library, api->cuModuleGetFunction, {"cuModuleGetFunction"}, &missing);
  resolve(library, api->cuFuncSetAttribute, {"cuFuncSetAttribute"}, &missing);
  resolve(library, api->cuFuncGetAttribute, {"cuFuncGetAttribute"}, &missing);
  resolve(library, api->cuLaunchKernel, {"cuLaunchKernel"}, &missing);
  resolve(library, api->cuMemAlloc, {"cuMemAlloc_v2"}, &missing);
  resolve(library, api->cuMemFree, {"cuMemFree_v2"}, &missing);
  resolve(library, api->cuMemsetD8, {"cuMemsetD8_v2"}, &missing);
  resolve(library, api->cuMemsetD8Async, {"cuMemsetD8Async"}, &missing);
  resolve(library, api->cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, &missing);
  resolve(library, api->cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, &missing);
  resolve(library, api->cuPointerGetAttribute, {"cuPointerGetAttribute"}, &missing);
  resolve(library, api->cuMemGetAddressRange, {"cuMemGetAddressRange_v2"}, &missing);
  resolve(library, api->cuStreamSynchronize, {"cuStreamSynchronize"}, &missing);
  resolve(library, api->cuEventCreate, {"cuEventCreate"}, &missing);
  resolve(library, api->cuEventRecord, {"cuEventRecord"}, &missing);
  resolve(library, api->cuEventSynchronize, {"cuEventSynchronize"}, &missing);
  // _v2 appeared in CUDA 12.8; older drivers only have the original, same signature.
  resolve(library, api->cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"},
          &missing);
  resolve(library, api->cuEventDestroy, {"cuEventDestroy_v2"}, &missing);
  std::string optional;  // entry points only some kernels need: null when absent
  resolve(library, api->cuTensorMapEncodeTiled, {"cuTensorMapEncodeTiled"}, &optional);
  if (!missing.empty()) {
    throw CudaError(CUDA_ERROR_NOT_INITIALIZED,
                    "the CUDA driver (libcuda.so.1) is too old: it lacks " + missing);
  }
  CUresult result = api->cuInit(0);
  if (result != CUDA_SUCCESS) {
    const char* name = nullptr;
    if (api->cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
    throw CudaError(result, std::string("cuInit(0) failed: ") +
                                (name ? name : "CUresult " + std::to_string(result)));
  }
  return api.release();
}

std::atomic<const DriverApi*> g_driver{nullptr};
std::mutex g_driver_mutex;  // serialises the first load; a failed load may be retried

// Primary contexts we retained ourselves, one per device ordinal; never released.
std::mutex g_primary_mutex;
std::vector<CUcontext> g_primary_contexts;

CUcontext primary_context(int ordinal) {
  std::lock_guard<std::mutex> lock(g_primary_mutex);
  if (ordinal < 0) throw CudaError(CUDA_ERROR_NO_DEVICE, "negative CUDA device ordinal");
  if (size_t(ordinal) >= g_primary_contexts.size()) g_primary_contexts.resize(ordinal + 1);
  if (!g_primary_contexts[ordinal]) {
    int count = 0;
    TILUS_CU_CHECK(cuDeviceGetCount(&count));
    if (ordinal >= count) {
      throw CudaError(CUDA_ERROR_NO_DEVICE, "CUDA device " + std::to_string(ordinal) +
                                                " does not exist (" + std::to_string(count) +
                                                " device(s) visible)");
    }
    CUdevice device = 0;
    TILUS_CU_CHECK(cuDeviceGet(&device, ordinal));
    CUcontext context = nullptr;
    TILUS_CU_CHECK(cuDevicePrimaryCtxRetain(&context, device));
    g_primary_contexts[ordinal] = context;
  }
  return g_primary_contexts[ordinal];
}

}  // namespace

const DriverApi& driver() {
  if (const DriverApi* api = g_driver.load(std::memory_order_acquire)) return *api;
  std::lock_guard<std::mutex> lock(g_driver_mutex);
  if (!g_driver.load(std::memory_order_relaxed)) {
    g_driver.store(load_driver(), std::memory_order_release);
  }
  return *g_driver.load(std::memory_order_relaxed);
}

bool cuda_available() {
  try {
    int count = 0;
    return driver().cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0;
  } catch (const std::exception&) {
    return false;
  }
}

std::string describe_error(CUresult result, const char* call) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (const DriverApi* api = g_driver.load(std::memory_order_acquire)) {
    if (api->cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
    if (api->cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  }
  std::string message = std::string(call) + " failed: ";
  message += name ? name : "CUresult " + std::to_string(result);
  if (text) message += std::string(" (") + text + ")";
  return message;
}

CUcontext ensure_context() {
  CUcontext context = nullptr;
  TILUS_CU_CHECK(cuCtxGetCurrent(&context));
  if (context) return context;
  context = primary_context(0);
  TILUS_CU_CHECK(cuCtxSetCurrent(context));
  return context;
}

CUcontext ensure_context_for_device(int ordinal) {
  CUcontext context = nullptr;
  TILUS_CU_CHECK(cuCtxGetCurrent(&context));
  if (context) {
    CUdevice device = -1;
    TILUS_CU_CHECK(cuCtxGetDevice(&device));
    if (device == ordinal) return context;
  }
  context = primary_context(ordinal);
  TILUS_CU_CHECK(cuCtxSetCurrent(context));
  return context;
}

int current_device() {
  ensure_context();
  CUdevice device = 0;
  TILUS_CU_CHECK(cuCtxGetDevice(&device));
  return device;
}

int device_count() {
  try {
    int count = 0;
    return driver().cuDeviceGetCount(&count) == CUDA_SUCCESS ? count : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

DeviceScope::DeviceScope(int ordinal) {
  TILUS_CU_CHECK(cuCtxGetCurrent(&previous_));
  if (previous_) {
    CUdevice device = -1;
    TILUS_CU_CHECK(cuCtxGetDevice(&device));
    if (device == ordinal) return;
  }
  TILUS_CU_CHECK(cuCtxSetCurrent(primary_context(ordinal)));
  switched_ = true;
}

DeviceScope::~DeviceScope() {
  // A thread that had no context keeps the new one (as ensure_context would leave it).
  if (switched_ && previous_) driver().cuCtxSetCurrent(previous_);
}

int pointer_device(CUdeviceptr pointer) {
  int ordinal = -1;
  TILUS_CU_CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer));
  return ordinal;
}

int64_t bytes_to_allocation_end(CUdeviceptr pointer) {
  DeviceScope scope(pointer_device(pointer));  // the query answers in the owner's context
  CUdeviceptr base = 0;
  size_t size = 0;
  TILUS_CU_CHECK(cuMemGetAddressRange(&base, &size, pointer));
  return static_cast<int64_t>(base + size - pointer);
}

int driver_version() {
  int version = 0;
  TILUS_CU_CHECK(cuDriverGetVersion(&version));
  return version;
}

}  // namespace tilus::cuda
