// The verifier's check of a layout plan (transforms/layout_inference.h) against the
// program it was inferred for: every register tensor has a register layout of its
// shape over the kernel's threads, tensors an instruction ties together (elementwise,
// casts, assignments, a dot's accumulator and result) share one, every shared tensor's
// allocation has a layout of its shape that fits its buffer, and every dot has a plan
// whose operand layouts match its operands. Failures are verify_fail errors
// (ir/verifier.h) located at the instruction.
#pragma once
#include "ir/stmt.h"
#include "transforms/layout_inference.h"

namespace tilus {

void verify_layouts(const Program& program, const LayoutPlan& plan, const char* after);

}  // namespace tilus
