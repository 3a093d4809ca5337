// The interpreter as a debugger: data races and reads of uninitialised memory.
//
// The interpreter runs a block one tile instruction at a time, but which *thread* of
// the block touches which element is fixed by the layouts the GPU code uses (layout
// inference, as for sm_80): a register tile's element is read by every thread holding
// it and written by the first of its replicas (the code generator's replica leader);
// copy_async spreads a tile over the block with auto_global_layout. With that, every
// shared and global access is recorded per element in shadow memory and checked:
//
//   * shared memory, within a block: two threads of different warps touching one
//     element between two barriers (sync, lock_semaphore, release_semaphore), at least
//     one writing (a warp executes each tile instruction together, so its threads see
//     each other's accesses in program order, as compute-sanitizer assumes too). A
//     copy_async writes its destination when it lands (the wait that completes it) and
//     conflicts with the other threads' accesses from its issue to that wait.
//   * global memory, within a launch: the same within a block; across blocks, two
//     accesses, at least one a write, that no chain release_semaphore -> lock_semaphore
//     orders (vector clocks over blocks; a lock reads the last release of its address).
//   * uninitialised reads: a shared element read before anything wrote it; a register
//     tensor declared without init read before it was assigned.
//
// Reported as ScriptError kinds "DataRaceError" / "UninitializedReadError" naming both
// lines, the element (tensor and index), the threads and the block. See
// docs/interpreter.md ("The interpreter as a debugger").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/interpreter.h"
#include "ir/stmt.h"

namespace tilus::interp {

struct BlockState;
struct Launch;
struct TensorValue;
struct PendingCopy;

// Which threads of a block hold each element of a register tile.
struct ThreadMap {
  std::vector<int32_t> leader;    // per element (row-major): the replica that writes it
  std::vector<int32_t> replicas;  // offsets from the leader of every holder (0 first)
};

// Shadow state of one element of a shared allocation. Epochs are the block's barrier
// intervals (BlockState::epoch); 0 means never.
struct SharedCell {
  uint32_t w_epoch = 0, r_epoch = 0, r2_epoch = 0;
  int32_t w_thread = -1, r_thread = -1, r2_thread = -1;
  const StmtNode* w_stmt = nullptr;
  const StmtNode* r_stmt = nullptr;
  const StmtNode* r2_stmt = nullptr;  // a reader in another warp than r_thread's, in r2_epoch
  const StmtNode* w_wait = nullptr;   // the write was a copy_async landing at this wait
  bool w_async = false;               // (w_wait null: landing when the block ended)
  bool written = false;
  // Across the blocks of a cluster, by cluster-barrier interval (1 + ClusterRun::generation;
  // 0: none): this block's own last access and write, and the last peer write and read
  // (cluster.store_shared / load_shared). Accesses of two blocks in one interval race.
  uint64_t own_gen = 0, own_w_gen = 0, peer_w_gen = 0, peer_r_gen = 0;
  int32_t peer_w_rank = -1, peer_r_rank = -1;
  const StmtNode* own_stmt = nullptr;
  const StmtNode* peer_w_stmt = nullptr;
  const StmtNode* peer_r_stmt = nullptr;
};

// Shadow of one shared_tensor allocation; its views (sa[stage]) share it.
struct SharedShadow {
  const TensorNode* root = nullptr;
  const uint8_t* base = nullptr;  // the allocation's first byte
  int elem_bytes = 1;
  std::vector<SharedCell> cells;
};

// Threads given as -1 in a global access: every thread of the block (a scalar read).
constexpr int32_t kEveryThread = -1;

struct GlobalAccess {
  int32_t block = -1;  // linear block index; -1: none
  int32_t thread = kEveryThread;
  uint32_t epoch = 0;  // the block's barrier interval
  uint32_t clock = 0;  // the block's own vector-clock entry
  const StmtNode* stmt = nullptr;
};

struct GlobalCell {
  GlobalAccess w, r, r2;
};

// Sparse vector clock over blocks: block -> the last of its clock values that this
// holder has synchronised with.
using VectorClock = std::unordered_map<int32_t, uint32_t>;

// Shadow cells of global memory: per buffer of the launch, one cell per element of the
// width of its first access (pages allocated on first touch). An access of another
// width or alignment (or of a width not a power of two) goes to a map keyed by its first byte, so accesses of different
// widths to overlapping bytes are not compared. Past kMaxShadowBytes no new element is
// tracked (the launch's race check on global memory then covers part of it).
class GlobalShadow {
 public:
  static constexpr size_t kPageCells = 4096;
  static constexpr size_t kMaxShadowBytes = size_t{1} << 31;
  GlobalShadow() = default;
  GlobalShadow(const GlobalShadow&) = delete;
  GlobalShadow& operator=(const GlobalShadow&) = delete;
  ~GlobalShadow();  // hands its pages to the next launch of this thread
  void init(const std::vector<HostRegion>& regions);
  GlobalCell* find(uintptr_t addr, int bytes);  // null: not tracked
  bool saturated() const { return saturated_; }

 private:
  struct Region {
    uintptr_t begin = 0, end = 0;
    int granule = 0;  // bytes per cell; 0 until the first access
    int shift = 0;    // log2(granule) when it is a power of two
    std::vector<std::unique_ptr<GlobalCell[]>> pages;
  };
  GlobalCell* cell_of(Region& r, size_t index);
  GlobalCell* overflow(uintptr_t addr);
  std::vector<Region> regions_;
  size_t last_ = 0;
  size_t bytes_ = 0;
  bool saturated_ = false;
  std::unordered_map<uintptr_t, GlobalCell> other_;
};

// Everything the checks keep for one launch.
struct DebugState {
  InterpChecks checks;
  int32_t threads = 32;
  // register tensor id -> its thread map (layouts from layout inference)
  std::unordered_map<int, const ThreadMap*> maps;
  GlobalShadow global;
  std::unordered_map<uintptr_t, VectorClock> released;  // semaphore address -> clock
};

// Builds the launch's DebugState when some check is on (else leaves it null).
void init_debug_checks(Launch& l);

// Per-block state: called when a block starts.
void debug_block_start(BlockState& st);

// The thread map of a register tile (its inferred layout), or of a copy_async tile.
const ThreadMap& thread_map_of(BlockState& st, const TensorNode* reg);
const ThreadMap& copy_thread_map(BlockState& st, const TensorNode* dst);

enum class Access : uint8_t { Read, Write };

// A shared view read into (or written from) the register tile `reg` by its threads.
void shared_tile_access(BlockState& st, const TensorValue& view, const TensorNode* reg,
                        Access access, const StmtNode& stmt);
// A TMA copy landed (ops/tma.cc): its elements are initialised. The mbarrier wait that
// precedes any read orders it within the block, which the barrier-interval race check
// does not model, so the landing is left out of that check; across the blocks of a
// cluster it is the block's own write (a peer's access since the last cluster barrier
// races with it).
void shared_tma_landed(BlockState& st, const PendingCopy& c);
// Block `st` reads or writes `view`, which lies in the shared memory of the block of rank
// `owner` of its cluster (cluster.load_shared / store_shared of a peer): a write marks the
// elements initialised, a read refuses uninitialised ones, and either refuses an access
// of the owner or another peer to the same element since the last cluster barrier.
void shared_peer_access(BlockState& st, const TensorValue& view, int64_t owner, Access access,
                        const StmtNode& stmt);
// A copy_async landing in its destination at a wait (`c` records its issue epoch): a
// write by the threads that issued it, and across the cluster the block's own write.
void shared_copy_landed(BlockState& st, const PendingCopy& c, const StmtNode* wait);
// An atomic (or scatter store) on the element at `p` of the shared view `view`: across
// the blocks of a cluster the block's own write (a peer's access of the element since the
// last cluster barrier races with it). Threads' atomics among themselves do not race.
void shared_atomic_access(BlockState& st, const TensorValue& view, const uint8_t* p, const StmtNode& stmt);
// A shared view that an asynchronous unit reads for the block (a wgmma operand, the
// source of a TMA store) when `stmt` issues it: refuses uninitialised elements (a copy
// not yet waited for, say), and across the blocks of a cluster it is the block's own read.
void shared_operand_read(BlockState& st, const TensorValue& view, const StmtNode& stmt);
// A new shared allocation (fresh shadow) and a view of one.
void shared_allocated(BlockState& st, TensorValue& tv);

// A tile window of a global tensor accessed by the threads that hold `tile` (a
// register tile, or a copy_async destination when `copy` is set).
void global_tile_access(BlockState& st, const TensorValue& g, const std::vector<int64_t>& offsets,
                        const std::vector<int>& dims, const std::vector<int64_t>& tile_shape,
                        const ThreadMap& threads, Access access, const StmtNode& stmt);
// One element read by every thread (an element of a global tensor in a scalar expression).
void global_scalar_read(BlockState& st, const TensorValue& g, uintptr_t addr,
                        const std::vector<int64_t>& index, const StmtNode* stmt);

// Barriers and the semaphores' acquire/release.
void debug_barrier(BlockState& st);
// Starts a new barrier interval (what a barrier does).
void next_epoch(BlockState& st);
void debug_acquire(BlockState& st, uintptr_t semaphore);
void debug_release(BlockState& st, uintptr_t semaphore);
// A global atomic with release or acquire semantics (sem="release"/"acquire"/"acq_rel")
// orders blocks as a semaphore does, without being a barrier of its own block (one
// thread's instruction). Read-modify-writes continue a release sequence, so an acquirer
// learns every earlier releaser of the address, not only the last.
void debug_release_rmw(BlockState& st, uintptr_t address);
void debug_acquire_rmw(BlockState& st, uintptr_t address);

// A register tensor declared without init read before assignment.
[[noreturn]] void uninitialised_register(const TensorNode* t, const Instruction& inst);

}  // namespace tilus::interp
