// print_tensor: a debugging print of a register (or, in the interpreter, shared) tile.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
OutputType print_check(Instruction& i) {
  expect_inputs(i, 1);
  TILUS_CHECK(i.inputs[0]->scope != Scope::Global, "TypeError",
              "print_tensor: only register and shared tensors can be printed");
  return {};
}

std::string print_print(const Instruction& i) {
  return inst_text::call(i, "\"" + i.text + "\", " + inst_text::ref(i.inputs[0]));
}
void print_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.no_output(i);
  if (i.inputs[0]->scope == Scope::Global) c.fail(op_name(i.op), ": cannot print global tensor ", i.inputs[0]->name);
}
}  // namespace

const OpHandler kPrintTensor = {
    print_check, nullptr, interp::exec_print_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_print(i); }, print_print, print_verify};

}  // namespace tilus::ops
