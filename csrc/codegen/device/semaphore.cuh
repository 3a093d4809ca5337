// Block-level semaphores in global memory: one block waits until another has
// published its results (split-K: block z adds its partial tile after block z-1
// has stored its own, then hands the semaphore on).
//
//   lock_semaphore(p, v):    wait until *p == v; afterwards every thread of the
//                            block sees all writes made before the matching release.
//   release_semaphore(p, v): publish every write the block made so far, then *p = v.
// Both contain a barrier (__syncthreads(), or inside a thread group the group's named
// barrier), so every thread of the block or group must reach them (not from divergent
// code). A thread group's barrier orders its threads as bar.sync orders the block's.
//
// Why this is enough (PTX ISA "Memory Consistency Model"):
//   Release side: bar.sync orders every thread's earlier writes before thread 0's
//   st.release (barriers establish causality order between the threads of a
//   CTA). A release is cumulative: it covers not only thread 0's own writes but
//   every write that precedes it in causality order, i.e. the whole block's.
//   .gpu scope makes it visible to any block of the launch.
//   Acquire side: thread 0's ld.acquire.gpu that reads the released value
//   synchronizes with the st.release, so the writer block's writes precede
//   everything thread 0 does next; bar.sync then extends that order to every
//   thread of the waiting block. The hardware honours this (a gpu-scope acquire
//   invalidates stale L1 lines), and readers of the data may additionally use
//   load_global_cg, which bypasses L1 altogether.
#ifndef TILUS_DEVICE_SEMAPHORE_CUH
#define TILUS_DEVICE_SEMAPHORE_CUH

#include "tilus/types.cuh"

namespace tilus {

namespace detail {
static __device__ __forceinline__ bool is_block_thread0() {
  return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
}
}  // namespace detail

// The spin and the publishing store, each run by one thread (the block's, or a thread
// group's, first); the generated code puts the barrier of the block or of the group
// after the wait and before the publish (CudaEmitter::emit_semaphore).
static __device__ __forceinline__ void semaphore_wait(const int32_t* p, int32_t value) {
  int32_t seen;
  while (true) {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(seen) : "l"(p) : "memory");
    if (seen == value) break;
    // Back off a little so that the spinning block leaves memory bandwidth
    // and issue slots to the block it waits for (sm_70+).
    __nanosleep(32);
  }
}

static __device__ __forceinline__ void semaphore_publish(int32_t* p, int32_t value) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" :: "l"(p), "r"(value) : "memory");
}

static __device__ __forceinline__ void lock_semaphore(const int32_t* p, int32_t value) {
  if (detail::is_block_thread0()) semaphore_wait(p, value);
  __syncthreads();
}

static __device__ __forceinline__ void release_semaphore(int32_t* p, int32_t value) {
  __syncthreads();
  if (detail::is_block_thread0()) semaphore_publish(p, value);
}

}  // namespace tilus

#endif  // TILUS_DEVICE_SEMAPHORE_CUH
