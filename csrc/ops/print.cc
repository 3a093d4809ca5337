// print_tensor: a debugging print of a register (or, in the interpreter, shared) tile.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

const OpHandler kPrintTensor = {
    nullptr, nullptr, interp::exec_print_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_print(i); }};

}  // namespace tilus::ops
