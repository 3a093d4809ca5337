// The csrc/codegen/device/*.cuh helpers that generated kernels include, as (include name
// "tilus/<file>.cuh", text) pairs for NVRTC. Defined in a file cmake/embed_headers.cmake
// writes at build time.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace tilus {
const std::vector<std::pair<std::string, std::string>>& embedded_device_headers();
}  // namespace tilus
