// Scalar and pointer data types of the IR. The types themselves are the table in
// ir/dtypes.def; this header turns it into ScalarKind, DataType and the row accessors.
#pragma once
#include <cstdint>
#include <string>

namespace tilus {

enum class ScalarKind : uint8_t {
#define TILUS_DTYPE(name, Enum, ...) Enum,
#include "ir/dtypes.def"
#undef TILUS_DTYPE
};

// Bool, Int, Float; signedness is a separate column of the table.
enum class TypeFamily : uint8_t { Bool, Int, Float };
const char* family_name(TypeFamily f);  // "bool", "int", "float"

// One row of ir/dtypes.def.
struct DTypeInfo {
  ScalarKind kind;
  const char* name;    // script name: "float16"
  int bits;
  TypeFamily family;
  bool is_signed;
  const char* c_type;  // the C++ type in generated CUDA: "tilus::half"
  const char* torch;   // "" where torch has no such type
  const char* numpy;   // "" where numpy has no such type
  int dlpack_code;     // -1 where DLPack has no such type
  int exponent_bits;   // floats only
  int mantissa_bits;   // floats only
  const char* aliases; // space-separated
  const char* short_name;  // Tilus 0.2's short script name ("f16"), "" where none
};

// The whole table, in ScalarKind order.
const DTypeInfo* dtype_table_begin();
const DTypeInfo* dtype_table_end();
const DTypeInfo& dtype_info(ScalarKind k);

// A scalar type, or a pointer to one (`~float16` in a script), or the untyped pointer
// `void_p` (Tilus 0.2's parameters that any tensor binds to). void_p addresses bytes: its
// kind is UInt8 and is_void sets it apart from ~uint8, so that a kernel reads memory
// through it only after global_view casts it to a typed pointer (make_cast).
struct DataType {
  ScalarKind kind = ScalarKind::Int32;
  bool is_pointer = false;
  bool is_void = false;  // only with is_pointer

  DataType() = default;
  constexpr DataType(ScalarKind k, bool ptr = false) : kind(k), is_pointer(ptr) {}
  static constexpr DataType void_pointer() {
    DataType t(ScalarKind::UInt8, true);
    t.is_void = true;
    return t;
  }

  DataType pointer_to() const { return DataType(kind, true); }
  // void_p's pointee is a byte: sizes through it are counted in bytes.
  DataType pointee() const { return DataType(kind, false); }

  bool is_float() const;
  bool is_integer() const;   // bool excluded
  bool is_signed() const;
  bool is_bool() const { return !is_pointer && kind == ScalarKind::Bool; }
  // The size of one element in bits (64 for pointers). There is no bytes(): a byte count
  // comes from whole_bytes or storage_bytes below, which say whether rounding is allowed.
  int bits() const;

  std::string name() const;   // "float16", "~float16"
  std::string c_name() const; // the C++ type in generated CUDA: "tilus::half", "tilus::half*"

  bool operator==(const DataType& o) const {
    return kind == o.kind && is_pointer == o.is_pointer && is_void == o.is_void;
  }
  bool operator!=(const DataType& o) const { return !(*this == o); }
};

// Sizes are bits; memory is allocated and addressed in bytes. These are the ways across.
//
// whole_bytes: a size that must be a whole number of bytes because memory is addressed
// with it (an element's address, the width of a vector access, a byte offset). A size
// that is not throws ScriptError("TypeError") naming `what`; nothing is truncated.
int64_t whole_bytes(int64_t bits, const char* what);
// The same for `count` elements of `t`; the message names the type.
int64_t whole_bytes(DataType t, int64_t count, const char* what);
// storage_bytes: the bytes an allocation holding `bits` bits takes (rounded up: three
// 4-bit elements take two bytes).
int64_t storage_bytes(int64_t bits);

// A script name ("float16", "~int32") or the torch / numpy name of a row ("bool").
DataType dtype_from_name(const std::string& name);  // throws ScriptError("ValueError")

// The common type of two operands of a scalar binary operation: floats win over
// integers, wider wins over narrower; the Python-style promotion the script expects.
DataType promote(DataType a, DataType b);

namespace dtypes {
#define TILUS_DTYPE(name, Enum, ...) constexpr DataType name{ScalarKind::Enum};
#include "ir/dtypes.def"
#undef TILUS_DTYPE
}  // namespace dtypes

// Every low-precision kind, for the switches over ScalarKind (no `default:` there):
// `TILUS_LOWP_INT_CASES: ...` and `TILUS_LOWP_FLOAT_CASES: ...`.
#define TILUS_LOWP_INT_CASES                                                                  \
  case ScalarKind::Int1b: case ScalarKind::Int2b: case ScalarKind::Int3b:                    \
  case ScalarKind::Int4b: case ScalarKind::Int5b: case ScalarKind::Int6b:                    \
  case ScalarKind::Int7b: case ScalarKind::UInt1b: case ScalarKind::UInt2b:                  \
  case ScalarKind::UInt3b: case ScalarKind::UInt4b: case ScalarKind::UInt5b:                 \
  case ScalarKind::UInt6b: case ScalarKind::UInt7b
#define TILUS_LOWP_FLOAT_CASES                                                                \
  case ScalarKind::Float3E1M1: case ScalarKind::Float4E1M2: case ScalarKind::Float4E2M1:     \
  case ScalarKind::Float5E1M3: case ScalarKind::Float5E2M2: case ScalarKind::Float5E3M1:     \
  case ScalarKind::Float6E2M3: case ScalarKind::Float6E3M2: case ScalarKind::Float6E4M1:     \
  case ScalarKind::Float7E2M4: case ScalarKind::Float7E3M3: case ScalarKind::Float7E4M2:     \
  case ScalarKind::Float7E5M1: case ScalarKind::Float8E4M3: case ScalarKind::Float8E5M2

// Wrap an integer to the width and signedness of `k` (bool: nonzero), as the hardware
// would; the builder's constant folding and the interpreter both use it.
inline int64_t wrap_int(int64_t v, ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return v != 0;
    case ScalarKind::Int8: return static_cast<int8_t>(v);
    case ScalarKind::Int16: return static_cast<int16_t>(v);
    case ScalarKind::Int32: return static_cast<int32_t>(v);
    case ScalarKind::UInt8: return static_cast<uint8_t>(v);
    case ScalarKind::UInt16: return static_cast<uint16_t>(v);
    case ScalarKind::UInt32: return static_cast<uint32_t>(v);
    TILUS_LOWP_INT_CASES: {  // the low `bits` bits, sign-extended for the signed ones
      const DTypeInfo& r = dtype_info(k);
      const uint64_t code = static_cast<uint64_t>(v) & ((uint64_t{1} << r.bits) - 1);
      const bool neg = r.is_signed && (code >> (r.bits - 1)) != 0;
      return neg ? static_cast<int64_t>(code) - (int64_t{1} << r.bits) : static_cast<int64_t>(code);
    }
    TILUS_LOWP_FLOAT_CASES:
    case ScalarKind::Int64:
    case ScalarKind::UInt64:
    case ScalarKind::Float16:
    case ScalarKind::BFloat16:
    case ScalarKind::Float32:
    case ScalarKind::TFloat32:
    case ScalarKind::Float64: return v;
  }
  return v;
}

// x << n (left) or x >> n of integers of kind k, as every tilus target computes them: the
// result has x's type; a shift by n < 0 or n >= the width gives 0 (>> of a negative signed
// x: -1, its sign); >> is arithmetic on signed x, logical on unsigned
// (codegen/device/arith.cuh shl / shr; the interpreter and constant folding call this).
inline int64_t shift_int(bool left, int64_t x, int64_t n, ScalarKind k) {
  const DTypeInfo& r = dtype_info(k);
  const int bits = r.bits;
  if (n < 0 || n >= bits) return left ? 0 : (r.is_signed && x < 0 ? -1 : 0);
  if (left) return wrap_int(static_cast<int64_t>(static_cast<uint64_t>(x) << n), k);
  if (r.is_signed) return x >> n;  // x holds the sign-extended value
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  return static_cast<int64_t>((static_cast<uint64_t>(x) & mask) >> n);
}

}  // namespace tilus
