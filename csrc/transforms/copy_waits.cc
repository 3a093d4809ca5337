#include "transforms/copy_waits.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/functor.h"

namespace tilus {

namespace {

std::shared_ptr<Instruction> new_inst(Op op, const std::string& text = "") {
  auto inst = std::make_shared<Instruction>();
  inst->op = op;
  inst->text = text;
  return inst;
}

class CopyWaits : public StmtMutator {
 protected:
  Stmt mutate_seq(const Stmt& s) override {
    std::vector<Stmt> items;
    bool changed = false;
    for (const Stmt& c : s->seq) {
      if (c && c->kind == StmtKind::Inst) {
        std::vector<Stmt> placed = place(c);
        changed = changed || placed.size() != 1;
        items.insert(items.end(), placed.begin(), placed.end());
        continue;
      }
      Stmt m = mutate_stmt(c);
      changed = changed || m != c;
      if (m) items.push_back(std::move(m));
    }
    if (!changed) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    copy->seq = std::move(items);
    return copy;
  }

  Stmt mutate_inst(const Stmt& s) override {  // an instruction that is a block's only statement
    std::vector<Stmt> placed = place(s);
    if (placed.size() == 1) return s;
    return make_seq_stmt(std::move(placed), s->loc);
  }

 private:
  int root_of(const Tensor& t) const {
    auto it = root_.find(t->id);
    return it == root_.end() ? t->id : it->second;
  }

  std::vector<Stmt> place(const Stmt& s) {
    const Instruction& i = *s->inst;
    if (defines_shared_view(i)) {
      root_[i.output->id] = root_of(i.inputs[0]);
    } else if (i.op == Op::CopyAsync) {
      targets_.insert(root_of(i.inputs[1]));
      in_flight_ = true;
    } else if (i.op == Op::CopyAsyncWaitAll) {
      in_flight_ = false;
    } else if (i.op == Op::FreeShared && in_flight_ && targets_.count(i.inputs[0]->id)) {
      in_flight_ = false;
      return {s,
              make_inst_stmt(new_inst(Op::CopyAsyncWaitAll, "let copies into freed memory land before reuse"),
                             s->loc),
              make_inst_stmt(new_inst(Op::Sync), s->loc)};
    }
    return {s};
  }

  std::unordered_map<int, int> root_;  // shared view id -> its allocation
  std::unordered_set<int> targets_;    // allocations cp.async writes into
  bool in_flight_ = false;             // cp.async issued since the last wait for all
};

}  // namespace

std::shared_ptr<Program> place_copy_waits(const Program& program) {
  auto placed = std::make_shared<Program>(program);
  placed->body = CopyWaits().mutate_stmt(program.body);
  return placed;
}

}  // namespace tilus
