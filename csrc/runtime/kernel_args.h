// The values of one launch's kernel parameters, as cuLaunchKernel takes them: a typed
// list, each value at its own address (kernelParams[i] points at value i). Both launch
// paths fill one: the Python path (LoadedKernel.launch in bindings/runtime.cc, fed by
// runtime/launcher.py) and the native one (FastLauncher, bindings/launch.cc), so a value
// is converted and range-checked the same way whichever path launches it.
//
// Scalars and pointers sit in 8-byte slots, each value in the low bytes of its slot
// (little-endian, so an int32 parameter reads the first 4 bytes). An opaque blob of up
// to 128 bytes (a CUtensorMap for a TMA descriptor parameter, passed by value) sits in
// 128-byte aligned storage of its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace tilus::runtime {

enum class ParamKind : uint8_t { I32, U32, I64, U64, F32, F64, F16, BF16, Pointer, Opaque };

// The kind a parameter of `dtype` is passed as: narrow integers and bool widen to 32
// bits (the kernel reads the low bytes), 16-bit floats are their own bits.
ParamKind param_kind_of(DataType dtype);
// "i32", "u32", "i64", "u64", "f32", "f64", "f16", "bf16", "ptr", "opaque".
const char* param_kind_name(ParamKind kind);
// The kind a name denotes; throws std::invalid_argument naming the accepted ones.
ParamKind param_kind_from_name(const std::string& name);

// The slot bits of a value of an integer kind (or Pointer); false when it does not fit.
bool encode_int(ParamKind kind, int64_t value, uint64_t& bits);
bool encode_uint(ParamKind kind, uint64_t value, uint64_t& bits);
// The slot bits of a value of a float kind, rounded to nearest even (bfloat16 through
// float32, as tilus.arguments checks it); false when a finite value would become infinity.
bool encode_float(ParamKind kind, double value, uint64_t& bits);

class KernelArgs {
 public:
  static constexpr size_t kOpaqueBytes = 128;

  // Appends a parameter; returns its index.
  size_t add(ParamKind kind, uint64_t bits = 0);
  size_t add_opaque(const void* data, size_t bytes);  // bytes <= kOpaqueBytes
  // Replaces a value; no allocation, so a launcher can refill one list on every call.
  void set(size_t index, uint64_t bits) { slots_[index].bits = bits; }
  void set_opaque(size_t index, const void* data, size_t bytes);

  size_t size() const { return slots_.size(); }
  ParamKind kind(size_t index) const { return slots_[index].kind; }
  // kernelParams for cuLaunchKernel; valid until the next add.
  void** pointers();

 private:
  struct alignas(128) Blob {
    unsigned char bytes[kOpaqueBytes];
  };
  struct Slot {
    ParamKind kind;
    uint64_t bits;
    int blob;  // index into blobs_ for Opaque, else -1
  };
  std::vector<Slot> slots_;
  std::vector<Blob> blobs_;
  std::vector<void*> pointers_;
  bool pointers_stale_ = true;
};

}  // namespace tilus::runtime
