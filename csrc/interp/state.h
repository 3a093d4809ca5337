// The interpreter's runtime state: scalar values, tensor values, one block's frame and
// the launch they all share. Internal to csrc/interp.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "interp/debug_checks.h"
#include "interp/interpreter.h"
#include "ir/stmt.h"

namespace tilus {
struct LayoutPlan;  // transforms/layout_inference.h
}

namespace tilus::interp {

class Coroutine;

// A scalar. Which field is meaningful follows the dtype of the Expr it came from:
// `f` for float types, `i` for integers, bool (0/1) and pointers (the address).
struct Value {
  int64_t i = 0;
  double f = 0.0;
  static Value of_int(int64_t v) { Value r; r.i = v; return r; }
  static Value of_float(double v) { Value r; r.f = v; return r; }
};

// Convert a scalar between dtypes with C semantics: floats round to nearest even,
// float -> int truncates toward zero (saturating), int -> int wraps, bool is nonzero.
Value convert(Value v, DataType from, DataType to);
bool truthy(Value v, DataType t);
int64_t as_int64(Value v, DataType t);  // an index or size: the value as int64

// The runtime value of one tensor in one block.
struct TensorValue {
  bool defined = false;
  const TensorNode* node = nullptr;
  DataType dtype;
  // register / shared: a dense row-major array of numel elements at `data`. Shared
  // views (sa[stage]) point into their root's storage and keep it alive.
  std::shared_ptr<std::vector<uint8_t>> storage;
  uint8_t* data = nullptr;
  // A shared view that is not a dense row-major block of its allocation (a permuted
  // view, or a slice or reshape of one): element i (row-major) lies at
  // data + (*elem_offsets)[i] * element size. Null: dense.
  std::shared_ptr<const std::vector<int64_t>> elem_offsets;
  const std::vector<int64_t>* shape = nullptr;
  int64_t numel = 0;
  // global: elements at base + sum(index[d] * strides[d]) * elem_bytes
  uintptr_t base = 0;
  std::vector<int64_t> gshape, gstrides;
  // The one buffer (index into Launch::regions) this global tensor may touch: the
  // argument its pointer parameter points into, or its workspace. -1: where its
  // address came from is unknown, so any buffer of the launch is accepted.
  int region = -1;
  // Debug checks (interp/debug_checks.h): a shared allocation's shadow, shared by its
  // views; `unset`: a register tensor declared without init and not assigned since.
  std::shared_ptr<SharedShadow> shadow;
  bool unset = false;
};

// Dense slot numbers for the variables and tensors of one program, so a block's frame
// is two vectors instead of maps keyed by global ids.
struct Prepared {
  std::unordered_map<int, int> var_slot;    // ExprNode::var_id -> slot
  std::vector<DataType> var_dtype;          // per slot
  std::vector<bool> var_is_param;           // per slot
  std::unordered_map<int, int> tensor_slot; // TensorNode::id -> slot
  int num_tensors = 0;
  bool uses_semaphores = false;             // any lock_semaphore: blocks may need to wait
  // Signals a peer block's mbarriers (remote or multicast arrivals, multicast TMA loads):
  // blocks of a cluster then order each other outside cluster.sync.
  bool orders_blocks_by_mbarriers = false;
  // Variables declared once at the top level of the kernel and never reassigned, by
  // var_id -> their initialiser. The launch shape may use them (`m_blocks =
  // cdiv(m_size, block_m)` before a global_tensor) when they depend on params only.
  std::unordered_map<int, const ExprNode*> launch_defs;
  // global_view tensor id -> position of the pointer parameter its address derives
  // from; absent when it may derive from several or from an integer.
  std::unordered_map<int, int> view_param;
};
Prepared prepare(const Program& program);

// What every block of one launch shares.
struct Launch {
  const Program* program = nullptr;
  Prepared prep;
  std::vector<Value> params;  // per Program::params entry, already converted
  std::array<int64_t, 3> grid{1, 1, 1};
  std::vector<HostRegion> regions;  // the arguments' buffers and the workspaces
  std::vector<std::vector<uint8_t>> workspace_storage;
  std::vector<uintptr_t> workspace_base;
  std::vector<int> param_region;      // per param: index into regions of its buffer, or -1
  std::vector<int> workspace_region;  // per workspace: index into regions
  // Called every kPollInterval loop iterations and blocks; may throw to abandon the
  // launch (the Python binding raises KeyboardInterrupt there on Ctrl-C).
  std::function<void()> poll;
  mutable uint32_t until_poll = 0;
  // The register layouts (as for an sm_80 target), for the instructions whose result
  // depends on them (view with layout=); computed on first use.
  mutable std::shared_ptr<const LayoutPlan> layouts;
  mutable uint64_t instructions = 0;  // tile instructions executed (all blocks)
  std::unique_ptr<DebugState> debug;  // null unless a debug check is on
};
const LayoutPlan& layout_plan(const Launch& l);

constexpr uint32_t kPollInterval = 256;
inline void maybe_poll(const Launch& l) {
  if (l.poll && ++l.until_poll >= kPollInterval) {
    l.until_poll = 0;
    l.poll();
  }
}

// A copy_async issued but not yet performed.
struct PendingCopy {
  TensorValue src;  // snapshot of the global view at issue time
  std::shared_ptr<std::vector<uint8_t>> keep_alive;
  uint8_t* dst = nullptr;
  DataType dst_dtype;
  std::vector<int64_t> dst_shape;
  std::vector<int64_t> offsets;
  std::vector<int> dims;
  const StmtNode* stmt = nullptr;
  std::shared_ptr<const std::vector<int64_t>> dst_offsets;  // a permuted destination view
  // For the debug checks: the destination view and the barrier interval of the issue.
  const TensorNode* dst_node = nullptr;
  std::shared_ptr<SharedShadow> shadow;
  uint32_t issue_epoch = 0;
};

// One thread block's frame: its scalars, its tensors and its async-copy groups.
struct BlockState {
  const Launch* launch = nullptr;
  std::array<int64_t, 3> block_idx{0, 0, 0};
  bool launch_only = false;  // evaluating the grid / workspace shapes: params only
  std::vector<Value> vars;
  std::vector<TensorValue> tensors;
  std::vector<PendingCopy> open_copies;
  std::deque<std::vector<PendingCopy>> committed_copies;
  // Set when the block runs as a coroutine: how it waits in lock_semaphore.
  Coroutine* coroutine = nullptr;
  const uint8_t* wait_ptr = nullptr;
  int32_t wait_value = 0;
  const StmtNode* wait_stmt = nullptr;
  bool cancelled = false;  // the launch failed elsewhere: unwind at the next wait
  bool finished = false;   // ran to its end: its shared memory is gone (cluster peers' accesses)
  // Debug checks: the barrier interval (bumped by every barrier), the block's linear
  // index and vector clock, and the statement being executed (for scalar reads).
  uint32_t epoch = 1;
  int32_t linear = 0;
  VectorClock clock;
  const StmtNode* current = nullptr;
  // mbarriers and TMA copies in flight (ops/hopper_state.h); null until the first use.
  std::shared_ptr<struct HopperState> hopper;
  // explicit wgmma (ops/wgmma.cc): results not yet landed; null until the first mma.
  std::shared_ptr<struct WgmmaState> wgmma;
  // The thread group executing (interp/thread_groups.cc): first thread and thread count;
  // group_threads 0 is the whole block.
  int64_t group_begin = 0, group_threads = 0;
  // Set while this frame runs one of several thread groups side by side: how it lets
  // the others run when it must wait (null: it is the only runner of its block).
  struct GroupAgent* agent = nullptr;
  // The cluster this block runs in (a program with self.attrs.cluster_blocks) and its
  // rank there; null otherwise.
  struct ClusterRun* cluster = nullptr;
  int64_t cluster_rank = 0;

  int64_t threads() const;  // the threads of the current group

  void reset(const Launch& l, std::array<int64_t, 3> idx);
  Value& var(const ExprNode* v);
  TensorValue& tensor(const TensorNode* t);
};

// Thrown inside a suspended block to unwind it when the launch is abandoned.
struct BlockCancelled {};

// ---- interpreter.cc / scalar_eval.cc: setting up a launch
// Converts the arguments per Program::params dtypes and assigns slots; no allocation.
void init_launch(Launch& l, const Program& program, const std::vector<HostArg>& args);
LaunchShape launch_shape(const Launch& l);  // grid and workspace sizes from params only

// ---- scalar_eval.cc
Value eval(BlockState& st, const ExprNode* e);
inline Value eval(BlockState& st, const Expr& e) { return eval(st, e.get()); }
int64_t eval_int(BlockState& st, const Expr& e);
// Address of an element of a global tensor (an ElementAddr/ElementLoad node); `tv` and
// `index` receive the tensor and the evaluated indices.
uintptr_t element_address(BlockState& st, const ExprNode* e, const TensorValue*& tv,
                          std::vector<int64_t>& index);
// Integer and float binary operators shared by scalar and tile evaluation. Integer
// results are wrapped to `k`; comparisons and logical operators give 0/1.
int64_t int_binary(BinaryOp op, int64_t x, int64_t y, ScalarKind k);
double float_binary(BinaryOp op, double x, double y);

// ---- memory.cc: global memory, checked against the launch's regions
const HostRegion* find_region(const Launch& l, uintptr_t addr, size_t bytes);
// Whether [addr, addr + bytes) lies in the buffer `tensor` may touch (any buffer when
// its origin is unknown).
bool allowed_access(const Launch& l, const TensorValue& tensor, uintptr_t addr, size_t bytes);
void check_global_access(const Launch& l, uintptr_t addr, size_t bytes, const char* what,
                         const TensorValue* tensor, const std::vector<int64_t>& index);
enum class Transfer { Load, Store };
// Moves a tile between a global tensor and a dense row-major buffer: tile dim p maps
// to global dim dims[p]; out-of-range elements read as 0 (Load) or are dropped (Store).
void transfer_window(const Launch& l, const TensorValue& g, const std::vector<int64_t>& offsets,
                     const std::vector<int>& dims, uint8_t* tile, DataType tile_dtype,
                     const std::vector<int64_t>& tile_shape, Transfer dir, const char* what);
// Converts n elements between dtypes (same dtype: a plain copy).
void convert_elements(const uint8_t* src, DataType src_dtype, uint8_t* dst, DataType dst_dtype,
                      int64_t n);
void perform_copy(const Launch& l, const PendingCopy& c);

// ---- tile_ops.cc
void exec_inst(BlockState& st, const StmtNode& stmt, const Instruction& inst);
// wait_group(keep_groups) / wait_all; `wait` is the waiting statement (null: the block's end).
void complete_copies(BlockState& st, size_t keep_groups, const StmtNode* wait);
void complete_all_copies(BlockState& st, const StmtNode* wait);
// ops/tma.cc: TMA copies still in flight land before the block exits.
void complete_hopper_copies(BlockState& st);
// The slot (BlockState::tensors) of the shared allocation a shared view lies in: the same
// slot names that allocation in every block of the launch (a multicast's peers).
size_t shared_root_slot(const BlockState& st, const TensorValue& view);
// ops/wgmma.cc: refuses an instruction touching an accumulator a wgmma.mma still writes
// (called before each instruction while st.wgmma is set).
void wgmma_guard(BlockState& st, const StmtNode& stmt, const Instruction& inst);
// Refuses a write into shared tensor value `dst` (`what` writes `target`; its bytes moved
// by `shift`: a multicast into a peer block) that a wgmma still in flight in this block
// reads (ops/wgmma.cc).
void wgmma_shared_write(BlockState& st, const TensorValue& dst, const char* what, const std::string& target,
                        std::ptrdiff_t shift = 0);

// The blocks of one cluster, run side by side (thread_groups.cc run_clusters).
struct ClusterRun {
  std::array<int64_t, 3> dims{1, 1, 1};
  std::vector<std::array<int64_t, 3>> block_idx;       // per rank
  std::vector<std::shared_ptr<struct HopperState>> hopper;  // per rank: its mbarriers
  std::vector<BlockState*> blocks;                          // per rank: its frame (TMA multicast)
  int64_t arrived = 0;      // threads arrived at the cluster barrier in this generation
  uint64_t generation = 0;  // completed cluster barriers
  uint64_t progress = 0;    // bumped by anything a waiting block may wait for
  int64_t size() const { return dims[0] * dims[1] * dims[2]; }
};

// ---- thread_groups.cc: `with self.thread_group(...)`
// Runs statements seq[k..] when seq[k] is a thread group; returns how many statements it
// ran (consecutive groups on disjoint threads run side by side, each a coroutine).
size_t exec_thread_groups(BlockState& st, const std::vector<Stmt>& seq, size_t k);
// Called by a wait that cannot complete yet: lets the other thread groups of the block
// run and returns true, or returns false when none can (then the wait is a deadlock).
// `why` describes the wait for the deadlock report.
bool yield_to_groups(BlockState& st, const std::string& why);
// Bumped by everything that may let a waiting group continue (arrivals, landings).
void note_progress(BlockState& st);
// Runs one thread group statement on `st`, narrowed to its threads (interpreter.cc).
void exec_group_inline(BlockState& st, const StmtNode* group);
// One block from start to end, its copies landed (interpreter.cc).
void run_block(BlockState& st);
// Every block of a launch whose program has clusters, cluster by cluster (the grid
// already checked by check_cluster_grid).
void run_clusters(const Launch& l);
// The grid is a whole number of clusters (else a ValueError naming the dimension).
void check_cluster_grid(const Launch& l);
// The blocks of the cluster whose first block is `origin`, side by side. `parent`: the
// semaphore scheduler's task running it (its blocks may wait in lock_semaphore for blocks
// of other clusters), or null.
void run_cluster(const Launch& l, std::array<int64_t, 3> origin, BlockState* parent);

// ---- interpreter.cc: lock_semaphore's wait (yields when running as a coroutine)
void wait_semaphore(BlockState& st, const uint8_t* ptr, int32_t value, const StmtNode& stmt);

}  // namespace tilus::interp
