// IEEE binary16 (fp16) and bfloat16 <-> float/double conversions.
//
// Our own, so the interpreter and tests do not depend on a compiler's _Float16 or on
// CUDA headers. Narrowing conversions round to nearest, ties to even, directly from
// double (going through float first would round twice). Overflow gives infinity,
// subnormals are exact. NaN handling follows the GPU, not the host FPU: a NaN converted
// to fp16 or bfloat16 (cvt.rn.{f16,bf16}.f32/.f64) becomes the canonical NaN 0x7FFF and
// an fp16 NaN widened (cvt.f32.f16) becomes the canonical 0x7FFFFFFF, dropping sign and
// payload (CUDA's cuda_fp16.hpp / cuda_bf16.hpp host emulations do the same). The sign
// is observable: a small float without NaN encodes a NaN as its largest magnitude with
// the NaN's sign (ir/small_floats.h), so float32 -> fp16 -> float4_e2m1 of a negative
// NaN must give +6 as on the GPU. Widening bfloat16 is a shift on both and keeps it.
#pragma once
#include <cstdint>
#include <cstring>

namespace tilus {

namespace detail {

inline uint64_t double_bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

inline double bits_double(uint64_t b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

// Round a double to a small binary float with `E` exponent bits and `M` mantissa bits
// (IEEE layout, bias 2^(E-1)-1) and return its bit pattern.
template <int E, int M>
inline uint16_t double_to_small(double d) {
  constexpr int kBias = (1 << (E - 1)) - 1;
  constexpr int kEmin = 1 - kBias;  // exponent of the smallest normal
  constexpr uint16_t kInf = static_cast<uint16_t>(((1u << E) - 1) << M);
  uint64_t x = double_bits(d);
  uint16_t sign = static_cast<uint16_t>((x >> 63) << (E + M));
  x &= ~(uint64_t{1} << 63);
  int exp = static_cast<int>(x >> 52);
  uint64_t mant = x & ((uint64_t{1} << 52) - 1);
  if (exp == 0x7ff) {
    if (mant == 0) return sign | kInf;
    return static_cast<uint16_t>(kInf | ((1u << M) - 1u));  // the canonical NaN
  }
  if (exp == 0) return sign;  // zero or a double subnormal: far below our range
  int e = exp - 1023;
  if (e > kBias) return sign | kInf;
  uint64_t full = mant | (uint64_t{1} << 52);  // 1.mant as an integer, scaled by 2^52
  int shift;
  uint32_t base;
  if (e >= kEmin) {
    shift = 52 - M;
    base = static_cast<uint32_t>(e + kBias) << M;
    full = mant;  // the implicit bit lives in the exponent field
  } else {
    shift = 52 - M + (kEmin - e);
    if (shift > 63) return sign;  // below half the smallest subnormal
    base = 0;
  }
  uint64_t kept = full >> shift;
  uint64_t rem = full & ((uint64_t{1} << shift) - 1);
  uint64_t half = uint64_t{1} << (shift - 1);
  uint32_t r = base + static_cast<uint32_t>(kept);
  if (rem > half || (rem == half && (r & 1))) ++r;  // a carry rolls into the exponent
  if (r >= kInf) r = kInf;
  return static_cast<uint16_t>(sign | r);
}

template <int E, int M>
inline double small_to_double(uint16_t h) {
  constexpr int kBias = (1 << (E - 1)) - 1;
  uint64_t sign = static_cast<uint64_t>(h >> (E + M)) << 63;
  int exp = (h >> M) & ((1 << E) - 1);
  uint64_t mant = h & ((1u << M) - 1);
  if (exp == (1 << E) - 1) {
    if (mant == 0) return bits_double(sign | (uint64_t{0x7ff} << 52));
    // NaN: positive, all payload bits set (float32 0x7FFFFFFF once narrowed).
    return bits_double(~uint64_t{0} >> 1);
  }
  if (exp == 0) {
    if (mant == 0) return bits_double(sign);
    // subnormal: mant * 2^(1 - bias - M), exact in double
    double v = static_cast<double>(mant);
    for (int i = 0; i < kBias - 1 + M; ++i) v *= 0.5;
    return sign ? -v : v;
  }
  return bits_double(sign | (static_cast<uint64_t>(exp - kBias + 1023) << 52) |
                     (mant << (52 - M)));
}

}  // namespace detail

inline uint16_t double_to_half(double d) { return detail::double_to_small<5, 10>(d); }
inline uint16_t float_to_half(float f) { return double_to_half(static_cast<double>(f)); }
inline double half_to_double(uint16_t h) { return detail::small_to_double<5, 10>(h); }
inline float half_to_float(uint16_t h) {
  // Hot in dot(): a direct bit decode to float.
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = mant ? 0x7fffffffu : sign | 0x7f800000u;  // NaN: canonical, as small_to_double
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// bfloat16 is the top half of a float32: 8 exponent bits, 7 mantissa bits.
inline uint16_t double_to_bfloat16(double d) { return detail::double_to_small<8, 7>(d); }
inline uint16_t float_to_bfloat16(float f) { return double_to_bfloat16(static_cast<double>(f)); }
inline float bfloat16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline double bfloat16_to_double(uint16_t h) { return bfloat16_to_float(h); }

}  // namespace tilus
