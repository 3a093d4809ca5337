// cp.async: asynchronous global -> shared copies (sm_80+), the engine of the
// multi-stage pipelines that copy_async / copy_async_commit_group /
// copy_async_wait_group lower to.
//
// PTX ISA "Data Movement and Conversion Instructions: cp.async":
//   cp.async.{ca,cg}.shared.global [dst], [src], cp-size, src-size;
//   - only src-size bytes (0 <= src-size <= cp-size) are read from [src]; the
//     rest of the cp-size bytes at [dst] are filled with zeros. This is how a
//     tile load that runs past the tensor edge reads zeros, without a branch.
//   - with src-size == 0 nothing is read, yet [src] should still be a valid,
//     cp-size-aligned global address: callers pass the tensor's base pointer
//     for out-of-range chunks rather than the out-of-range address.
//   - .cg (cache in L2 only) supports only cp-size 16; .ca (L1 and L2) supports
//     4, 8 and 16. dst and src must be aligned to cp-size.
//   - "cp.async.commit_group" closes the copies issued so far by this thread into
//     a group; "cp.async.wait_group N" waits until at most N of this thread's
//     groups are pending. Waiting covers only this thread's copies: a
//     __syncthreads() must follow before other threads read the data.
// All asm carries a "memory" clobber: the copies write shared memory behind the
// compiler's back, and the waits are what make that data readable.
#ifndef TILUS_DEVICE_CP_ASYNC_CUH
#define TILUS_DEVICE_CP_ASYNC_CUH

#include "tilus/memory.cuh"

namespace tilus {

static __device__ __forceinline__ void cp_async_16(uint32_t smem_addr, const void* gmem,
                                                   int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(smem_addr), "l"(gmem), "r"(src_bytes) : "memory");
}

static __device__ __forceinline__ void cp_async_8(uint32_t smem_addr, const void* gmem,
                                                  int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;"
               :: "r"(smem_addr), "l"(gmem), "r"(src_bytes) : "memory");
}

static __device__ __forceinline__ void cp_async_4(uint32_t smem_addr, const void* gmem,
                                                  int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
               :: "r"(smem_addr), "l"(gmem), "r"(src_bytes) : "memory");
}

static __device__ __forceinline__ void cp_async_commit_group() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// N must be an immediate in the instruction, hence the template parameter.
template <int N>
static __device__ __forceinline__ void cp_async_wait_group() {
  static_assert(N >= 0, "cp.async.wait_group takes a non-negative count");
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}

static __device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}

// For a count only known at run time. Waiting for more groups than asked is
// always safe, so counts past 7 fall back to waiting for all of them.
static __device__ __forceinline__ void cp_async_wait_group(int n) {
  switch (n) {
    case 0: cp_async_wait_group<0>(); break;
    case 1: cp_async_wait_group<1>(); break;
    case 2: cp_async_wait_group<2>(); break;
    case 3: cp_async_wait_group<3>(); break;
    case 4: cp_async_wait_group<4>(); break;
    case 5: cp_async_wait_group<5>(); break;
    case 6: cp_async_wait_group<6>(); break;
    case 7: cp_async_wait_group<7>(); break;
    default: cp_async_wait_all(); break;
  }
}

}  // namespace tilus

#endif  // TILUS_DEVICE_CP_ASYNC_CUH
