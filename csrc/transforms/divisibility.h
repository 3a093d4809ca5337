// Divisibility analysis: the largest power-of-two-friendly constant every value of an
// integer expression is known to be a multiple of. Code generation uses it to prove
// that tile offsets and row strides allow 16-byte vector accesses.
//
// A variable's divisibility is the gcd over everything ever assigned to it (declare,
// assign, loop start and step), found by iterating to a fixpoint. Runtime parameters
// and loaded values are multiples of 1 only; constants are multiples of themselves
// (0 is a multiple of everything, represented as 0 = "any").
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ir/stmt.h"

namespace tilus {

class Divisibility {
 public:
  // `assumed` (indices into program.params) start as multiples of kVectorExtentMultiple
  // rather than of 1: the aligned build's assumption (transforms/vector_extents.h).
  explicit Divisibility(const Program& program, const std::vector<int>& assumed = {});
  // 0 means "every multiple" (the value is 0); otherwise a positive divisor.
  int64_t of(const Expr& e) const;
  // True when every value of e is a multiple of n (n > 0).
  bool is_multiple(const Expr& e, int64_t n) const;

 private:
  std::unordered_map<int, int64_t> vars_;  // var id -> divisibility (0: not yet known)
};

}  // namespace tilus
