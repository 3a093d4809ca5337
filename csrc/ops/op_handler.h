// Per-instruction handlers: what each tile instruction means to every stage, in one
// place per instruction family (csrc/ops/<family>.cc, the Family column of ir/ops.def).
//
// A handler holds function pointers for each stage that has something per op to do:
//   check      builder: validates (and normalises) operands and attributes and gives
//              the output's dtype, shape and scope (IRBuilder::tile_op; with out= the
//              builder sets inst.output first). Null only for global_view and
//              global_tensor, whose global outputs IRBuilder creates itself, and the
//              wgmma commit/wait, which the async pass places (their verify checks them).
//   layout     layout inference: states the op's constraints (LayoutRules below). Null
//              exactly when the layout-rule column says LayoutRule::None.
//   interpret  the CPU interpreter's semantics on one block (interp/state.h).
//   emit       CUDA emission (codegen/emitter.h).
// Optional stages; null takes the generic default, derived from the operand fields and
// the effects column, that most ops need:
//   print         the instruction's IR text (ir/printer.cc) without the "# type" comment
//                 the printer appends to a defined tensor. Default: `[%out = ]name(inputs,
//                 out=%t)` (ir/inst_text.h has the pieces: inst_text::call, operands, ...).
//   verify        the verifier's check of a finished instruction's operand count,
//                 scopes, dtypes and shapes (ir/verifier.cc; the helpers and fail() are
//                 ir/operand_check.h). Default: the op's `check` run again on a copy,
//                 whose output type must be the output tensor's. check_op_table() wants
//                 one of check and verify.
//   wgmma_hazard  what a wgmma dot that may still be running must finish first
//                 (transforms/async_waits.cc; WgmmaHazard below). Default: an op with
//                 eff::EndsShared or eff::WritesShared writes its shared operand's
//                 allocation; anything else is no hazard.
// Properties are columns of ir/ops.def, not code: effects (the eff:: flags of ir/inst.h,
// which also say which async channel an op issues, commits or waits on for the
// verifier's pairing check, ir/verify_async.cc), cost class and layout-rule kind. No
// pass switches over Op to learn what an op is: a new instruction is an ops.def line, its
// family file and the Python method (docs/architecture.md, "Adding an instruction").
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
class OperandCheck;  // ir/operand_check.h
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
  // The warps of the thread group that runs `inst` (self.attrs.warps outside groups).
  virtual int64_t warps(const Instruction& inst) const = 0;
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
  Block,       // every thread of the block, outside any thread group (cluster.sync)
};
// What a wgmma dot that may still be running (transforms/async_waits.cc) must have
// finished before an instruction. The pass itself makes any instruction that uses a
// running dot's accumulator wait; this is about the shared tiles the dot reads and about
// the other warpgroups.
struct WgmmaHazard {
  enum Kind : uint8_t {
    None,
    // Writes the elements of the shared view inputs[operand] (whole or in part): waits
    // when it may be a tile the dot reads; views of the same allocation whose leading
    // indices differ at run time, or are ring-counter stages apart, leave the dot running.
    WritesTile,
    // Writes (or frees) somewhere in inputs[operand]'s allocation: waits for every dot
    // when one may read that allocation.
    WritesShared,
    // Waits for every dot unconditionally (the warpgroups meet at a barrier).
    Waits,
  } kind = None;
  int operand = -1;
  const char* why = nullptr;  // the wait's comment in the IR and the CUDA
};
// The default: eff::EndsShared or eff::WritesShared with a shared operand is WritesShared
// on the first one; anything else None.
WgmmaHazard default_wgmma_hazard(const Instruction& inst);

struct OpHandler {
  OutputType (*check)(Instruction& inst) = nullptr;
  void (*layout)(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc) = nullptr;
  void (*interpret)(interp::BlockState& st, const StmtNode& stmt, const Instruction& inst) = nullptr;
  void (*emit)(CudaEmitter& e, const Instruction& inst) = nullptr;
  // Optional (null: the generic default, see the top of this file).
  std::string (*print)(const Instruction& inst) = nullptr;
  void (*verify)(OperandCheck& c, const Instruction& inst) = nullptr;
  WgmmaHazard (*wgmma_hazard)(const Instruction& inst, const LayoutPlan& plan, int warps) = nullptr;
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
