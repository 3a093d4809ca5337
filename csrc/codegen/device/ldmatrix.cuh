// ldmatrix: a warp loads 8x8 tiles of 16-bit elements from shared memory
// straight into the mma.sync operand fragments.
//
// PTX ISA "Warp-level matrix load instruction: ldmatrix" (.m8n8, .b16):
//   - .x1/.x2/.x4 load 1/2/4 matrices. Lanes 8i..8i+7 give the row addresses of
//     matrix i (lanes 0-7 for .x1, 0-15 for .x2, all 32 for .x4; the other
//     lanes' addresses are not used). Each row is 16 contiguous bytes and its
//     address must be 16-byte aligned.
//   - lane l receives in r[i] the elements (row l / 4, columns 2 * (l % 4) + {0, 1})
//     of matrix i, the lower column in the lower 16 bits. That is exactly the
//     register order of the A/B/C fragments in "Matrix Fragments for
//     mma.m16n8k16".
//   - .trans delivers the transposed matrix: lane l receives (rows 2 * (l % 4)
//     + {0, 1}, column l / 4), i.e. loads a column-major tile as row-major.
// The instruction is warp-collective (.sync.aligned): every lane of the warp
// must execute the same call, which is why the asm is volatile (the compiler
// must not sink it into a branch or drop it).
//
// `r` may point at a register tile of half/bfloat16: declare it alignas(4) or
// wider so the uint32_t view is aligned should it ever live in local memory.
#ifndef TILUS_DEVICE_LDMATRIX_CUH
#define TILUS_DEVICE_LDMATRIX_CUH

#include "tilus/memory.cuh"

namespace tilus {

static __device__ __forceinline__ void ldmatrix_x1(uint32_t* r, uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];"
               : "=r"(r[0]) : "r"(smem_addr) : "memory");
}

static __device__ __forceinline__ void ldmatrix_x2(uint32_t* r, uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr) : "memory");
}

static __device__ __forceinline__ void ldmatrix_x4(uint32_t* r, uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr) : "memory");
}

static __device__ __forceinline__ void ldmatrix_x1_trans(uint32_t* r, uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
               : "=r"(r[0]) : "r"(smem_addr) : "memory");
}

static __device__ __forceinline__ void ldmatrix_x2_trans(uint32_t* r, uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr) : "memory");
}

static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t* r, uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr) : "memory");
}

}  // namespace tilus

#endif  // TILUS_DEVICE_LDMATRIX_CUH
