// Ring counters: scalars declared to a constant and only ever advanced by
// v = (v + 1) % S, once per iteration of one loop -- a pipeline's stage indices. Two of
// them read in the same iteration differ by a known constant, so a write to
// sa[preload_stage] provably misses the tile sa[current_stage] a running dot reads
// (transforms/async_waits.cc).
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "ir/stmt.h"

namespace tilus {

struct RingCounter {
  int64_t modulus = 0, start = 0;
  const StmtNode* body = nullptr;  // the loop body (a Seq) holding the one update
  size_t update = 0;               // the update's index in it
  const StmtNode* declared_in = nullptr;  // the loop body around its declaration (none: top)
};

// Where a ring counter was read: the value it holds there is start + iteration (+1 once
// past its update), all mod modulus.
struct StageOrigin {
  int ring_var;     // the ring counter's var id
  size_t position;  // the index, in the ring's loop body, of the statement it was read in
};

// var id -> ring counter, for every ring counter below `body`.
std::unordered_map<int, RingCounter> find_ring_counters(const Stmt& body);

// True when two reads of ring counters provably give different values.
bool stages_differ(const std::unordered_map<int, RingCounter>& rings, const StageOrigin& a,
                   const StageOrigin& b);

}  // namespace tilus
