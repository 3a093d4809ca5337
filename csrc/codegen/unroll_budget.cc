#include "codegen/unroll_budget.h"

#include <algorithm>
#include <cstdlib>

namespace tilus {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class OpEstimator {
 public:
  OpEstimator(const LayoutPlan& plan, int threads) : plan_(plan), threads_(std::max(1, threads)) {}

  int64_t stmt(const Stmt& s) const {
    if (!s) return 0;
    switch (s->kind) {
      case StmtKind::Seq: {
        int64_t sum = 0;
        for (auto& c : s->seq) sum += stmt(c);
        return sum;
      }
      case StmtKind::For: {
        int64_t start, end, step;
        int64_t trips = 1;
        if (is_const_int(s->start, &start) && is_const_int(s->end, &end) && is_const_int(s->step, &step) &&
            step > 0)
          trips = std::max<int64_t>(0, ceil_div(end - start, step));
        return 1 + trips * stmt(s->body);
      }
      case StmtKind::If: return 1 + stmt(s->then_body) + stmt(s->else_body);
      case StmtKind::While: return 1 + stmt(s->body);
      case StmtKind::Inst: return inst(*s->inst);
      default: return 1;
    }
  }

 private:
  // Elements of a register tensor one thread holds.
  int64_t local(const Tensor& t) const {
    auto it = plan_.reg.find(t->id);
    if (it != plan_.reg.end()) return it->second.local_size();
    return ceil_div(t->numel(), threads_);
  }
  int64_t vectors(const Tensor& t) const { return std::max<int64_t>(1, ceil_div(local(t) * t->dtype.bytes(), 16)); }

  int64_t inst(const Instruction& i) const {
    switch (i.op) {
      case Op::Dot: {
        const Tensor& c = i.inputs.size() > 2 && i.inputs[2] ? i.inputs[2] : i.output;
        const Tensor& a = i.inputs[0];
        const int64_t k = a->shape.size() >= 2 ? a->shape[1] : 1;
        auto plan = plan_.dots.find(&i);
        if (plan != plan_.dots.end() && plan->second.wgmma)  // one instruction per m64 slab and k16
          return plan->second.tiling.slabs * plan->second.tiling.k_steps;
        if (plan != plan_.dots.end() && plan->second.mma) {
          const int64_t atom_k = std::max(1, 32 / a->dtype.bytes());  // k of one mma atom
          return std::max<int64_t>(1, local(c) / 4 * ceil_div(k, atom_k));
        }
        return local(c) * k;  // SIMT: one fused multiply-add per element and k
      }
      case Op::LoadShared:
        if (plan_.folded_loads.count(&i)) return 0;  // read by a wgmma dot in place
        return vectors(i.output);
      case Op::LoadGlobal: return vectors(i.output);
      case Op::StoreShared:
      case Op::StoreGlobal: return vectors(i.inputs[1]);
      case Op::CopyAsync:  // the whole shared destination, in 16-byte pieces over the block
        return std::max<int64_t>(1, ceil_div(i.inputs[1]->numel() * i.inputs[1]->dtype.bytes(), 16 * threads_));
      case Op::Cast:
      case Op::Elementwise:
      case Op::UnaryElementwise:
      case Op::Where:
      case Op::Assign: return i.output ? local(i.output) : 1;
      default: return 1;
    }
  }

  const LayoutPlan& plan_;
  int threads_;
};

}  // namespace

int64_t estimate_body_ops(const Stmt& body, const LayoutPlan& plan, int threads) {
  return OpEstimator(plan, threads).stmt(body);
}

int budget_unroll(int hint, int64_t body_ops, int64_t budget) {
  if (hint <= 1 || budget <= 0) return hint;
  const int64_t fits = budget / std::max<int64_t>(1, body_ops);
  return static_cast<int>(std::clamp<int64_t>(fits, 1, hint));
}

}  // namespace tilus
