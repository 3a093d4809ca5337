// Thread groups side by side (Tilus 0.2's warp specialisation).
//
// The interpreter runs a block's instructions for all its threads at once. A thread
// group narrows that to some of them; on the GPU the other threads go on past the group
// meanwhile. A producer group that waits on an mbarrier a consumer group arrives at
// (and the reverse) only completes when the two run concurrently, so consecutive
// thread-group statements on disjoint threads each run as a coroutine on a copy of the
// block's frame: a wait that cannot complete yields to the others; a round in which no
// group finished and nothing moved (no arrival, no landing) while every group waits is a
// deadlock, reported with what the first one waits for.
//
// The copies share what the block's threads share (shared memory, mbarriers, global
// memory, through the same buffers); scalars are per thread, so each group has its own
// and the block's frame takes, after the groups, the values a group changed. Statements
// after the run wait for all its groups (the threads rejoin at the next statement that
// is not one of them).
#include <cstring>
#include <memory>
#include <string>

#include "interp/coroutine.h"
#include "interp/state.h"
#include "ir/group_runs.h"
#include "ops/hopper_state.h"
#include "support/error.h"

namespace tilus::interp {

struct GroupAgent {
  BlockState state;
  const StmtNode* group = nullptr;
  Coroutine coroutine;
  std::string why;  // what it waits for, while it waits
};

namespace {

struct Range {
  int64_t begin, threads;
};

Range range_of(const BlockState& st, const StmtNode* g) {
  return {st.group_begin + std::max<int64_t>(g->group_begin, 0), g->group_threads};
}

void agent_body(void* arg) {
  auto* a = static_cast<GroupAgent*>(arg);
  exec_group_inline(a->state, a->group);
  // cp.async copies a group leaves in flight land before it rejoins the block.
  complete_all_copies(a->state, nullptr);
}

bool same_value(const Value& a, const Value& b) { return a.i == b.i && std::memcmp(&a.f, &b.f, sizeof a.f) == 0; }

bool same_tensor(const TensorValue& a, const TensorValue& b) {
  return a.defined == b.defined && a.data == b.data && a.storage == b.storage && a.base == b.base;
}

// Every agent waits and one waits in lock_semaphore for another block (or cluster): the
// parent takes that wait as its own and is suspended on it -- as a coroutine of the
// semaphore scheduler (a block, or a cluster), or as an agent of the scheduler above (a
// block of a cluster, whose groups wait) -- and its agents run again once it resumes.
// False when no agent waits on a semaphore.
bool wait_on_semaphore(BlockState& parent, const std::vector<std::unique_ptr<GroupAgent>>& agents,
                       const std::string& why) {
  for (const auto& a : agents) {
    if (a->coroutine.finished() || !a->state.wait_ptr) continue;
    parent.wait_ptr = a->state.wait_ptr;
    parent.wait_value = a->state.wait_value;
    parent.wait_stmt = a->state.wait_stmt;
    parent.block_idx = a->state.block_idx;  // a cluster's task reports its waiting block
    bool resumed = true;
    if (parent.coroutine) {
      parent.coroutine->yield();
    } else {
      resumed = yield_to_groups(parent, why);
    }
    parent.wait_ptr = nullptr;
    parent.wait_stmt = nullptr;
    if (parent.cancelled) throw BlockCancelled{};
    return resumed;
  }
  return false;
}

// Runs the agents round-robin until all have finished. A round in which none finished
// and progress() did not move is a deadlock unless `parent` can yield to siblings of
// its own; describe(agent) says what the first waiting agent waits for.
template <typename Progress, typename Describe, typename Tail>
void schedule(std::vector<std::unique_ptr<GroupAgent>>& agents, Progress progress, BlockState* parent,
              Describe describe, Tail tail, const SourceLoc& fallback) {
  std::exception_ptr error;
  try {
    for (;;) {
      const uint64_t before = progress();
      bool all_done = true, finished = false;
      const GroupAgent* waiting = nullptr;
      for (auto& a : agents) {
        if (a->coroutine.finished()) continue;
        if (a->coroutine.resume()) {
          if (a->coroutine.error()) std::rethrow_exception(a->coroutine.error());
          finished = true;
        } else {
          all_done = false;
          if (!waiting) waiting = a.get();
        }
      }
      if (all_done) break;
      if (finished || progress() != before) continue;
      const std::string why = describe(*waiting);
      // while it waits, the parent is where its waiting agent is (a deadlock found further
      // up reports that line)
      if (parent && waiting->state.current) parent->current = waiting->state.current;
      if (parent && wait_on_semaphore(*parent, agents, why)) continue;
      if (parent && yield_to_groups(*parent, why)) continue;
      ScriptError e("RuntimeError", cat("deadlock: ", why, tail(why)));
      e.set_loc_if_unknown(waiting->state.current ? waiting->state.current->loc : fallback);
      throw e;
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    // Unwind the agents still suspended so their frames release what they hold.
    for (auto& a : agents) {
      a->state.cancelled = true;
      if (!a->coroutine.finished()) a->coroutine.resume();
    }
    std::rethrow_exception(error);
  }
}

void cluster_block_body(void* arg) {
  BlockState& st = static_cast<GroupAgent*>(arg)->state;
  run_block(st);
  st.finished = true;
}

}  // namespace

void note_progress(BlockState& st) {
  ++hopper_state(st).progress;
  if (st.cluster) ++st.cluster->progress;
}

void check_cluster_grid(const Launch& l) {
  const auto& c = l.program->cluster;
  const auto& g = l.grid;
  for (int d = 0; d < 3; ++d)
    TILUS_CHECK(g[d] % c[d] == 0, "ValueError", "the grid (", g[0], ", ", g[1], ", ", g[2],
                ") is not a whole number of clusters of (", c[0], ", ", c[1], ", ", c[2],
                ") blocks (self.attrs.cluster_blocks) along ", "xyz"[d]);
}

void run_cluster(const Launch& l, std::array<int64_t, 3> origin, BlockState* parent) {
  const auto& c = l.program->cluster;
  StackPool pool;
  ClusterRun run;
  run.dims = c;
  std::vector<std::unique_ptr<GroupAgent>> agents;
  // %cluster_ctarank: x fastest.
  for (int64_t z = 0; z < c[2]; ++z)
    for (int64_t y = 0; y < c[1]; ++y)
      for (int64_t x = 0; x < c[0]; ++x) {
        run.block_idx.push_back({origin[0] + x, origin[1] + y, origin[2] + z});
        run.hopper.push_back(std::make_shared<HopperState>());
      }
  for (size_t r = 0; r < run.block_idx.size(); ++r) {
    auto a = std::make_unique<GroupAgent>();
    a->state.reset(l, run.block_idx[r]);
    a->state.cluster = &run;
    a->state.cluster_rank = static_cast<int64_t>(r);
    a->state.hopper = run.hopper[r];
    a->state.agent = a.get();
    run.blocks.push_back(&a->state);
    agents.push_back(std::move(a));
  }
  // every rank's frame is known before any block runs (a multicast reaches them all)
  for (auto& a : agents) a->coroutine.start(pool, &cluster_block_body, a.get());
  schedule(agents, [&run] { return run.progress; }, parent, [](const GroupAgent& w) {
    return cat("block (", w.state.block_idx[0], ", ", w.state.block_idx[1], ", ", w.state.block_idx[2],
               ") ", w.why);
  }, [](const std::string&) {
    return std::string("; every other block of its cluster waits too or has finished");
  }, SourceLoc{});
}

void run_clusters(const Launch& l) {
  const auto& c = l.program->cluster;
  const auto& g = l.grid;
  for (int64_t cz = 0; cz < g[2]; cz += c[2])
    for (int64_t cy = 0; cy < g[1]; cy += c[1])
      for (int64_t cx = 0; cx < g[0]; cx += c[0]) {
        maybe_poll(l);
        run_cluster(l, {cx, cy, cz}, nullptr);
      }
}

bool yield_to_groups(BlockState& st, const std::string& why) {
  if (!st.agent) return false;
  st.agent->why = why;
  st.agent->coroutine.yield();
  if (st.cancelled) throw BlockCancelled{};
  return true;
}

namespace {

// Runs the groups of one run side by side (exec_thread_groups); returns how many.
size_t exec_run(BlockState& st, const std::vector<const StmtNode*>& run) {
  if (run.size() == 1) {
    exec_group_inline(st, run[0]);
    return 1;
  }

  HopperState& h = hopper_state(st);  // created here so that every copy shares it
  StackPool pool;
  std::vector<std::unique_ptr<GroupAgent>> agents;
  for (size_t i = 0; i < run.size(); ++i) {
    auto a = std::make_unique<GroupAgent>();
    a->state = st;
    a->state.agent = a.get();
    a->state.coroutine = nullptr;  // lock_semaphore inside a group cannot suspend the block
    a->state.open_copies.clear();
    a->state.committed_copies.clear();
    a->group = run[i];
    next_epoch(a->state);  // its own barrier intervals
    a->coroutine.start(pool, &agent_body, a.get());
    agents.push_back(std::move(a));
  }

  schedule(agents, [&h] { return h.progress; }, &st, [&](const GroupAgent& w) {
    const Range r = range_of(st, w.group);
    return cat("thread group [", r.begin, ", ", r.begin + r.threads, ") ", w.why);
  }, [&](const std::string& why) {
    return cat("; every other thread group of block (", st.block_idx[0], ", ", st.block_idx[1], ", ",
               st.block_idx[2], ") waits too or has finished");
  }, run[0]->loc);

  // The block's frame takes what each group changed.
  const std::vector<Value> vars = st.vars;
  const std::vector<TensorValue> tensors = st.tensors;
  for (auto& a : agents) {
    for (size_t i = 0; i < vars.size(); ++i)
      if (!same_value(a->state.vars[i], vars[i])) st.vars[i] = a->state.vars[i];
    for (size_t i = 0; i < tensors.size(); ++i)
      if (!same_tensor(a->state.tensors[i], tensors[i])) st.tensors[i] = a->state.tensors[i];
    st.epoch = std::max(st.epoch, a->state.epoch);
  }
  next_epoch(st);  // the groups rejoin: what they did is ordered before what follows
  return run.size();
}

// A deadlock inside a run of groups, said again with why the statements after the run
// cannot help: the interpreter starts them only once every group of the run has finished
// (on the GPU a finished group's threads go on alone), so an arrival there never
// releases a wait in the run. An mbarrier allocated between two groups, or warpgroups of
// one group taking turns through groups of their own, deadlock this way.
void join_note(const ScriptError& e, const std::vector<Stmt>& seq, size_t next, size_t groups) {
  static const char kMarker[] = "; the statements after ";
  const std::string message = e.what();
  if (message.rfind("deadlock", 0) != 0 || message.find(kMarker) != std::string::npos) return;
  while (next < seq.size() && !seq[next]) ++next;
  if (next >= seq.size()) return;
  throw ScriptError(e.kind(), cat(message, kMarker, groups == 1 ? "this thread group" : "these thread groups",
                                  " (from line ", seq[next]->loc.line, ") start only once ",
                                  groups == 1 ? "it has" : "they have",
                                  " finished, so nothing they do can release this wait: put what it waits for in "
                                  "a thread group of the same run (no statement between the groups; allocate "
                                  "mbarriers before the first)"),
                    e.loc());
}

}  // namespace

size_t exec_thread_groups(BlockState& st, const std::vector<Stmt>& seq, size_t k) {
  std::vector<const StmtNode*> run;
  for (size_t j = k, end = group_run_end(seq, k); j < end; ++j) run.push_back(seq[j].get());
  try {
    return exec_run(st, run);
  } catch (const ScriptError& e) {
    join_note(e, seq, k + run.size(), run.size());
    throw;
  }
}

}  // namespace tilus::interp
