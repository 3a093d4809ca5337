// Conversions between the scalar types of generated kernels.
//
// tilus::cast<To>(x) covers every pair among bool, int8..int64, uint8..uint64,
// half, bfloat16, float and double with the semantics the CPU interpreter
// implements (interp/buffer.h), so GPU and CPU runs agree bit for bit:
//   - integer -> integer wraps (two's complement), integer -> float rounds to
//     nearest even, anything -> bool is `x != 0` (NaN is true);
//   - float -> integer truncates toward zero as in C, and where C leaves the
//     result undefined it saturates at the target's range (PTX `cvt.rzi.sat`)
//     and NaN gives 0;
//   - every conversion into half/bfloat16 rounds once, to nearest even.
#ifndef TILUS_DEVICE_CONVERT_CUH
#define TILUS_DEVICE_CONVERT_CUH

#include "tilus/types.cuh"

#if __cplusplus < 201703L
#error "tilus device helpers need C++17 (if constexpr)"
#endif

namespace tilus {

// ---- half / bfloat16 <-> float ----------------------------------------------
// These are pure value conversions, so plain (non-volatile) asm: the compiler
// may drop or merge them like any arithmetic. PTX ISA "cvt": without .ftz,
// subnormals are kept; .rn is round to nearest even.
//
// Every cvt that produces a 16-bit float writes a scoped temporary and copies
// it out with mov.b16. Writing the asm output register directly is
// miscompiled by ptxas (seen with CUDA 13.0 on sm_90): when that register is
// later stored bytewise (st.u8, e.g. a memcpy of a half to an unaligned
// address), ptxas converts the value to an integer (F2I.U8.F16) instead of
// storing its low byte, even for bf16. The copy costs no instruction.

static __device__ __forceinline__ float to_float(half x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}

// bfloat16 is the upper 16 bits of a float, so widening is an exact shift.
static __device__ __forceinline__ float to_float(bfloat16 x) {
  return __uint_as_float(static_cast<uint32_t>(x.bits) << 16);
}

static __device__ __forceinline__ half to_half(float x) {
  half h;
  asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h.bits) : "f"(x));
  return h;
}

static __device__ __forceinline__ bfloat16 to_bfloat16(float x) {  // sm_80+
  bfloat16 h;
  asm("{ .reg .b16 t; cvt.rn.bf16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h.bits) : "f"(x));
  return h;
}

// ---- packed pairs (the f16x2 / bf16x2 registers of mma and ldmatrix) ---------
// PTX ISA "Packed Data Types": the element with the lower index lives in the
// lower 16 bits.

static __device__ __forceinline__ uint32_t pack_half2(half lo, half hi) {
  return static_cast<uint32_t>(lo.bits) | (static_cast<uint32_t>(hi.bits) << 16);
}

// cvt.rn.f16x2.f32 d, a, b puts a in the upper half and b in the lower one.
static __device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

static __device__ __forceinline__ uint32_t pack_bfloat162(bfloat16 lo, bfloat16 hi) {
  return static_cast<uint32_t>(lo.bits) | (static_cast<uint32_t>(hi.bits) << 16);
}

static __device__ __forceinline__ uint32_t pack_bfloat162(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

static __device__ __forceinline__ half half2_lo(uint32_t v) {
  return half{static_cast<uint16_t>(v)};
}
static __device__ __forceinline__ half half2_hi(uint32_t v) {
  return half{static_cast<uint16_t>(v >> 16)};
}
static __device__ __forceinline__ bfloat16 bfloat162_lo(uint32_t v) {
  return bfloat16{static_cast<uint16_t>(v)};
}
static __device__ __forceinline__ bfloat16 bfloat162_hi(uint32_t v) {
  return bfloat16{static_cast<uint16_t>(v >> 16)};
}

namespace detail {

// Type traits as enums and constexpr functions, not variables: NVRTC runs with
// -default-device, which would turn namespace-scope variables (and static data
// members) into __device__ globals of every module.
template <typename A, typename B> struct same_type { enum : bool { value = false }; };
template <typename A> struct same_type<A, A> { enum : bool { value = true }; };

template <typename A, typename B>
__host__ __device__ constexpr bool is_same() { return same_type<A, B>::value; }
template <typename T>
__host__ __device__ constexpr bool is_f16() { return is_same<T, half>() || is_same<T, bfloat16>(); }
template <typename T>
__host__ __device__ constexpr bool is_fp() { return is_same<T, float>() || is_same<T, double>(); }
// cast<> accepts only the scalar types above, so anything else is an integer.
template <typename T>
__host__ __device__ constexpr bool is_int() {
  return !is_f16<T>() && !is_fp<T>() && !is_same<T, bool>() && !is_same<T, tfloat32>();
}
template <typename T>
__host__ __device__ constexpr bool is_signed() {  // of integers; false for the rest
  if constexpr (is_int<T>()) return T(-1) < T(0);
  else return false;
}

// float/double -> 32/64-bit integer: PTX cvt.rzi.sat (truncate toward zero,
// saturate at the range).
static __device__ __forceinline__ int32_t cvt_s32(float x) {
  int32_t r; asm("cvt.rzi.sat.s32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r;
}
static __device__ __forceinline__ int32_t cvt_s32(double x) {
  int32_t r; asm("cvt.rzi.sat.s32.f64 %0, %1;" : "=r"(r) : "d"(x)); return r;
}
static __device__ __forceinline__ uint32_t cvt_u32(float x) {
  uint32_t r; asm("cvt.rzi.sat.u32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r;
}
static __device__ __forceinline__ uint32_t cvt_u32(double x) {
  uint32_t r; asm("cvt.rzi.sat.u32.f64 %0, %1;" : "=r"(r) : "d"(x)); return r;
}
static __device__ __forceinline__ int64_t cvt_s64(float x) {
  int64_t r; asm("cvt.rzi.sat.s64.f32 %0, %1;" : "=l"(r) : "f"(x)); return r;
}
static __device__ __forceinline__ int64_t cvt_s64(double x) {
  int64_t r; asm("cvt.rzi.sat.s64.f64 %0, %1;" : "=l"(r) : "d"(x)); return r;
}
static __device__ __forceinline__ uint64_t cvt_u64(float x) {
  uint64_t r; asm("cvt.rzi.sat.u64.f32 %0, %1;" : "=l"(r) : "f"(x)); return r;
}
static __device__ __forceinline__ uint64_t cvt_u64(double x) {
  uint64_t r; asm("cvt.rzi.sat.u64.f64 %0, %1;" : "=l"(r) : "d"(x)); return r;
}

// 8- and 16-bit targets go through 32 bits and clamp, so they saturate at
// their own range rather than wrapping the 32-bit result.
// NaN is mapped to 0 here: the hardware conversion gives INT_MIN for NaN on some
// paths (seen on sm_90 for f64 sources and for 64-bit results).
template <typename To, typename F>
static __device__ __forceinline__ To float_to_int(F x) {
  if (x != x) return To(0);
  if constexpr (sizeof(To) == 8) {
    if constexpr (is_signed<To>()) return static_cast<To>(cvt_s64(x));
    else return static_cast<To>(cvt_u64(x));
  } else if constexpr (is_signed<To>()) {
    int32_t r = cvt_s32(x);
    if constexpr (sizeof(To) < 4) {
      constexpr int32_t hi = (1 << (8 * sizeof(To) - 1)) - 1, lo = -hi - 1;
      r = r < lo ? lo : (r > hi ? hi : r);
    }
    return static_cast<To>(r);
  } else {
    uint32_t r = cvt_u32(x);
    if constexpr (sizeof(To) < 4) {
      constexpr uint32_t hi = (1u << (8 * sizeof(To))) - 1u;
      r = r > hi ? hi : r;
    }
    return static_cast<To>(r);
  }
}

// Integers -> half: cvt rounds the exact integer once (PTX ISA "cvt").
template <typename I>
static __device__ __forceinline__ half int_to_half(I x) {
  half h;  // (the mov.b16 copy: see "half / bfloat16 <-> float" above)
  if constexpr (is_signed<I>() && sizeof(I) <= 4)
    asm("{ .reg .b16 t; cvt.rn.f16.s32 t, %1; mov.b16 %0, t; }"
        : "=h"(h.bits) : "r"(static_cast<int32_t>(x)));
  else if constexpr (is_signed<I>())
    asm("{ .reg .b16 t; cvt.rn.f16.s64 t, %1; mov.b16 %0, t; }"
        : "=h"(h.bits) : "l"(static_cast<int64_t>(x)));
  else if constexpr (sizeof(I) <= 4)
    asm("{ .reg .b16 t; cvt.rn.f16.u32 t, %1; mov.b16 %0, t; }"
        : "=h"(h.bits) : "r"(static_cast<uint32_t>(x)));
  else
    asm("{ .reg .b16 t; cvt.rn.f16.u64 t, %1; mov.b16 %0, t; }"
        : "=h"(h.bits) : "l"(static_cast<uint64_t>(x)));
  return h;
}

static __device__ __forceinline__ half double_to_half(double x) {
  half h;
  asm("{ .reg .b16 t; cvt.rn.f16.f64 t, %1; mov.b16 %0, t; }" : "=h"(h.bits) : "d"(x));
  return h;
}

// On sm_80 PTX converts to bf16 only from f32, and going through a rounded
// float would round twice. Instead truncate to float and set the last bit when
// anything was cut off ("round to odd"): float keeps 16 more bits than bfloat16,
// so rounding that float to nearest even once more gives the correctly rounded
// result (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums:
// proved algorithms using rounding to odd", 2008).
static __device__ __forceinline__ float or_sticky(float truncated, bool inexact) {
  return inexact ? __uint_as_float(__float_as_uint(truncated) | 1u) : truncated;
}

static __device__ __forceinline__ bfloat16 double_to_bfloat16(double x) {
  float f;
  asm("cvt.rz.f32.f64 %0, %1;" : "=f"(f) : "d"(x));
  return to_bfloat16(or_sticky(f, static_cast<double>(f) != x));  // NaN stays NaN
}

template <typename I>
static __device__ __forceinline__ bfloat16 int_to_bfloat16(I x) {
  float f;
  if constexpr (is_signed<I>()) {
    const int64_t v = static_cast<int64_t>(x);
    asm("cvt.rz.f32.s64 %0, %1;" : "=f"(f) : "l"(v));
    return to_bfloat16(or_sticky(f, cvt_s64(f) != v));
  } else {
    const uint64_t v = static_cast<uint64_t>(x);
    asm("cvt.rz.f32.u64 %0, %1;" : "=f"(f) : "l"(v));
    return to_bfloat16(or_sticky(f, cvt_u64(f) != v));
  }
}

}  // namespace detail

// cast<To>(x): see the semantics at the top of this file.
// The low-precision types (lowp.cuh) convert through lowp_cast, declared here so that
// cast<> covers them too (scalar cast expressions, constants, register initialisers).
namespace detail {
template <typename T> struct lowp_traits { enum : int { kind = 0 }; };
template <typename T>
__host__ __device__ constexpr bool is_lowp() { return lowp_traits<T>::kind != 0; }
}  // namespace detail
template <typename To, typename From>
static __device__ __forceinline__ To lowp_cast(From x);

template <typename To, typename From>
static __device__ __forceinline__ To cast(From x) {
  using namespace detail;
  if constexpr (is_same<To, From>()) {
    return x;
  } else if constexpr (is_lowp<To>() || is_lowp<From>()) {
    return lowp_cast<To>(x);
  } else if constexpr (is_same<From, tfloat32>()) {
    return cast<To>(x.value);  // a tf32 value is a float exactly
  } else if constexpr (is_same<To, tfloat32>()) {
    // Round a float (any other type goes through float first) to 10 mantissa bits,
    // nearest with ties away from zero, as tensor cores expect their tf32 operands.
    uint32_t bits;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(cast<float>(x)));
    return tfloat32{__uint_as_float(bits)};
  } else if constexpr (is_f16<From>()) {
    return cast<To>(to_float(x));  // widening is exact, so this rounds once
  } else if constexpr (is_same<To, half>()) {
    if constexpr (is_same<From, float>()) return to_half(x);
    else if constexpr (is_same<From, double>()) return double_to_half(x);
    else if constexpr (is_same<From, bool>()) return to_half(x ? 1.0f : 0.0f);
    else return int_to_half(x);
  } else if constexpr (is_same<To, bfloat16>()) {
    if constexpr (is_same<From, float>()) return to_bfloat16(x);
    else if constexpr (is_same<From, double>()) return double_to_bfloat16(x);
    else if constexpr (is_same<From, bool>()) return to_bfloat16(x ? 1.0f : 0.0f);
    else return int_to_bfloat16(x);
  } else if constexpr (is_same<To, bool>()) {
    return x != From(0);
  } else if constexpr (is_int<To>() && is_fp<From>()) {
    return float_to_int<To>(x);
  } else {
    // int <-> int wraps; int -> float and double <-> float round to nearest even.
    return static_cast<To>(x);
  }
}

}  // namespace tilus

#endif  // TILUS_DEVICE_CONVERT_CUH
