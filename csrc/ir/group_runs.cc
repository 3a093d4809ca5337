#include "ir/group_runs.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/functor.h"
#include "support/error.h"

namespace tilus {

namespace {

// The barrier address an instruction waits on or arrives at (a TMA load completes on
// its mbarrier: an arrival), or null.
const Expr* waited(const Instruction& i) { return i.op == Op::MbarrierWait ? &i.args[0] : nullptr; }
const Expr* arrived(const Instruction& i) {
  if (i.op == Op::MbarrierArrive || i.op == Op::MbarrierArriveExpectTx || i.op == Op::MbarrierArriveCluster)
    return &i.args[0];
  if (i.op == Op::TmaGlobalToShared && !i.args.empty()) return &i.args[0];
  return nullptr;
}

// Which allocations (their handle variables) an address expression names, directly or
// through variables declared or assigned from them.
struct Handles : StmtVisitor, ExprVisitor {
  std::unordered_map<int, SourceLoc> alloc_line;            // handle var id -> the alloc's line
  std::unordered_map<int, std::unordered_set<int>> through;  // var id -> handles its value names

  std::unordered_set<int> of(const Expr& e) {
    found_.clear();
    visit_expr(e);
    return found_;
  }

 protected:
  void visit_var(const Expr& e) override {
    if (alloc_line.count(e->var_id)) found_.insert(e->var_id);
    auto it = through.find(e->var_id);
    if (it != through.end()) found_.insert(it->second.begin(), it->second.end());
  }
  void visit_inst(const Stmt& s) override {
    if (s->inst->op == Op::MbarrierAlloc) alloc_line[s->inst->args[0]->var_id] = s->loc;
  }
  void visit_declare(const Stmt& s) override { note(s->var, s->value); }
  void visit_assign(const Stmt& s) override { note(s->var, s->value); }

 private:
  std::unordered_set<int> found_;
  void note(const Expr& var, const Expr& value) {
    if (!value) return;
    for (int h : of(value)) through[var->var_id].insert(h);
  }
};

// Every arrival instruction below a statement, by handle.
struct Arrivals : StmtVisitor {
  Handles& handles;
  std::unordered_map<int, std::vector<const Instruction*>> by_handle;
  explicit Arrivals(Handles& h) : handles(h) {}
  void visit_inst(const Stmt& s) override {
    if (const Expr* b = arrived(*s->inst))
      for (int h : handles.of(*b)) by_handle[h].push_back(s->inst.get());
  }
};

// A walk that knows how many loops enclose the statement it visits.
struct LoopDepth : StmtVisitor {
  int loops = 0;
  void visit_for(const Stmt& s) override {
    ++loops;
    StmtVisitor::visit_for(s);
    --loops;
  }
  void visit_while(const Stmt& s) override {
    ++loops;
    StmtVisitor::visit_while(s);
    --loops;
  }
};

// The waits below a thread group that sit inside a loop of the group.
struct LoopWaits : LoopDepth {
  Handles& handles;
  std::vector<std::pair<int, const StmtNode*>> waits;  // handle, the wait statement
  explicit LoopWaits(Handles& h) : handles(h) {}
  void visit_inst(const Stmt& s) override {
    if (const Expr* b = waited(*s->inst); b && loops > 0)
      for (int h : handles.of(*b)) waits.emplace_back(h, s.get());
  }
};

// Walks the sequences outside loops, checking each run of thread groups in them.
struct RunCheck : LoopDepth {
  Handles& handles;
  const std::unordered_map<int, std::vector<const Instruction*>>& all_arrivals;
  RunCheck(Handles& h, const std::unordered_map<int, std::vector<const Instruction*>>& a)
      : handles(h), all_arrivals(a) {}

  void visit_seq(const Stmt& s) override {
    StmtVisitor::visit_seq(s);
    if (loops == 0) check(s->seq);
  }

 private:
  void check(const std::vector<Stmt>& items) {
    for (size_t k = 0; k < items.size();) {
      const size_t end = group_run_end(items, k);
      if (end == k) {
        ++k;
        continue;
      }
      if (end < items.size()) check_run(items, k, end);
      k = end;
    }
  }

  void check_run(const std::vector<Stmt>& items, size_t begin, size_t end) {
    LoopWaits waits(handles);
    for (size_t g = begin; g < end; ++g) waits.visit_stmt(items[g]->body);
    if (waits.waits.empty()) return;
    Arrivals after(handles);
    for (size_t j = end; j < items.size(); ++j) after.visit_stmt(items[j]);
    for (const auto& [h, wait] : waits.waits) {
      auto all = all_arrivals.find(h);
      auto late = after.by_handle.find(h);
      if (all == all_arrivals.end() || late == after.by_handle.end() || late->second.size() != all->second.size())
        continue;  // never arrived at (another error), or also by something that can run beside it
      const Stmt& next = *std::find_if(items.begin() + end, items.end(), [](const Stmt& s) { return bool(s); });
      ScriptError e("ValueError",
                    cat("mbarrier.wait: this thread group waits, in a loop, on the mbarrier allocated at line ",
                        handles.alloc_line.at(h).line, ", which only statements from line ", next->loc.line,
                        " on arrive at. The statement at line ", next->loc.line, " ends the run of thread groups "
                        "this one belongs to (every thread of the enclosing group runs it), so what follows it "
                        "starts only once these groups have finished: always in the interpreter, and on the GPU "
                        "when it synchronises the block (an mbarrier alloc, a sync). Once the barrier's first "
                        "phase is used the wait never completes. Put the arriving thread group beside this one, "
                        "with no statement between them (allocate mbarriers before the first thread group)"));
      e.set_loc_if_unknown(wait->loc);
      throw e;
    }
  }
};

}  // namespace

size_t group_run_end(const std::vector<Stmt>& seq, size_t k) {
  std::vector<std::pair<int64_t, int64_t>> ranges;  // first thread (-1: any one, counted as 0), count
  size_t j = k;
  for (; j < seq.size() && seq[j] && seq[j]->kind == StmtKind::ThreadGroup; ++j) {
    const int64_t b = std::max<int64_t>(seq[j]->group_begin, 0), n = seq[j]->group_threads;
    for (const auto& [qb, qn] : ranges)
      if (!(b + n <= qb || qb + qn <= b)) return j;  // the same threads run it after the earlier group
    ranges.emplace_back(b, n);
  }
  return j;
}

void check_group_run_waits(const Program& program) {
  if (program.cluster[0] * program.cluster[1] * program.cluster[2] > 1) return;  // a peer block may arrive
  Handles handles;
  handles.visit_stmt(program.body);
  if (handles.alloc_line.empty()) return;
  Arrivals all(handles);
  all.visit_stmt(program.body);
  RunCheck(handles, all.by_handle).visit_stmt(program.body);
}

}  // namespace tilus
