#include "runtime/device.h"

#include <map>
#include <memory>
#include <mutex>

#include "runtime/cuda_driver.h"

namespace tilus::runtime {
namespace {

DeviceInfo query_device(int ordinal) {
  using namespace tilus::cuda;
  const DriverApi& api = driver();
  CUdevice device = 0;
  TILUS_CU_CHECK(cuDeviceGet(&device, ordinal));
  auto attribute = [&](int which) {
    int value = 0;
    check(api.cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
    return value;
  };
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {0};
  TILUS_CU_CHECK(cuDeviceGetName(name, sizeof(name) - 1, device));
  info.name = name;
  info.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.smem_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.smem_per_block_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.smem_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.l2_cache_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.max_grid_dim[0] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  info.max_grid_dim[1] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  info.max_grid_dim[2] = attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  return info;
}

}  // namespace

const DeviceInfo& device_info(int ordinal) {
  // Leaked on purpose: references handed out must outlive every static destructor.
  static auto* mutex = new std::mutex;
  static auto* cache = new std::map<int, std::unique_ptr<DeviceInfo>>;
  std::lock_guard<std::mutex> lock(*mutex);
  std::unique_ptr<DeviceInfo>& slot = (*cache)[ordinal];
  if (!slot) slot = std::make_unique<DeviceInfo>(query_device(ordinal));
  return *slot;
}

const DeviceInfo& current_device_info() { return device_info(cuda::current_device()); }

std::string arch_string(int cc_major, int cc_minor) {
  std::string arch = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  if ((cc_major == 9 || cc_major == 10) && cc_minor == 0) arch += "a";
  return arch;
}

std::string arch_string() {
  const DeviceInfo& info = current_device_info();
  return arch_string(info.cc_major, info.cc_minor);
}

}  // namespace tilus::runtime
