// The verifier's pairing check of asynchronous operations with their commits and waits.
//
// A forward data-flow walk over the structured program. For each asynchronous channel
// (cp.async now) the state holds the copies issued but not yet committed ("pending") and
// the committed ones a wait has not covered yet, each with its group's age (commits
// since, 0 = the newest group). wait_group(n) retires every group of age >= n.
//
// Two questions with two directions of approximation, so that no valid program is
// reported:
//   * "is a copy left uncommitted at a wait or at the end?" — pending copies are a may-set
//     (the union over paths): a copy that is uncommitted on some path is reported;
//   * "does an access read a buffer still being written?" — only copies in flight on
//     every path to the access (intersection, the older age where both hold) and whose
//     destination is the accessed element range for certain (same allocation, equal
//     slice indices) are reported. Indices that mention a variable written since, or a
//     copy made in an earlier iteration of a loop, are not comparable and never reported.
#include <algorithm>
#include <array>
#include <functional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ir/expr_compare.h"
#include "ir/functor.h"
#include "ir/verifier.h"

namespace tilus {

namespace {

// The asynchronous channels: each has its own issue / commit / wait instructions, named
// by its effect flags in ir/ops.def (ir/inst.h). wgmma (issue 11, explicit async) or TMA
// bulk groups: add a Channel, its three eff:: flags and a row of kChannelFlags; everything
// else works per channel unchanged.
enum class Channel : uint8_t { CpAsync };
constexpr size_t kChannels = 1;

struct ChannelFlags {
  Channel channel;
  uint32_t issue, commit, wait;
};
constexpr ChannelFlags kChannelFlags[kChannels] = {
    {Channel::CpAsync, eff::CpAsyncIssue, eff::CpAsyncCommit, eff::CpAsyncWait},
};

enum class Role : uint8_t { None, Issue, Commit, Wait, Access };

struct Event {
  Role role = Role::None;
  Channel channel = Channel::CpAsync;
};

// What an instruction does to the async channels, from its effects. An access reads or
// overwrites its shared operands where it stands; an asynchronous op's own accesses
// belong to its channel, and freeing a tile copies may still land in is allowed: tilus
// waits for them right after the free (transforms/copy_waits.cc), as a pipeline's
// unwaited prologue needs. Scratch memory an op uses internally (a cross-warp
// reduction's) is its own and no effect.
Event classify(Op op) {
  const uint32_t e = op_effects(op);
  for (const ChannelFlags& c : kChannelFlags) {
    if (e & c.issue) return {Role::Issue, c.channel};
    if (e & c.commit) return {Role::Commit, c.channel};
    if (e & c.wait) return {Role::Wait, c.channel};
  }
  if ((e & (eff::ReadsShared | eff::WritesShared)) && !(e & (eff::Async | eff::EndsShared))) return {Role::Access};
  return {};
}

// An element range of a shared allocation: the allocation and the leading indices of the
// slice (none: all of it).
struct Region {
  int root = -1;
  std::vector<Expr> index;
  bool comparable = true;  // false: the indices may no longer mean what they meant
};

struct Entry {
  const StmtNode* issue = nullptr;  // the copy
  Region dst;
  bool must = true;  // pending only: uncommitted on every path (groups hold must entries)
  int age = 0;       // groups only
};

struct ChannelState {
  std::vector<Entry> pending;
  std::vector<Entry> groups;
};

struct State {
  bool reachable = true;
  std::array<ChannelState, kChannels> ch;
};

// Certainly the same elements (never "maybe").
bool same_region(const Region& a, const Region& b) {
  if (a.root != b.root || !a.comparable || !b.comparable) return false;
  const size_t n = std::min(a.index.size(), b.index.size());
  for (size_t k = 0; k < n; ++k)
    if (!same_expr(a.index[k], b.index[k])) return false;
  return true;
}

// The state at a join: pending copies of either side (certain only when certain on
// both), groups in flight on both sides (at the older age).
State merge(const State& a, const State& b) {
  if (!a.reachable) return b;
  if (!b.reachable) return a;
  State out;
  for (size_t c = 0; c < kChannels; ++c) {
    const ChannelState &x = a.ch[c], &y = b.ch[c];
    ChannelState& o = out.ch[c];
    for (const Entry& e : x.pending) {
      Entry m = e;
      auto it = std::find_if(y.pending.begin(), y.pending.end(),
                             [&](const Entry& f) { return f.issue == e.issue; });
      m.must = e.must && it != y.pending.end() && it->must;
      m.dst.comparable = e.dst.comparable && it != y.pending.end() && it->dst.comparable;
      o.pending.push_back(m);
    }
    for (const Entry& f : y.pending) {
      auto it = std::find_if(x.pending.begin(), x.pending.end(),
                             [&](const Entry& e) { return e.issue == f.issue; });
      if (it != x.pending.end()) continue;
      Entry m = f;
      m.must = false;
      o.pending.push_back(m);
    }
    for (const Entry& e : x.groups) {
      auto it = std::find_if(y.groups.begin(), y.groups.end(),
                             [&](const Entry& f) { return f.issue == e.issue; });
      if (it == y.groups.end()) continue;
      Entry m = e;
      m.age = std::max(e.age, it->age);
      m.dst.comparable = e.dst.comparable && it->dst.comparable;
      if (m.dst.comparable) o.groups.push_back(m);
    }
  }
  return out;
}

bool same_state(const State& a, const State& b) {
  if (a.reachable != b.reachable) return false;
  auto key = [](const Entry& e) { return std::make_tuple(e.issue, e.must, e.age, e.dst.comparable); };
  for (size_t c = 0; c < kChannels; ++c) {
    for (auto list : {&ChannelState::pending, &ChannelState::groups}) {
      const auto &x = a.ch[c].*list, &y = b.ch[c].*list;
      if (x.size() != y.size()) return false;
      for (size_t k = 0; k < x.size(); ++k)
        if (key(x[k]) != key(y[k])) return false;
    }
  }
  return true;
}

// Forgets what indices mean once a variable they read may have changed. Group entries
// whose destination is no longer comparable can never be reported and are dropped.
void invalidate(State& s, const std::unordered_set<int>& vars) {
  for (ChannelState& c : s.ch) {
    for (Entry& e : c.pending)
      for (const Expr& x : e.dst.index)
        if (mentions(x, vars)) e.dst.comparable = false;
    c.groups.erase(std::remove_if(c.groups.begin(), c.groups.end(),
                                  [&](const Entry& e) {
                                    return std::any_of(e.dst.index.begin(), e.dst.index.end(),
                                                       [&](const Expr& x) { return mentions(x, vars); });
                                  }),
                   c.groups.end());
  }
}

class AsyncCheck {
 public:
  AsyncCheck(const char* after) : after_(after) {}

  void run(const Program& p) {
    State s;
    s = walk(p.body, s);
    if (!s.reachable) return;
    for (const ChannelState& c : s.ch)
      for (const Entry& e : c.pending)
        verify_fail(after_, e.issue->loc,
                    "this copy_async is not committed (copy_async_commit_group) before the "
                    "kernel ends");
  }

 private:
  struct Loop {
    State breaks, continues;
  };

  State walk(const Stmt& s, State st) {
    if (!s || !st.reachable) return st;
    switch (s->kind) {
      case StmtKind::Seq:
        for (const Stmt& c : s->seq) st = walk(c, st);
        return st;
      case StmtKind::Declare:
      case StmtKind::Assign:
        invalidate(st, {s->var->var_id});
        return st;
      case StmtKind::If: {
        State then_state = walk(s->then_body, st);
        State else_state = walk(s->else_body, st);
        return merge(then_state, else_state);
      }
      case StmtKind::For:
      case StmtKind::While: return loop(s, st);
      // The group's threads run its body; the async channels are per thread, so the body
      // is straight-line code for them.
      case StmtKind::ThreadGroup: return walk(s->body, st);
      case StmtKind::Break:
        loops_.back().breaks = merge(loops_.back().breaks, st);
        return unreachable();
      case StmtKind::Continue:
        loops_.back().continues = merge(loops_.back().continues, st);
        return unreachable();
      case StmtKind::Inst: inst(*s, st); return st;
    }
    return st;
  }

  static State unreachable() {
    State s;
    s.reachable = false;
    return s;
  }

  // The body runs zero or more times: its entry state is the join of the state before
  // the loop and of every back edge, iterated until it stops changing.
  State loop(const Stmt& s, const State& before) {
    const std::unordered_set<int> written = written_vars(s);
    State head = before;
    invalidate(head, written);
    for (int round = 0;; ++round) {
      loops_.push_back({unreachable(), unreachable()});
      State end = walk(s->body, head);
      Loop l = loops_.back();
      loops_.pop_back();
      State next = merge(merge(before, end), l.continues);
      invalidate(next, written);
      if (same_state(next, head) || round == 8) {
        // round 8: pending copies that keep piling up are kept (may), groups dropped.
        if (!same_state(next, head))
          for (ChannelState& c : next.ch) c.groups.clear();
        return merge(next, l.breaks);
      }
      head = next;
    }
  }

  Region region_of(const Tensor& view) const {
    auto it = views_.find(view->id);
    if (it != views_.end()) return it->second;
    Region r;
    r.root = view->id;
    return r;
  }

  void inst(const StmtNode& s, State& st) {
    const Instruction& i = *s.inst;
    if (i.op == Op::SliceShared) {
      Region r = region_of(i.inputs[0]);
      r.index.insert(r.index.end(), i.args.begin(), i.args.end());
      views_[i.output->id] = r;
      return;
    }
    if (transforms_shared_view(i)) {  // other elements than a slice's: never "certainly the same"
      Region r = region_of(i.inputs[0]);
      r.comparable = false;
      views_[i.output->id] = r;
      return;
    }
    const Event ev = classify(i.op);
    ChannelState& c = st.ch[static_cast<size_t>(ev.channel)];
    switch (ev.role) {
      case Role::None: return;
      case Role::Issue: {
        Entry e;
        e.issue = &s;
        for (const Tensor& t : i.inputs)  // the copy's destination
          if (t->scope == Scope::Shared) {
            e.dst = region_of(t);
            break;
          }
        c.pending.erase(std::remove_if(c.pending.begin(), c.pending.end(),
                                       [&](const Entry& p) { return p.issue == &s; }),
                        c.pending.end());
        c.pending.push_back(e);
        return;
      }
      case Role::Commit:
        for (Entry& e : c.groups) ++e.age;
        for (Entry& e : c.pending)
          if (e.must && e.dst.comparable) c.groups.push_back(e);
        c.pending.clear();
        return;
      case Role::Wait: {
        if (i.op == Op::CopyAsyncWaitAll) {  // every copy lands, committed or not
          c.pending.clear();
          c.groups.clear();
          return;
        }
        if (!c.pending.empty())
          verify_fail(after_, s.loc,
                      cat(op_name(i.op), " does not wait for the copy_async at ",
                          c.pending.front().issue->loc.str(),
                          ": it is not committed (copy_async_commit_group) before the wait"));
        const int64_t n = i.int_attr;
        c.groups.erase(std::remove_if(c.groups.begin(), c.groups.end(),
                                      [&](const Entry& e) { return e.age >= n; }),
                       c.groups.end());
        return;
      }
      case Role::Access:
        for (const Tensor& t : i.inputs)
          if (t->scope == Scope::Shared) access(s, i, t, st);
        return;
    }
  }

  // An access to shared tensor t: no copy into certainly the same elements may be in
  // flight on every path to it.
  void access(const StmtNode& s, const Instruction& i, const Tensor& t, const State& st) const {
    const Region r = region_of(t);
    for (const ChannelState& ch : st.ch) {
      for (const Entry& e : ch.pending)
        if (e.must && same_region(e.dst, r))
          verify_fail(after_, s.loc,
                      cat(op_name(i.op), " accesses ", t->name, " while the copy_async at ",
                          e.issue->loc.str(), " into it is neither committed nor waited for"));
      for (const Entry& e : ch.groups)
        if (same_region(e.dst, r))
          verify_fail(after_, s.loc,
                      cat(op_name(i.op), " accesses ", t->name, " while the copy_async at ",
                          e.issue->loc.str(), " into it may still be in flight: no "
                          "copy_async_wait_group covers its group"));
    }
  }

  const char* after_;
  std::vector<Loop> loops_;
  std::unordered_map<int, Region> views_;  // shared view id -> what it slices
};

}  // namespace

void verify_async(const Program& program, const char* after) { AsyncCheck(after).run(program); }

}  // namespace tilus
