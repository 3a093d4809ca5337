// The one header generated kernels include: #include "tilus/runtime.cuh".
// Every helper lives in namespace tilus. The headers reach NVRTC as in-memory
// headers named "tilus/<file>.cuh" (cmake/embed_headers.cmake), which is why
// they include each other by that name.
#ifndef TILUS_DEVICE_RUNTIME_CUH
#define TILUS_DEVICE_RUNTIME_CUH

#include "tilus/types.cuh"      // int8_t..uint64_t, half, bfloat16
#include "tilus/convert.cuh"    // cast<To>(x), to_float/to_half/to_bfloat16, pack_half2
#include "tilus/lowp.cuh"       // lowp_int, lowp_float (int4b, float8_e4m3, ...), lowp_cast
#include "tilus/packed.cuh"     // unpack_bits, pack_bits, packed_get, packed_set_atomic
#include "tilus/lowp_vec.cuh"   // cast4: four codes to float16/bfloat16 with bit tricks
#include "tilus/arith.cuh"      // add, sub, ..., lt, ..., and_, or_, not_
#include "tilus/math.cuh"       // ex2/lg2/sin/cos/rsqrt/sqrt_approx, abs_
#include "tilus/memory.cuh"     // smem_u32, load/store_{global,shared}_vec, load_global_cg
#include "tilus/ldmatrix.cuh"   // ldmatrix_x{1,2,4}[_trans]
#include "tilus/cp_async.cuh"   // cp_async_{16,8,4}, commit / wait groups
#include "tilus/mma.cuh"        // mma_m16n8k16_*, mma_m16n8k32_*
#include "tilus/wgmma.cuh"      // wgmma descriptors, fences, commit / wait (sm_90a)
#include "tilus/tma.cuh"        // TMA tensor copies, tensor-map prefetch (sm_90a); hang.cuh
#include "tilus/semaphore.cuh"  // lock_semaphore, release_semaphore
#include "tilus/atomic.cuh"     // atomic_add/sub/min/max/exch/cas<scope>, atomic_fence
#include "tilus/random.cuh"     // philox_word, uniform_from_bits, normal_from_bits

// Every generated kernel is declared TILUS_LAUNCH_BOUNDS(threads per block). The
// compiler recompiles a kernel that spilled with TILUS_MIN_BLOCKS_PER_SM=1 defined, which
// lets ptxas spend registers on one resident block (csrc/runtime/nvrtc.cc).
#ifdef TILUS_MIN_BLOCKS_PER_SM
#define TILUS_LAUNCH_BOUNDS(threads) __launch_bounds__(threads, TILUS_MIN_BLOCKS_PER_SM)
#else
#define TILUS_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
#endif

#endif  // TILUS_DEVICE_RUNTIME_CUH
