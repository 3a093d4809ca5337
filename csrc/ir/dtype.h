// Scalar and pointer data types of the IR.
#pragma once
#include <cstdint>
#include <string>

namespace tilus {

enum class ScalarKind : uint8_t {
  Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64,
  Float16, BFloat16, Float32, Float64,
};

// A scalar type, or a pointer to one (`~float16` in a script).
struct DataType {
  ScalarKind kind = ScalarKind::Int32;
  bool is_pointer = false;

  DataType() = default;
  constexpr DataType(ScalarKind k, bool ptr = false) : kind(k), is_pointer(ptr) {}

  DataType pointer_to() const { return DataType(kind, true); }
  DataType pointee() const { return DataType(kind, false); }

  bool is_float() const;
  bool is_integer() const;   // bool excluded
  bool is_signed() const;
  bool is_bool() const { return !is_pointer && kind == ScalarKind::Bool; }
  int bits() const;          // 64 for pointers
  int bytes() const { return bits() == 1 ? 1 : bits() / 8; }

  std::string name() const;   // "float16", "~float16"
  std::string c_name() const; // "half", "half*"

  bool operator==(const DataType& o) const { return kind == o.kind && is_pointer == o.is_pointer; }
  bool operator!=(const DataType& o) const { return !(*this == o); }
};

DataType dtype_from_name(const std::string& name);  // throws ScriptError("ValueError")

// The common type of two operands of a scalar binary operation: floats win over
// integers, wider wins over narrower; the Python-style promotion the script expects.
DataType promote(DataType a, DataType b);

namespace dtypes {
constexpr DataType boolean{ScalarKind::Bool};
constexpr DataType int8{ScalarKind::Int8};
constexpr DataType int16{ScalarKind::Int16};
constexpr DataType int32{ScalarKind::Int32};
constexpr DataType int64{ScalarKind::Int64};
constexpr DataType uint8{ScalarKind::UInt8};
constexpr DataType uint16{ScalarKind::UInt16};
constexpr DataType uint32{ScalarKind::UInt32};
constexpr DataType uint64{ScalarKind::UInt64};
constexpr DataType float16{ScalarKind::Float16};
constexpr DataType bfloat16{ScalarKind::BFloat16};
constexpr DataType float32{ScalarKind::Float32};
constexpr DataType float64{ScalarKind::Float64};
}  // namespace dtypes

}  // namespace tilus
