#include "ir/inst.h"

#include "support/error.h"

namespace tilus {

namespace {
struct OpRow {
  const char* name;
  bool defines;
  const char* family;
  uint32_t effects;
  OpCost cost;
  LayoutRule layout;
};

// Indexed by Op: the rows are in enum order because both come from ir/ops.def.
constexpr OpRow kRows[] = {
#define TILUS_OP(e, name, defines, family, effects, cost, layout) \
  {name, defines, #family, effects, cost, layout},
#include "ir/ops.def"
#undef TILUS_OP
};
static_assert(sizeof(kRows) / sizeof(kRows[0]) == kNumOps);

const OpRow& row(Op op) { return kRows[static_cast<int>(op)]; }
}  // namespace

const char* op_name(Op op) { return row(op).name; }
bool op_defines_output(Op op) { return row(op).defines; }
uint32_t op_effects(Op op) { return row(op).effects; }
OpCost op_cost(Op op) { return row(op).cost; }
LayoutRule op_layout_rule(Op op) { return row(op).layout; }
const char* op_family(Op op) { return row(op).family; }

Op op_from_name(const std::string& name) {
  for (int k = 0; k < kNumOps; ++k)
    if (name == kRows[k].name) return static_cast<Op>(k);
  throw ScriptError("ValueError", "no tile instruction is named '" + name + "'");
}

}  // namespace tilus
