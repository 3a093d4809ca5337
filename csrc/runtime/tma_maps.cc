#include "runtime/tma_maps.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/cuda_driver.h"
#include "support/error.h"

namespace tilus::runtime {

bool TmaEncodeParams::operator==(const TmaEncodeParams& o) const {
  return data_type == o.data_type && rank == o.rank && address == o.address &&
         std::memcmp(dims, o.dims, sizeof dims) == 0 && std::memcmp(strides, o.strides, sizeof strides) == 0 &&
         std::memcmp(box, o.box, sizeof box) == 0 &&
         std::memcmp(element_strides, o.element_strides, sizeof element_strides) == 0 &&
         interleave == o.interleave && swizzle == o.swizzle && l2_promotion == o.l2_promotion &&
         oob_fill == o.oob_fill;
}

int tma_data_type(DataType dtype) {
  // CUtensorMapDataType: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5,
  // FLOAT16 6, FLOAT32 7, FLOAT64 8, BFLOAT16 9
  if (dtype == dtypes::float16) return 6;
  if (dtype == dtypes::bfloat16) return 9;
  if (dtype == dtypes::float32 || dtype == dtypes::tfloat32) return 7;
  if (dtype == dtypes::float64) return 8;
  switch (dtype.bits()) {
    case 8: return 0;
    case 16: return 1;
    case 32: return 2;
    case 64: return 4;
    default: break;
  }
  throw ScriptError("TypeError", cat("TMA copies move elements of 8, 16, 32 or 64 bits; ", dtype.name(), " has ",
                                     dtype.bits()));
}

TmaMaps::TmaMaps(std::shared_ptr<const Program> program, std::vector<TmaMapSpec> specs)
    : program_(std::move(program)), specs_(std::move(specs)), evaluator_(*program_), cache_(specs_.size()) {}

TmaEncodeParams TmaMaps::params(size_t k, const std::vector<HostArg>& args) const {
  const TmaMapSpec& s = specs_.at(k);
  const Program& program = *program_;
  TILUS_CHECK(args.size() == program.params.size(), "TypeError", s.where, ": ", args.size(),
              " arguments for ", program.params.size(), " parameters");
  const size_t rank = s.shape.size();
  TILUS_CHECK(rank >= 1 && rank <= 5 && s.strides.size() == rank && s.box.size() == rank, "ValueError", s.where,
              ": a tensor map of rank ", rank);
  const int64_t bytes = s.dtype.bits() / 8;
  const std::string& pointer = program.params.at(s.pointer_param)->name;
  auto fail = [&](const std::string& why) {
    throw ScriptError("ValueError", cat(s.where, ": the global view ", s.view_name, " of parameter '", pointer,
                                        "' ", why, "; the TMA unit cannot copy it"));
  };
  TmaEncodeParams p;
  p.data_type = tma_data_type(s.dtype);
  p.rank = static_cast<uint32_t>(rank);
  p.address = args[s.pointer_param].ptr;
  if (p.address % 16) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(p.address));
    fail(cat("starts at address ", hex, ", not a multiple of 16 bytes"));
  }
  for (size_t d = 0; d < rank; ++d) {
    const size_t inner = rank - 1 - d;  // the driver's order
    int64_t extent = 0, stride = 0;
    if (!evaluator_.eval(s.shape[d], args, extent)) fail(cat("has an extent the host cannot compute (", expr_str(s.shape[d]), ")"));
    if (!evaluator_.eval(s.strides[d], args, stride)) fail(cat("has a stride the host cannot compute (", expr_str(s.strides[d]), ")"));
    if (extent < 1 || extent > (int64_t(1) << 32))
      fail(cat("has extent ", extent, " (", expr_str(s.shape[d]), ") in dimension ", d, "; TMA needs 1 to 2^32"));
    p.dims[inner] = static_cast<uint64_t>(extent);
    if (d + 1 == rank) {
      if (stride != 1) fail(cat("has stride ", stride, " in its last dimension, which TMA needs contiguous"));
    } else {
      const int64_t stride_bytes = stride * bytes;
      if (stride < 1 || stride_bytes % 16 || stride_bytes >= (int64_t(1) << 40))
        fail(cat("has stride ", stride, " elements (", stride_bytes, " bytes; ", expr_str(s.strides[d]),
                 ") in dimension ", d, ", not a positive multiple of 16 bytes below 2^40"));
      p.strides[inner - 1] = static_cast<uint64_t>(stride_bytes);
    }
    p.box[inner] = static_cast<uint32_t>(s.box[d]);
    p.element_strides[inner] = 1;
  }
  p.swizzle = s.swizzle_bytes == 128 ? 3 : s.swizzle_bytes == 64 ? 2 : s.swizzle_bytes == 32 ? 1 : 0;
  return p;
}

void TmaMaps::encode(const std::vector<HostArg>& args, std::vector<TmaBlob>& out) {
  out.resize(specs_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t k = 0; k < specs_.size(); ++k) {
    TmaEncodeParams p = params(k, args);
    std::vector<Cached>& cache = cache_[k];
    size_t hit = 0;
    while (hit < cache.size() && !(cache[hit].params == p)) ++hit;
    if (hit == cache.size()) {
      Cached entry{p, {}};
      int result;
      if (encoder_) {
        result = encoder_(entry.blob.data(), p);
      } else {
        const cuda::DriverApi& api = cuda::driver();
        if (!api.cuTensorMapEncodeTiled)
          throw cuda::CudaError(cuda::CUDA_ERROR_NOT_INITIALIZED,
                                "the CUDA driver (libcuda.so.1) lacks cuTensorMapEncodeTiled (CUDA 12.0+), which "
                                "TMA copies need");
        uint64_t address = p.address;
        result = api.cuTensorMapEncodeTiled(entry.blob.data(), p.data_type, p.rank, reinterpret_cast<void*>(address),
                                            p.dims, p.strides, p.box, p.element_strides, p.interleave, p.swizzle,
                                            p.l2_promotion, p.oob_fill);
      }
      if (result != cuda::CUDA_SUCCESS)
        throw cuda::CudaError(result, cat(specs_[k].where, ": ", cuda::describe_error(result, "cuTensorMapEncodeTiled"),
                                          " for the global view ", specs_[k].view_name));
      ++encodings_;
      if (cache.size() == kCachePerMap) cache.pop_back();
      cache.insert(cache.begin(), entry);
      hit = 0;
    } else if (hit > 0) {
      std::rotate(cache.begin(), cache.begin() + hit, cache.begin() + hit + 1);
      hit = 0;
    }
    out[k] = cache[hit].blob;
  }
}

}  // namespace tilus::runtime
