#include "ir/dtype.h"

#include <vector>

#include "support/error.h"

namespace tilus {

namespace {
struct KindInfo {
  ScalarKind kind;
  const char* name;
  const char* c_name;
  int bits;
  bool is_float;
  bool is_signed;
};

const KindInfo kKinds[] = {
    {ScalarKind::Bool, "boolean", "bool", 8, false, false},
    {ScalarKind::Int8, "int8", "int8_t", 8, false, true},
    {ScalarKind::Int16, "int16", "int16_t", 16, false, true},
    {ScalarKind::Int32, "int32", "int32_t", 32, false, true},
    {ScalarKind::Int64, "int64", "int64_t", 64, false, true},
    {ScalarKind::UInt8, "uint8", "uint8_t", 8, false, false},
    {ScalarKind::UInt16, "uint16", "uint16_t", 16, false, false},
    {ScalarKind::UInt32, "uint32", "uint32_t", 32, false, false},
    {ScalarKind::UInt64, "uint64", "uint64_t", 64, false, false},
    {ScalarKind::Float16, "float16", "half", 16, true, true},
    {ScalarKind::BFloat16, "bfloat16", "bfloat16", 16, true, true},
    {ScalarKind::Float32, "float32", "float", 32, true, true},
    {ScalarKind::Float64, "float64", "double", 64, true, true},
};

const KindInfo& info(ScalarKind k) { return kKinds[static_cast<int>(k)]; }
}  // namespace

bool DataType::is_float() const { return !is_pointer && info(kind).is_float; }
bool DataType::is_integer() const {
  return !is_pointer && !info(kind).is_float && kind != ScalarKind::Bool;
}
bool DataType::is_signed() const { return !is_pointer && info(kind).is_signed; }
int DataType::bits() const { return is_pointer ? 64 : info(kind).bits; }

std::string DataType::name() const {
  return (is_pointer ? std::string("~") : std::string()) + info(kind).name;
}

std::string DataType::c_name() const {
  return std::string(info(kind).c_name) + (is_pointer ? "*" : "");
}

DataType dtype_from_name(const std::string& name) {
  std::string n = name;
  bool ptr = false;
  if (!n.empty() && n[0] == '~') {
    ptr = true;
    n = n.substr(1);
  }
  if (n == "bool") n = "boolean";
  for (const auto& k : kKinds)
    if (n == k.name) return DataType(k.kind, ptr);
  throw ScriptError("ValueError", cat("unknown data type '", name, "'"));
}

DataType promote(DataType a, DataType b) {
  TILUS_CHECK(!a.is_pointer && !b.is_pointer, "TypeError",
              "arithmetic on pointers is not supported (", a.name(), ", ", b.name(), ")");
  if (a == b) return a;
  if (a.is_float() != b.is_float()) return a.is_float() ? a : b;
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
  // same width, different signedness or float16 vs bfloat16
  if (a.is_float()) return dtypes::float32;
  return a.is_signed() ? b : a;  // unsigned wins at equal width, as in C
}

}  // namespace tilus
