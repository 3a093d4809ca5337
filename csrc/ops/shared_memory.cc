// Shared memory: loads, stores, freeing, the block barrier.
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {
void emit_free_shared(CudaEmitter& e, const Instruction& i) {
  auto it = e.smem_offset_.find(i.inputs[0]->id);
  if (it != e.smem_offset_.end()) e.smem_.release(it->second);
  e.line("// free_shared(" + i.inputs[0]->name + ")");
  // Copies still in flight into freed memory (a pipeline's prologue may copy tiles
  // its loop never waits for) would land on whatever is allocated there next.
  if (e.async_targets_.count(i.inputs[0]->id) && e.copies_in_flight_) {
    e.line("tilus::cp_async_wait_all();  // let copies into freed memory land before reuse");
    e.fence_for_wgmma();
    e.line("__syncthreads();");
    e.copies_in_flight_ = false;
  }
}
}  // namespace

const OpHandler kLoadShared = {
    nullptr, nullptr, interp::exec_load_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_load_shared(i); }};
const OpHandler kStoreShared = {
    nullptr, nullptr, interp::exec_store_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_store_shared(i); }};
const OpHandler kFreeShared = {nullptr, nullptr, interp::exec_free_shared, emit_free_shared};
const OpHandler kSync = {nullptr, nullptr, interp::exec_sync,
                         [](CudaEmitter& e, const Instruction&) { e.line("__syncthreads();"); }};

}  // namespace tilus::ops
