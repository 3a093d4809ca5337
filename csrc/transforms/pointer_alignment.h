// What a global view's pointer is known to be a multiple of, in bytes.
//
// A kernel parameter is 16-byte aligned in a build that assumes it (the aligned build,
// or a partly aligned one for the parameters its call met: codegen/codegen.h); a view at
// an element address (`~g[i, j]`) keeps what g's pointer and the offset's divisibility
// allow; anything else is known aligned only to its element. Code generation
// (CudaEmitter::GlobalInfo::align_bytes) and the partly aligned build's choice of views
// without vectors (vector_extents.h scalar_globals) both ask this one rule.
#pragma once
#include <cstdint>
#include <functional>

#include "ir/stmt.h"
#include "transforms/divisibility.h"

namespace tilus {

struct PointerFacts {
  const Program& program;
  // Whether the build assumes parameter #k 16-byte aligned (CodegenOptions::assumes_aligned).
  std::function<bool(int)> assumes_aligned;
  // Integer divisibility under the same build's assumptions.
  const Divisibility& div;
  // The alignment already found for a global view (tensor id) an element address names.
  std::function<int64_t(int)> view_align;
};

int64_t pointer_alignment(const Expr& e, const PointerFacts& facts);

}  // namespace tilus
