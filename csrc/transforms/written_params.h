// Which pointer parameters a program may write through.
//
// The autotuner runs candidate kernels on scratch copies of the arguments they write,
// so the user's buffers see exactly one run (of the winner). This analysis decides
// which arguments need a copy. It is conservative: a parameter is reported written when
// the program stores (store_global, release_semaphore) through any pointer whose value
// may derive from it (through global views, local variables, arithmetic, casts,
// element addresses). When a written pointer's origin cannot be traced to parameters or
// workspaces (a pointer loaded from memory, an integer cast to a pointer), every
// pointer parameter is reported written. Which instructions write global memory is the
// effects column of ir/ops.def (eff::WritesGlobal); such an instruction is taken to
// write through every global tensor and pointer operand it has.
#pragma once
#include <vector>

#include "ir/stmt.h"

namespace tilus {

// One flag per Program::params entry; non-pointer parameters are always false.
std::vector<bool> written_params(const Program& program);

}  // namespace tilus
