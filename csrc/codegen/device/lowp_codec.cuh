// The one definition of the small float formats (float3_e1m1 ... float8_e5m2): how a
// float32 value is encoded into a code and how a code decodes back. Plain integer code
// on float32 bit patterns, so the same text serves the CPU interpreter and the builder's
// constant folding (ir/small_floats.h includes this file) and generated CUDA
// (lowp.cuh, embedded for NVRTC as "tilus/lowp_codec.cuh"). docs/low_precision.md
// states the semantics; tests/lang/test_low_precision_types.py checks every code.
//
// A format is (e exponent bits, m mantissa bits, scheme); the sign is the top bit of a
// 1 + e + m bit code, the exponent bias is 2^(e-1) - 1, exponent field 0 holds the
// subnormals. The scheme says what the all-ones exponent means:
//   kFinite (Tilus 0.2's sub-byte floats): nothing special, every code is a finite
//            number; a NaN input encodes to the largest magnitude with the NaN's sign.
//   kE4M3   (OCP FP8 E4M3, "fn"): magnitude 0x7F is NaN, no infinities.
//   kIeee   (OCP FP8 E5M2): exponent all ones is inf (mantissa 0) or NaN.
// Encoding rounds to nearest, ties to even, in one step (subnormals included) and
// saturates: anything past the largest finite magnitude, infinities included, gives
// that magnitude with the input's sign. A NaN gives 0x7F for both FP8 formats (the
// canonical NaN of CUDA's __nv_fp8 conversions and of cvt.rn.satfinite).
#ifndef TILUS_DEVICE_LOWP_CODEC_CUH
#define TILUS_DEVICE_LOWP_CODEC_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TILUS_LOWP_HD __host__ __device__ __forceinline__
#else
#define TILUS_LOWP_HD inline
#endif

namespace tilus {
namespace lowp {

enum : int { kFinite = 0, kE4M3 = 1, kIeee = 2 };

// The largest finite magnitude code (the code without its sign bit).
TILUS_LOWP_HD constexpr unsigned max_magnitude(int e, int m, int scheme) {
  return scheme == kFinite ? (1u << (e + m)) - 1u
         : scheme == kE4M3 ? (1u << (e + m)) - 2u
                           : (1u << (e + m)) - 1u - (1u << m);
}

// float32 bits -> code (in the low 1 + e + m bits).
TILUS_LOWP_HD unsigned encode_f32(unsigned x, int e, int m, int scheme) {
  const unsigned all = (1u << (e + m)) - 1u;
  const unsigned sign = (x >> 31) ? all + 1u : 0u;
  const unsigned a = x & 0x7fffffffu;
  const unsigned maxmag = max_magnitude(e, m, scheme);
  if (a > 0x7f800000u) return scheme == kFinite ? (sign | maxmag) : all;  // NaN
  if (a == 0x7f800000u) return sign | maxmag;                             // +-inf saturates
  const int fexp = static_cast<int>(a >> 23);
  // float32 zeros and subnormals lie below half the smallest subnormal of every format.
  if (fexp == 0) return sign;
  const int emin = 2 - (1 << (e - 1));  // 1 - bias
  const int exp2 = fexp - 127;
  const unsigned sig = (a & 0x7fffffu) | 0x800000u;  // value = sig * 2^(exp2 - 23)
  // Bits of sig below the format's last mantissa bit at this exponent (more below the
  // normal range: the subnormal spacing is fixed at 2^(emin - m)).
  const int drop = 23 - m + (exp2 < emin ? emin - exp2 : 0);
  if (drop > 24) return sign;  // below half the smallest subnormal
  unsigned q = sig >> drop;
  const unsigned rem = sig & ((1u << drop) - 1u), half = 1u << (drop - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  // Normal: q is 1.mmm (2^m <= q <= 2^(m+1), the top value being the carry into the
  // next binade, which the addition below turns into the next exponent).
  unsigned mag = exp2 < emin ? q : (static_cast<unsigned>(exp2 - emin + 1) << m) + q - (1u << m);
  if (mag > maxmag) mag = maxmag;
  return sign | mag;
}

// code -> float32 bits (exact: every value of every format is a float32). A NaN code
// decodes to the float32 NaN 0x7fffffff.
TILUS_LOWP_HD unsigned decode_f32(unsigned code, int e, int m, int scheme) {
  const unsigned all = (1u << (e + m)) - 1u;
  const unsigned sign = ((code >> (e + m)) & 1u) << 31;
  const unsigned mag = code & all;
  const unsigned ef = mag >> m, mf = mag & ((1u << m) - 1u);
  if (scheme == kE4M3 && mag == all) return 0x7fffffffu;
  if (scheme == kIeee && ef == (1u << e) - 1u) return mf == 0 ? (sign | 0x7f800000u) : 0x7fffffffu;
  const int bias = (1 << (e - 1)) - 1;
  if (ef == 0) {
    if (mf == 0) return sign;
    // Subnormal mf * 2^(1 - bias - m): normal in float32; p is mf's top set bit.
    int p = 0;
    while ((mf >> (p + 1)) != 0) ++p;
    const unsigned fexp = static_cast<unsigned>(p + 1 - bias - m + 127);
    return sign | (fexp << 23) | ((mf - (1u << p)) << (23 - p));
  }
  const unsigned fexp = static_cast<unsigned>(static_cast<int>(ef) - bias + 127);
  return sign | (fexp << 23) | (mf << (23 - m));
}

}  // namespace lowp
}  // namespace tilus

#endif  // TILUS_DEVICE_LOWP_CODEC_CUH
