// Runs of thread groups, and the one wait across them that can only hang.
//
// Consecutive thread-group statements on disjoint threads run side by side (warp
// specialisation); a statement between two groups that every thread of the enclosing
// group runs ends the run. The interpreter starts what follows it once the run's groups
// have finished; on the GPU so does a statement that synchronises the block (an
// mbarrier allocation and its __syncthreads, a sync). So a group that waits, again and
// again (inside a loop), on an mbarrier that only statements after its run arrive at
// waits for work that cannot start: a deadlock in the interpreter, and on the GPU a hang
// once the barrier's first phase is used up. The builder refuses it.
#pragma once

#include "ir/stmt.h"

namespace tilus {

// One past the run of thread groups that starts at seq[k] (k itself when seq[k] is not a
// thread group): consecutive thread-group statements on disjoint threads. The
// interpreter runs such a run side by side (interp/thread_groups.cc).
size_t group_run_end(const std::vector<Stmt>& seq, size_t k);

// Throws a ValueError at the wait's line when a thread group, inside a loop of its own,
// waits on an mbarrier that nothing before or beside it arrives at and statements after
// its run do (a TMA load completing on the barrier counts as an arrival). Sequences
// inside loops are not checked (an arrival after the run may serve the next iteration),
// nor are programs with clusters (a peer block may arrive).
void check_group_run_waits(const Program& program);

}  // namespace tilus
