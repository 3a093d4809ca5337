#include "autotune/scratch_buffer.h"

#include <algorithm>
#include <string>

namespace tilus::autotune {
namespace {
constexpr size_t kAlignmentPeriod = 256;  // cuMemAlloc returns at least this alignment
}

ScratchBuffer::ScratchBuffer(int device, size_t bytes, uintptr_t like_address)
    : device_(device), bytes_(bytes) {
  cuda::ensure_context_for_device(device);
  size_t offset = like_address % kAlignmentPeriod;
  cuda::CUresult allocated = cuda::driver().cuMemAlloc(&base_, std::max<size_t>(bytes + offset, 1));
  if (allocated != cuda::CUDA_SUCCESS) {
    throw cuda::CudaError(allocated, "allocating a " + std::to_string(bytes) +
                                         "-byte tuning scratch buffer on device " +
                                         std::to_string(device) + ": " +
                                         cuda::describe_error(allocated, "cuMemAlloc"));
  }
  address_ = uintptr_t(base_) + offset;
}

ScratchBuffer::~ScratchBuffer() {
  if (!base_) return;
  // cuMemFree waits for work using the memory; errors cannot be reported from here.
  cuda::driver().cuMemFree(base_);
}

void ScratchBuffer::copy_from(uintptr_t source, uintptr_t stream) {
  if (bytes_ == 0) return;
  TILUS_CU_CHECK(cuMemcpyDtoDAsync(cuda::CUdeviceptr(address_), cuda::CUdeviceptr(source),
                                   bytes_, reinterpret_cast<cuda::CUstream>(stream)));
}

void ScratchBuffer::fill(uint8_t value, uintptr_t stream) {
  if (bytes_ == 0) return;
  TILUS_CU_CHECK(cuMemsetD8Async(cuda::CUdeviceptr(address_), value, bytes_,
                                 reinterpret_cast<cuda::CUstream>(stream)));
}

}  // namespace tilus::autotune
