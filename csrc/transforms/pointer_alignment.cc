#include "transforms/pointer_alignment.h"

#include <algorithm>
#include <numeric>

namespace tilus {

int64_t pointer_alignment(const Expr& e, const PointerFacts& facts) {
  const int64_t element = e->dtype.is_pointer ? std::max<int64_t>(1, e->dtype.pointee().bits() / 8) : 1;
  switch (e->kind) {
    case ExprKind::Var:
      for (size_t k = 0; k < facts.program.params.size(); ++k)
        if (facts.program.params[k]->var_id == e->var_id) return facts.assumes_aligned(int(k)) ? 16 : element;
      return element;  // a pointer variable of the script: nothing known beyond its type
    case ExprKind::ElementAddr: {
      // &g[i, ...]: g's pointer plus sum(i_d * stride_d) elements of g
      const int64_t base = facts.view_align(e->tensor->id);
      int64_t offset = 0;  // elements: the gcd of the terms' divisibility, 0: every multiple
      for (size_t d = 0; d < e->indices.size(); ++d)
        offset = std::gcd(offset, facts.div.of(e->indices[d]) * facts.div.of(e->tensor->global_strides[d]));
      if (offset == 0) return base;
      return std::max<int64_t>(1, std::gcd(base * 8, offset * e->tensor->dtype.bits()) / 8);
    }
    case ExprKind::Cast: return pointer_alignment(e->a, facts);
    case ExprKind::Select: return std::gcd(pointer_alignment(e->a, facts), pointer_alignment(e->b, facts));
    case ExprKind::Const:
    case ExprKind::BlockIdx:
    case ExprKind::Unary:
    case ExprKind::Binary:
    case ExprKind::Math:
    case ExprKind::ElementLoad: return element;  // a pointer read from memory may point anywhere
  }
  return element;
}

}  // namespace tilus
