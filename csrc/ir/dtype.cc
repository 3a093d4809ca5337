#include "ir/dtype.h"

#include <iterator>

#include "support/error.h"

namespace tilus {

namespace {
constexpr DTypeInfo kTable[] = {
#define TILUS_DTYPE(name, Enum, bits, family, is_signed, c_type, torch, numpy, dlpack, exp, mant, \
                    aliases, short_name)                                                          \
  {ScalarKind::Enum, #name, bits, TypeFamily::family, is_signed, c_type, torch, numpy, dlpack, exp,  \
   mant, aliases, short_name},
#include "ir/dtypes.def"
#undef TILUS_DTYPE
};

// kTable and ScalarKind list the same table in the same order, so a kind is its row's index.
constexpr int kRows = static_cast<int>(std::size(kTable));
}  // namespace

const DTypeInfo* dtype_table_begin() { return kTable; }
const DTypeInfo* dtype_table_end() { return kTable + kRows; }
const DTypeInfo& dtype_info(ScalarKind k) { return kTable[static_cast<int>(k)]; }

const char* family_name(TypeFamily f) {
  switch (f) {
    case TypeFamily::Bool: return "bool";
    case TypeFamily::Int: return "int";
    case TypeFamily::Float: return "float";
  }
  TILUS_ASSERT(false, "unknown TypeFamily ", static_cast<int>(f));
  return "";
}

bool DataType::is_float() const { return !is_pointer && dtype_info(kind).family == TypeFamily::Float; }
bool DataType::is_integer() const { return !is_pointer && dtype_info(kind).family == TypeFamily::Int; }
bool DataType::is_signed() const { return !is_pointer && dtype_info(kind).is_signed; }
int DataType::bits() const { return is_pointer ? 64 : dtype_info(kind).bits; }

std::string DataType::name() const {
  if (is_void) return "void_p";
  return (is_pointer ? std::string("~") : std::string()) + dtype_info(kind).name;
}

std::string DataType::c_name() const {
  if (is_void) return "void*";
  return std::string(dtype_info(kind).c_type) + (is_pointer ? "*" : "");
}

int64_t whole_bytes(int64_t bits, const char* what) {
  TILUS_CHECK(bits % 8 == 0, "TypeError", what, ": ", bits,
              " bits is not a whole number of bytes");
  return bits / 8;
}

int64_t whole_bytes(DataType t, int64_t count, const char* what) {
  const int64_t bits = count * t.bits();
  TILUS_CHECK(bits % 8 == 0, "TypeError", what, ": ", count,
              count == 1 ? " element of " : " elements of ", t.name(), count == 1 ? " is " : " are ",
              bits, " bits, not a whole number of bytes");
  return bits / 8;
}

int64_t storage_bytes(int64_t bits) {
  TILUS_ASSERT(bits >= 0, "a negative size of ", bits, " bits");
  return (bits + 7) / 8;
}

DataType dtype_from_name(const std::string& name) {
  if (name == "void_p") return DataType::void_pointer();
  std::string n = name;
  bool ptr = false;
  if (!n.empty() && n[0] == '~') {
    ptr = true;
    n = n.substr(1);
  }
  for (const DTypeInfo& row : kTable)
    if (n == row.name || (*row.torch && n == row.torch) || (*row.numpy && n == row.numpy))
      return DataType(row.kind, ptr);
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
