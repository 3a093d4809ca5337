#include "transforms/transaction_bytes.h"

#include <optional>
#include <unordered_set>
#include <vector>

#include "ir/expr_compare.h"
#include "ir/functor.h"
#include "ir/inst.h"

namespace tilus {

namespace {

bool is_tma_load(const Instruction& i) { return i.op == Op::TmaGlobalToShared; }
const Expr& barrier_of(const Instruction& i) { return i.args[0]; }  // TMA loads and mbarrier ops alike
bool is_multicast(const Instruction& i) { return is_tma_load(i) && i.int_attr == 1; }

// A wait on `bar` (its phase ends) or another expect_tx on it.
bool ends_phase(const Instruction& i, const Expr& bar) {
  return (i.op == Op::MbarrierWait || i.op == Op::MbarrierArriveExpectTx) && same_expr(barrier_of(i), bar);
}

// Whether declaration, assignment or loop `s` sets a variable that `bar` reads.
bool moves(const Expr& bar, const Stmt& s) { return mentions(bar, {s->var->var_id}); }

int64_t tile_bytes(const Instruction& load) {
  const Tensor& tile = load.inputs[1];
  return storage_bytes(tile->numel() * tile->dtype.bits());
}

// Every TMA load of the program, and whether any is multicast.
struct TmaLoads : StmtVisitor {
  std::vector<const Instruction*> loads;
  bool multicast = false;
  void visit_inst(const Stmt& s) override {
    if (!is_tma_load(*s->inst)) return;
    loads.push_back(s->inst.get());
    multicast |= is_multicast(*s->inst);
  }
};

// The bytes the TMA loads in `s` bring to barrier `bar` (each counted in `owned`), or
// nothing when that cannot be known: a copy on `bar` under a run-time branch or in a
// loop without constant bounds, or a write of a variable `bar` reads.
class CopiesOn {
 public:
  explicit CopiesOn(const Expr& bar) : bar_(bar) {}
  std::vector<const Instruction*> owned;

  std::optional<int64_t> bytes(const Stmt& s) {
    if (!s) return 0;
    switch (s->kind) {
      case StmtKind::Seq: {
        int64_t total = 0;
        for (const Stmt& c : s->seq) {
          auto b = bytes(c);
          if (!b) return std::nullopt;
          total += *b;
        }
        return total;
      }
      case StmtKind::Declare:
      case StmtKind::Assign:
        if (moves(bar_, s)) return std::nullopt;
        return 0;
      case StmtKind::For: {
        int64_t start, end, step;
        if (moves(bar_, s)) return std::nullopt;
        const bool constant = is_const_int(s->start, &start) && is_const_int(s->end, &end) &&
                              is_const_int(s->step, &step) && step > 0;
        auto body = bytes(s->body);
        if (!body) return std::nullopt;
        if (*body == 0) return 0;
        if (!constant) return std::nullopt;
        return *body * (end > start ? (end - start + step - 1) / step : 0);
      }
      case StmtKind::If:
      case StmtKind::While: {
        // copies on bar under a run-time condition: how many run is not known here
        CopiesOn inner(bar_);
        auto then_bytes = inner.bytes(s->kind == StmtKind::If ? s->then_body : s->body);
        auto else_bytes = inner.bytes(s->else_body);
        if (!then_bytes || !else_bytes || *then_bytes || *else_bytes) return std::nullopt;
        return 0;
      }
      case StmtKind::ThreadGroup: return bytes(s->body);  // one thread issues each TMA copy
      case StmtKind::Break:
      case StmtKind::Continue: return std::nullopt;
      case StmtKind::Inst: {
        const Instruction& i = *s->inst;
        if (ends_phase(i, bar_)) return std::nullopt;  // the phase ends inside a nested statement
        if (!is_tma_load(i) || !same_expr(barrier_of(i), bar_)) return 0;
        owned.push_back(&i);
        return tile_bytes(i);
      }
    }
    return std::nullopt;
  }

 private:
  const Expr& bar_;
};

struct Owner {
  const StmtNode* expect;
  int64_t expected, brought, threads;
};

// Walks every statement list; for each expect_tx with constant bytes, the copies that
// follow it (CopiesOn) until its barrier's meaning or phase ends. Every thread of the
// group that runs an expect_tx expects its bytes (Tilus 0.2 scripts often let all 128
// threads expect a 128th of a tile each), while one thread issues each copy; an
// expect_tx of a group of several threads under a run-time branch (which may leave some
// of them out) is not checked.
class Owners : public StmtVisitor {
 public:
  explicit Owners(int64_t block_threads) : threads_(block_threads) {}
  std::vector<Owner> owners;
  std::unordered_set<const Instruction*> owned;

 protected:
  void visit_thread_group(const Stmt& s) override {
    const int64_t threads = threads_, branches = branches_;
    threads_ = s->group_threads;
    branches_ = 0;
    StmtVisitor::visit_thread_group(s);
    threads_ = threads;
    branches_ = branches;
  }
  void visit_if(const Stmt& s) override {
    ++branches_;
    StmtVisitor::visit_if(s);
    --branches_;
  }
  void visit_while(const Stmt& s) override {
    ++branches_;
    StmtVisitor::visit_while(s);
    --branches_;
  }
  void visit_seq(const Stmt& s) override {
    for (size_t k = 0; k < s->seq.size(); ++k) {
      const Stmt& c = s->seq[k];
      visit_stmt(c);
      if (c->kind != StmtKind::Inst || c->inst->op != Op::MbarrierArriveExpectTx) continue;
      int64_t expected;
      if (!is_const_int(c->inst->args[1], &expected) || (threads_ > 1 && branches_ > 0)) continue;
      expected *= threads_;
      const Expr& bar = barrier_of(*c->inst);
      CopiesOn copies(bar);
      int64_t brought = 0;
      for (size_t j = k + 1; j < s->seq.size(); ++j) {
        const Stmt& next = s->seq[j];
        // a statement that changes what the barrier expression names ends the run; its
        // copies before the change are not separable here, so the run stops unknown
        if (next->kind != StmtKind::Inst && mentions(bar, written_vars(next))) {
          if (has_copy_on(next, bar)) brought = -1;
          break;
        }
        if (next->kind == StmtKind::Inst && ends_phase(*next->inst, bar)) break;
        auto b = copies.bytes(next);
        if (!b) {
          brought = -1;
          break;
        }
        brought += *b;
      }
      if (brought < 0) continue;  // not countable: its copies stay unowned
      owners.push_back({c.get(), expected, brought, threads_});
      owned.insert(copies.owned.begin(), copies.owned.end());
    }
  }

 private:
  int64_t threads_;       // threads of the group the walk is in
  int64_t branches_ = 0;  // run-time branches between that group and the walk

  static bool has_copy_on(const Stmt& s, const Expr& bar) {
    struct Find : StmtVisitor {
      const Expr& bar;
      bool found = false;
      explicit Find(const Expr& b) : bar(b) {}
      void visit_inst(const Stmt& s) override {
        found |= is_tma_load(*s->inst) && same_expr(barrier_of(*s->inst), bar);
      }
    } f(bar);
    f.visit_stmt(s);
    return f.found;
  }
};

}  // namespace

void check_transaction_bytes(const Program& program) {
  if (program.cluster[0] * program.cluster[1] * program.cluster[2] > 1) return;  // peers bring bytes too
  TmaLoads loads;
  loads.visit_stmt(program.body);
  if (loads.loads.empty() || loads.multicast) return;
  Owners owners(int64_t{program.warps} * 32);
  owners.visit_stmt(program.body);
  for (const Instruction* load : loads.loads)
    if (!owners.owned.count(load)) return;  // a copy whose phase this check cannot follow
  for (const Owner& o : owners.owners) {
    if (o.expected == o.brought) continue;
    ScriptError error(
        "ValueError",
        cat("mbarrier.arrive_and_expect_tx expects ", o.expected, " bytes on ", expr_str(o.expect->inst->args[0]),
            o.threads > 1 ? cat(" (", o.expected / o.threads, " from each of the ", o.threads, " threads running it)")
                          : "",
            ", but the TMA copies issued on that barrier after it bring ", o.brought, " bytes",
            o.brought < o.expected ? ": its wait would never complete (on the GPU the kernel hangs)"
                                   : ": its wait would complete before all of them have landed",
            ". Expect the bytes of the tiles copied on it (the product of each tile's shape and its "
            "element size), or copy the tiles you meant to"));
    error.set_loc_if_unknown(o.expect->loc);
    throw error;
  }
}

}  // namespace tilus
