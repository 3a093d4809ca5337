// wgmma (sm_90a): a warpgroup (4 consecutive warps, 128 threads) multiplies a 64xK=16
// tile of A by a 16xN tile of B, both read by the tensor cores straight from shared
// memory through 64-bit matrix descriptors, into a 64xN fp32 accumulator spread over the
// warpgroup's registers (the same per-warp fragment as mma.sync's m16n8 C, warp w
// holding rows 16w..16w+15, N/8 fragments side by side: d[4j + 2h + e] is row
// 16w + lane/4 + 8h, column 8j + 2(lane%4) + e).
//
// The instruction itself (wgmma.mma_async with its N/2 accumulator operands) is written
// by the code generator (codegen/emit_dot.cc) for the N it needs; this header holds the
// pieces around it. PTX ISA "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"
// and its "Matrix Descriptor Format":
//   bits  0-13  start address >> 4 (the unswizzled address of the tile's first element)
//   bits 16-29  leading-dimension byte offset >> 4
//   bits 32-45  stride-dimension byte offset >> 4
//   bits 62-63  swizzle: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
// The swizzle is applied by the hardware to address bits, so a swizzled tile must start
// at a multiple of its swizzle period (8 rows: 512 bytes for 64-byte, 1024 for 128-byte).
//
// Ordering (all warpgroup-collective, hence volatile asm):
//   fence_proxy_async_shared  makes shared-memory writes of the generic proxy (st.shared,
//                             cp.async) visible to the async proxy that wgmma reads with;
//   wgmma_fence               orders earlier register accesses of the accumulators
//                             before the wgmma that reads/writes them;
//   wgmma_commit_group / wgmma_wait_group<N>
//                             batch the issued wgmmas and wait until at most N batches
//                             are still running;
//   fence_register(x)         an empty asm that "rewrites" x, so the compiler can move no
//                             access of an accumulator across a wait.
#ifndef TILUS_DEVICE_WGMMA_CUH
#define TILUS_DEVICE_WGMMA_CUH

#include "tilus/types.cuh"

namespace tilus {

// Shared addresses are below 2^18 (228 KB), so addr >> 4 fits the 14-bit field without a
// mask.
static __device__ __forceinline__ uint64_t wgmma_desc(uint32_t smem_addr, uint32_t leading_bytes,
                                                      uint32_t stride_bytes, uint32_t swizzle) {
  // the start address is 14 bits of (address mod 256 KB) / 16: in a cluster the shared
  // addresses of a block of rank > 0 carry higher bits, which unmasked ran into the
  // leading-byte-offset field (N-major B read its second 64-column block from elsewhere)
  return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) |
         (static_cast<uint64_t>((leading_bytes >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((stride_bytes >> 4) & 0x3FFF) << 32) |
         (static_cast<uint64_t>(swizzle) << 62);
}

// The descriptor of the matrix `bytes` after the one `d` describes: one add to the start
// address field. Exact while the tile stays below 256 KB of the block's shared memory (it
// does: a block has at most 227 KB), so no carry leaves the field. One descriptor per
// tile plus these adds, with the warpgroup index uniform (the emitters), is 2-3% faster
// than a descriptor per instruction on the seed's 4096^3 tiles and up to 6% on the
// Hopper attention (H200, 2026-11-28): fewer instructions on the uniform datapath.
static __device__ __forceinline__ uint64_t wgmma_desc_add(uint64_t d, uint32_t bytes) {
  const uint32_t lo = static_cast<uint32_t>(d) + (bytes >> 4);
  return (d & 0xFFFFFFFF00000000ull) | lo;
}

static __device__ __forceinline__ void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

static __device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

static __device__ __forceinline__ void wgmma_commit_group() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

template <int N>
static __device__ __forceinline__ void wgmma_wait_group() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

static __device__ __forceinline__ void fence_register(float& x) { asm volatile("" : "+f"(x)::"memory"); }

}  // namespace tilus

#endif  // TILUS_DEVICE_WGMMA_CUH
