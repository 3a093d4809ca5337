#include "codegen/rebias_moves.h"

#include <vector>

#include "ir/functor.h"
#include "ir/small_floats.h"

namespace tilus {
namespace {

// Per tensor: the instructions writing and reading it, whether an expression reads it;
// per instruction: its statement list and its place in program order.
struct Uses : StmtExprVisitor {
  std::unordered_map<int, std::vector<const Instruction*>> writers, readers;
  std::unordered_map<int, bool> read_by_expr;
  std::unordered_map<const Instruction*, int> block, order;
  std::vector<int> blocks{0};
  int next_block = 1;

  template <typename Visit>
  void in_new_block(const Visit& visit) {
    blocks.push_back(next_block++);
    visit();
    blocks.pop_back();
  }
  void visit_seq(const Stmt& s) override { in_new_block([&] { StmtExprVisitor::visit_seq(s); }); }
  void visit_for(const Stmt& s) override { in_new_block([&] { StmtExprVisitor::visit_for(s); }); }
  void visit_if(const Stmt& s) override { in_new_block([&] { StmtExprVisitor::visit_if(s); }); }
  void visit_while(const Stmt& s) override { in_new_block([&] { StmtExprVisitor::visit_while(s); }); }
  void visit_thread_group(const Stmt& s) override {
    in_new_block([&] { StmtExprVisitor::visit_thread_group(s); });
  }
  void visit_inst(const Stmt& s) override {
    const Instruction* i = s->inst.get();
    block[i] = blocks.back();
    order[i] = static_cast<int>(order.size());
    if (i->output) writers[i->output->id].push_back(i);
    for (const Tensor& t : i->inputs)
      if (t) readers[t->id].push_back(i);
    StmtExprVisitor::visit_inst(s);
  }
  void visit_element_addr(const Expr& e) override {
    read_by_expr[e->tensor->id] = true;
    StmtExprVisitor::visit_element_addr(e);
  }
  void visit_element_load(const Expr& e) override {
    read_by_expr[e->tensor->id] = true;
    StmtExprVisitor::visit_element_load(e);
  }

  // The one instruction reading t (and no expression), else null.
  const Instruction* only_reader(const Tensor& t) const {
    auto r = readers.find(t->id);
    if (r == readers.end() || r->second.size() != 1 || read_by_expr.count(t->id)) return nullptr;
    return r->second[0];
  }
  const Instruction* only_writer(const Tensor& t) const {
    auto w = writers.find(t->id);
    return w == writers.end() || w->second.size() != 1 ? nullptr : w->second[0];
  }
};

bool is_zero_constant(const Expr& e) {
  return e && e->is_const() && (e->dtype.is_float() ? e->float_value == 0.0 : e->int_value == 0);
}

// The factor's exponent if `cast` converts finite small-float codes to float16, else 0.
int rebias_exponent(const Instruction& cast) {
  const DataType from = cast.inputs[0]->dtype, to = cast.output->dtype;
  if (to != dtypes::float16 || from.is_pointer || !is_lowp_float(from.kind) || lowp_scheme(from.kind) != lowp::kFinite)
    return 0;
  const int e = dtype_info(from.kind).exponent_bits;
  if (e > 4) return 0;  // (the conversions place only these)
  return 15 - ((1 << (e - 1)) - 1);
}

}  // namespace

std::unordered_map<const Instruction*, RebiasMove> find_rebias_moves(const Stmt& body) {
  Uses uses;
  uses.visit_stmt(body);
  std::unordered_map<const Instruction*, RebiasMove> moves;
  for (const auto& [id, writers] : uses.writers) {
    if (writers.size() != 1 || writers[0]->op != Op::Cast || !writers[0]->defines_output) continue;
    const Instruction& cast = *writers[0];
    const int exponent = rebias_exponent(cast);
    if (exponent == 0) continue;
    const Instruction* dot = uses.only_reader(cast.output);
    if (!dot || dot->op != Op::Dot || dot->inputs[2] == cast.output || !dot->defines_output ||
        dot->output->dtype != dtypes::float32)
      continue;
    // the accumulator: a zero tile only this dot reads
    const Instruction* zeros = uses.only_writer(dot->inputs[2]);
    if (!zeros || zeros->op != Op::RegisterTensor || zeros->args.empty() || !is_zero_constant(zeros->args[0]) ||
        uses.only_reader(dot->inputs[2]) != dot)
      continue;
    const Instruction* mul = uses.only_reader(dot->output);
    if (!mul || uses.only_writer(dot->output) != dot || mul->op != Op::Elementwise ||
        mul->binary_op != BinaryOp::Mul || mul->inputs.size() != 2 || mul->output->dtype != dtypes::float32)
      continue;
    const Tensor& scale = mul->inputs[0] == dot->output ? mul->inputs[1] : mul->inputs[0];
    const Instruction* scale_cast = uses.only_writer(scale);
    if (scale == dot->output || scale->dtype != dtypes::float32 || !scale_cast || scale_cast->op != Op::Cast ||
        scale_cast->inputs[0]->dtype != dtypes::float16)
      continue;  // |scale| <= 65504: times 2^15 stays finite and exact in float32
    const int b = uses.block.at(&cast);
    if (uses.block.at(dot) != b || uses.block.at(mul) != b || uses.order.at(dot) < uses.order.at(&cast) ||
        uses.order.at(mul) < uses.order.at(dot))
      continue;
    moves[&cast] = {mul, mul->inputs[0] == scale ? 0 : 1, exponent};
  }
  return moves;
}

}  // namespace tilus
