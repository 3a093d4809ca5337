#include "runtime/kernel_args.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "support/error.h"
#include "support/float16.h"

namespace tilus::runtime {

ParamKind param_kind_of(DataType dtype) {
  if (dtype.is_pointer) return ParamKind::Pointer;
  switch (dtype.kind) {
    case ScalarKind::Bool:
    case ScalarKind::Int8:
    case ScalarKind::Int16:
    case ScalarKind::Int32: return ParamKind::I32;
    case ScalarKind::UInt8:
    case ScalarKind::UInt16:
    case ScalarKind::UInt32: return ParamKind::U32;
    case ScalarKind::Int64: return ParamKind::I64;
    case ScalarKind::UInt64: return ParamKind::U64;
    case ScalarKind::Float16: return ParamKind::F16;
    case ScalarKind::BFloat16: return ParamKind::BF16;
    case ScalarKind::Float32:
    case ScalarKind::TFloat32: return ParamKind::F32;  // tf32 travels as its float storage
    case ScalarKind::Float64: return ParamKind::F64;
    // Kernel parameters are passed by value in 32/64-bit slots; a low-precision scalar
    // would need its own packing. Pointers to them are fine (above).
    TILUS_LOWP_INT_CASES:
    TILUS_LOWP_FLOAT_CASES:
      throw ScriptError("TypeError", cat("a kernel parameter of type ", dtype.name(),
                                         " is not supported; pass an int32/float32 and cast it"));
  }
  TILUS_ASSERT(false, "unknown scalar kind ", static_cast<int>(dtype.kind));
  return ParamKind::I32;
}

const char* param_kind_name(ParamKind kind) {
  switch (kind) {
    case ParamKind::I32: return "i32";
    case ParamKind::U32: return "u32";
    case ParamKind::I64: return "i64";
    case ParamKind::U64: return "u64";
    case ParamKind::F32: return "f32";
    case ParamKind::F64: return "f64";
    case ParamKind::F16: return "f16";
    case ParamKind::BF16: return "bf16";
    case ParamKind::Pointer: return "ptr";
    case ParamKind::Opaque: return "opaque";
  }
  return "?";
}

ParamKind param_kind_from_name(const std::string& name) {
  static const ParamKind all[] = {ParamKind::I32, ParamKind::U32,  ParamKind::I64,
                                  ParamKind::U64, ParamKind::F32,  ParamKind::F64,
                                  ParamKind::F16, ParamKind::BF16, ParamKind::Pointer,
                                  ParamKind::Opaque};
  std::string names;
  for (ParamKind kind : all) {
    if (name == param_kind_name(kind)) return kind;
    names += names.empty() ? "" : ", ";
    names += param_kind_name(kind);
  }
  throw std::invalid_argument("unknown kernel parameter kind '" + name + "' (expected one of " +
                              names + ")");
}

namespace {

template <typename T>
uint64_t low_bits(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

}  // namespace

bool encode_int(ParamKind kind, int64_t value, uint64_t& bits) {
  switch (kind) {
    case ParamKind::I32:
      if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max())
        return false;
      bits = low_bits(static_cast<int32_t>(value));
      return true;
    case ParamKind::U32:
      if (value < 0 || value > int64_t(std::numeric_limits<uint32_t>::max())) return false;
      bits = low_bits(static_cast<uint32_t>(value));
      return true;
    case ParamKind::I64:
      bits = low_bits(value);
      return true;
    case ParamKind::U64:
    case ParamKind::Pointer:
      if (value < 0) return false;
      bits = static_cast<uint64_t>(value);
      return true;
    case ParamKind::F32:
    case ParamKind::F64:
    case ParamKind::F16:
    case ParamKind::BF16: return encode_float(kind, static_cast<double>(value), bits);
    case ParamKind::Opaque: return false;
  }
  return false;
}

bool encode_uint(ParamKind kind, uint64_t value, uint64_t& bits) {
  if (kind == ParamKind::U64 || kind == ParamKind::Pointer) {
    bits = value;
    return true;
  }
  if (value > uint64_t(std::numeric_limits<int64_t>::max())) return false;
  return encode_int(kind, static_cast<int64_t>(value), bits);
}

bool encode_float(ParamKind kind, double value, uint64_t& bits) {
  const bool finite = std::isfinite(value);
  switch (kind) {
    case ParamKind::F64:
      bits = low_bits(value);
      return true;
    case ParamKind::F32: {
      float f = static_cast<float>(value);
      if (finite && std::isinf(f)) return false;
      bits = low_bits(f);
      return true;
    }
    case ParamKind::F16: {
      uint16_t h = double_to_half(value);
      if (finite && std::isinf(half_to_double(h))) return false;
      bits = h;
      return true;
    }
    case ParamKind::BF16: {
      float f = static_cast<float>(value);
      uint16_t h = float_to_bfloat16(f);
      if (finite && (std::isinf(f) || std::isinf(bfloat16_to_double(h)))) return false;
      bits = h;
      return true;
    }
    case ParamKind::I32:
    case ParamKind::U32:
    case ParamKind::I64:
    case ParamKind::U64:
    case ParamKind::Pointer:
    case ParamKind::Opaque: return false;
  }
  return false;
}

size_t KernelArgs::add(ParamKind kind, uint64_t bits) {
  TILUS_ASSERT(kind != ParamKind::Opaque, "KernelArgs::add: use add_opaque for an opaque blob");
  slots_.push_back({kind, bits, -1});
  pointers_stale_ = true;
  return slots_.size() - 1;
}

size_t KernelArgs::add_opaque(const void* data, size_t bytes) {
  blobs_.emplace_back();
  slots_.push_back({ParamKind::Opaque, 0, static_cast<int>(blobs_.size() - 1)});
  pointers_stale_ = true;
  set_opaque(slots_.size() - 1, data, bytes);
  return slots_.size() - 1;
}

void KernelArgs::set_opaque(size_t index, const void* data, size_t bytes) {
  const Slot& slot = slots_[index];
  if (slot.kind != ParamKind::Opaque) {
    throw std::invalid_argument("kernel parameter " + std::to_string(index) +
                                " is not an opaque blob");
  }
  if (bytes > kOpaqueBytes) {
    throw std::invalid_argument("an opaque kernel parameter holds at most " +
                                std::to_string(kOpaqueBytes) + " bytes, got " +
                                std::to_string(bytes));
  }
  Blob& blob = blobs_[slot.blob];
  std::memset(blob.bytes, 0, kOpaqueBytes);
  if (bytes) std::memcpy(blob.bytes, data, bytes);
}

void** KernelArgs::pointers() {
  if (pointers_stale_) {
    pointers_.resize(slots_.size());
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& slot = slots_[i];
      pointers_[i] = slot.kind == ParamKind::Opaque ? static_cast<void*>(blobs_[slot.blob].bytes)
                                                    : static_cast<void*>(&slot.bits);
    }
    pointers_stale_ = false;
  }
  return pointers_.data();
}

}  // namespace tilus::runtime
