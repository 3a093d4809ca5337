// How far a loop's `unroll=` hint is followed. Unrolling a loop whose body is already
// long (a pipelined matmul's main loop: dozens of mma, ldmatrix and cp.async per
// iteration, each iteration fenced by a barrier) gains no speed: the loop overhead is
// noise and no instruction can be scheduled across the barriers. It does cost compile
// time (NVRTC's optimizer and ptxas scale with the unrolled size) and instruction cache.
// So the hint is followed while hint x body stays within a budget of estimated
// per-thread operations, and reduced to fit otherwise (never below 1). The budget is
// CodegenOptions::unroll_budget (TILUS_UNROLL_BUDGET, read by python/tilus/option.py).
#pragma once
#include <cstdint>

#include "ir/stmt.h"
#include "transforms/layout_inference.h"

namespace tilus {

// Estimated per-thread operations of one execution of `body`: one per mma atom, per
// 16-byte vector moved (ldmatrix, cp.async, vector loads and stores), per register
// element computed, per scalar statement; loops with constant bounds multiply their body.
int64_t estimate_body_ops(const Stmt& body, const LayoutPlan& plan, int threads);

// The unroll factor to emit for a hint (> 0) given the body's operations and the budget.
int budget_unroll(int hint, int64_t body_ops, int64_t budget);

}  // namespace tilus
