#include "ir/thread_groups.h"

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
    if (i.output && i.defines_output && is_reg(i.output) && n != block) tensor_threads[i.output->id] = n;
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


}  // namespace

GroupThreadCounts group_thread_counts(const Program& program) {
  GroupThreadCounts out;
  GroupThreads walk(out.tensor_threads, int64_t{program.warps} * 32);
  walk.visit_stmt(program.body);
  out.inst_threads = std::move(walk.inst_threads);
  return out;
}

}  // namespace tilus
