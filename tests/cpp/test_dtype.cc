// Tests of the data type table (csrc/ir/dtypes.def) and of the conversions from sizes
// in bits to bytes (csrc/ir/dtype.h).
//   g++ -std=c++17 -O2 -Icsrc csrc/ir/dtype.cc tests/cpp/test_dtype.cc
//       -o /tmp/test_dtype && /tmp/test_dtype
// Expected sizes are written out here (C sizeof, IEEE formats), never read from the table.
#include <cstdio>
#include <cstdint>
#include <string>

#include "ir/dtype.h"
#include "support/error.h"

#include "check.h"

using namespace tilus;

// Runs `stmt`, expects a ScriptError of `want_kind` whose message contains `want_text`.
#define CHECK_THROWS(stmt, want_kind, want_text)                                  \
  do {                                                                            \
    bool thrown = false;                                                          \
    try {                                                                         \
      stmt;                                                                       \
    } catch (const ScriptError& e) {                                              \
      thrown = e.kind() == (want_kind) &&                                         \
               std::string(e.what()).find(want_text) != std::string::npos;        \
      if (!thrown) std::printf("  got %s: %s\n", e.kind().c_str(), e.what());     \
    }                                                                             \
    CHECK(thrown);                                                                \
  } while (0)


static void test_whole_bytes() {
  section("whole_bytes: sizes that address memory");
  CHECK_EQ(whole_bytes(0, "x"), 0);
  CHECK_EQ(whole_bytes(8, "x"), 1);
  CHECK_EQ(whole_bytes(128, "x"), 16);
  CHECK_EQ(whole_bytes(8 * 1000003LL, "x"), 1000003);
  // a sub-byte size is refused, never truncated or rounded
  CHECK_THROWS(whole_bytes(4, "load_global: one access"), "TypeError",
               "load_global: one access: 4 bits is not a whole number of bytes");
  CHECK_THROWS(whole_bytes(1, "x"), "TypeError", "1 bits");
  CHECK_THROWS(whole_bytes(12, "x"), "TypeError", "12 bits");
  CHECK_THROWS(whole_bytes(127, "x"), "TypeError", "127 bits");

  CHECK_EQ(whole_bytes(dtypes::float16, 8, "x"), 16);
  CHECK_EQ(whole_bytes(dtypes::boolean, 3, "x"), 3);
  CHECK_EQ(whole_bytes(dtypes::float64, 1, "x"), 8);
  CHECK_EQ(whole_bytes(dtypes::int32.pointer_to(), 2, "x"), 16);
  CHECK_EQ(whole_bytes(dtypes::int8, 0, "x"), 0);
}

static void test_storage_bytes() {
  section("storage_bytes: allocations round up");
  CHECK_EQ(storage_bytes(0), 0);
  CHECK_EQ(storage_bytes(1), 1);
  CHECK_EQ(storage_bytes(4), 1);    // one 4-bit element
  CHECK_EQ(storage_bytes(8), 1);
  CHECK_EQ(storage_bytes(12), 2);   // three 4-bit elements
  CHECK_EQ(storage_bytes(9), 2);
  CHECK_EQ(storage_bytes(6 * 128), 96);  // 128 six-bit elements
  CHECK_EQ(storage_bytes(16 * 4096), 8192);
}

static void test_sizes() {
  section("bits of every type");
  CHECK_EQ(dtypes::boolean.bits(), 8 * static_cast<int>(sizeof(bool)));
  CHECK_EQ(dtypes::int8.bits(), 8);
  CHECK_EQ(dtypes::int16.bits(), 16);
  CHECK_EQ(dtypes::int32.bits(), 32);
  CHECK_EQ(dtypes::int64.bits(), 64);
  CHECK_EQ(dtypes::uint8.bits(), 8);
  CHECK_EQ(dtypes::uint16.bits(), 16);
  CHECK_EQ(dtypes::uint32.bits(), 32);
  CHECK_EQ(dtypes::uint64.bits(), 64);
  CHECK_EQ(dtypes::float16.bits(), 16);
  CHECK_EQ(dtypes::bfloat16.bits(), 16);
  CHECK_EQ(dtypes::float32.bits(), 8 * static_cast<int>(sizeof(float)));
  CHECK_EQ(dtypes::float64.bits(), 8 * static_cast<int>(sizeof(double)));
  CHECK_EQ(dtypes::float16.pointer_to().bits(), 64);
  // IEEE binary16 / bfloat16 / binary32 / binary64: sign + exponent + mantissa = bits
  CHECK_EQ(dtype_info(ScalarKind::Float16).exponent_bits, 5);
  CHECK_EQ(dtype_info(ScalarKind::Float16).mantissa_bits, 10);
  CHECK_EQ(dtype_info(ScalarKind::BFloat16).exponent_bits, 8);
  CHECK_EQ(dtype_info(ScalarKind::BFloat16).mantissa_bits, 7);
  CHECK_EQ(dtype_info(ScalarKind::Float32).mantissa_bits, 23);
  CHECK_EQ(dtype_info(ScalarKind::Float64).exponent_bits, 11);
}

static void test_table() {
  section("table rows");
  int rows = 0;
  for (const DTypeInfo* r = dtype_table_begin(); r != dtype_table_end(); ++r, ++rows) {
    // ScalarKind and the rows come from the same list in the same order
    CHECK_EQ(static_cast<int>(r->kind), rows);
    CHECK_EQ(&dtype_info(r->kind), r);
    CHECK(r->bits > 0);
    const DataType t(r->kind);
    CHECK_EQ(dtype_from_name(r->name), t);
    CHECK_EQ(dtype_from_name(std::string("~") + r->name), t.pointer_to());
    CHECK_EQ(t.name(), r->name);
    CHECK_EQ(t.pointer_to().c_name(), std::string(r->c_type) + "*");
    // tfloat32 is the one format stored in a wider word (19 bits of format in 32)
    if (r->family == TypeFamily::Float && r->kind == ScalarKind::TFloat32)
      CHECK_EQ(1 + r->exponent_bits + r->mantissa_bits, 19);
    else if (r->family == TypeFamily::Float)
      CHECK_EQ(1 + r->exponent_bits + r->mantissa_bits, r->bits);
    else
      CHECK(r->exponent_bits == 0 && r->mantissa_bits == 0);
  }
  CHECK_EQ(rows, 43);  // 13 standard types, tfloat32, 14 sub-byte ints, 15 small floats
  CHECK_EQ(std::string(family_name(dtype_info(ScalarKind::UInt8).family)), "int");
  CHECK_EQ(std::string(family_name(dtype_info(ScalarKind::BFloat16).family)), "float");
  CHECK_EQ(std::string(family_name(dtype_info(ScalarKind::Bool).family)), "bool");
  // torch's and numpy's name of boolean is accepted as well
  CHECK_EQ(dtype_from_name("bool"), dtypes::boolean);
  CHECK_EQ(dtype_from_name("~bool"), dtypes::boolean.pointer_to());
  CHECK_THROWS(dtype_from_name("float8"), "ValueError", "unknown data type 'float8'");
  CHECK_THROWS(dtype_from_name(""), "ValueError", "unknown data type");
  // the C++ types generated code declares
  CHECK_EQ(dtypes::float16.c_name(), "tilus::half");
  CHECK_EQ(dtypes::int8.c_name(), "signed char");
  CHECK_EQ(dtypes::uint64.pointer_to().c_name(), "unsigned long long*");
  // classification
  CHECK(dtypes::uint16.is_integer() && !dtypes::uint16.is_signed());
  CHECK(dtypes::int16.is_integer() && dtypes::int16.is_signed());
  CHECK(dtypes::bfloat16.is_float() && !dtypes::bfloat16.is_integer());
  CHECK(dtypes::boolean.is_bool() && !dtypes::boolean.is_integer() && !dtypes::boolean.is_float());
  CHECK(!dtypes::float32.pointer_to().is_float() && !dtypes::int32.pointer_to().is_integer());
  // promotion reads bits and family from the table
  CHECK_EQ(promote(dtypes::int8, dtypes::int32), dtypes::int32);
  CHECK_EQ(promote(dtypes::int32, dtypes::uint32), dtypes::uint32);
  CHECK_EQ(promote(dtypes::float16, dtypes::bfloat16), dtypes::float32);
  CHECK_EQ(promote(dtypes::int64, dtypes::float16), dtypes::float16);
  CHECK_EQ(promote(dtypes::boolean, dtypes::uint8), dtypes::uint8);
}

int main() {
  try {
    test_whole_bytes();
    test_storage_bytes();
    test_sizes();
    test_table();
  } catch (const std::exception& e) {
    std::printf("uncaught exception: %s\n", e.what());
    return 1;
  }
  std::printf("%d/%d checks passed\n", g_checks - g_failed, g_checks);
  return g_failed ? 1 : 0;
}
