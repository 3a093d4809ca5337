// Device memory the autotuner owns while it tunes: the scratch copies of arguments a
// candidate kernel writes (so the user's buffers are not touched), and the buffer it
// overwrites between timed runs to flush the L2 cache.
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/cuda_driver.h"

namespace tilus::autotune {

class ScratchBuffer {
 public:
  // `bytes` of device memory on `device`. The address is congruent to `like_address`
  // modulo 256, so a copy of an argument is exactly as aligned as the argument: kernels
  // pick their vector-width variant from the addresses, and tuning must time the variant
  // the real call will use.
  ScratchBuffer(int device, size_t bytes, uintptr_t like_address = 0);
  ~ScratchBuffer();
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  uintptr_t address() const { return address_; }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }

  // Enqueue a copy of bytes() from device address `source` on `stream`.
  void copy_from(uintptr_t source, uintptr_t stream);
  // Enqueue setting every byte to `value` on `stream`.
  void fill(uint8_t value, uintptr_t stream);

 private:
  int device_;
  size_t bytes_;
  cuda::CUdeviceptr base_ = 0;
  uintptr_t address_ = 0;
};

}  // namespace tilus::autotune
