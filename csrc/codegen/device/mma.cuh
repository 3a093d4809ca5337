// mma.sync: one warp multiplies a 16xK tile of A by a Kx8 tile of B into a
// 16x8 accumulator, D = A * B + C (A row-major, B column-major: .row.col).
//
// PTX ISA "Matrix Fragments for mma.m16n8k16 with floating point type" and
// "... for mma.m16n8k32" (g = lane / 4, q = lane % 4; a register holds 2 16-bit
// or 4 8-bit elements, the lowest index in the lowest bits):
//   m16n8k16, f16/bf16 (a: 4 regs = 8 elements, b: 2 regs = 4 elements):
//     a[i]: row g + 8 * (i in {2,3,6,7}), col 2q + (i & 1) + 8 * (i >= 4)
//     b[i]: row 2q + (i & 1) + 8 * (i >= 2), col g
//   m16n8k32, s8/u8 (a: 4 regs = 16 elements, b: 2 regs = 8 elements):
//     a[i]: row g + 8 * (i in 4..7 or 12..15), col 4q + (i & 3) + 16 * (i >= 8)
//     b[i]: row 4q + (i & 3) + 16 * (i >= 4), col g
//   c/d, all shapes (4 elements): c[i]: row g + 8 * (i >= 2), col 2q + (i & 1);
//     for f16 accumulators the 4 elements are packed in 2 f16x2 registers.
// These are the atoms of layout/block_layouts.cc (mma_atom).
//
// d may alias c: every operand is read into registers before the instruction
// writes its outputs. The instruction is warp-collective (.sync.aligned), so the
// asm is volatile: it must not be moved into divergent code or dropped.
//
// Operand pointers are uint32_t views of register tiles; a half/int8 tile passed
// this way should be declared alignas(4) or wider, so the view stays aligned if
// the tile is ever placed in local memory.
#ifndef TILUS_DEVICE_MMA_CUH
#define TILUS_DEVICE_MMA_CUH

#include "tilus/types.cuh"

namespace tilus {

static __device__ __forceinline__ void mma_m16n8k16_f16_f32(float* d, const uint32_t* a,
                                                            const uint32_t* b, const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
        "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// tf32 operands (one per register, the bits of a tilus::tfloat32), f32 accumulation.
static __device__ __forceinline__ void mma_m16n8k8_tf32_f32(float* d, const uint32_t* a,
                                                            const uint32_t* b, const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
        "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// f16 accumulation: d and c are 2 f16x2 registers each.
static __device__ __forceinline__ void mma_m16n8k16_f16_f16(uint32_t* d, const uint32_t* a,
                                                            const uint32_t* b, const uint32_t* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
      "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
      : "=r"(d[0]), "=r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
}

// bf16 inputs only accumulate in f32.
static __device__ __forceinline__ void mma_m16n8k16_bf16_f32(float* d, const uint32_t* a,
                                                             const uint32_t* b, const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
        "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// Integer mma without .satfinite: the s32 accumulator wraps on overflow, like
// int32 arithmetic everywhere else (and in the CPU interpreter).
static __device__ __forceinline__ void mma_m16n8k32_s8_s32(int32_t* d, const uint32_t* a,
                                                           const uint32_t* b, const int32_t* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
        "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
}

static __device__ __forceinline__ void mma_m16n8k32_u8_s32(int32_t* d, const uint32_t* a,
                                                           const uint32_t* b, const int32_t* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
        "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
}

}  // namespace tilus

#endif  // TILUS_DEVICE_MMA_CUH
