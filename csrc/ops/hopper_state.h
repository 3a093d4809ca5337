// The interpreter's model of Hopper's asynchronous machinery for one block: mbarriers
// (phase, pending arrivals, transaction bytes) and TMA copies in flight. Shared by
// ops/mbarrier.cc and ops/tma.cc.
//
// A block executes each instruction for all its warps * 32 threads at once, as the
// thread group Tilus 0.2 runs an instruction with when no thread-group context narrows
// it: `arrive` is one arrival per thread (times `count`), `arrive_and_expect_tx` one
// arrival and `transaction_bytes` per thread, and a TMA copy is issued once (by the
// group's leader lane, as the CUDA lowering does).
//
// TMA loads land as late as the hardware may let them: when a wait on their barrier
// would otherwise block, one at a time in issue order until the phase completes, or
// when the block exits. A program that reads the tile before waiting for the barrier
// sees what the buffer held before (tiles start poisoned), as it could on the GPU.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "interp/state.h"

namespace tilus::interp {

struct MBarrier {
  int64_t count = 0;    // arrivals per phase
  int64_t pending = 0;  // arrivals still missing in the current phase
  int64_t tx = 0;       // transaction bytes expected minus landed (may go negative)
  int64_t phase = 0;    // completed phases; the parity is what wait() compares
  const StmtNode* alloc = nullptr;
  int index = 0;        // within its alloc
};

// A TMA global -> shared load: lands into `dst`, then completes `bytes` on the barrier.
struct TmaLoad {
  PendingCopy copy;
  uint32_t barrier = 0;
  int64_t bytes = 0;
};

// A TMA shared -> global store: reads the shared tile when it lands (wait_group).
struct TmaStore {
  TensorValue dst;  // the global view at issue time
  std::shared_ptr<std::vector<uint8_t>> keep_alive;
  const uint8_t* src = nullptr;
  DataType src_dtype;
  std::vector<int64_t> src_shape;
  std::vector<int64_t> offsets;
  std::vector<int> dims;
  const StmtNode* stmt = nullptr;
};

struct HopperState {
  std::vector<MBarrier> barriers;  // barrier k lives at kBarrierBase + 8 k
  std::deque<TmaLoad> loads;
  std::vector<TmaStore> open_stores;
  std::deque<std::vector<TmaStore>> committed_stores;
  // Bumped by arrivals and landings: thread groups waiting side by side see whether any
  // of them moved (interp/thread_groups.cc).
  uint64_t progress = 0;
  // The last barrier interval handed out in this block (interp/debug_checks.cc next_epoch).
  uint32_t epochs = 0;
};

// Barrier addresses the interpreter hands out: never a real shared offset of the
// CUDA kernel, distinct from small integers a script might pass by mistake.
constexpr uint32_t kBarrierBase = 0x7ba00000u;
// cluster.map_shared_addr sets these bits to 1 + the target block's rank; barrier_at
// follows them to that block's barriers (a cluster has at most 15 blocks here).
constexpr uint32_t kRankShift = 16, kRankMask = 0xFu << kRankShift;

HopperState& hopper_state(BlockState& st);
// The barrier at `address`, or a ValueError naming `what` when none was allocated there.
MBarrier& barrier_at(BlockState& st, uint32_t address, const char* what);
// Applies arrivals / landed bytes; completes the phase when both reach zero.
void barrier_update(MBarrier& b, int64_t arrivals, int64_t tx_delta);
// "mbarrier 1 of the alloc at line 12"
std::string barrier_name(const MBarrier& b);
void land_load(BlockState& st, TmaLoad& load);

}  // namespace tilus::interp
