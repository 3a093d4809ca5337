// Build-time refusal of an mbarrier whose expected transaction bytes its TMA copies can
// never bring. On the GPU such a wait never completes (or completes before the data has
// landed): the kernel hangs or reads garbage, far from the line at fault. The CPU
// interpreter finds it too, as a deadlock, when a run reaches it; this check finds it
// before any run.
//
// Each mbarrier.arrive_and_expect_tx(B, N) with a constant N owns the TMA loads
// (tma.global_to_shared with mbarrier=B', B' the same expression as B) that follow it in
// its statement list until a statement changes a variable B reads, or B is waited on or
// expects bytes again; loops with constant bounds count their body's copies times their
// trips. When every TMA load of the kernel is owned that way, an owner whose copies do
// not bring exactly N bytes is refused with its script line. Anything less regular (a
// copy under a run-time branch, copies issued before their expect, bytes computed at run
// time, clusters and multicast copies, which bring bytes from other blocks) leaves the
// kernel unchecked rather than risk refusing a correct one.
#pragma once
#include "ir/stmt.h"

namespace tilus {

// Throws ScriptError (ValueError) at the expect_tx's line for a certain mismatch.
void check_transaction_bytes(const Program& program);

}  // namespace tilus
