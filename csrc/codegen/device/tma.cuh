// TMA (sm_90a): bulk tensor copies between global and shared memory, described by a
// tensor map (CUtensorMap) the host encodes with cuTensorMapEncodeTiled and passes as a
// `const __grid_constant__` kernel parameter (csrc/runtime/tma_maps.h). PTX ISA
// "Tensor copy" (cp.async.bulk.tensor) and "Tensor-map" (prefetch.tensormap).
//
// Coordinates are element indices, innermost dimension first, signed: a box reaching
// outside the tensor (negative or past the end) is zero-filled on loads and clipped on
// stores by the hardware. A load completes its bytes (the whole box, zeros included) on
// an mbarrier; stores are grouped by cp.async.bulk.commit_group / wait_group, which only
// track the issuing thread's copies. Each copy is issued by one thread (the code
// generator guards it: ops/tma.cc).
#ifndef TILUS_DEVICE_TMA_CUH
#define TILUS_DEVICE_TMA_CUH

#include "tilus/hang.cuh"  // hang_report: copy_ring_wait with a time limit
#include "tilus/types.cuh"

namespace tilus {

// The CUtensorMap the driver writes: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TmaDescriptor {
  unsigned long long opaque[16];
};

static __device__ __forceinline__ uint64_t tma_desc_address(const TmaDescriptor* desc) {
  return reinterpret_cast<uint64_t>(desc);
}

// Brings the descriptor into the TMA unit's cache ahead of its first copy.
static __device__ __forceinline__ void tma_prefetch_descriptor(const TmaDescriptor* desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(tma_desc_address(desc)) : "memory");
}

static __device__ __forceinline__ void tma_load_1d(const TmaDescriptor* desc, uint32_t smem,
                                                    uint32_t mbarrier, int c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3}], [%2];" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "r"(c0)
      : "memory");
}

static __device__ __forceinline__ void tma_load_2d(const TmaDescriptor* desc, uint32_t smem,
                                                    uint32_t mbarrier, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "r"(c0), "r"(c1)
      : "memory");
}

static __device__ __forceinline__ void tma_load_3d(const TmaDescriptor* desc, uint32_t smem,
                                                    uint32_t mbarrier, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

static __device__ __forceinline__ void tma_load_4d(const TmaDescriptor* desc, uint32_t smem,
                                                    uint32_t mbarrier, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

static __device__ __forceinline__ void tma_load_5d(const TmaDescriptor* desc, uint32_t smem,
                                                    uint32_t mbarrier, int c0, int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

// Multicast loads (.multicast::cluster): the box lands at `smem`'s offset in the shared
// memory of every block of the cluster whose rank is a bit of `mask`, completing its
// bytes on each one's mbarrier at `mbarrier`'s offset.
static __device__ __forceinline__ void tma_load_multicast_1d(const TmaDescriptor* desc, uint32_t smem,
                                                              uint32_t mbarrier, unsigned short mask, int c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4}], [%2], %3;" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "h"(mask), "r"(c0)
      : "memory");
}

static __device__ __forceinline__ void tma_load_multicast_2d(const TmaDescriptor* desc, uint32_t smem,
                                                              uint32_t mbarrier, unsigned short mask, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "h"(mask), "r"(c0), "r"(c1)
      : "memory");
}

static __device__ __forceinline__ void tma_load_multicast_3d(const TmaDescriptor* desc, uint32_t smem,
                                                              uint32_t mbarrier, unsigned short mask, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5, %6}], [%2], %3;" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "h"(mask), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

static __device__ __forceinline__ void tma_load_multicast_4d(const TmaDescriptor* desc, uint32_t smem,
                                                              uint32_t mbarrier, unsigned short mask, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5, %6, %7}], [%2], %3;" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "h"(mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

static __device__ __forceinline__ void tma_load_multicast_5d(const TmaDescriptor* desc, uint32_t smem,
                                                              uint32_t mbarrier, unsigned short mask, int c0, int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;" ::"r"(smem),
      "l"(tma_desc_address(desc)), "r"(mbarrier), "h"(mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

static __device__ __forceinline__ void tma_store_1d(const TmaDescriptor* desc, uint32_t smem,
                                                     int c0) {
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%2}], [%1];"
               ::"l"(tma_desc_address(desc)), "r"(smem), "r"(c0)
               : "memory");
}

static __device__ __forceinline__ void tma_store_2d(const TmaDescriptor* desc, uint32_t smem,
                                                     int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"(tma_desc_address(desc)), "r"(smem), "r"(c0), "r"(c1)
               : "memory");
}

static __device__ __forceinline__ void tma_store_3d(const TmaDescriptor* desc, uint32_t smem,
                                                     int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];"
               ::"l"(tma_desc_address(desc)), "r"(smem), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

static __device__ __forceinline__ void tma_store_4d(const TmaDescriptor* desc, uint32_t smem,
                                                     int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
               ::"l"(tma_desc_address(desc)), "r"(smem), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

static __device__ __forceinline__ void tma_store_5d(const TmaDescriptor* desc, uint32_t smem,
                                                     int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
               ::"l"(tma_desc_address(desc)), "r"(smem), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

// ---- copy_async lowered to TMA (ops/async_copy.cc): each commit group of the block's
// cp.async-style copies completes on one mbarrier of a ring (count 1). Thread 0 adds each
// copy's bytes to the group's barrier before issuing it and arrives at the commit; every
// thread waits for a group with the parity of its round of the ring.
static __device__ __forceinline__ void copy_ring_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(bar) : "memory");
}

static __device__ __forceinline__ void copy_ring_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

static __device__ __forceinline__ void copy_ring_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(bar) : "memory");
}

// limit_ns > 0 (tilus.option.debug.hang_check): give up after that long, reporting
// `where` (hang.cuh); 0, the constant the plain build passes, compiles the check away.
static __device__ __forceinline__ void copy_ring_wait(uint32_t bar, uint32_t parity, unsigned long long limit_ns = 0,
                                                      const char* where = nullptr) {
  const unsigned long long start = limit_ns ? global_timer_ns() : 0;
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    if (limit_ns) hang_check(done, start, limit_ns, where, bar, parity);
  }
}

}  // namespace tilus

#endif  // TILUS_DEVICE_TMA_CUH
