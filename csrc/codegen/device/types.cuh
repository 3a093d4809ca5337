// Scalar types of generated kernels.
//
// NVRTC compiles generated code with no include paths, so <cstdint> and
// <cuda_fp16.h> are out of reach. The few types the code generator names
// (ir/dtype.cc c_name: int8_t ... uint64_t, half, bfloat16) are defined here,
// inside namespace tilus so they cannot collide with anything a user adds.
#ifndef TILUS_DEVICE_TYPES_CUH
#define TILUS_DEVICE_TYPES_CUH

// cp.async, cvt.rn.bf16.f32 and mma.sync m16n8k16/bf16 all need sm_80; failing
// here gives one clear message instead of a page of ptxas errors.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "tilus device helpers need sm_80 or newer"
#endif

namespace tilus {

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

// IEEE binary16 and bfloat16 as raw bits. They are storage types only: no
// operators and no constructors, so they stay trivial (usable in __shared__
// arrays and unions) and every arithmetic op is spelled through arith.cuh,
// which computes in float and rounds once, as the CPU interpreter does.
// Build a constant from bits with aggregate initialization: half{0x3c00} == 1.0.
struct alignas(2) half {
  uint16_t bits;
};
struct alignas(2) bfloat16 {
  uint16_t bits;
};

// TensorFloat-32: a float whose low 13 mantissa bits are zero, as cvt.rna.tf32.f32
// leaves it. Storage only like half: cast<> (convert.cuh) rounds into it and widens out
// of it, and mma.sync takes its bits as a 32-bit register.
struct alignas(4) tfloat32 {
  float value;
};

static_assert(sizeof(int8_t) == 1 && sizeof(int16_t) == 2, "int sizes");
static_assert(sizeof(int32_t) == 4 && sizeof(int64_t) == 8, "int sizes");
static_assert(sizeof(half) == 2 && alignof(half) == 2, "half is 2 bytes");
static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2, "bfloat16 is 2 bytes");
static_assert(sizeof(tfloat32) == 4 && alignof(tfloat32) == 4, "tfloat32 is 4 bytes");

}  // namespace tilus

#endif  // TILUS_DEVICE_TYPES_CUH
