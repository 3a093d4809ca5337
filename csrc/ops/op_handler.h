// Per-instruction handlers: what each tile instruction means to every stage, in one
// place per instruction family (csrc/ops/<family>.cc, the Family column of ir/ops.def).
//
// A handler holds function pointers for each stage that has something per op to do:
//   check      builder: validates operands and attributes and gives the output's dtype
//              and shape (IRBuilder::tile_op). Null for ops whose IRBuilder method
//              checks them (the ops older than this table).
//   layout     layout inference: states the op's constraints (LayoutRules below). Null
//              exactly when the layout-rule column says LayoutRule::None.
//   interpret  the CPU interpreter's semantics on one block (interp/state.h).
//   emit       CUDA emission (codegen/emitter.h).
// Effects, cost class and layout-rule kind are columns of ir/ops.def, not code.
//
// Every op of ir/ops.def has a handler object `ops::k<Enum>` (declared below from the
// table): an op without one fails to link, and check_op_table() (run by the table's
// first use and by tests/cpp/test_op_table.cc) refuses a handler missing a stage.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "ir/inst.h"
#include "ir/stmt.h"
#include "layout/register_layout.h"

namespace tilus {

class CudaEmitter;
struct LayoutPlan;
namespace interp {
struct BlockState;
}

// What a layout rule may state about an instruction's register tensors. Implemented
// by transforms/layout_inference.cc.
class LayoutRules {
 public:
  virtual ~LayoutRules() = default;
  // a and b must have the same layout (their groups are merged).
  virtual void same(const Tensor& a, const Tensor& b) = 0;
  // The instruction fixes its operands' layouts itself; layout inference plans it after
  // user layouts (the dot planner).
  virtual void anchor(const Instruction& inst, const SourceLoc& loc) = 0;
  // `to` gets derive(layout of `from`) unless something else fixed its layout first.
  // Derivations run in program order after the anchored instructions; `from` without a
  // layout by then gets the default one.
  // `inverse`, where the rule can be run backwards (permute, a reshape that keeps each
  // thread's registers), gives the layout of `from` that derives a given layout of `to`
  // (nullopt: none does). When a dot or a user fixed `to`'s layout and `from` has none,
  // `from` takes that layout, so the instruction moves no data (`self.dot(a, b.transpose())`).
  virtual void derive(const Tensor& from, const Tensor& to,
                      std::function<RegisterLayout(const RegisterLayout&)> derive,
                      std::function<std::optional<RegisterLayout>(const RegisterLayout&)> inverse = nullptr) = 0;
  // Shared layouts and views (LayoutRule::Shared).
  virtual LayoutPlan& plan() = 0;
  // An instruction whose hardware fixes a register operand's layout (explicit wgmma's
  // accumulator): `t`'s group gets `layout`, applied with the user layouts; a user
  // layout or another fix that differs is a ValueError located at `loc`.
  virtual void fix(const Tensor& t, const RegisterLayout& layout, const SourceLoc& loc) = 0;
  // The kernel's warps (self.attrs.warps).
  virtual int64_t warps() const = 0;
};

// The output an instruction built through IRBuilder::tile_op defines.
struct OutputType {
  DataType dtype;
  std::vector<int64_t> shape;
  Scope scope = Scope::Register;  // Shared: a view of a shared input (reshape_shared, ...)
};

// Which thread groups may issue an instruction (Tilus 0.2's "Thread group" notes); the
// builder refuses any other group with the script line (IRBuilder::tile_op).
enum class ThreadsRule : uint8_t {
  Any,         // any group, down to one thread
  Warps,       // whole warps: the group starts at a multiple of 32 and has a multiple of 32 threads
  Warpgroups,  // whole warpgroups: the same with 128 (setmaxnreg, wgmma)
};

struct OpHandler {
  OutputType (*check)(Instruction& inst) = nullptr;
  void (*layout)(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc) = nullptr;
  void (*interpret)(interp::BlockState& st, const StmtNode& stmt, const Instruction& inst) = nullptr;
  void (*emit)(CudaEmitter& e, const Instruction& inst) = nullptr;
  ThreadsRule threads = ThreadsRule::Any;
};

namespace ops {
#define TILUS_OP(e, name, defines, family, effects, cost, layout) extern const OpHandler k##e;
#include "ir/ops.def"
#undef TILUS_OP
}  // namespace ops

const OpHandler& op_handler(Op op);

// "" when every op has a handler with each stage it needs, else what is missing.
std::string check_op_table();

// Shared layout rules.
// LayoutRule::SameAsInputs: every register input has the output's shape and layout.
void same_layout_as_inputs(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc);
// Elementwise ops that broadcast on CUDA (binary operators, where): inputs of the
// output's shape share its layout; a broadcast input derives its layout from the
// output's (ops/reduction.h broadcast_layout). Their emitters read such an input through
// CudaEmitter::operand_at.
void same_layout_or_broadcast(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc);

}  // namespace tilus
