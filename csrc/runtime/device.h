// Facts about a GPU that codegen, launch checks and tuning keys depend on.
#pragma once
#include <string>

namespace tilus::runtime {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int smem_per_block = 0;        // without opt-in (48 KiB)
  int smem_per_block_optin = 0;  // the most one block may use after opting in
  int smem_per_sm = 0;
  int max_threads_per_block = 0;
  int l2_cache_bytes = 0;
  int max_grid_dim[3] = {0, 0, 0};
};

// Queried once per device and cached for the life of the process. Thread-safe; the
// reference stays valid forever.
const DeviceInfo& device_info(int ordinal);

// The device of the current context (making the primary context of device 0 current
// when the thread has none).
const DeviceInfo& current_device_info();

// The NVRTC -arch value for a compute capability: "sm_90a" for 9.0 and "sm_100a" for
// 10.0 (so wgmma/TMA/tcgen05 are usable), otherwise "sm_<major><minor>".
std::string arch_string(int cc_major, int cc_minor);
std::string arch_string();  // for the current device

}  // namespace tilus::runtime
