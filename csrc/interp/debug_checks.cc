// The interpreter's race and uninitialised-read checks (interp/debug_checks.h).
#include "interp/debug_checks.h"

#include "ops/hopper_state.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>

#include "interp/buffer.h"
#include "interp/state.h"
#include "layout/block_layouts.h"
#include "transforms/layout_inference.h"
#include "support/error.h"

namespace tilus {

namespace {
std::atomic<bool> g_races{true};
std::atomic<bool> g_uninit{true};
}  // namespace

void set_interp_checks(InterpChecks checks) {
  g_races = checks.races;
  g_uninit = checks.uninit;
}

InterpChecks interp_checks() { return {g_races.load(), g_uninit.load()}; }

}  // namespace tilus

namespace tilus::interp {

namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

int64_t flat(const std::vector<int64_t>& coords, const std::vector<int64_t>& strides) {
  int64_t f = 0;
  for (size_t d = 0; d < coords.size(); ++d) f += coords[d] * strides[d];
  return f;
}

std::vector<int64_t> unflat(int64_t e, const std::vector<int64_t>& shape) {
  std::vector<int64_t> c(shape.size(), 0);
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] > 0) {
      c[d] = e % shape[d];
      e /= shape[d];
    }
  }
  return c;
}

std::string index_str(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

ThreadMap build_thread_map(const RegisterLayout& layout) {
  ThreadMap m;
  const int64_t T = layout.num_threads(), L = layout.local_size();
  const std::vector<int64_t> strides = row_major_strides(layout.shape);
  m.leader.assign(static_cast<size_t>(layout.numel()), 0);
  // The code generator stores from the threads whose replication digits are all 0
  // (CudaEmitter::replica_leader); the other holders differ only in those digits.
  std::vector<int64_t> inner(layout.spatial_modes.size());
  int64_t acc = 1;
  for (int j = static_cast<int>(layout.spatial_modes.size()) - 1; j >= 0; --j) {
    int mode = layout.spatial_modes[j];
    inner[j] = acc;
    acc *= mode < 0 ? -mode : layout.mode_shape[mode];
  }
  m.replicas = {0};
  for (size_t j = 0; j < layout.spatial_modes.size(); ++j) {
    int mode = layout.spatial_modes[j];
    if (mode >= 0) continue;
    std::vector<int32_t> next;
    for (int32_t d : m.replicas)
      for (int64_t k = 0; k < -mode; ++k) next.push_back(static_cast<int32_t>(d + k * inner[j]));
    m.replicas = std::move(next);
  }
  std::vector<int64_t> local_off(static_cast<size_t>(L));
  for (int64_t l = 0; l < L; ++l) local_off[l] = flat(layout.local_coords(l), strides);
  for (int64_t t = 0; t < T; ++t) {
    bool leader = true;
    for (size_t j = 0; j < layout.spatial_modes.size() && leader; ++j) {
      int mode = layout.spatial_modes[j];
      if (mode >= 0) continue;
      int64_t digit = j == 0 ? t / inner[j] : (t / inner[j]) % -mode;
      leader = digit == 0;
    }
    if (!leader) continue;
    const int64_t base = flat(layout.coords(t, 0), strides);
    for (int64_t l = 0; l < L; ++l) m.leader[base + local_off[l]] = static_cast<int32_t>(t);
  }
  return m;
}

// Thread maps are pure functions of the layout: built once per process.
const ThreadMap& thread_map_for(const RegisterLayout& layout) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::unique_ptr<ThreadMap>> cache;
  std::string key = layout.str();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, std::make_unique<ThreadMap>(build_thread_map(layout))).first;
  return *it->second;
}

const ThreadMap& default_map(int64_t threads, const TensorNode* t) {
  int64_t bits = std::max<int64_t>(1, t->dtype.bits());
  return thread_map_for(auto_global_layout(t->shape, threads, std::max<int64_t>(1, 128 / bits)));
}

// The layouts of a program, inferred once per program (keyed by its body, held weakly
// so that a freed program's entry is never mistaken for a new one at the same address).
std::unordered_map<int, const ThreadMap*> program_maps(const Program& program) {
  struct Entry {
    std::weak_ptr<const StmtNode> body;
    std::unordered_map<int, const ThreadMap*> maps;
  };
  static std::mutex mu;
  static std::unordered_map<const Program*, Entry> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(&program);
    if (it != cache.end() && it->second.body.lock() == program.body) return it->second.maps;
  }
  std::unordered_map<int, const ThreadMap*> maps;
  try {
    LayoutPlan plan = infer_layouts(program, /*allow_wgmma=*/false);
    for (const auto& [id, layout] : plan.reg) maps[id] = &thread_map_for(layout);
  } catch (const std::exception&) {
    // A program the CUDA backend cannot lay out (the interpreter runs more): its tiles
    // are attributed to threads with the default coalesced layout.
  }
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = cache.begin(); it != cache.end();)
    it = it->second.body.expired() ? cache.erase(it) : std::next(it);
  cache[&program] = Entry{program.body, maps};
  return maps;
}

// Threads of one warp execute each tile instruction together (tile programs never
// diverge within an instruction), so they see each other's accesses in program order;
// like compute-sanitizer's racecheck, only threads of different warps are compared.
inline bool other_warp(int32_t a, int32_t b, int32_t threads) {
  if (a == kEveryThread || b == kEveryThread) return threads > 32;
  return (a >> 5) != (b >> 5);
}

std::string block_str(const BlockState& st) {
  return cat("(", st.block_idx[0], ", ", st.block_idx[1], ", ", st.block_idx[2], ")");
}

std::string block_str(const Launch& l, int32_t linear) {
  const auto& g = l.grid;
  return cat("(", linear % g[0], ", ", (linear / g[0]) % g[1], ", ", linear / (g[0] * g[1]), ")");
}

std::string where(const StmtNode* s) {
  if (!s || !s->loc.known()) return "an unknown line";
  return cat(s->loc.str(), " (`", s->loc.text, "`)");
}

std::string thread_str(int32_t t) {
  return t == kEveryThread ? std::string("every thread") : cat("thread ", t, " (warp ", t / 32, ")");
}

[[noreturn]] void throw_at(const char* kind, const std::string& message, const StmtNode* at) {
  ScriptError e(kind, message);
  if (at) e.set_loc_if_unknown(at->loc);
  throw e;
}

}  // namespace

// ---------------------------------------------------------------- setup

void init_debug_checks(Launch& l) {
  InterpChecks c = interp_checks();
  if (!c.races && !c.uninit) return;
  l.debug = std::make_unique<DebugState>();
  l.debug->checks = c;
  l.debug->threads = l.program->warps * 32;
  if (c.races) {
    l.debug->maps = program_maps(*l.program);
    l.debug->global.init(l.regions);
  }
}

void debug_block_start(BlockState& st) {
  st.epoch = 1;
  const auto& g = st.launch->grid;
  st.linear = static_cast<int32_t>(st.block_idx[0] + g[0] * (st.block_idx[1] + g[1] * st.block_idx[2]));
  st.clock.clear();
  if (st.launch->debug) st.clock[st.linear] = 1;
}

const ThreadMap& thread_map_of(BlockState& st, const TensorNode* reg) {
  DebugState& d = *st.launch->debug;
  auto it = d.maps.find(reg->id);
  if (it != d.maps.end() && it->second->leader.size() == static_cast<size_t>(reg->numel()))
    return *it->second;
  const ThreadMap& m = default_map(d.threads, reg);
  d.maps[reg->id] = &m;
  return m;
}

const ThreadMap& copy_thread_map(BlockState& st, const TensorNode* dst) {
  // CudaEmitter::emit_copy_async spreads the destination with auto_global_layout: 16-byte
  // runs, as the aligned build does (where rows are not vectors it spreads shorter runs,
  // which the interpreter, knowing no alignment, does not model).
  return default_map(st.launch->debug->threads, dst);
}

// ---------------------------------------------------------------- shared memory

void shared_allocated(BlockState& st, TensorValue& tv) {
  const DebugState* d = st.launch->debug.get();
  if (!d) {
    tv.shadow.reset();
    return;
  }
  // The previous allocation's shadow, when nothing else refers to it any more (as the
  // storage itself is reused by define_output).
  if (!tv.shadow || tv.shadow.use_count() != 1) tv.shadow = std::make_shared<SharedShadow>();
  SharedShadow& sh = *tv.shadow;
  sh.root = tv.node;
  sh.base = tv.data;
  sh.elem_bytes = element_bytes(tv.dtype);
  sh.cells.assign(static_cast<size_t>(tv.numel), SharedCell{});
}

namespace {

std::string shared_element(const SharedShadow& sh, int64_t cell) {
  return cat(sh.root->name, index_str(unflat(cell, sh.root->shape)));
}

// "thread 5 (warp 0) at f.py:12 (`...`)", and for a copy_async where it landed.
std::string access_str(int32_t thread, const StmtNode* stmt, bool async, const StmtNode* wait) {
  std::string s = cat(thread_str(thread), " at ", where(stmt));
  if (async)
    s += wait ? cat(" (a copy_async landing at the wait at ", where(wait), ")")
              : std::string(" (a copy_async landing when the block ends)");
  return s;
}

[[noreturn]] void shared_race(const BlockState& st, const SharedShadow& sh, int64_t cell,
                              const char* first_what, const std::string& first,
                              const char* then_what, const std::string& then, const StmtNode* at) {
  throw_at("DataRaceError",
           cat("data race on shared memory in block ", block_str(st), ": element ",
               shared_element(sh, cell), " is ", first_what, " by ", first, " and ", then_what,
               " by ", then, ", with no sync() between them"),
           at);
}

// A write by thread t that conflicts with accesses from barrier interval `lo` on;
// `async`: a copy_async landing at `wait`.
inline void shared_write(const BlockState& st, const SharedShadow& sh, int64_t i, SharedCell& c,
                         int32_t t, uint32_t lo, const StmtNode* stmt, bool races, bool async,
                         const StmtNode* wait) {
  const int32_t n = st.launch->debug->threads;
  if (races) {
    auto me = [&] { return access_str(t, stmt, async, wait); };
    const StmtNode* at = async && wait ? wait : stmt;
    if (c.w_epoch >= lo && other_warp(c.w_thread, t, n))
      shared_race(st, sh, i, "written", access_str(c.w_thread, c.w_stmt, c.w_async, c.w_wait),
                  "written", me(), at);
    if (c.r_epoch >= lo && other_warp(c.r_thread, t, n))
      shared_race(st, sh, i, "read", access_str(c.r_thread, c.r_stmt, false, nullptr), "written",
                  me(), at);
    if (c.r2_epoch >= lo && other_warp(c.r2_thread, t, n))
      shared_race(st, sh, i, "read", access_str(c.r2_thread, c.r2_stmt, false, nullptr), "written",
                  me(), at);
  }
  c.w_epoch = st.epoch;
  c.w_thread = t;
  c.w_stmt = stmt;
  c.w_async = async;
  c.w_wait = wait;
  c.written = true;
}

// Calls f(e, i, cell) for element e of the `numel` elements at `data` (a view's element
// offsets, or dense) that lie in shadow sh's allocation, i the cell's index.
template <class F>
void for_each_cell(SharedShadow& sh, const uint8_t* data, DataType dtype, int64_t numel,
                   const std::vector<int64_t>* offsets, F&& f) {
  const int vb = element_bytes(dtype);
  const int64_t start = data - sh.base;
  for (int64_t e = 0; e < numel; ++e) {
    // a permuted view (reshape_shared, permute_shared) lists its elements' offsets
    const int64_t at = offsets ? (*offsets)[static_cast<size_t>(e)] : e;
    const int64_t i = (start + at * vb) / sh.elem_bytes;
    if (i < 0 || i >= static_cast<int64_t>(sh.cells.size())) continue;
    f(e, i, sh.cells[static_cast<size_t>(i)]);
  }
}

// Cross-block checks run in clusters whose blocks order each other by cluster.sync
// alone: mbarrier arrivals on a peer also order them (Prepared::orders_blocks_by_mbarriers),
// which these interval checks do not model.
bool cluster_checked(const BlockState& st) {
  return st.cluster && !st.launch->prep.orders_blocks_by_mbarriers && st.launch->debug->checks.races;
}

std::string rank_str(const BlockState& st, int64_t rank) {
  const auto& idx = st.cluster->block_idx[static_cast<size_t>(rank)];
  return cat("block (", idx[0], ", ", idx[1], ", ", idx[2], ") (rank ", rank, ")");
}

[[noreturn]] void cluster_race(const BlockState& st, const SharedShadow& sh, int64_t cell, int64_t owner,
                               const std::string& first, const std::string& then, const StmtNode* at) {
  throw_at("DataRaceError",
           cat("data race on the shared memory of ", rank_str(st, owner), ": element ",
               shared_element(sh, cell), " is ", first, " and ", then,
               ", with no self.cluster.sync() between them"),
           at);
}

// This block's own access to cell c (load_shared / store_shared): against the peers'
// accesses of the current cluster-barrier interval.
void cluster_owner_access(BlockState& st, const SharedShadow& sh, int64_t i, SharedCell& c, Access access,
                          const StmtNode* stmt) {
  const uint64_t g = st.cluster->generation + 1;
  auto me = [&] {  // only for the report: this runs for every element
    return cat(access == Access::Write ? "written" : "read", " by ", rank_str(st, st.cluster_rank), " itself at ",
               where(stmt));
  };
  if (c.peer_w_gen == g)
    cluster_race(st, sh, i, st.cluster_rank,
                 cat("written by ", rank_str(st, c.peer_w_rank), " at ", where(c.peer_w_stmt)), me(), stmt);
  if (access == Access::Write && c.peer_r_gen == g)
    cluster_race(st, sh, i, st.cluster_rank,
                 cat("read by ", rank_str(st, c.peer_r_rank), " at ", where(c.peer_r_stmt)), me(), stmt);
  c.own_gen = g;
  c.own_stmt = stmt;
  if (access == Access::Write) c.own_w_gen = g;
}

}  // namespace

void shared_tile_access(BlockState& st, const TensorValue& view, const TensorNode* reg,
                        Access access, const StmtNode& stmt) {
  const DebugState* d = st.launch->debug.get();
  if (!d || !view.shadow) return;
  SharedShadow& sh = *view.shadow;
  const bool races = d->checks.races, uninit = d->checks.uninit;
  const int64_t n = view.numel;
  const uint32_t E = st.epoch;
  const ThreadMap* tm = races ? &thread_map_of(st, reg) : nullptr;
  const int32_t nt = d->threads;
  if (tm && static_cast<int64_t>(tm->leader.size()) != n) tm = nullptr;
  const bool in_cluster = cluster_checked(st);
  for_each_cell(sh, view.data, view.dtype, n, view.elem_offsets.get(), [&](int64_t e, int64_t i, SharedCell& c) {
    const int32_t lead = tm ? tm->leader[e] : 0;
    if (in_cluster) cluster_owner_access(st, sh, i, c, access, &stmt);
    if (access == Access::Write) {
      shared_write(st, sh, i, c, lead, E, &stmt, tm != nullptr, false, nullptr);
      return;
    }
    if (uninit && !c.written)
      throw_at("UninitializedReadError",
               cat(op_name(stmt.inst->op), " reads element ", shared_element(sh, i),
                   " of shared memory before anything wrote it (", thread_str(lead), " of block ",
                   block_str(st), ")"),
               &stmt);
    if (!tm) return;
    for (int32_t off : tm->replicas) {
      const int32_t t = lead + off;
      if (c.w_epoch == E && other_warp(c.w_thread, t, nt))
        shared_race(st, sh, i, "written", access_str(c.w_thread, c.w_stmt, c.w_async, c.w_wait),
                    "read", access_str(t, &stmt, false, nullptr), &stmt);
      // Only the replica leader's read is kept for later writes to conflict with: a tile
      // written back in place (read-modify-write) is stored by the leader alone, and
      // the other replicas' possibly late reads are not what gets stored.
      if (off != 0) continue;
      if (c.r_epoch != E) {
        c.r_epoch = E;
        c.r_thread = t;
        c.r_stmt = &stmt;
      } else if (other_warp(c.r_thread, t, nt)) {
        c.r2_epoch = E;
        c.r2_thread = t;
        c.r2_stmt = &stmt;
      }
    }
  });
}

// Marks a cell initialised, in no barrier interval: writes whose ordering the
// barrier-interval check does not model (a TMA landing, a peer block's store) are never
// its race partner.
namespace {
void mark_initialised(SharedCell& cell) {
  cell.written = true;
  cell.w_epoch = 0;
}
}  // namespace

void shared_tma_landed(BlockState& st, const PendingCopy& c) {
  if (!st.launch->debug || !c.shadow) return;
  int64_t n = 1;
  for (int64_t s : c.dst_shape) n *= s;
  const bool in_cluster = cluster_checked(st);
  SharedShadow& sh = *c.shadow;
  for_each_cell(sh, c.dst, c.dst_dtype, n, c.dst_offsets.get(), [&](int64_t, int64_t i, SharedCell& cell) {
    if (in_cluster) cluster_owner_access(st, sh, i, cell, Access::Write, c.stmt);
    mark_initialised(cell);
  });
}

void shared_operand_read(BlockState& st, const TensorValue& view, const StmtNode& stmt) {
  const DebugState* d = st.launch->debug.get();
  if (!d || !view.shadow) return;
  SharedShadow& sh = *view.shadow;
  const bool uninit = d->checks.uninit, in_cluster = cluster_checked(st);
  if (!uninit && !in_cluster) return;
  for_each_cell(sh, view.data, view.dtype, view.numel, view.elem_offsets.get(), [&](int64_t, int64_t i, SharedCell& c) {
    if (uninit && !c.written)
      throw_at("UninitializedReadError",
               cat(op_name(stmt.inst->op), " reads element ", shared_element(sh, i), " of shared memory before "
                   "anything wrote it (block ", block_str(st), "): a copy into it not yet waited for?"),
               &stmt);
    if (in_cluster) cluster_owner_access(st, sh, i, c, Access::Read, &stmt);
  });
}

void shared_atomic_access(BlockState& st, const TensorValue& view, const uint8_t* p, const StmtNode& stmt) {
  if (!st.launch->debug || !view.shadow || !cluster_checked(st)) return;
  SharedShadow& sh = *view.shadow;
  const int64_t i = (p - sh.base) / sh.elem_bytes;
  if (i < 0 || i >= static_cast<int64_t>(sh.cells.size())) return;
  cluster_owner_access(st, sh, i, sh.cells[static_cast<size_t>(i)], Access::Write, &stmt);
}

void shared_peer_access(BlockState& st, const TensorValue& view, int64_t owner, Access access,
                        const StmtNode& stmt) {
  const DebugState* d = st.launch->debug.get();
  if (!d || !view.shadow) return;
  SharedShadow& sh = *view.shadow;
  const bool races = cluster_checked(st);
  const uint64_t g = st.cluster->generation + 1;
  const std::string me = cat(access == Access::Write ? "written" : "read", " by ", rank_str(st, st.cluster_rank),
                             " at ", where(&stmt));
  for_each_cell(sh, view.data, view.dtype, view.numel, view.elem_offsets.get(), [&](int64_t, int64_t i, SharedCell& c) {
    if (access == Access::Read && d->checks.uninit && !c.written)
      throw_at("UninitializedReadError",
               cat("cluster.load_shared reads element ", shared_element(sh, i), " of the shared memory of ",
                   rank_str(st, owner), " before anything wrote it"),
               &stmt);
    if (races) {
      // the owner's own accesses: any of them against a peer write, a write against a read
      const bool owner_conflict = access == Access::Write ? c.own_gen == g : c.own_w_gen == g;
      if (owner_conflict)
        cluster_race(st, sh, i, owner,
                     cat(access == Access::Write && c.own_w_gen != g ? "read" : "written", " by ",
                         rank_str(st, owner), " itself at ", where(c.own_stmt)),
                     me, &stmt);
      if (c.peer_w_gen == g && c.peer_w_rank != st.cluster_rank)
        cluster_race(st, sh, i, owner, cat("written by ", rank_str(st, c.peer_w_rank), " at ", where(c.peer_w_stmt)),
                     me, &stmt);
      if (access == Access::Write && c.peer_r_gen == g && c.peer_r_rank != st.cluster_rank)
        cluster_race(st, sh, i, owner, cat("read by ", rank_str(st, c.peer_r_rank), " at ", where(c.peer_r_stmt)),
                     me, &stmt);
    }
    if (access == Access::Write) {
      mark_initialised(c);  // the owner's later reads find it written
      c.peer_w_gen = g;
      c.peer_w_rank = static_cast<int32_t>(st.cluster_rank);
      c.peer_w_stmt = &stmt;
    } else {
      c.peer_r_gen = g;
      c.peer_r_rank = static_cast<int32_t>(st.cluster_rank);
      c.peer_r_stmt = &stmt;
    }
  });
}

void shared_copy_landed(BlockState& st, const PendingCopy& c, const StmtNode* wait) {
  const DebugState* d = st.launch->debug.get();
  if (!d || !c.shadow || !c.dst_node) return;
  SharedShadow& sh = *c.shadow;
  int64_t n = 1;
  for (int64_t s : c.dst_shape) n *= s;
  const ThreadMap* tm = d->checks.races ? &copy_thread_map(st, c.dst_node) : nullptr;
  if (tm && static_cast<int64_t>(tm->leader.size()) != n) tm = nullptr;
  const bool in_cluster = cluster_checked(st);
  for_each_cell(sh, c.dst, c.dst_dtype, n, c.dst_offsets.get(), [&](int64_t e, int64_t i, SharedCell& cell) {
    if (in_cluster) cluster_owner_access(st, sh, i, cell, Access::Write, c.stmt);
    shared_write(st, sh, i, cell, tm ? tm->leader[e] : 0, c.issue_epoch, c.stmt, tm != nullptr, true, wait);
  });
}

// ---------------------------------------------------------------- global memory

namespace {
// Pages of finished launches, reused (cleared) by the next: a fresh page costs page
// faults on every touch, which dominated the check's cost in small launches.
constexpr size_t kPoolPages = 1024;
thread_local std::vector<std::unique_ptr<GlobalCell[]>> page_pool;
}  // namespace

GlobalShadow::~GlobalShadow() {
  for (Region& r : regions_)
    for (auto& p : r.pages)
      if (p && page_pool.size() < kPoolPages) page_pool.push_back(std::move(p));
}

void GlobalShadow::init(const std::vector<HostRegion>& regions) {
  for (const HostRegion& h : regions) {
    Region r;
    r.begin = h.begin;
    r.end = h.begin + h.bytes;
    regions_.push_back(std::move(r));
  }
}

GlobalCell* GlobalShadow::cell_of(Region& r, size_t index) {
  const size_t page = index / kPageCells;
  if (page < r.pages.size() && r.pages[page]) return &r.pages[page][index % kPageCells];
  if (page >= r.pages.size()) r.pages.resize(page + 1);
  std::unique_ptr<GlobalCell[]>& p = r.pages[page];
  if (!p) {
    if (bytes_ + kPageCells * sizeof(GlobalCell) > kMaxShadowBytes) {
      saturated_ = true;
      return nullptr;
    }
    bytes_ += kPageCells * sizeof(GlobalCell);
    if (!page_pool.empty()) {
      p = std::move(page_pool.back());
      page_pool.pop_back();
      std::fill(p.get(), p.get() + kPageCells, GlobalCell{});
    } else {
      p = std::make_unique<GlobalCell[]>(kPageCells);
    }
  }
  return &p[index % kPageCells];
}

GlobalCell* GlobalShadow::overflow(uintptr_t addr) {
  auto it = other_.find(addr);
  if (it != other_.end()) return &it->second;
  if (bytes_ + 64 > kMaxShadowBytes) {
    saturated_ = true;
    return nullptr;
  }
  bytes_ += 64;
  return &other_[addr];
}

GlobalCell* GlobalShadow::find(uintptr_t addr, int bytes) {
  if (last_ >= regions_.size() || addr < regions_[last_].begin || addr >= regions_[last_].end) {
    size_t k = 0;
    while (k < regions_.size() && (addr < regions_[k].begin || addr >= regions_[k].end)) ++k;
    if (k == regions_.size()) return overflow(addr);
    last_ = k;
  }
  Region& r = regions_[last_];
  if (!r.granule) {
    r.granule = bytes;
    while ((1 << r.shift) < bytes) ++r.shift;
  }
  const uintptr_t off = addr - r.begin;
  if (bytes != r.granule || (off & static_cast<uintptr_t>(r.granule - 1)) || (1 << r.shift) != r.granule)
    return overflow(addr);
  return cell_of(r, off >> r.shift);
}

namespace {

// Whether access `a` happens before the current one of thread t of block st.
inline bool ordered(const GlobalAccess& a, const BlockState& st, int32_t t) {
  const int32_t threads = st.launch->debug->threads;
  if (a.block < 0) return true;
  if (a.block == st.linear) {
    if (a.epoch != st.epoch) return true;  // a barrier lies between them
    return !other_warp(a.thread, t, threads);
  }
  auto it = st.clock.find(a.block);
  return it != st.clock.end() && it->second >= a.clock;
}

[[noreturn]] void global_race(const BlockState& st, const std::string& element, const GlobalAccess& a,
                              const char* a_what, const char* b_what, int32_t t,
                              const StmtNode* stmt) {
  const Launch& l = *st.launch;
  const bool same_block = a.block == st.linear;
  std::string why = same_block
                        ? std::string(", with no sync() between them")
                        : std::string("; no release_semaphore -> lock_semaphore chain (nor an "
                                      "atomic) orders the two blocks");
  throw_at("DataRaceError",
           cat("data race on global memory: element ", element, " is ", a_what, " by block ",
               block_str(l, a.block), " ", thread_str(a.thread), " at ", where(a.stmt), " and ",
               b_what, " by block ", block_str(st), " ", thread_str(t), " at ", where(stmt), why),
           stmt);
}

template <typename ElementName>
inline void global_one(BlockState& st, DebugState& d, uintptr_t addr, int bytes, int32_t t, Access access,
                       uint32_t own, const StmtNode* stmt, const ElementName& element,
                       bool record = true) {
  GlobalCell* cp = d.global.find(addr, bytes);
  if (!cp) return;
  GlobalCell& c = *cp;
  GlobalAccess cur{st.linear, t, st.epoch, own, stmt};
  if (!ordered(c.w, st, t))
    global_race(st, element(), c.w, "written", access == Access::Write ? "written" : "read", t, stmt);
  if (access == Access::Write) {
    if (!ordered(c.r, st, t)) global_race(st, element(), c.r, "read", "written", t, stmt);
    if (!ordered(c.r2, st, t)) global_race(st, element(), c.r2, "read", "written", t, stmt);
    c.w = cur;
    c.r = GlobalAccess{};
    c.r2 = GlobalAccess{};
    return;
  }
  if (!record) return;
  if (c.r.block >= 0 && !ordered(c.r, st, t) && !(c.r.block == st.linear && !other_warp(c.r.thread, t, d.threads)))
    c.r2 = c.r;
  c.r = cur;
}

}  // namespace

void global_tile_access(BlockState& st, const TensorValue& g, const std::vector<int64_t>& offsets,
                        const std::vector<int>& dims_in, const std::vector<int64_t>& tile_shape,
                        const ThreadMap& threads, Access access, const StmtNode& stmt) {
  DebugState* d = st.launch->debug.get();
  if (!d || !d->checks.races) return;
  const int r = static_cast<int>(g.gshape.size()), t = static_cast<int>(tile_shape.size());
  std::vector<int> dims = dims_in;
  if (dims.empty())
    for (int p = 0; p < t; ++p) dims.push_back(r - t + p);
  if (static_cast<int>(dims.size()) != t || static_cast<int>(offsets.size()) != r) return;
  for (int dd = 0; dd < r; ++dd) {
    bool tile_dim = std::find(dims.begin(), dims.end(), dd) != dims.end();
    if (!tile_dim && (offsets[dd] < 0 || offsets[dd] >= g.gshape[dd])) return;  // nothing in range
  }
  int64_t n = 1;
  for (int64_t s : tile_shape) n *= s;
  if (static_cast<int64_t>(threads.leader.size()) != n) return;
  if (n == 0 || t == 0) return;
  // Packed sub-byte tensors (ir/packed.h) share bytes between elements; their tiles
  // are not race-checked.
  if (g.dtype.bits() < 8) return;
  const int gb = element_bytes(g.dtype);
  const uint32_t own = st.clock[st.linear];
  // Row by row over the tile's last dim: the part of each row inside the tensor.
  const int inner = t - 1;
  const int64_t row = tile_shape[inner];
  const int64_t lo = std::clamp<int64_t>(-offsets[dims[inner]], 0, row);
  const int64_t hi = std::clamp<int64_t>(g.gshape[dims[inner]] - offsets[dims[inner]], 0, row);
  const int64_t step = g.gstrides[dims[inner]] * gb;
  const bool replicated = threads.replicas.size() > 1;
  std::vector<int64_t> coord(t, 0), gi(offsets);
  for (int64_t e0 = 0; e0 < n; e0 += row) {
    bool in = lo < hi;
    for (int p = 0; p < inner && in; ++p) {
      int64_t x = offsets[dims[p]] + coord[p];
      in = x >= 0 && x < g.gshape[dims[p]];
    }
    if (in) {
      int64_t off = 0;
      for (int dd = 0; dd < r; ++dd) gi[dd] = offsets[dd];
      for (int p = 0; p < inner; ++p) gi[dims[p]] += coord[p];
      gi[dims[inner]] += lo;
      for (int dd = 0; dd < r; ++dd) off += gi[dd] * g.gstrides[dd];
      uintptr_t addr = g.base + static_cast<uintptr_t>(off * gb);
      for (int64_t q = lo; q < hi; ++q, addr += static_cast<uintptr_t>(step)) {
        auto element = [&] {
          gi[dims[inner]] = offsets[dims[inner]] + q;
          return cat(g.node ? g.node->name : std::string("?"), index_str(gi));
        };
        const int32_t lead = threads.leader[e0 + q];
        if (access == Access::Write || !replicated) {
          global_one(st, *d, addr, gb, lead, access, own, &stmt, element);
        } else {
          // only the leader's read is kept (see shared_tile_access)
          for (int32_t o : threads.replicas)
            global_one(st, *d, addr, gb, lead + o, access, own, &stmt, element, o == 0);
        }
      }
    }
    for (int p = inner - 1; p >= 0; --p) {
      if (++coord[p] < tile_shape[p]) break;
      coord[p] = 0;
    }
  }
}

void global_scalar_read(BlockState& st, const TensorValue& g, uintptr_t addr,
                        const std::vector<int64_t>& index, const StmtNode* stmt) {
  DebugState* d = st.launch->debug.get();
  if (!d || !d->checks.races || st.launch_only) return;
  global_one(st, *d, addr, element_bytes(g.dtype), kEveryThread, Access::Read, st.clock[st.linear], stmt, [&] {
    return cat(g.node ? g.node->name : std::string("?"), index_str(index));
  });
}

// ---------------------------------------------------------------- ordering

// Barrier intervals are numbered per block; thread groups running side by side
// (interp/thread_groups.cc) draw them from one counter of the block, so two groups never
// share an interval and an mbarrier wait starts a new one after everything before it.
void next_epoch(BlockState& st) {
  if (!st.hopper) {
    ++st.epoch;
    return;
  }
  uint32_t& counter = st.hopper->epochs;
  counter = std::max(counter, st.epoch);
  st.epoch = ++counter;
}

void debug_barrier(BlockState& st) { next_epoch(st); }

void debug_acquire_rmw(BlockState& st, uintptr_t address) {
  DebugState* d = st.launch->debug.get();
  if (!d) return;
  auto it = d->released.find(address);
  if (it == d->released.end()) return;
  for (const auto& [block, clock] : it->second) {
    uint32_t& mine = st.clock[block];
    mine = std::max(mine, clock);
  }
}

void debug_release_rmw(BlockState& st, uintptr_t address) {
  DebugState* d = st.launch->debug.get();
  if (!d) return;
  auto& released = d->released[address];
  for (const auto& [block, clock] : st.clock) released[block] = std::max(released[block], clock);
  ++st.clock[st.linear];  // later accesses are not covered by this release
}

void debug_acquire(BlockState& st, uintptr_t semaphore) {
  next_epoch(st);
  debug_acquire_rmw(st, semaphore);
}

void debug_release(BlockState& st, uintptr_t semaphore) {
  next_epoch(st);
  DebugState* d = st.launch->debug.get();
  if (!d) return;
  d->released[semaphore] = st.clock;
  ++st.clock[st.linear];  // later accesses are not covered by this release
}

// ---------------------------------------------------------------- registers

void uninitialised_register(const TensorNode* t, const Instruction& inst) {
  throw ScriptError(
      "UninitializedReadError",
      cat(op_name(inst.op), " reads register tensor ", t->name, " (", t->type_str(), "), element ",
          index_str(std::vector<int64_t>(t->shape.size(), 0)),
          " and every other, before anything was assigned to it: it was declared by "
          "register_tensor without init"));
}

}  // namespace tilus::interp
