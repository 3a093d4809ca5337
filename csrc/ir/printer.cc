// The IR as readable text: what `kernel.ir(...)` shows and tests assert on.
//
//   kernel add_one(n: int32, a_ptr: ~float32, b_ptr: ~float32)
//     blocks = [((n + 127) / 128), 1, 1], warps = 4
//   {
//     offset: int32 = (blockIdx.x * 128)
//     %ga = global_view(a_ptr, dtype=float32, shape=[n])   # global[float32, n]
//     ...
//   }
#include <sstream>

#include "ir/functor.h"
#include "ir/inst_text.h"
#include "ops/op_handler.h"

namespace tilus {

namespace inst_text {

std::string ref(const Tensor& t) { return "%" + t->name; }

std::string exprs(const std::vector<Expr>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + expr_str(xs[i]);
  return s + "]";
}

std::string ints(const std::vector<int64_t>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

std::string ints(const std::vector<int>& xs) { return ints(std::vector<int64_t>(xs.begin(), xs.end())); }

std::string call(const Instruction& i, const std::string& attrs) {
  return (i.output && i.defines_output ? ref(i.output) + " = " : std::string()) + op_name(i.op) + "(" +
         attrs + ")";
}

std::string operands(const Instruction& i) {
  std::string s;
  for (size_t k = 0; k < i.inputs.size(); ++k) s += (k ? ", " : "") + ref(i.inputs[k]);
  if (i.output && !i.defines_output) s += (i.inputs.empty() ? "" : ", ") + std::string("out=") + ref(i.output);
  return s;
}

std::string dims_attr(const Instruction& inst, int global_rank, size_t tile_rank) {
  // Only print dims when they differ from the default (the last tile-rank dims).
  bool is_default = true;
  for (size_t i = 0; i < inst.dims.size(); ++i)
    if (inst.dims[i] != global_rank - static_cast<int>(tile_rank) + static_cast<int>(i)) is_default = false;
  if (is_default) return "";
  return ", dims=" + ints(inst.dims);
}

std::string generic(const Instruction& i) { return call(i, operands(i)); }

}  // namespace inst_text

namespace {

class Printer : public StmtVisitor {
 public:
  std::string run(const Program& p) {
    os_ << "kernel " << p.name << "(";
    for (size_t i = 0; i < p.params.size(); ++i)
      os_ << (i ? ", " : "") << p.params[i]->name << ": " << p.params[i]->dtype.name();
    os_ << ")\n  blocks = [" << expr_str(p.grid[0]) << ", " << expr_str(p.grid[1]) << ", "
        << expr_str(p.grid[2]) << "], warps = " << p.warps;
    if (p.cluster != std::array<int64_t, 3>{1, 1, 1})
      os_ << ", cluster_blocks = [" << p.cluster[0] << ", " << p.cluster[1] << ", " << p.cluster[2] << "]";
    os_ << "\n{\n";
    indent_ = 1;
    visit_stmt(p.body);
    os_ << "}\n";
    return os_.str();
  }

 private:
  void line(const std::string& s) { os_ << std::string(indent_ * 2, ' ') << s << "\n"; }

  // head {, the indented body, then the closing line
  void block(const std::string& head, const Stmt& body) {
    line(head + " {");
    ++indent_;
    visit_stmt(body);
    --indent_;
  }

  void visit_declare(const Stmt& s) override {
    line(s->var->name + ": " + s->var->dtype.name() + (s->value ? " = " + expr_str(s->value) : std::string()));
  }
  void visit_assign(const Stmt& s) override { line(s->var->name + " = " + expr_str(s->value)); }
  void visit_for(const Stmt& s) override {
    std::string head = "for " + s->var->name + " in range(" + expr_str(s->start) + ", " +
                       expr_str(s->end) + ", " + expr_str(s->step) + ")";
    if (s->unroll != 0) head += s->unroll < 0 ? " unroll(all)" : " unroll(" + std::to_string(s->unroll) + ")";
    block(head, s->body);
    line("}");
  }
  void visit_if(const Stmt& s) override {
    block("if " + expr_str(s->cond), s->then_body);
    if (s->else_body) {
      line("} else {");
      ++indent_;
      visit_stmt(s->else_body);
      --indent_;
    }
    line("}");
  }
  void visit_while(const Stmt& s) override {
    block("while " + expr_str(s->cond), s->body);
    line("}");
  }
  // thread_group(begin, n): the threads, relative to the enclosing group, that run it.
  void visit_thread_group(const Stmt& s) override {
    block("thread_group(" + (s->group_begin < 0 ? std::string("any") : std::to_string(s->group_begin)) + ", " +
              std::to_string(s->group_threads) + ")",
          s->body);
    line("}");
  }
  void visit_break(const Stmt& s) override { line("break"); }
  void visit_continue(const Stmt& s) override { line("continue"); }
  void visit_inst(const Stmt& s) override { line(inst(*s->inst)); }

  // The op's own text (its handler's print stage, or the generic one), then the type of
  // the tensor it defines.
  static std::string inst(const Instruction& i) {
    const OpHandler& h = op_handler(i.op);
    std::string s = h.print ? h.print(i) : inst_text::generic(i);
    if (i.output && i.defines_output) s += "   # " + i.output->type_str();
    return s;
  }

  std::ostringstream os_;
  int indent_ = 0;
};

}  // namespace

std::string print_program(const Program& p) { return Printer().run(p); }

}  // namespace tilus
