// The tensor maps of one generated kernel's TMA copies (GeneratedKernel::tma_maps),
// encoded on the host before a launch and passed as opaque 128-byte parameters after the
// workspaces (runtime/kernel_args.h). Both launch paths use one TmaMaps per loaded
// variant: the Python launcher (runtime/launcher.py) and the native one (FastLauncher,
// bindings/launch.cc).
//
// A map's global address, extents and strides come from the launch's arguments (the
// view's pointer parameter; its extent and stride expressions evaluated by the
// HostEvaluator); its box and swizzle were fixed by the code generator. What the TMA unit
// cannot take (an address or a stride that is not a multiple of 16 bytes, an extent
// beyond 2^32) is refused here, before the launch, naming the copy and the parameter:
// the hardware would fault or copy garbage.
//
// Encoding costs a driver call (about a microsecond); the last few parameter sets of
// each map are kept with their encodings, so launches that repeat the same tensors
// (the common case, or a double buffer) do not encode again.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "codegen/codegen.h"
#include "interp/interpreter.h"
#include "transforms/host_launch_shape.h"

namespace tilus::runtime {

// cuTensorMapEncodeTiled's arguments for one map and one launch; dimensions innermost
// first, as the driver takes them.
struct TmaEncodeParams {
  int data_type = 0;  // CUtensorMapDataType
  uint32_t rank = 0;
  uint64_t address = 0;
  uint64_t dims[5] = {};
  uint64_t strides[4] = {};  // bytes, of dimensions 1 .. rank-1
  uint32_t box[5] = {};
  uint32_t element_strides[5] = {};
  int interleave = 0;    // CU_TENSOR_MAP_INTERLEAVE_NONE
  int swizzle = 0;       // CU_TENSOR_MAP_SWIZZLE_NONE / 32B / 64B / 128B = 0 / 1 / 2 / 3
  int l2_promotion = 2;  // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  int oob_fill = 0;      // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-range elements read 0
  bool operator==(const TmaEncodeParams& o) const;
};

// The CUtensorMapDataType a copy of `dtype` elements uses. The TMA unit only moves bytes
// (no conversion), so every type of a width travels as one of that width: float16,
// bfloat16, float32 and float64 as themselves (tfloat32 as float32, unrounded), other
// 8/16/32/64-bit types as unsigned integers of their width.
int tma_data_type(DataType dtype);

using TmaBlob = std::array<unsigned char, 128>;

class TmaMaps {
 public:
  TmaMaps(std::shared_ptr<const Program> program, std::vector<TmaMapSpec> specs);
  size_t size() const { return specs_.size(); }
  const Program& program() const { return *program_; }
  const TmaMapSpec& spec(size_t k) const { return specs_[k]; }

  // Map k's parameters for a launch with `args` (one per Program::params); ScriptError
  // ValueError naming the copy, the view and the parameter when the TMA unit cannot
  // take them.
  TmaEncodeParams params(size_t k, const std::vector<HostArg>& args) const;
  // Every map for this launch into out[k] (resized to size()).
  void encode(const std::vector<HostArg>& args, std::vector<TmaBlob>& out);
  // cuTensorMapEncodeTiled calls made so far (cache misses).
  int64_t encodings() const { return encodings_; }
  // Replaces the driver call (tests without a GPU): returns a CUresult, writes 128 bytes.
  using Encoder = std::function<int(void* out, const TmaEncodeParams& params)>;
  void set_encoder(Encoder encoder) { encoder_ = std::move(encoder); }

 private:
  struct Cached {
    TmaEncodeParams params;
    TmaBlob blob;
  };
  static constexpr size_t kCachePerMap = 4;
  std::shared_ptr<const Program> program_;
  std::vector<TmaMapSpec> specs_;
  HostEvaluator evaluator_;
  std::vector<std::vector<Cached>> cache_;  // per map, most recent first
  Encoder encoder_;
  int64_t encodings_ = 0;
  std::mutex mutex_;
};

}  // namespace tilus::runtime
