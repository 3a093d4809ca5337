// Tiles loaded from and stored to global memory.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

const OpHandler kLoadGlobal = {
    nullptr, nullptr, interp::exec_load_global,
    [](CudaEmitter& e, const Instruction& i) { e.emit_load_global(i); }};
const OpHandler kStoreGlobal = {
    nullptr, nullptr, interp::exec_store_global,
    [](CudaEmitter& e, const Instruction& i) { e.emit_store_global(i); }};

}  // namespace tilus::ops
