// Tiles loaded from and stored to global memory.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
OutputType load_check(Instruction& i) {
  expect_inputs(i, 1);
  check_tile_window(i.inputs[0], i.args, i.shape, i.dims, "load_global");
  return {i.inputs[0]->dtype, i.shape};
}

OutputType store_check(Instruction& i) {
  expect_inputs(i, 2);
  const Tensor &global = i.inputs[0], &value = i.inputs[1];
  require_register(value, "store_global", "the value");
  check_tile_window(global, i.args, value->shape, i.dims, "store_global");
  TILUS_CHECK(value->dtype == global->dtype, "TypeError", "store_global: cannot store a ", value->dtype.name(),
              " tile into global tensor ", global->name, " of ", global->dtype.name(),
              "; cast it first with self.cast(x, dtype=", global->dtype.name(), ")");
  return {};
}

using inst_text::call;
using inst_text::ref;

std::string load_print(const Instruction& i) {
  return call(i, ref(i.inputs[0]) + ", offsets=" + inst_text::exprs(i.args) + ", shape=" + inst_text::ints(i.shape) +
                     inst_text::dims_attr(i, i.inputs[0]->rank(), i.shape.size()));
}
std::string store_print(const Instruction& i) {
  return call(i, ref(i.inputs[0]) + ", " + ref(i.inputs[1]) + ", offsets=" + inst_text::exprs(i.args) +
                     inst_text::dims_attr(i, i.inputs[0]->rank(), i.inputs[1]->shape.size()));
}

void load_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, i.args.size());
  c.scope(i, i.inputs[0], Scope::Global, "the source");
  c.scope(i, i.output, Scope::Register, "the output");
  c.window(i, i.inputs[0], i.output->shape);
  if (i.shape != i.output->shape) c.fail(op_name(i.op), ": shape ", c.shape_str(i.shape), " but ", c.str(i.output));
  c.same_dtype(i, i.inputs[0], i.output);
}
void store_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 2, 0, i.args.size());
  c.no_output(i);
  c.scope(i, i.inputs[0], Scope::Global, "the destination");
  c.scope(i, i.inputs[1], Scope::Register, "the value");
  c.window(i, i.inputs[0], i.inputs[1]->shape);
  c.same_dtype(i, i.inputs[0], i.inputs[1]);
}
}  // namespace

const OpHandler kLoadGlobal = {
    load_check, nullptr, interp::exec_load_global,
    [](CudaEmitter& e, const Instruction& i) { e.emit_load_global(i); }, load_print, load_verify};
const OpHandler kStoreGlobal = {
    store_check, nullptr, interp::exec_store_global,
    [](CudaEmitter& e, const Instruction& i) { e.emit_store_global(i); }, store_print, store_verify};

}  // namespace tilus::ops
