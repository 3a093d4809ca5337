// Which threads hold each register tensor once thread groups narrow the block
// (Tilus 0.2's `with self.thread_group(...)`, StmtKind::ThreadGroup).
#pragma once
#include <cstdint>
#include <unordered_map>

#include "ir/stmt.h"

namespace tilus {

struct GroupThreadCounts {
  // Instructions and register tensors inside a group of fewer threads than the block,
  // mapped to that group's thread count (absent: the whole block).
  std::unordered_map<const Instruction*, int64_t> inst_threads;
  std::unordered_map<int, int64_t> tensor_threads;
};

// A register tensor belongs to the group of the instruction that defines it (a
// register_tensor made outside the one group that uses it belongs to that group); an
// instruction may read or write only register tensors of its own group (they live in
// its threads' registers). Throws a ValueError at the offending line otherwise.
// IRBuilder::finish runs it on every program; layout inference uses the counts.
GroupThreadCounts group_thread_counts(const Program& program);

}  // namespace tilus
