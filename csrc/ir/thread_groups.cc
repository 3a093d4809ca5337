#include "ir/thread_groups.h"

#include <unordered_set>

#include "ir/functor.h"
#include "support/error.h"

namespace tilus {

namespace {

bool is_reg(const Tensor& t) { return t && t->scope == Scope::Register; }

// The thread count of the group each instruction runs in (absent: the whole block). A
// register tensor belongs to the group of the instruction that defines it; an
// instruction may only read register tensors of its own group, whose threads hold them.
struct GroupThreads : StmtVisitor {
  std::vector<int64_t> stack;
  std::unordered_map<const Instruction*, int64_t> inst_threads;
  std::unordered_map<int, int64_t>& tensor_threads;
  std::unordered_map<int, int64_t> moved;  // MadeBeforeItsGroup's tiles -> their group's threads
  int64_t block;
  GroupThreads(std::unordered_map<int, int64_t>& t, int64_t b) : stack{b}, tensor_threads(t), block(b) {}
  void visit_thread_group(const Stmt& s) override {
    stack.push_back(s->group_threads);
    visit_stmt(s->body);
    stack.pop_back();
  }
  void visit_inst(const Stmt& s) override {
    const Instruction& i = *s->inst;
    const int64_t n = stack.back();
    if (n != block) inst_threads[&i] = n;
    if (i.output && i.defines_output && is_reg(i.output)) {
      auto it = moved.find(i.output->id);
      if (it != moved.end()) tensor_threads[i.output->id] = it->second;
      else if (n != block) tensor_threads[i.output->id] = n;
    }
    auto threads_of = [&](const Tensor& t) {
      auto it = tensor_threads.find(t->id);
      return it == tensor_threads.end() ? block : it->second;
    };
    for (const Tensor& t : i.inputs)
      if (is_reg(t) && threads_of(t) != n) {
        ScriptError e("ValueError",
                      cat(op_name(i.op), " runs on ", n, " threads but reads ", t->name, ", a register tensor "
                          "held by ", threads_of(t), " threads (made in another thread group); pass values "
                          "between thread groups through shared memory"));
        e.set_loc_if_unknown(s->loc);
        throw e;
      }
    if (i.output && !i.defines_output && is_reg(i.output) && threads_of(i.output) != n) {
      ScriptError e("ValueError", cat(op_name(i.op), " runs on ", n, " threads but writes ", i.output->name,
                                      ", a register tensor held by ", threads_of(i.output), " threads"));
      e.set_loc_if_unknown(s->loc);
      throw e;
    }
  }
};


// Tilus 0.2 programs make a tile before opening the thread group that alone uses it
// (`acc = self.register_tensor(..., init=0.0)` in the whole block, the dot on it in the
// consumer warpgroup). register_tensor gives every element the same value whatever the
// thread, so such a tile belongs to that group as if made there: tile id -> the group's
// thread count. A tile used in two groups, or outside its group too, stays where it
// was made (and GroupThreads then refuses the use across groups).
struct MadeBeforeItsGroup : StmtVisitor {
  std::vector<const StmtNode*> groups{nullptr};  // innermost last; null: the block
  std::unordered_map<int, const StmtNode*> made_in;  // register_tensor outputs -> group
  std::unordered_map<int, const StmtNode*> used_in;  // -> the one group using them
  std::unordered_set<int> mixed;                     // used in more than one group
  void visit_thread_group(const Stmt& s) override {
    groups.push_back(s.get());
    visit_stmt(s->body);
    groups.pop_back();
  }
  void use(const Tensor& t) {
    if (!is_reg(t) || !made_in.count(t->id)) return;
    auto [it, fresh] = used_in.emplace(t->id, groups.back());
    if (!fresh && it->second != groups.back()) mixed.insert(t->id);
  }
  void visit_inst(const Stmt& s) override {
    const Instruction& i = *s->inst;
    for (const Tensor& t : i.inputs) use(t);
    if (i.output && !i.defines_output) use(i.output);
    if (i.op == Op::RegisterTensor && i.output && i.defines_output) made_in[i.output->id] = groups.back();
  }
  std::unordered_map<int, int64_t> moved() const {
    std::unordered_map<int, int64_t> out;
    for (const auto& [id, group] : used_in)
      if (!mixed.count(id) && group && group != made_in.at(id)) out[id] = group->group_threads;
    return out;
  }
};

}  // namespace

GroupThreadCounts group_thread_counts(const Program& program) {
  GroupThreadCounts out;
  MadeBeforeItsGroup before;
  before.visit_stmt(program.body);
  GroupThreads walk(out.tensor_threads, int64_t{program.warps} * 32);
  walk.moved = before.moved();
  walk.visit_stmt(program.body);
  out.inst_threads = std::move(walk.inst_threads);
  return out;
}

}  // namespace tilus
