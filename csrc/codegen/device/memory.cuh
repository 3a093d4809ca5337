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

}  // namespace tilus

#endif  // TILUS_DEVICE_MEMORY_CUH
