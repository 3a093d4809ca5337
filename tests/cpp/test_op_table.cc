// Every op of ir/ops.def has a complete handler (csrc/ops/op_handler.h). An op added to
// ops.def without a handler object `ops::k<Enum>` fails to link (registry.cc takes its
// address); one whose handler lacks a stage, or whose layout rule disagrees with the
// table's LayoutRule column, makes check_op_table() name it.
#include <cassert>
#include <cstdio>
#include <cstring>

#include "ir/inst_text.h"
#include "ops/op_handler.h"

using namespace tilus;

int main() {
  const std::string why = check_op_table();
  if (!why.empty()) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  for (int k = 0; k < kNumOps; ++k) {
    const Op op = static_cast<Op>(k);
    const OpHandler& h = op_handler(op);
    // Every op a script writes is built through IRBuilder::tile_op, and so checked by its
    // handler, except the global views and workspaces the builder creates itself; the
    // wgmma commit/wait are placed by the async pass, never built.
    const bool unchecked = op == Op::GlobalView || op == Op::GlobalTensor || op == Op::WgmmaCommitGroup ||
                           op == Op::WgmmaWaitGroup;
    if (!h.check != unchecked) {
      std::fprintf(stderr, "%s: check is %s\n", op_name(op), h.check ? "set" : "null");
      return 2;
    }
    if (op_from_name(op_name(op)) != op) return 3;
  }
  // The effects column drives written_params (the tuner's scratch copies): exactly the
  // stores, releases, global atomics and TMA stores write global memory.
  for (int k = 0; k < kNumOps; ++k) {
    const Op op = static_cast<Op>(k);
    const bool writes = op_has_effect(op, eff::WritesGlobal);
    const bool expected = op == Op::StoreGlobal || op == Op::ReleaseSemaphore || op == Op::AtomicGlobal ||
                          op == Op::AtomicGlobalScatter || op == Op::StoreGlobalScatter ||
                          op == Op::TmaSharedToGlobal;
    if (writes != expected) {
      std::fprintf(stderr, "%s: WritesGlobal is %d\n", op_name(op), writes);
      return 4;
    }
  }
  if (op_layout_rule(Op::Sum) != LayoutRule::Derived) return 5;
  // The verifier's cp.async channel (ir/verify_async.cc) reads its roles from the effects:
  // one issuing op, one commit, the two waits; only free_shared ends a tile's lifetime.
  for (int k = 0; k < kNumOps; ++k) {
    const Op op = static_cast<Op>(k);
    const uint32_t e = op_effects(op);
    const bool ok = ((e & eff::CpAsyncIssue) != 0) == (op == Op::CopyAsync) &&
                    ((e & eff::CpAsyncCommit) != 0) == (op == Op::CopyAsyncCommitGroup) &&
                    ((e & eff::CpAsyncWait) != 0) == (op == Op::CopyAsyncWaitGroup || op == Op::CopyAsyncWaitAll) &&
                    ((e & eff::EndsShared) != 0) == (op == Op::FreeShared);
    if (!ok) {
      std::fprintf(stderr, "%s: async channel flags %x\n", op_name(op), e);
      return 6;
    }
  }
  // The generic stages: an op without a print stage prints its operands; one without a
  // wgmma_hazard stage that writes shared memory writes its shared operand's allocation.
  {
    Instruction load;
    load.op = Op::LoadShared;
    load.inputs = {make_tensor(Scope::Shared, dtypes::float16, {16, 8}, "s")};
    load.output = make_tensor(Scope::Register, dtypes::float16, {16, 8}, "r");
    load.defines_output = true;
    if (op_handler(Op::LoadShared).print || inst_text::generic(load) != "%r = load_shared(%s)") return 7;
    Instruction atomic;
    atomic.op = Op::AtomicShared;
    atomic.inputs = {make_tensor(Scope::Shared, dtypes::int32, {8}, "dst"), make_tensor(Scope::Register, dtypes::int32, {8}, "v")};
    const WgmmaHazard h = default_wgmma_hazard(atomic);
    if (op_handler(Op::AtomicShared).wgmma_hazard || h.kind != WgmmaHazard::WritesShared || h.operand != 0) return 8;
    Instruction free_op;
    free_op.op = Op::FreeShared;
    free_op.inputs = {atomic.inputs[0]};
    if (std::strcmp(default_wgmma_hazard(free_op).why, "freeing a tile the dot may read") != 0) return 9;
    if (default_wgmma_hazard(load).kind != WgmmaHazard::None) return 10;
  }
  std::printf("op table: %d ops, every handler complete\n", kNumOps);
  return 0;
}
