// Every op of ir/ops.def has a complete handler (csrc/ops/op_handler.h). An op added to
// ops.def without a handler object `ops::k<Enum>` fails to link (registry.cc takes its
// address); one whose handler lacks a stage, or whose layout rule disagrees with the
// table's LayoutRule column, makes check_op_table() name it.
#include <cassert>
#include <cstdio>
#include <cstring>

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
    // Ops built through IRBuilder::tile_op must have a check.
    if ((op == Op::Exp || op == Op::Sum) && !h.check) return 2;
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
  std::printf("op table: %d ops, every handler complete\n", kNumOps);
  return 0;
}
