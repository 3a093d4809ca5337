// Vectorized global/shared loads and stores of 1, 2, 4, 8 or 16 bytes.
//
// The emitter moves a thread's contiguous run of a tile with one instruction:
//   tilus::load_global_vec<16>(&r[4], &gmem[offset]);
// `regs` points at a thread-local array of any element type. It is copied with
// memcpy, so it needs no particular alignment, and after inlining the copy
// becomes register moves. The memory address must be aligned to Bytes
// (PTX ISA "Vectors": vector accesses must be naturally aligned).
//
// The asm is volatile with a "memory" clobber so that the compiler keeps these
// accesses in program order with respect to plain C++ loads and stores of the
// same buffers (the emitter may mix both).
#ifndef TILUS_DEVICE_MEMORY_CUH
#define TILUS_DEVICE_MEMORY_CUH

#include "tilus/types.cuh"

namespace tilus {

// Address of a generic pointer into shared memory within the .shared window,
// the form ldmatrix, cp.async and ld/st.shared take.
static __device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

namespace detail {

template <int Bytes> struct check_vec_bytes {
  static_assert(Bytes == 1 || Bytes == 2 || Bytes == 4 || Bytes == 8 || Bytes == 16,
                "vector accesses move 1, 2, 4, 8 or 16 bytes");
};

// ld{.global,.global.cg,.shared} of Bytes into 32-bit words w[] (or h for the
// 1- and 2-byte sizes, which PTX loads into a 16-bit register).
#define TILUS_LOAD_BODY(SPACE, ADDR)                                                          \
  if constexpr (Bytes == 16) {                                                              \
    asm volatile("ld" SPACE ".v4.b32 {%0, %1, %2, %3}, [%4];"                               \
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : ADDR : "memory");       \
  } else if constexpr (Bytes == 8) {                                                        \
    asm volatile("ld" SPACE ".v2.b32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : ADDR       \
                 : "memory");                                                               \
  } else if constexpr (Bytes == 4) {                                                        \
    asm volatile("ld" SPACE ".b32 %0, [%1];" : "=r"(w[0]) : ADDR : "memory");               \
  } else if constexpr (Bytes == 2) {                                                        \
    asm volatile("ld" SPACE ".b16 %0, [%1];" : "=h"(h) : ADDR : "memory");                  \
  } else {                                                                                  \
    asm volatile("ld" SPACE ".u8 %0, [%1];" : "=h"(h) : ADDR : "memory");                   \
  }

#define TILUS_STORE_BODY(SPACE, ADDR)                                                         \
  if constexpr (Bytes == 16) {                                                              \
    asm volatile("st" SPACE ".v4.b32 [%0], {%1, %2, %3, %4};"                               \
                 :: ADDR, "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");          \
  } else if constexpr (Bytes == 8) {                                                        \
    asm volatile("st" SPACE ".v2.b32 [%0], {%1, %2};" :: ADDR, "r"(w[0]), "r"(w[1])         \
                 : "memory");                                                               \
  } else if constexpr (Bytes == 4) {                                                        \
    asm volatile("st" SPACE ".b32 [%0], %1;" :: ADDR, "r"(w[0]) : "memory");                \
  } else if constexpr (Bytes == 2) {                                                        \
    asm volatile("st" SPACE ".b16 [%0], %1;" :: ADDR, "h"(h) : "memory");                   \
  } else {                                                                                  \
    asm volatile("st" SPACE ".u8 [%0], %1;" :: ADDR, "h"(h) : "memory");                    \
  }

}  // namespace detail

// Plain global load (cached in L1 and L2).
template <int Bytes>
static __device__ __forceinline__ void load_global_vec(void* regs, const void* gmem) {
  (void)detail::check_vec_bytes<Bytes>();
  uint32_t w[4];
  uint16_t h = 0;
  TILUS_LOAD_BODY(".global", "l"(gmem))
  if constexpr (Bytes >= 4) memcpy(regs, w, Bytes);
  else memcpy(regs, &h, Bytes);
}

// Global load that bypasses L1 (PTX ISA "Cache Operators": .cg caches in L2
// only). L1 is not coherent across SMs, so data written by other blocks of
// the same launch (split-K partials published through a semaphore) is read
// with this variant.
template <int Bytes>
static __device__ __forceinline__ void load_global_cg(void* regs, const void* gmem) {
  (void)detail::check_vec_bytes<Bytes>();
  uint32_t w[4];
  uint16_t h = 0;
  TILUS_LOAD_BODY(".global.cg", "l"(gmem))
  if constexpr (Bytes >= 4) memcpy(regs, w, Bytes);
  else memcpy(regs, &h, Bytes);
}

// A vector of which only the first `inside` bytes lie in the tensor (0 < inside <=
// Bytes: the one a row's end cuts). It is read whole, which cannot fault: an aligned
// vector never crosses a page, and allocators hand out memory in multiples of 16 bytes
// or more (as load_realigned_16 below); the bytes past `inside` read as zero.
template <int Bytes, bool BypassL1>
static __device__ __forceinline__ void load_global_vec_part(void* regs, const void* gmem, int inside) {
  uint32_t w[4] = {0u, 0u, 0u, 0u};
  if constexpr (BypassL1) load_global_cg<Bytes>(w, gmem);
  else load_global_vec<Bytes>(w, gmem);
#pragma unroll
  for (int j = 0; j < (Bytes + 3) / 4; ++j) {
    const int b = min(max(inside - 4 * j, 0), 4);  // bytes of word j inside
    w[j] &= b >= 4 ? 0xffffffffu : (1u << (8 * b)) - 1u;
  }
  memcpy(regs, w, Bytes);
}

template <int Bytes>
static __device__ __forceinline__ void store_global_vec(void* gmem, const void* regs) {
  (void)detail::check_vec_bytes<Bytes>();
  uint32_t w[4] = {0, 0, 0, 0};
  uint16_t h = 0;
  if constexpr (Bytes >= 4) memcpy(w, regs, Bytes);
  else memcpy(&h, regs, Bytes);
  TILUS_STORE_BODY(".global", "l"(gmem))
}

template <int Bytes>
static __device__ __forceinline__ void load_shared_vec(void* regs, const void* smem) {
  (void)detail::check_vec_bytes<Bytes>();
  uint32_t w[4];
  uint16_t h = 0;
  TILUS_LOAD_BODY(".shared", "r"(smem_u32(smem)))
  if constexpr (Bytes >= 4) memcpy(regs, w, Bytes);
  else memcpy(regs, &h, Bytes);
}

template <int Bytes>
static __device__ __forceinline__ void store_shared_vec(void* smem, const void* regs) {
  (void)detail::check_vec_bytes<Bytes>();
  uint32_t w[4] = {0, 0, 0, 0};
  uint16_t h = 0;
  if constexpr (Bytes >= 4) memcpy(w, regs, Bytes);
  else memcpy(&h, regs, Bytes);
  TILUS_STORE_BODY(".shared", "r"(smem_u32(smem)))
}

// Another block's shared memory (distributed shared memory, sm_90): `addr` is a
// .shared::cluster address (mapa of this block's address of the same element).
template <int Bytes>
static __device__ __forceinline__ void load_shared_cluster_vec(void* regs, uint32_t addr) {
  (void)detail::check_vec_bytes<Bytes>();
  uint32_t w[4];
  uint16_t h = 0;
  TILUS_LOAD_BODY(".shared::cluster", "r"(addr))
  if constexpr (Bytes >= 4) memcpy(regs, w, Bytes);
  else memcpy(regs, &h, Bytes);
}

template <int Bytes>
static __device__ __forceinline__ void store_shared_cluster_vec(uint32_t addr, const void* regs) {
  (void)detail::check_vec_bytes<Bytes>();
  uint32_t w[4] = {0, 0, 0, 0};
  uint16_t h = 0;
  if constexpr (Bytes >= 4) memcpy(w, regs, Bytes);
  else memcpy(&h, regs, Bytes);
  TILUS_STORE_BODY(".shared::cluster", "r"(addr))
}

#undef TILUS_LOAD_BODY
#undef TILUS_STORE_BODY

// 16 bytes of global memory at an address of any alignment, read as the (at most) two
// aligned 16-byte chunks that hold them and shifted into place: the rows of a tensor
// whose row length or start is not a multiple of 16 bytes move with two 16-byte loads
// instead of eight 2-byte ones. Only bytes [lo, hi) of the run are taken (those inside
// the tensor); the others read as zero, and a chunk holding none of them is not read.
// A chunk holding one is read whole, which cannot fault: an aligned 16-byte chunk never
// crosses a page, and allocators hand out memory in multiples of 16 bytes or more.
// Plain C++ loads (not volatile asm), so that the compiler can issue the loads of
// several runs before any of them is used; BypassL1 reads around L1 (ld.global.cg) for
// memory the kernel also writes.
template <bool BypassL1>
static __device__ __forceinline__ uint4 load_realigned_16(const void* p, int lo, int hi) {
  const unsigned long long a = reinterpret_cast<unsigned long long>(p);
  const int s = static_cast<int>(a & 15);
  const uint4* chunk = reinterpret_cast<const uint4*>(a - static_cast<unsigned long long>(s));
  uint4 c0 = make_uint4(0u, 0u, 0u, 0u), c1 = c0;
  if (lo < hi && lo < 16 - s) c0 = BypassL1 ? __ldcg(chunk) : chunk[0];
  if (lo < hi && hi > 16 - s) c1 = BypassL1 ? __ldcg(chunk + 1) : chunk[1];
  const uint32_t w[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  // Whole words first, by selects (a runtime index into w would put it in local memory),
  // then the bytes left with a funnel shift.
  const int q = s >> 2;
  uint32_t v[6], u[5], out[4];
#pragma unroll
  for (int k = 0; k < 6; ++k) v[k] = (q & 2) ? w[k + 2] : w[k];
#pragma unroll
  for (int k = 0; k < 5; ++k) u[k] = (q & 1) ? v[k + 1] : v[k];
  const uint32_t shift = static_cast<uint32_t>(s & 3) * 8u;
#pragma unroll
  for (int j = 0; j < 4; ++j) out[j] = __funnelshift_r(u[j], u[j + 1], shift);
  if (lo > 0 || hi < 16) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // bytes [b0, b1) of word j are taken
      const int b0 = min(max(lo - 4 * j, 0), 4), b1 = min(max(hi - 4 * j, 0), 4);
      const uint32_t below_b1 = b1 >= 4 ? 0xffffffffu : (1u << (8 * b1)) - 1u;
      const uint32_t below_b0 = b0 >= 4 ? 0xffffffffu : (1u << (8 * b0)) - 1u;
      out[j] &= below_b1 & ~below_b0;
    }
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

}  // namespace tilus

#endif  // TILUS_DEVICE_MEMORY_CUH
