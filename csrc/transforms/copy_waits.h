// The waits cp.async needs that a script does not write: a shared allocation freed while
// copies into it may still be in flight (a pipeline's prologue may issue copies its loop
// never waits for) gets copy_async_wait_all + sync right after its free_shared, so the
// copies land before the memory is reused. Walks the program in emission order, as the
// CUDA emitter prints it; generate_cuda runs it before emission.
#pragma once
#include <memory>

#include "ir/stmt.h"

namespace tilus {

std::shared_ptr<Program> place_copy_waits(const Program& program);

}  // namespace tilus
