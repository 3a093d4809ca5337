// Semaphores in global memory: lock (wait until *p == value) and release (*p = value).
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
// args: the ~int32 semaphore pointer, the value (made int32).
OutputType semaphore_check(Instruction& i) {
  expect_inputs(i, 0);
  const char* what = op_name(i.op);
  TILUS_CHECK(i.args.size() == 2, "ValueError", what, " takes a semaphore and a value");
  TILUS_CHECK(i.args[0]->dtype == dtypes::int32.pointer_to(), "TypeError", what,
              ": the semaphore must be a ~int32 pointer, got ", i.args[0]->dtype.name());
  const std::string value = std::string(what) + ": value";
  i.args[1] = make_cast(int_operand(i.args[1], value.c_str()), dtypes::int32);
  return {};
}

std::string semaphore_print(const Instruction& i) {
  return inst_text::call(i, expr_str(i.args[0]) + ", value=" + expr_str(i.args[1]));
}
void semaphore_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 2, 2);
  c.no_output(i);
  if (i.args[0]->dtype != dtypes::int32.pointer_to() || i.args[1]->dtype != dtypes::int32)
    c.fail(op_name(i.op), ": needs a ~int32 pointer and an int32 value, got ", i.args[0]->dtype.name(), " and ",
           i.args[1]->dtype.name());
}
void emit_semaphore(CudaEmitter& e, const Instruction& i) { e.emit_semaphore(i); }
}  // namespace

const OpHandler kLockSemaphore = {semaphore_check, nullptr, interp::exec_lock_semaphore, emit_semaphore,
                                  semaphore_print, semaphore_verify};
const OpHandler kReleaseSemaphore = {semaphore_check, nullptr, interp::exec_release_semaphore, emit_semaphore,
                                     semaphore_print, semaphore_verify};

}  // namespace tilus::ops
