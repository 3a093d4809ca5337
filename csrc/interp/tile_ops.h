// The interpreter semantics of the tile instructions of the existing families, one
// function per op (tile_ops.cc, tile_math.cc). Each is registered as the `interpret`
// of its op's handler in csrc/ops/<family>.cc; interp::exec_inst dispatches through
// that table. Newer families keep their semantics in their own handler file.
#pragma once
#include "interp/state.h"
#include "interp/tile_math.h"

namespace tilus::interp {

#define TILUS_EXEC(fn) void fn(BlockState& st, const StmtNode& stmt, const Instruction& inst);
TILUS_EXEC(exec_global_view)
TILUS_EXEC(exec_global_tensor)
TILUS_EXEC(exec_shared_tensor)
TILUS_EXEC(exec_register_tensor)
TILUS_EXEC(exec_slice_shared)
TILUS_EXEC(exec_load_global)
TILUS_EXEC(exec_store_global)
TILUS_EXEC(exec_load_shared)
TILUS_EXEC(exec_store_shared)
TILUS_EXEC(exec_free_shared)
TILUS_EXEC(exec_sync)
TILUS_EXEC(exec_copy_async)
TILUS_EXEC(exec_copy_async_commit_group)
TILUS_EXEC(exec_copy_async_wait_group)
TILUS_EXEC(exec_copy_async_wait_all)
TILUS_EXEC(exec_cast)
TILUS_EXEC(exec_assign)
TILUS_EXEC(exec_lock_semaphore)
TILUS_EXEC(exec_release_semaphore)
TILUS_EXEC(exec_print_tensor)
#undef TILUS_EXEC

// Copies the elements of src into dst in row-major order (views follow their element
// offsets; the element counts must match).
void copy_tensor(const TensorValue& src, TensorValue& dst, const Instruction& inst);

}  // namespace tilus::interp
