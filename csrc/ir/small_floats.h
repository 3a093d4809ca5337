// The low-precision types on the host: sub-byte integers (int1b..uint7b) and small
// floats (float3_e1m1 .. float8_e5m2). A value of one of them is its code, kept in the
// low `bits` bits of one byte (the interpreter's element, the register element of
// generated CUDA). The float formats themselves (rounding, saturation, NaN and inf) are
// defined once in codegen/device/lowp_codec.cuh, which generated CUDA includes too;
// docs/low_precision.md documents them.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "codegen/device/lowp_codec.cuh"
#include "ir/dtype.h"

namespace tilus {

// True for the types above (the rows of dtypes.def's low-precision block).
inline bool is_low_precision(ScalarKind k) {
  const DTypeInfo& r = dtype_info(k);
  return r.bits < 8 || (r.family == TypeFamily::Float && r.bits == 8);
}
inline bool is_low_precision(DataType t) { return !t.is_pointer && is_low_precision(t.kind); }
inline bool is_lowp_int(ScalarKind k) {
  return is_low_precision(k) && dtype_info(k).family == TypeFamily::Int;
}
inline bool is_lowp_float(ScalarKind k) {
  return is_low_precision(k) && dtype_info(k).family == TypeFamily::Float;
}

// The special-value scheme of a small float (lowp_codec.cuh): the two 8-bit formats are
// OCP FP8; the narrower ones are Tilus 0.2's all-finite formats.
inline int lowp_scheme(ScalarKind k) {
  const DTypeInfo& r = dtype_info(k);
  if (r.bits < 8) return lowp::kFinite;
  return r.exponent_bits == 4 ? lowp::kE4M3 : lowp::kIeee;
}

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// A small float's code -> its value (exact).
inline float lowp_decode(ScalarKind k, uint32_t code) {
  const DTypeInfo& r = dtype_info(k);
  return bits_float(lowp::decode_f32(code, r.exponent_bits, r.mantissa_bits, lowp_scheme(k)));
}
// A value -> the small float's code. Values are rounded to float32 first (exact for
// float16/bfloat16 and integers up to 2^24), then encoded: the GPU does the same.
inline uint8_t lowp_encode(ScalarKind k, double v) {
  const DTypeInfo& r = dtype_info(k);
  return static_cast<uint8_t>(lowp::encode_f32(float_bits(static_cast<float>(v)), r.exponent_bits,
                                               r.mantissa_bits, lowp_scheme(k)));
}

// Sub-byte integers: the value of a code (sign-extended for signed types) and the code
// of a value (its low `bits` bits: integer conversions wrap, as for int8).
inline int64_t lowp_int_value(ScalarKind k, uint32_t code) {
  const DTypeInfo& r = dtype_info(k);
  const uint32_t mask = (1u << r.bits) - 1u;
  code &= mask;
  if (r.is_signed && (code >> (r.bits - 1))) return static_cast<int64_t>(code) - (int64_t{1} << r.bits);
  return code;
}
inline uint8_t lowp_int_code(ScalarKind k, int64_t v) {
  return static_cast<uint8_t>(static_cast<uint64_t>(v) & ((1u << dtype_info(k).bits) - 1u));
}
// The range a float -> sub-byte integer conversion saturates to.
inline int64_t lowp_int_min(ScalarKind k) {
  const DTypeInfo& r = dtype_info(k);
  return r.is_signed ? -(int64_t{1} << (r.bits - 1)) : 0;
}
inline int64_t lowp_int_max(ScalarKind k) {
  const DTypeInfo& r = dtype_info(k);
  return r.is_signed ? (int64_t{1} << (r.bits - 1)) - 1 : (int64_t{1} << r.bits) - 1;
}

}  // namespace tilus
