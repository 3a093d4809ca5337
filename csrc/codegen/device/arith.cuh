// Elementwise scalar operations, one function per IR BinaryOp / UnaryOp.
//
// The emitter writes `z[i] = tilus::add(x[i], y[i]);` for every dtype, so each
// op is a template over T. Semantics match the CPU interpreter
// (interp/scalar_eval.cc):
//   - half and bfloat16 compute in float and round back once. float has more
//     than twice their precision (24 >= 2 * 11 + 2 bits), so for + - * / the
//     double rounding is innocuous: the result equals the correctly rounded
//     one the interpreter computes in double. + - * use the 16-bit instructions,
//     which round the exact result once: the same bits (f16ops below).
//   - integer +, -, * and negation wrap (two's complement), never overflow.
//   - div and mod on integers truncate toward zero (C); mod on floats is fmod.
//   - min_/max_ on floats ignore a NaN operand (fminf/fmaxf, like std::fmin).
//   - comparisons and logical ops return bool; logical ops treat x != 0 as true.
#ifndef TILUS_DEVICE_ARITH_CUH
#define TILUS_DEVICE_ARITH_CUH

#include "tilus/convert.cuh"

namespace tilus {
namespace detail {

// The type an operation on T is computed in.
template <typename T> struct compute_type { typedef T type; };
template <> struct compute_type<half> { typedef float type; };
template <> struct compute_type<bfloat16> { typedef float type; };
template <> struct compute_type<tfloat32> { typedef float type; };  // rounds back with cvt.rna

template <typename T>
static __device__ __forceinline__ typename compute_type<T>::type widen(T x) {
  return cast<typename compute_type<T>::type>(x);
}

// +, -, * and unary - on signed integers can overflow, which C++ leaves
// undefined (uint16 * uint16 too: both promote to int); the interpreter wraps.
// Computing them in an unsigned type at least as wide wraps by definition, and
// the cast back keeps the low bits; the instructions are the same.
template <typename T> struct wrapping_type { typedef typename compute_type<T>::type type; };
template <> struct wrapping_type<signed char> { typedef unsigned type; };
template <> struct wrapping_type<short> { typedef unsigned type; };
template <> struct wrapping_type<unsigned char> { typedef unsigned type; };
template <> struct wrapping_type<unsigned short> { typedef unsigned type; };
template <> struct wrapping_type<int> { typedef unsigned type; };
template <> struct wrapping_type<long> { typedef unsigned long type; };
template <> struct wrapping_type<long long> { typedef unsigned long long type; };

template <typename T>
static __device__ __forceinline__ typename wrapping_type<T>::type wrapping(T x) {
  return cast<typename wrapping_type<T>::type>(x);
}

}  // namespace detail

// +, - and * on half / bfloat16 use the hardware's 16-bit instructions: each rounds the
// exact result once to nearest even, the result the float round trip gives too (see
// the top of this file), in one instruction instead of four (two widenings, the
// operation, the rounding back). bfloat16 add/sub/mul.rn need sm_90; fma.rn.bf16 (sm_80)
// with a unit factor or a -0 addend is the same single rounding. The x2 forms work on the
// two 16-bit lanes of a 32-bit word.
namespace f16ops {
enum Kind { kAdd, kSub, kMul };
template <Kind K>
static __device__ __forceinline__ uint32_t half2(uint32_t a, uint32_t b) {
  uint32_t d;
  if constexpr (K == kAdd) asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  else if constexpr (K == kSub) asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  else asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// a - b = b * -1 + a; a * b = a * b + (-0) (keeps the sign of a zero product). The
// constants travel in registers (16-bit float operands take no immediates).
template <Kind K>
static __device__ __forceinline__ uint32_t bf16_2(uint32_t a, uint32_t b) {
  uint32_t d;
  const uint32_t one = 0x3F803F80u, minus_one = 0xBF80BF80u, minus_zero = 0x80008000u;
  if constexpr (K == kAdd) asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(one), "r"(b));
  else if constexpr (K == kSub) asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(b), "r"(minus_one), "r"(a));
  else asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(minus_zero));
  return d;
}
template <Kind K, typename T>
static __device__ __forceinline__ uint32_t word(uint32_t a, uint32_t b) {
  if constexpr (detail::is_same<T, half>()) return half2<K>(a, b);
  else return bf16_2<K>(a, b);
}
// One element through the paired instruction (the high lane idles). Not the 16-bit
// forms: ptxas 13.0 takes a 16-bit register an f16 instruction wrote for a float, and a
// later byte store of it (memcpy of a half) becomes a float-to-integer conversion.
template <Kind K, typename T>
static __device__ __forceinline__ T one(T a, T b) {
  return T{static_cast<uint16_t>(word<K, T>(a.bits, b.bits))};
}
// out[0], out[1] = a0 op b0, a1 op b1 in one instruction
template <Kind K, typename T>
static __device__ __forceinline__ void pair(T* out, T a0, T a1, T b0, T b1) {
  const uint32_t a = static_cast<uint32_t>(a0.bits) | (static_cast<uint32_t>(a1.bits) << 16);
  const uint32_t b = static_cast<uint32_t>(b0.bits) | (static_cast<uint32_t>(b1.bits) << 16);
  const uint32_t d = word<K, T>(a, b);
  *reinterpret_cast<uint32_t*>(out) = d;  // out is 4-byte aligned: the emitter pairs even indices
}
}  // namespace f16ops

template <typename T>
static __device__ __forceinline__ T add(T a, T b) {
  if constexpr (detail::is_f16<T>()) return f16ops::one<f16ops::kAdd>(a, b);
  else return cast<T>(detail::wrapping(a) + detail::wrapping(b));
}

template <typename T>
static __device__ __forceinline__ T sub(T a, T b) {
  if constexpr (detail::is_f16<T>()) return f16ops::one<f16ops::kSub>(a, b);
  else return cast<T>(detail::wrapping(a) - detail::wrapping(b));
}

template <typename T>
static __device__ __forceinline__ T mul(T a, T b) {
  if constexpr (detail::is_f16<T>()) return f16ops::one<f16ops::kMul>(a, b);
  else return cast<T>(detail::wrapping(a) * detail::wrapping(b));
}

// Two elements at once (the emitter pairs 16-bit float +, -, *).
template <typename T>
static __device__ __forceinline__ void add2(T* out, T a0, T a1, T b0, T b1) { f16ops::pair<f16ops::kAdd>(out, a0, a1, b0, b1); }
template <typename T>
static __device__ __forceinline__ void sub2(T* out, T a0, T a1, T b0, T b1) { f16ops::pair<f16ops::kSub>(out, a0, a1, b0, b1); }
template <typename T>
static __device__ __forceinline__ void mul2(T* out, T a0, T a1, T b0, T b1) { f16ops::pair<f16ops::kMul>(out, a0, a1, b0, b1); }

// IEEE negation only flips the sign bit, so 16-bit floats need no round trip.
template <typename T>
static __device__ __forceinline__ T neg(T a) {
  if constexpr (detail::is_f16<T>()) return T{static_cast<uint16_t>(a.bits ^ 0x8000u)};
  else return cast<T>(-detail::wrapping(a));
}

// INT_MIN / -1 overflows (undefined in C++); like the interpreter, x / -1 is
// -x (wrapping) and x % -1 is 0. Division by zero is the caller's to avoid.
template <typename T>
static __device__ __forceinline__ T div(T a, T b) {
  if constexpr (detail::is_int<T>() && detail::is_signed<T>() && sizeof(T) >= sizeof(int)) {
    if (b == T(-1)) return neg(a);
  }
  return cast<T>(detail::widen(a) / detail::widen(b));
}

template <typename T>
static __device__ __forceinline__ T mod(T a, T b) {
  typedef typename detail::compute_type<T>::type C;
  const C x = detail::widen(a), y = detail::widen(b);
  if constexpr (detail::is_same<C, float>()) {
    return cast<T>(fmodf(x, y));
  } else if constexpr (detail::is_same<C, double>()) {
    return cast<T>(fmod(x, y));
  } else {
    if constexpr (detail::is_int<T>() && detail::is_signed<T>() && sizeof(T) >= sizeof(int)) {
      if (b == T(-1)) return T(0);
    }
    return cast<T>(x % y);
  }
}

// NaN-propagating float max/min (a reduction's combine, as torch's max): one FMNMX.NAN.
static __device__ __forceinline__ float max_nan(float a, float b) {
  float y;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
static __device__ __forceinline__ float min_nan(float a, float b) {
  float y;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}

template <typename T>
static __device__ __forceinline__ T min_(T a, T b) {
  typedef typename detail::compute_type<T>::type C;
  const C x = detail::widen(a), y = detail::widen(b);
  if constexpr (detail::is_same<C, float>()) return cast<T>(fminf(x, y));
  else if constexpr (detail::is_same<C, double>()) return cast<T>(fmin(x, y));
  else return y < x ? b : a;
}

template <typename T>
static __device__ __forceinline__ T max_(T a, T b) {
  typedef typename detail::compute_type<T>::type C;
  const C x = detail::widen(a), y = detail::widen(b);
  if constexpr (detail::is_same<C, float>()) return cast<T>(fmaxf(x, y));
  else if constexpr (detail::is_same<C, double>()) return cast<T>(fmax(x, y));
  else return x < y ? b : a;
}

template <typename T>
static __device__ __forceinline__ bool lt(T a, T b) { return detail::widen(a) < detail::widen(b); }
template <typename T>
static __device__ __forceinline__ bool le(T a, T b) { return detail::widen(a) <= detail::widen(b); }
template <typename T>
static __device__ __forceinline__ bool gt(T a, T b) { return detail::widen(a) > detail::widen(b); }
template <typename T>
static __device__ __forceinline__ bool ge(T a, T b) { return detail::widen(a) >= detail::widen(b); }
template <typename T>
static __device__ __forceinline__ bool eq(T a, T b) { return detail::widen(a) == detail::widen(b); }
template <typename T>
static __device__ __forceinline__ bool ne(T a, T b) { return detail::widen(a) != detail::widen(b); }

// Integers and bool only (the builder refuses floats); bool ^ bool stays 0 or 1.
template <typename T>
static __device__ __forceinline__ T bit_xor(T a, T b) { return static_cast<T>(a ^ b); }

// Script scalars' x << n and x >> n (ir/dtype.h shift_int): x's type; a shift by n < 0 or
// n >= the width gives 0 (>> of a negative signed x: -1); C leaves those undefined.
template <typename T>
static __device__ __forceinline__ T shl(T x, T n) {
  // shifted as unsigned: a negative x << n is undefined in C++17
  return static_cast<unsigned long long>(n) >= sizeof(T) * 8 ? T(0)
                                                              : static_cast<T>(static_cast<unsigned long long>(x) << n);
}
template <typename T>
static __device__ __forceinline__ T shr(T x, T n) {
  if (static_cast<unsigned long long>(n) >= sizeof(T) * 8) {
    if constexpr (T(-1) < T(0)) return x < T(0) ? T(-1) : T(0);
    return T(0);
  }
  return static_cast<T>(x >> n);
}

template <typename T>
static __device__ __forceinline__ bool and_(T a, T b) { return cast<bool>(a) && cast<bool>(b); }
template <typename T>
static __device__ __forceinline__ bool or_(T a, T b) { return cast<bool>(a) || cast<bool>(b); }
template <typename T>
static __device__ __forceinline__ bool not_(T a) { return !cast<bool>(a); }

}  // namespace tilus

#endif  // TILUS_DEVICE_ARITH_CUH
