// The handler table, indexed by Op; built from ir/ops.def so it has one entry per op.
#include <array>

#include "ops/op_handler.h"
#include "ops/reduction.h"
#include "support/error.h"

namespace tilus {

namespace {
const std::array<const OpHandler*, kNumOps> kTable = {
#define TILUS_OP(e, name, defines, family, effects, cost, layout) &ops::k##e,
#include "ir/ops.def"
#undef TILUS_OP
};
}  // namespace

std::string check_op_table() {
  std::string why;
  for (int k = 0; k < kNumOps; ++k) {
    const Op op = static_cast<Op>(k);
    const OpHandler& h = *kTable[k];
    auto missing = [&](const char* stage) {
      why += std::string(why.empty() ? "" : "; ") + op_name(op) + " (family " + op_family(op) +
             ") has no " + stage;
    };
    if (!h.interpret) missing("interpret");
    if (!h.emit) missing("emit");
    if (!h.check && !h.verify) missing("check or verify (the verifier needs one)");
    if ((h.layout == nullptr) != (op_layout_rule(op) == LayoutRule::None))
      missing(h.layout ? "LayoutRule in ops.def for its layout rule" : "layout rule");
  }
  return why;
}

const OpHandler& op_handler(Op op) {
  static const bool checked = [] {
    std::string why = check_op_table();
    TILUS_ASSERT(why.empty(), "incomplete op handler table: ", why);
    return true;
  }();
  (void)checked;
  return *kTable[static_cast<int>(op)];
}

WgmmaHazard default_wgmma_hazard(const Instruction& inst) {
  const uint32_t e = op_effects(inst.op);
  if (!(e & (eff::EndsShared | eff::WritesShared))) return {};
  for (size_t k = 0; k < inst.inputs.size(); ++k)
    if (inst.inputs[k]->scope == Scope::Shared)
      return {WgmmaHazard::WritesShared, static_cast<int>(k),
              e & eff::EndsShared ? "freeing a tile the dot may read" : "writing a tile a running dot may read"};
  return {};
}

void same_layout_as_inputs(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc) {
  for (const Tensor& t : inst.inputs) {
    if (t->scope != Scope::Register) continue;
    if (t->shape != inst.output->shape) {
      throw ScriptError("ValueError",
                        cat(op_name(inst.op), ": operand ", t->name, " (", t->type_str(),
                            ") has another shape than the result (", inst.output->type_str(),
                            "); this instruction does not broadcast on the CUDA backend"),
                        loc);
    }
    rules.same(t, inst.output);
  }
}

// A broadcast operand is not tied to the output: it takes the output's layout with the
// broadcast dimensions reduced (what a keepdim reduction of the output would give it),
// unless its layout was fixed otherwise; then the emitter converts it.
void same_layout_or_broadcast(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  const Tensor& out = inst.output;
  for (const Tensor& t : inst.inputs) {
    if (t->scope != Scope::Register) continue;
    if (t->shape == out->shape) {
      rules.same(t, out);
      continue;
    }
    const std::vector<int64_t> shape = t->shape, out_shape = out->shape;
    rules.derive(out, t, [shape, out_shape](const RegisterLayout& l) {
      return ops::broadcast_layout(l, out_shape, shape);
    });
  }
}

}  // namespace tilus
