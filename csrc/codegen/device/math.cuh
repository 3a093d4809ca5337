// Elementwise math of the math family (csrc/ops/math.cc): the fast hardware paths
// (the MUFU approximations, written as PTX so the lowering is visible and does not
// depend on -use_fast_math) and abs for every dtype.
//
// Accuracy on float32 (the CUDA C++ Programming Guide's figures for the intrinsics
// these instructions implement):
//   ex2.approx.f32     2 ulp over the full range (exp2f; no .ftz, subnormals kept)
//   ex2.approx.ftz.f32 the same for results of at least 2^-126, 0 below (exp2(approx=True))
//   lg2.approx.f32     times ln 2 (__logf): absolute error 2^-21.41 for x in [0.5, 2],
//                      else 3 ulp
//   sin/cos.approx.f32 (__sinf/__cosf): absolute error 2^-21.41 for |x| <= pi, larger
//                      outside (no range reduction)
//   rsqrt.approx.f32   2 ulp (rsqrtf)
//   sqrt.approx.f32    3 ulp relative at most (sqrtf without -prec-sqrt)
// The CPU interpreter computes the correctly rounded or libm float32 function; tests
// hold each op to the tolerance its docstring states.
#ifndef TILUS_DEVICE_MATH_CUH
#define TILUS_DEVICE_MATH_CUH

#include "tilus/arith.cuh"

namespace tilus {

static __device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Without .ftz ptxas scales subnormal results in and out around MUFU.EX2 (a compare and
// two multiplies per element); with it, one instruction (softmax's inner loop).
static __device__ __forceinline__ float ex2_approx_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

static __device__ __forceinline__ float lg2_approx(float x) {
  float y;
  asm("lg2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

static __device__ __forceinline__ float sin_approx(float x) {
  float y;
  asm("sin.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

static __device__ __forceinline__ float cos_approx(float x) {
  float y;
  asm("cos.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

static __device__ __forceinline__ float rsqrt_approx(float x) {
  float y;
  asm("rsqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

static __device__ __forceinline__ float sqrt_approx(float x) {
  float y;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// |x|: the sign bit cleared for floats (exact, NaN stays NaN); two's complement for
// signed integers, so the most negative value maps to itself as in the interpreter.
template <typename T>
static __device__ __forceinline__ T abs_(T x) {
  if constexpr (detail::is_f16<T>()) {
    return T{static_cast<uint16_t>(x.bits & 0x7fffu)};
  } else if constexpr (detail::is_same<T, float>()) {
    return fabsf(x);
  } else if constexpr (detail::is_same<T, double>()) {
    return fabs(x);
  } else if constexpr (detail::is_int<T>() && detail::is_signed<T>()) {
    return x < T(0) ? neg(x) : x;
  } else {
    return x;
  }
}

}  // namespace tilus

#endif  // TILUS_DEVICE_MATH_CUH
