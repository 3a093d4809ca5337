// Semaphores in global memory: lock (wait until *p == value) and release (*p = value).
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

const OpHandler kLockSemaphore = {
    nullptr, nullptr, interp::exec_lock_semaphore,
    [](CudaEmitter& e, const Instruction& i) { e.emit_semaphore(i); }};
const OpHandler kReleaseSemaphore = {
    nullptr, nullptr, interp::exec_release_semaphore,
    [](CudaEmitter& e, const Instruction& i) { e.emit_semaphore(i); }};

}  // namespace tilus::ops
