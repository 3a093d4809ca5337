// Where the program waits for a wgmma dot. What each instruction does that a running dot
// must finish first is its handler's wgmma_hazard stage (ops/op_handler.h; by default its
// shared-memory effects); this pass only places the waits.
//
// A wgmma dot returns before the tensor cores are done. A dot that accumulates in place
// (into its own accumulator, or into a new output in the accumulator's layout) is
// marked WgmmaAsync and followed by a commit and a wait_group 1: the dots before it are
// finished, it may still run. Until a later wait, two things are in flight: reads of the
// dot's shared tiles and writes of its accumulator registers. So before each instruction
// (guard):
//   * anything that reads or writes the accumulator waits for it (a wgmma dot chaining
//     on the same accumulator excepted: the hardware orders those);
//   * a shared-memory write into an allocation the dot reads waits when it may hit the
//     dot's own tile: for views of the same allocation with leading indices frozen at
//     the slice (sa[stage]), only when the indices are equal at run time (a conditional
//     wait), and not at all when they are ring counters provably one stage apart (a
//     pipeline writes the stage the previous dot read, which the wait_group 1 finished);
//   * free_shared of such an allocation waits;
//   * with more than one warpgroup, a barrier waits first: after it, other warpgroups may
//     write what this one's dot reads, and their waits do not cover it.
// A wait retires only the waiting warp's share of a dot: each warp of the warpgroup
// reads the shared tiles for its own rows, and the others may still be reading when it
// returns. So a shared-memory write into a dot's tiles after a wait (the next stage's
// copy into the stage the previous dot read, typically) first takes a barrier, unless
// one already ran since the last wait.
// Block-level instructions (copies, stores, barriers) already need block-uniform control
// flow, so a warpgroup-collective wait placed before them is reached by whole warpgroups.
// Where the pass cannot tell (the dot ran in an earlier loop iteration or another
// branch, its tile indices out of scope) it waits for everything. Nothing runs past the
// kernel's end. A wait that retires dots fences their accumulators (the registers are
// read only below it); the emitter skips those out of scope of the wait.
//
// Scopes are the C++ blocks the emitter opens: loop bodies and if branches. A frozen
// view index is a value the emitter computes once at the slice; two views compare equal
// in a dimension when their indices do at run time.
#include "transforms/async_waits.h"

#include <algorithm>

#include "ir/functor.h"
#include "ops/op_handler.h"
#include "transforms/layout_inference.h"
#include "transforms/ring_counters.h"

namespace tilus {

namespace {

// One leading index of a shared view: a constant, or a value frozen at a slice.
struct Lead {
  Expr constant;    // non-null: the index is this constant
  int frozen = -1;  // else: which frozen value (unique per slice and dimension)
};

// What of a wgmma dot may still be running.
struct InFlight {
  bool active = false;  // a wgmma dot may still be running
  bool known = false;   // it is the one described below, issued in scope `scope`
  int scope = 0;
  std::vector<std::pair<int, Tensor>> reads;  // (shared root, the view it reads)
  std::unordered_set<int> accumulators;       // register tensor ids it writes
  std::vector<Tensor> arrays;                 // accumulators to fence after a wait
  // `other` may be running too (a loop's previous iteration, another branch): keep its
  // accumulators, and forget which dot runs (its tiles: `reads` is consulted only while
  // `known`).
  void absorb(const InFlight& other) {
    active = true;
    known = false;
    arrays.insert(arrays.end(), other.arrays.begin(), other.arrays.end());
    accumulators.insert(other.accumulators.begin(), other.accumulators.end());
  }
};

class AsyncWaits : public StmtMutator {
 public:
  AsyncWaits(const Program& program, const LayoutPlan& plan)
      : program_(program), plan_(plan), rings_(find_ring_counters(program.body)) {}

  Stmt run(const Stmt& body) {
    Stmt lowered = mutate_stmt(body);
    std::vector<Stmt> tail;
    wait_all(tail, "nothing may run past the kernel's end", SourceLoc{});
    if (tail.empty()) return lowered;
    if (lowered && lowered->kind == StmtKind::Seq) {
      auto copy = std::make_shared<StmtNode>(*lowered);
      copy->seq.insert(copy->seq.end(), tail.begin(), tail.end());
      return copy;
    }
    tail.insert(tail.begin(), lowered);
    return make_seq_stmt(std::move(tail), SourceLoc{});
  }

 protected:
  Stmt mutate_seq(const Stmt& s) override {
    positions_.push_back({s.get(), 0});
    std::vector<Stmt> items;
    bool changed = false;
    for (size_t j = 0; j < s->seq.size(); ++j) {
      positions_.back().second = j;
      const Stmt& c = s->seq[j];
      if (c && c->kind == StmtKind::Inst) {  // spliced in place: a dot's loads stay next to it
        std::vector<Stmt> lowered = lower_inst(c);
        changed = changed || lowered.size() != 1 || lowered[0] != c;
        items.insert(items.end(), lowered.begin(), lowered.end());
        continue;
      }
      Stmt m = mutate_stmt(c);
      changed = changed || m != c;
      if (m) items.push_back(std::move(m));
    }
    positions_.pop_back();
    if (!changed) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    copy->seq = std::move(items);
    return copy;
  }

  Stmt mutate_inst(const Stmt& s) override {
    std::vector<Stmt> lowered = lower_inst(s);
    return lowered.size() == 1 ? lowered[0] : make_seq_stmt(std::move(lowered), s->loc);
  }

  Stmt mutate_for(const Stmt& s) override { return loop(s); }
  Stmt mutate_while(const Stmt& s) override { return loop(s); }

  // A dot still running before the if is still the only one after it unless a branch
  // issues one (then: some dot, unknown which).
  Stmt mutate_if(const Stmt& s) override {
    const InFlight before = st_;
    const bool unsynced_before = peers_unsynced_;
    const bool branch_dots = contains_wgmma(s->then_body) || contains_wgmma(s->else_body);
    Stmt then_body = block(s->then_body);
    const InFlight after_then = st_;
    const bool unsynced_then = peers_unsynced_;
    Stmt else_body = s->else_body;
    peers_unsynced_ = unsynced_before;
    if (s->else_body) {
      st_ = before;
      else_body = block(s->else_body);
    }
    peers_unsynced_ = peers_unsynced_ || unsynced_then;
    if (!branch_dots) {
      st_ = before;
    } else {
      st_.absorb(before);
      st_.absorb(after_then);
    }
    if (then_body == s->then_body && else_body == s->else_body) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    copy->then_body = then_body;
    copy->else_body = else_body;
    return copy;
  }

 private:
  Stmt block(const Stmt& body) {
    scopes_.push_back(next_scope_++);
    Stmt out = mutate_stmt(body);
    scopes_.pop_back();
    return out;
  }

  // A loop body runs after itself: a dot it issues may be running when the next
  // iteration starts and after the loop, with its tile indices no longer in scope. The
  // body is lowered for its first iteration, and again when an iteration can end with a
  // dot running or a wait not followed by a barrier: later iterations start there.
  Stmt loop(const Stmt& s) {
    const InFlight before = st_;
    const bool unsynced_before = peers_unsynced_;
    auto lower_body = [&](const InFlight& entry, bool unsynced_at_entry) {
      st_ = entry;
      peers_unsynced_ = unsynced_at_entry;
      return block(s->body);
    };
    // a break or continue with dots in the body leaves from the middle: assume the worst
    // at the next start
    const bool leaves_mid_dot = has_loop_exit(s->body) && contains_wgmma(s->body);
    auto assume_worst_on_exit = [&] {
      if (leaves_mid_dot) st_.active = true, st_.known = false, peers_unsynced_ = true;
    };
    Stmt body = lower_body(before, unsynced_before);
    assume_worst_on_exit();
    if (st_.active || (peers_unsynced_ && !unsynced_before)) {
      InFlight entry = before;
      if (st_.active) entry.absorb(st_);
      body = lower_body(entry, unsynced_before || peers_unsynced_);
      assume_worst_on_exit();
    }
    // after the loop: what the last iteration left, or (no iteration) what ran before
    if (st_.active) {
      InFlight after = before;
      after.absorb(st_);
      st_ = after;
    } else {
      st_ = before;
    }
    peers_unsynced_ = peers_unsynced_ || unsynced_before;
    if (body == s->body) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    copy->body = body;
    return copy;
  }

  // Whether a break or continue lies anywhere below `s` (one of a nested loop counts too:
  // conservative, never wrong).
  static bool has_loop_exit(const Stmt& s) {
    struct Exits : StmtVisitor {
      bool found = false;
      void visit_break(const Stmt&) override { found = true; }
      void visit_continue(const Stmt&) override { found = true; }
    } exits;
    exits.visit_stmt(s);
    return exits.found;
  }

  bool is_wgmma(const Instruction* i) const {
    auto it = plan_.dots.find(i);
    return it != plan_.dots.end() && it->second.wgmma;
  }

  bool contains_wgmma(const Stmt& s) const {
    bool found = false;
    for_each_inst(s, [&](const StmtNode& st) { found = found || (st.inst->op == Op::Dot && is_wgmma(st.inst.get())); });
    return found;
  }

  std::vector<Stmt> lower_inst(const Stmt& s) {
    const Instruction& i = *s->inst;
    std::vector<Stmt> out;
    guard(i, out, s->loc);
    if (i.op == Op::Sync || i.op == Op::ClusterSync) peers_unsynced_ = false;
    if (i.op == Op::SharedTensor) leads_[i.output->id] = {};
    if (i.op == Op::SliceShared) freeze_view(i);
    // A reshaped or permuted view's indices are not the allocation's: no leading indices,
    // so a write through it (or a slice of it) waits for a dot reading its allocation.
    if (transforms_shared_view(i)) leads_[i.output->id] = {};
    if (i.op != Op::Dot || !is_wgmma(&i)) {
      out.push_back(s);
      return out;
    }
    const DotPlan& plan = plan_.dots.at(&i);
    const RegisterLayout& c_layout = plan.layouts.c;
    const bool in_place = !i.defines_output && i.output == i.inputs[2] && plan_.layout_of(i.output) == c_layout;
    const bool into_output = i.defines_output && plan_.layout_of(i.output) == c_layout;
    auto dot = std::make_shared<Instruction>(i);
    dot->int_attr = static_cast<int64_t>(in_place || into_output ? DotLowering::WgmmaAsync : DotLowering::WgmmaSync);
    out.push_back(make_inst_stmt(dot, s->loc));
    if (!(in_place || into_output)) {  // the result is converted right away: waited inside
      st_ = InFlight{};
      return out;
    }
    auto commit = std::make_shared<Instruction>();
    commit->op = Op::WgmmaCommitGroup;
    out.push_back(make_inst_stmt(commit, s->loc));
    // Only this dot may still run: what follows (the next stage's copies, the barrier)
    // overlaps it. Earlier dots into other accumulators are done after this wait: fence
    // their registers (not this dot's: touching a running accumulator would make ptxas
    // serialise).
    std::vector<Tensor> retired;
    for (auto& t : st_.arrays)
      if (t != i.output && t != i.inputs[2]) retired.push_back(t);
    out.push_back(wait(1, "the dots before this one are done", std::move(retired), s->loc));
    peers_unsynced_ = peers_unsynced_ || st_.active;  // it retired the dot before, if any ran
    InFlight now;
    now.active = true;
    now.known = true;
    now.scope = scopes_.back();
    const Tensor &va = plan.load_a->inputs[0], &vb = plan.b_view();  // the tile as stored
    now.reads = {{plan_.root_of(va), va}, {plan_.root_of(vb), vb}};
    now.accumulators = {i.output->id, i.inputs[2]->id};
    now.arrays = {i.output};
    st_ = now;
    return out;
  }

  // The leading indices of a view: its parent's, then the slice's own, each non-constant
  // one frozen (and remembered as a ring counter's stage when it reads one).
  void freeze_view(const Instruction& i) {
    std::vector<Lead> lead = leads_.at(i.inputs[0]->id);
    for (const Expr& e : i.args) {
      if (e->is_const()) {
        lead.push_back({e, -1});
        continue;
      }
      const int id = next_frozen_++;
      lead.push_back({nullptr, id});
      if (e->is_var() && rings_.count(e->var_id)) {  // remember which stage counter, and when
        const StmtNode* body = rings_.at(e->var_id).body;
        for (auto& [seq, position] : positions_)
          if (seq == body) stage_origins_[id] = {e->var_id, position};
      }
    }
    leads_[i.output->id] = std::move(lead);
  }

  bool differ(const Lead& a, const Lead& b) const {
    if (a.frozen < 0 || b.frozen < 0) return false;
    auto oa = stage_origins_.find(a.frozen), ob = stage_origins_.find(b.frozen);
    if (oa == stage_origins_.end() || ob == stage_origins_.end()) return false;
    return stages_differ(rings_, oa->second, ob->second);
  }

  Stmt wait(int64_t n, const std::string& why, std::vector<Tensor> operands, const SourceLoc& loc) {
    auto w = std::make_shared<Instruction>();
    w->op = Op::WgmmaWaitGroup;
    w->int_attr = n;
    w->text = why;
    w->inputs = std::move(operands);
    return make_inst_stmt(w, loc);
  }

  void wait_all(std::vector<Stmt>& out, const std::string& why, const SourceLoc& loc) {
    if (!st_.active) return;
    out.push_back(wait(0, why, st_.arrays, loc));
    peers_unsynced_ = true;
    st_ = InFlight{};
  }

  // Before a write into `root`: when this warp has waited for a dot reading it since the
  // last barrier, the other warps of the warpgroup may still be reading (see the top).
  void sync_peers(int root, std::vector<Stmt>& out, const SourceLoc& loc) {
    if (!peers_unsynced_ || !plan_.wgmma_roots.count(root)) return;
    auto sync = std::make_shared<Instruction>();
    sync->op = Op::Sync;
    sync->text = "the other warps' dots are done with the tile";
    out.push_back(make_inst_stmt(sync, loc));
    peers_unsynced_ = false;
  }

  void guard(const Instruction& i, std::vector<Stmt>& out, const SourceLoc& loc) {
    const OpHandler& h = op_handler(i.op);
    const WgmmaHazard hazard = h.wgmma_hazard ? h.wgmma_hazard(i, plan_, program_.warps) : default_wgmma_hazard(i);
    guard_running_dot(i, hazard, out, loc);
    if (hazard.kind == WgmmaHazard::WritesShared || hazard.kind == WgmmaHazard::WritesTile)
      sync_peers(plan_.root_of(i.inputs[hazard.operand]), out, loc);
  }

  void guard_running_dot(const Instruction& i, const WgmmaHazard& hazard, std::vector<Stmt>& out,
                         const SourceLoc& loc) {
    if (!st_.active) return;
    const bool chains = i.op == Op::Dot && is_wgmma(&i) && i.output == i.inputs[2];
    if (!chains) {
      auto touches = [&](const Tensor& t) { return t && st_.accumulators.count(t->id); };
      bool hit = touches(i.output);
      for (auto& t : i.inputs) hit = hit || touches(t);
      if (hit) return wait_all(out, "the accumulator is used next", loc);
    }
    auto reads_root = [&](int root) {
      if (!st_.known) return plan_.wgmma_roots.count(root) > 0;  // some wgmma dot's tile
      for (auto& r : st_.reads)
        if (r.first == root) return true;
      return false;
    };
    switch (hazard.kind) {
      case WgmmaHazard::None: return;
      case WgmmaHazard::Waits: return wait_all(out, hazard.why, loc);
      case WgmmaHazard::WritesShared:
        if (reads_root(plan_.root_of(i.inputs[hazard.operand]))) wait_all(out, hazard.why, loc);
        return;
      case WgmmaHazard::WritesTile: break;
    }
    const Tensor& target = i.inputs[hazard.operand];
    const int root = plan_.root_of(target);
    if (!reads_root(root)) return;
    const std::vector<Lead>& lead = leads_.at(target->id);
    const bool comparable = st_.known && !lead.empty() && !plan_.transformed_views.count(target->id) &&
                            std::find(scopes_.begin(), scopes_.end(), st_.scope) != scopes_.end();
    if (!comparable) return wait_all(out, "writing a tile a running dot may read", loc);
    std::vector<Tensor> hits;  // views the write hits when their indices equal its own
    for (auto& [read_root, view] : st_.reads) {
      if (read_root != root) continue;
      const std::vector<Lead>& read = leads_.at(view->id);
      if (read.size() != lead.size()) return wait_all(out, "writing a tile the dot may read", loc);
      bool compared = false, never = false;
      for (size_t d = 0; d < read.size(); ++d) {
        if (read[d].constant && lead[d].constant) {
          never = never || read[d].constant->int_value != lead[d].constant->int_value;
          continue;
        }
        if (differ(read[d], lead[d])) {
          never = true;
          continue;
        }
        compared = true;
      }
      if (never) continue;
      if (!compared) return wait_all(out, "writing the tile the dot reads", loc);
      hits.push_back(view);
    }
    if (hits.empty()) return;
    // A write to another stage leaves the dot running. No accumulator fence here: the
    // accumulator is not read in this branch (a later read waits again), and ptxas
    // serialises every wgmma when a conditional path touches the accumulators.
    hits.insert(hits.begin(), target);
    out.push_back(wait(0, "this write hits the tile the dot reads", std::move(hits), loc));
    peers_unsynced_ = true;
  }

  const Program& program_;
  const LayoutPlan& plan_;
  std::unordered_map<int, RingCounter> rings_;          // var id -> ring counter
  std::unordered_map<int, StageOrigin> stage_origins_;  // frozen index -> the ring read
  std::unordered_map<int, std::vector<Lead>> leads_;    // shared tensor id -> leading indices
  int next_frozen_ = 0;
  std::vector<std::pair<const StmtNode*, size_t>> positions_;  // Seqs being lowered, child index
  std::vector<int> scopes_ = {0};  // ids of the enclosing blocks
  int next_scope_ = 1;
  InFlight st_;
  bool peers_unsynced_ = false;  // this warp waited for a dot since the last block barrier
};

}  // namespace

std::shared_ptr<Program> lower_async(const Program& program, bool allow_wgmma) {
  auto lowered = std::make_shared<Program>(program);
  if (!allow_wgmma) return lowered;
  const LayoutPlan plan = infer_layouts(program, true);
  if (plan.wgmma_roots.empty()) return lowered;  // no wgmma dot
  lowered->body = AsyncWaits(program, plan).run(program.body);
  return lowered;
}

bool contains_wgmma_dot(const Stmt& s) {
  bool found = false;
  for_each_inst(s, [&](const StmtNode& st) {
    found = found || (st.inst->op == Op::Dot && dot_lowering(*st.inst) != DotLowering::Plain);
  });
  return found;
}

}  // namespace tilus
