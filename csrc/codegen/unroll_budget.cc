#include "codegen/unroll_budget.h"

#include <algorithm>
#include <cstdlib>

#include "ir/functor.h"

namespace tilus {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Every statement counts one operation (an instruction its estimate), times the trip
// counts of the constant-bound loops around it (unknown bounds count one trip).
class OpEstimator : public StmtVisitor {
 public:
  OpEstimator(const LayoutPlan& plan, int threads) : plan_(plan), threads_(std::max(1, threads)) {}

  int64_t total = 0;

  void visit_stmt(const Stmt& s) override {
    if (s && s->kind != StmtKind::Seq) total += s->kind == StmtKind::Inst ? scale_ * inst(*s->inst) : scale_;
    StmtVisitor::visit_stmt(s);
  }

 protected:
  void visit_for(const Stmt& s) override {
    int64_t start, end, step;
    int64_t trips = 1;
    if (is_const_int(s->start, &start) && is_const_int(s->end, &end) && is_const_int(s->step, &step) &&
        step > 0)
      trips = std::max<int64_t>(0, ceil_div(end - start, step));
    const int64_t outer = scale_;
    scale_ *= trips;
    visit_stmt(s->body);
    scale_ = outer;
  }

 private:
  // Elements of a register tensor one thread holds.
  int64_t local(const Tensor& t) const {
    auto it = plan_.reg.find(t->id);
    if (it != plan_.reg.end()) return it->second.local_size();
    return ceil_div(t->numel(), threads_);
  }
  int64_t vectors(const Tensor& t) const { return std::max<int64_t>(1, ceil_div(local(t) * t->dtype.bits(), 128)); }

  // The cost column of ir/ops.def says which of these estimates an op takes.
  int64_t inst(const Instruction& i) const {
    if (plan_.folded_loads.count(&i)) return 0;  // read by a wgmma dot in place
    switch (op_cost(i.op)) {
      case OpCost::Dot: {
        const Tensor& c = i.inputs.size() > 2 && i.inputs[2] ? i.inputs[2] : i.output;
        const Tensor& a = i.inputs[0];
        const int64_t k = a->shape.size() >= 2 ? a->shape[1] : 1;
        auto plan = plan_.dots.find(&i);
        if (plan != plan_.dots.end() && plan->second.wgmma)  // one instruction per m64 slab and k16
          return plan->second.tiling.slabs * plan->second.tiling.k_steps;
        if (plan != plan_.dots.end() && plan->second.mma) {
          const int64_t atom_k = std::max(1, 256 / a->dtype.bits());  // k of one mma atom
          return std::max<int64_t>(1, local(c) / 4 * ceil_div(k, atom_k));
        }
        return local(c) * k;  // SIMT: one fused multiply-add per element and k
      }
      case OpCost::OutputVectors: return vectors(i.output);
      case OpCost::StoredVectors: return vectors(i.inputs[1]);
      case OpCost::CopyChunks:
        return std::max<int64_t>(1, ceil_div(i.inputs[1]->numel() * i.inputs[1]->dtype.bits(), 128 * threads_));
      case OpCost::OutputElements: return i.output ? local(i.output) : 1;
      case OpCost::InputElements: return local(i.inputs[0]);
      case OpCost::Fixed: return 1;
      case OpCost::PartOfDot: return 0;
    }
    return 1;
  }

  const LayoutPlan& plan_;
  int threads_;
  int64_t scale_ = 1;  // trips of the enclosing loops
};

}  // namespace

int64_t estimate_body_ops(const Stmt& body, const LayoutPlan& plan, int threads) {
  OpEstimator estimator(plan, threads);
  estimator.visit_stmt(body);
  return estimator.total;
}

int budget_unroll(int hint, int64_t body_ops, int64_t budget) {
  if (hint <= 1 || budget <= 0) return hint;
  const int64_t fits = budget / std::max<int64_t>(1, body_ops);
  return static_cast<int>(std::clamp<int64_t>(fits, 1, hint));
}

}  // namespace tilus
