// The CUDA driver API, loaded with dlopen("libcuda.so.1") on first GPU use.
//
// Nothing here includes cuda.h: the handful of types and prototypes we call are declared
// below (values from the CUDA 13 cuda.h), so tilus builds without a CUDA toolkit and
// `import tilus` works on machines with no driver. The _v2 entry points are the ones the
// cuda.h macros select; their ABI is what these typedefs describe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tilus::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;

// CUdevice_attribute
enum DeviceAttribute : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

// CUfunction_attribute
enum FunctionAttribute : int {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

// CUpointer_attribute
enum PointerAttribute : int {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
};

// CUevent_flags
enum EventFlags : unsigned {
  CU_EVENT_DEFAULT = 0x0,
  CU_EVENT_BLOCKING_SYNC = 0x1,
  CU_EVENT_DISABLE_TIMING = 0x2,
};

struct DriverApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
  CUresult (*cuCtxGetCurrent)(CUcontext* context);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuCtxGetDevice)(CUdevice* device);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name);
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value);
  CUresult (*cuFuncGetAttribute)(int* value, int attribute, CUfunction function);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y,
                             unsigned grid_z, unsigned block_x, unsigned block_y,
                             unsigned block_z, unsigned shared_bytes, CUstream stream,
                             void** kernel_params, void** extra);
  CUresult (*cuMemAlloc)(CUdeviceptr* pointer, size_t bytes);            // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr pointer);                            // cuMemFree_v2
  CUresult (*cuMemsetD8)(CUdeviceptr pointer, unsigned char value, size_t count);  // _v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr pointer, unsigned char value, size_t count,
                              CUstream stream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream);                        // _v2
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes);   // _v2
  CUresult (*cuPointerGetAttribute)(void* data, int attribute, CUdeviceptr pointer);
  CUresult (*cuMemGetAddressRange)(CUdeviceptr* base, size_t* size, CUdeviceptr pointer);  // _v2
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float* milliseconds, CUevent start, CUevent end);  // _v2
  CUresult (*cuEventDestroy)(CUevent event);                                        // _v2
  // TMA tensor maps (CUDA 12.0+); null with an older driver (runtime/tma_maps.cc says so).
  // The enum parameters are passed as ints (CUtensorMapDataType, CUtensorMapInterleave,
  // CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill).
  CUresult (*cuTensorMapEncodeTiled)(void* tensor_map, int data_type, uint32_t rank, void* global_address,
                                     const uint64_t* global_dim, const uint64_t* global_strides,
                                     const uint32_t* box_dim, const uint32_t* element_strides, int interleave,
                                     int swizzle, int l2_promotion, int oob_fill);
};

// A failed driver call; `result` is the CUresult.
class CudaError : public std::runtime_error {
 public:
  CudaError(CUresult result, const std::string& message)
      : std::runtime_error(message), result_(result) {}
  CUresult result() const { return result_; }

 private:
  CUresult result_;
};

// Loads libcuda.so.1 and calls cuInit(0) on the first call; throws CudaError with
// "no CUDA driver: could not load libcuda.so.1 (...)" when that is impossible. A failed
// load is retried on the next call. Thread-safe; cheap after the first success.
const DriverApi& driver();

// True when the driver loads and reports at least one device. Never throws.
bool cuda_available();

// "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
std::string describe_error(CUresult result, const char* call);

inline void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) throw CudaError(result, describe_error(result, call));
}

// Makes sure a context is current on this thread and returns it: the current one if
// there is any (torch makes the primary context current), otherwise the primary context
// of device 0, retained once for the life of the process.
CUcontext ensure_context();

// Makes the primary context of `ordinal` current unless the current context already
// belongs to that device; returns the now-current context.
CUcontext ensure_context_for_device(int ordinal);

// The device ordinal of the current context (after ensure_context()).
int current_device();

// Number of visible devices (0 without a driver or GPU). Never throws.
int device_count();

// For the life of the scope, the current context belongs to device `ordinal`: the
// current one when it already does (two TLS reads, the common case), otherwise that
// device's primary context, and the previous context is made current again on exit.
// Launching on a tensor's device this way leaves the caller's current device (torch's
// too: the runtime reads the current context) as it was.
class DeviceScope {
 public:
  explicit DeviceScope(int ordinal);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  bool switched() const { return switched_; }

 private:
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

// The device ordinal that owns a device pointer.
int pointer_device(CUdeviceptr pointer);
// The bytes from a device pointer to the end of the allocation holding it (cuMemAlloc's,
// or the caching allocator's block: valid memory, maybe more than one tensor's).
int64_t bytes_to_allocation_end(CUdeviceptr pointer);

int driver_version();  // e.g. 13000 for CUDA 13.0

}  // namespace tilus::cuda

// Calls a DriverApi member and throws CudaError naming it on failure:
//   TILUS_CU_CHECK(cuModuleLoadData(&module, image));
#define TILUS_CU_CHECK(call_expr) \
  ::tilus::cuda::check(::tilus::cuda::driver().call_expr, #call_expr)
