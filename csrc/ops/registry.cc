// The handler table, indexed by Op; built from ir/ops.def so it has one entry per op.
#include <array>

#include "ops/op_handler.h"
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

void same_layout_as_inputs(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc) {
  for (const Tensor& t : inst.inputs) {
    if (t->scope != Scope::Register) continue;
    if (t->shape != inst.output->shape) {
      throw ScriptError("ValueError",
                        "broadcasting between register tiles of different shapes is not "
                        "supported by the CUDA backend yet (it is in the CPU interpreter)",
                        loc);
    }
    rules.same(t, inst.output);
  }
}

}  // namespace tilus
