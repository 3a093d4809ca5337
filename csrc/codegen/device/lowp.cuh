// Low-precision element types of generated kernels and their conversions.
//
// A register element of a sub-byte integer (int1b..uint7b) or small float
// (float3_e1m1 .. float8_e5m2) is one byte holding the code in its low bits, as in
// the CPU interpreter. lowp_cast<To>(x) converts between these and every other scalar
// type with the interpreter's semantics (interp/buffer.h, ir/small_floats.h):
//   - small float -> anything: decode exactly to float, then cast<To>(float);
//   - anything -> small float: cast<float>(x) (rounds once), then encode
//     (lowp_codec.cuh: round to nearest even, saturating);
//   - sub-byte int -> anything: its value as an int32, then cast<To>;
//   - integer/bool -> sub-byte int: the low bits (wraps, as int8 does);
//     float -> sub-byte int: truncate toward zero, saturate at the range, NaN gives 0.
// FP8 on sm_89+ uses the hardware conversions (cvt.rn.satfinite.{e4m3,e5m2}x2.f32 and
// cvt.rn.f16x2.{e4m3,e5m2}x2), whose results are those of the codec.
#ifndef TILUS_DEVICE_LOWP_CUH
#define TILUS_DEVICE_LOWP_CUH

#include "tilus/types.cuh"
#include "tilus/convert.cuh"
#include "tilus/lowp_codec.cuh"

namespace tilus {

template <int Bits, bool Signed>
struct lowp_int {
  uint8_t bits;
};
// E exponent bits, M mantissa bits, Scheme: lowp::kFinite / kE4M3 / kIeee.
template <int E, int M, int Scheme>
struct lowp_float {
  uint8_t bits;
};

namespace detail {  // lowp_traits' primary template is in convert.cuh
template <int B, bool S> struct lowp_traits<lowp_int<B, S>> {
  enum : int { kind = 1, bits = B, is_signed = S };
};
template <int E, int M, int S> struct lowp_traits<lowp_float<E, M, S>> {
  enum : int { kind = 2, e = E, m = M, scheme = S };
};
template <typename T>
__host__ __device__ constexpr bool is_lowp_int() { return lowp_traits<T>::kind == 1; }
template <typename T>
__host__ __device__ constexpr bool is_lowp_float() { return lowp_traits<T>::kind == 2; }

template <int E, int M, int S>
static __device__ __forceinline__ float lowp_to_float(lowp_float<E, M, S> x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (S != lowp::kFinite) {
    // The f16 result is exact (both formats fit in half), so widening keeps it exact.
    uint32_t h2;
    const uint16_t in = x.bits;
    if constexpr (S == lowp::kE4M3)
      asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(in));
    else
      asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(in));
    return to_float(half2_lo(h2));
  }
#endif
  return __uint_as_float(lowp::decode_f32(x.bits, E, M, S));
}

template <typename To>
static __device__ __forceinline__ To float_to_lowp(float f) {
  using T = lowp_traits<To>;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (T::scheme != lowp::kFinite) {
    uint16_t r;
    if constexpr (T::scheme == lowp::kE4M3)
      asm("{ .reg .b16 t; cvt.rn.satfinite.e4m3x2.f32 t, %1, %2; mov.b16 %0, t; }"
          : "=h"(r) : "f"(0.0f), "f"(f));
    else
      asm("{ .reg .b16 t; cvt.rn.satfinite.e5m2x2.f32 t, %1, %2; mov.b16 %0, t; }"
          : "=h"(r) : "f"(0.0f), "f"(f));
    return To{static_cast<uint8_t>(r & 0xff)};
  }
#endif
  return To{static_cast<uint8_t>(lowp::encode_f32(__float_as_uint(f), T::e, T::m, T::scheme))};
}
}  // namespace detail

template <typename To, typename From>
static __device__ __forceinline__ To lowp_cast(From x) {
  using namespace detail;
  if constexpr (is_same<To, From>()) {
    return x;
  } else if constexpr (is_lowp_float<From>()) {
    const float f = lowp_to_float(x);
    if constexpr (is_lowp_float<To>() || is_lowp_int<To>()) return lowp_cast<To>(f);
    else return cast<To>(f);
  } else if constexpr (is_lowp_int<From>()) {
    using T = lowp_traits<From>;
    int32_t v = x.bits;
    if constexpr (T::is_signed) v = (v ^ (1 << (T::bits - 1))) - (1 << (T::bits - 1));
    if constexpr (is_lowp_float<To>() || is_lowp_int<To>()) return lowp_cast<To>(v);
    else return cast<To>(v);
  } else if constexpr (is_lowp_float<To>()) {
    return float_to_lowp<To>(cast<float>(x));
  } else {  // To is a sub-byte integer, From a plain scalar
    using T = lowp_traits<To>;
    constexpr uint32_t mask = (1u << T::bits) - 1u;
    if constexpr (is_fp<From>() || is_f16<From>()) {
      constexpr int32_t lo = T::is_signed ? -(1 << (T::bits - 1)) : 0;
      constexpr int32_t hi = T::is_signed ? (1 << (T::bits - 1)) - 1 : (1 << T::bits) - 1;
      int32_t v = cast<int32_t>(x);  // truncates, saturates at int32, NaN gives 0
      v = v < lo ? lo : (v > hi ? hi : v);
      return To{static_cast<uint8_t>(static_cast<uint32_t>(v) & mask)};
    } else if constexpr (is_same<From, bool>()) {
      return To{static_cast<uint8_t>(x ? 1u : 0u)};
    } else {
      return To{static_cast<uint8_t>(static_cast<uint64_t>(x) & mask)};
    }
  }
}

}  // namespace tilus

#endif  // TILUS_DEVICE_LOWP_CUH
