// tilus.option.debug.hang_check (CodegenOptions::hang_check_ns): waits that give up. A
// checked kernel's mbarrier waits read the global timer while they spin; past the time
// allowed the thread prints which wait of the script it was (file:line), the barrier,
// the phase and its block and thread, and traps, so that the launch fails with an error
// instead of hanging the GPU. (After a trap the CUDA context is unusable: the process
// has to start again; the printed line says where to look.)
#ifndef TILUS_DEVICE_HANG_CUH
#define TILUS_DEVICE_HANG_CUH

#include "tilus/types.cuh"

namespace tilus {

static __device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

static __device__ __noinline__ void hang_report(const char* where, uint32_t bar, uint32_t parity) {
  printf("tilus: the mbarrier wait at %s (barrier at shared address 0x%x, phase parity %u) did not complete "
         "in the time tilus.option.debug.hang_check allows: block (%d, %d, %d), thread %d\n",
         where, bar, parity, (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x);
  __trap();
}

// The give-up test of every checked wait (the script's mbarrier waits and the copy ring's):
// a wait not `done` after spinning more than `limit_ns` since `start` reports and traps.
static __device__ __forceinline__ void hang_check(uint32_t done, unsigned long long start,
                                                  unsigned long long limit_ns, const char* where, uint32_t bar,
                                                  uint32_t parity) {
  if (!done && global_timer_ns() - start > limit_ns) hang_report(where, bar, parity);
}

}  // namespace tilus

#endif  // TILUS_DEVICE_HANG_CUH
