// Typed access to tensor elements stored in their native dtype.
//
// The interpreter keeps every tensor as bytes laid out exactly as on the GPU (fp16 and
// bf16 as 16-bit patterns), computes in double (floats) or int64 (integers, bool,
// pointers) and rounds or wraps on every store, so results match the device bit for
// bit where the device is exact.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ir/dtype.h"
#include "ir/small_floats.h"
#include "support/float16.h"

namespace tilus::interp {

template <typename T>
inline T load_raw(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
inline void store_raw(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

using tilus::wrap_int;  // ir/dtype.h

// float32 -> tfloat32 as the GPU's cvt.rna.tf32.f32 does: keep 10 mantissa bits, round to
// nearest with ties away from zero (adding half an ulp to the magnitude's bit pattern
// carries into the exponent where it must, up to infinity), and clear the 13 dropped
// bits. Infinities pass unchanged; NaN stays NaN.
inline float round_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & 0xffffe000u;
  else if (bits & 0x007fffffu) bits |= 0x00400000u;  // NaN: quiet, payload kept
  std::memcpy(&x, &bits, 4);
  return x;
}

// Round a double to the precision of float kind `k`.
inline double round_float(double v, ScalarKind k) {
  switch (k) {
    case ScalarKind::Float16: return half_to_double(double_to_half(v));
    case ScalarKind::BFloat16: return bfloat16_to_double(double_to_bfloat16(v));
    case ScalarKind::Float32: return static_cast<double>(static_cast<float>(v));
    case ScalarKind::TFloat32: return static_cast<double>(round_tf32(static_cast<float>(v)));
    TILUS_LOWP_FLOAT_CASES: return lowp_decode(k, lowp_encode(k, v));
    TILUS_LOWP_INT_CASES:
    case ScalarKind::Float64:
    case ScalarKind::Bool:
    case ScalarKind::Int8:
    case ScalarKind::Int16:
    case ScalarKind::Int32:
    case ScalarKind::Int64:
    case ScalarKind::UInt8:
    case ScalarKind::UInt16:
    case ScalarKind::UInt32:
    case ScalarKind::UInt64: return v;
  }
  return v;
}

// Float -> integer as the GPU's cvt.rzi does: truncate toward zero, saturate at the
// target's range, NaN gives 0. (C leaves out-of-range conversions undefined.)
inline int64_t float_to_int(double v, ScalarKind k) {
  if (std::isnan(v)) return 0;
  if (k == ScalarKind::Bool) return v != 0.0;
  double t = std::trunc(v);
  double lo = 0.0, hi = 0.0;
  switch (k) {
    case ScalarKind::Int8: lo = -128.0, hi = 127.0; break;
    case ScalarKind::Int16: lo = -32768.0, hi = 32767.0; break;
    case ScalarKind::Int32: lo = -2147483648.0, hi = 2147483647.0; break;
    case ScalarKind::UInt8: lo = 0.0, hi = 255.0; break;
    case ScalarKind::UInt16: lo = 0.0, hi = 65535.0; break;
    case ScalarKind::UInt32: lo = 0.0, hi = 4294967295.0; break;
    TILUS_LOWP_INT_CASES:
      lo = static_cast<double>(lowp_int_min(k)), hi = static_cast<double>(lowp_int_max(k));
      break;
    case ScalarKind::UInt64:
      if (t <= 0.0) return 0;
      if (t >= 18446744073709551616.0) return static_cast<int64_t>(~uint64_t{0});
      return static_cast<int64_t>(static_cast<uint64_t>(t));
    case ScalarKind::Int64:
    case ScalarKind::Bool:  // returned above
    case ScalarKind::Float16:
    case ScalarKind::BFloat16:
    case ScalarKind::Float32:
    case ScalarKind::TFloat32:
    case ScalarKind::Float64:
    TILUS_LOWP_FLOAT_CASES:
      if (t <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      if (t >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
      return static_cast<int64_t>(t);
  }
  if (t < lo) t = lo;
  if (t > hi) t = hi;
  return static_cast<int64_t>(t);
}

inline bool is_float_kind(ScalarKind k) {
  return dtype_info(k).family == TypeFamily::Float;
}

// The interpreter reads and writes elements one at a time through byte pointers, so its
// elements are whole bytes: a low-precision element (sub-byte integers, small floats) is
// one byte holding its code in the low bits. Packed sub-byte memory never reaches here:
// global views and loads of those types are refused where the script names them.
inline int element_bytes(DataType t) {
  if (is_low_precision(t)) return 1;
  return static_cast<int>(whole_bytes(t, 1, "the CPU interpreter addresses elements one by one"));
}
inline int kind_bytes(ScalarKind k) { return element_bytes(DataType(k)); }

// Any element as a double (integers converted exactly where they fit).
inline double load_f(const void* p, ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return load_raw<uint8_t>(p) != 0;
    case ScalarKind::Int8: return load_raw<int8_t>(p);
    case ScalarKind::Int16: return load_raw<int16_t>(p);
    case ScalarKind::Int32: return load_raw<int32_t>(p);
    case ScalarKind::Int64: return static_cast<double>(load_raw<int64_t>(p));
    case ScalarKind::UInt8: return load_raw<uint8_t>(p);
    case ScalarKind::UInt16: return load_raw<uint16_t>(p);
    case ScalarKind::UInt32: return load_raw<uint32_t>(p);
    case ScalarKind::UInt64: return static_cast<double>(load_raw<uint64_t>(p));
    case ScalarKind::Float16: return half_to_double(load_raw<uint16_t>(p));
    case ScalarKind::BFloat16: return bfloat16_to_double(load_raw<uint16_t>(p));
    case ScalarKind::Float32:
    case ScalarKind::TFloat32: return load_raw<float>(p);  // tf32 is stored as a float
    case ScalarKind::Float64: return load_raw<double>(p);
    TILUS_LOWP_INT_CASES: return static_cast<double>(lowp_int_value(k, load_raw<uint8_t>(p)));
    TILUS_LOWP_FLOAT_CASES: return lowp_decode(k, load_raw<uint8_t>(p));
  }
  return 0.0;
}

// Any element as an int64 (uint64 keeps its bits; floats truncate toward zero).
inline int64_t load_i(const void* p, ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return load_raw<uint8_t>(p) != 0;
    case ScalarKind::Int8: return load_raw<int8_t>(p);
    case ScalarKind::Int16: return load_raw<int16_t>(p);
    case ScalarKind::Int32: return load_raw<int32_t>(p);
    case ScalarKind::Int64: return load_raw<int64_t>(p);
    case ScalarKind::UInt8: return load_raw<uint8_t>(p);
    case ScalarKind::UInt16: return load_raw<uint16_t>(p);
    case ScalarKind::UInt32: return load_raw<uint32_t>(p);
    case ScalarKind::UInt64: return static_cast<int64_t>(load_raw<uint64_t>(p));
    TILUS_LOWP_INT_CASES: return lowp_int_value(k, load_raw<uint8_t>(p));
    TILUS_LOWP_FLOAT_CASES:
    case ScalarKind::Float16:
    case ScalarKind::BFloat16:
    case ScalarKind::Float32:
    case ScalarKind::TFloat32:
    case ScalarKind::Float64: return float_to_int(load_f(p, k), ScalarKind::Int64);
  }
  return 0;
}

// Store an integer value into an element of kind `k` (wraps; converts to floats).
inline void store_i(void* p, ScalarKind k, int64_t v) {
  switch (k) {
    case ScalarKind::Bool: store_raw<uint8_t>(p, v != 0); return;
    case ScalarKind::Int8:
    case ScalarKind::UInt8: store_raw<uint8_t>(p, static_cast<uint8_t>(v)); return;
    case ScalarKind::Int16:
    case ScalarKind::UInt16: store_raw<uint16_t>(p, static_cast<uint16_t>(v)); return;
    case ScalarKind::Int32:
    case ScalarKind::UInt32: store_raw<uint32_t>(p, static_cast<uint32_t>(v)); return;
    case ScalarKind::Int64:
    case ScalarKind::UInt64: store_raw<int64_t>(p, v); return;
    case ScalarKind::Float16: store_raw<uint16_t>(p, double_to_half(static_cast<double>(v))); return;
    case ScalarKind::BFloat16:
      store_raw<uint16_t>(p, double_to_bfloat16(static_cast<double>(v)));
      return;
    case ScalarKind::Float32: store_raw<float>(p, static_cast<float>(v)); return;
    case ScalarKind::TFloat32: store_raw<float>(p, round_tf32(static_cast<float>(v))); return;
    case ScalarKind::Float64: store_raw<double>(p, static_cast<double>(v)); return;
    TILUS_LOWP_INT_CASES: store_raw<uint8_t>(p, lowp_int_code(k, v)); return;
    // An integer rounds to float32 once (as cast<float> does on the GPU), then encodes.
    TILUS_LOWP_FLOAT_CASES: store_raw<uint8_t>(p, lowp_encode(k, static_cast<float>(v))); return;
  }
}

// Store a double into an element of kind `k` (rounds to nearest even; integers
// truncate toward zero and saturate).
inline void store_f(void* p, ScalarKind k, double v) {
  switch (k) {
    case ScalarKind::Float16: store_raw<uint16_t>(p, double_to_half(v)); return;
    case ScalarKind::BFloat16: store_raw<uint16_t>(p, double_to_bfloat16(v)); return;
    case ScalarKind::Float32: store_raw<float>(p, static_cast<float>(v)); return;
    case ScalarKind::TFloat32: store_raw<float>(p, round_tf32(static_cast<float>(v))); return;
    case ScalarKind::Float64: store_raw<double>(p, v); return;
    TILUS_LOWP_FLOAT_CASES: store_raw<uint8_t>(p, lowp_encode(k, v)); return;
    TILUS_LOWP_INT_CASES:
    case ScalarKind::Bool:
    case ScalarKind::Int8:
    case ScalarKind::Int16:
    case ScalarKind::Int32:
    case ScalarKind::Int64:
    case ScalarKind::UInt8:
    case ScalarKind::UInt16:
    case ScalarKind::UInt32:
    case ScalarKind::UInt64: store_i(p, k, float_to_int(v, k)); return;
  }
}

// Fill `n` elements with a value that makes use of uninitialised memory visible:
// NaN for floats, the byte 0x5A for integers and bool.
inline void poison(void* p, ScalarKind k, int64_t n) {
  int b = kind_bytes(k);
  auto* bytes = static_cast<uint8_t*>(p);
  switch (k) {
    case ScalarKind::Float16:
      for (int64_t i = 0; i < n; ++i) store_raw<uint16_t>(bytes + 2 * i, 0x7e5a);
      return;
    case ScalarKind::BFloat16:
      for (int64_t i = 0; i < n; ++i) store_raw<uint16_t>(bytes + 2 * i, 0x7fda);
      return;
    case ScalarKind::Float32:
    case ScalarKind::TFloat32:
      for (int64_t i = 0; i < n; ++i) store_raw<uint32_t>(bytes + 4 * i, 0x7fc05a5au);
      return;
    case ScalarKind::Float64:
      for (int64_t i = 0; i < n; ++i)
        store_raw<uint64_t>(bytes + 8 * i, 0x7ff8005a5a5a5a5aull);
      return;
    case ScalarKind::Bool:
    case ScalarKind::Int8:
    case ScalarKind::Int16:
    case ScalarKind::Int32:
    case ScalarKind::Int64:
    case ScalarKind::UInt8:
    case ScalarKind::UInt16:
    case ScalarKind::UInt32:
    case ScalarKind::UInt64: std::memset(p, 0x5a, static_cast<size_t>(n) * b); return;
    // FP8: the NaN 0x7f; narrower types have no NaN: the code 0x5a cut to their width.
    TILUS_LOWP_INT_CASES:
    TILUS_LOWP_FLOAT_CASES: {
      const int bits = dtype_info(k).bits;
      std::memset(p, bits == 8 ? 0x7f : 0x5a & ((1 << bits) - 1), static_cast<size_t>(n));
      return;
    }
  }
}

}  // namespace tilus::interp
