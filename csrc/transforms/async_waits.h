// Asynchronous wgmma made explicit in the IR: which dots run asynchronously and where
// the program commits and waits for them.
//
// On a target that allows wgmma (sm_90a), layout inference lowers qualifying dots to
// wgmma (layout_inference.h). This pass marks every dot with its DotLowering (ir/inst.h)
// and inserts WgmmaCommitGroup / WgmmaWaitGroup instructions where a later access may
// touch what a running dot reads or writes; the CUDA emitter prints them as it sees
// them. async_waits.cc describes the rules.
#pragma once
#include <memory>

#include "ir/stmt.h"

namespace tilus {

// A copy of `program` with the dots marked and the waits placed. Without wgmma every dot
// stays Plain and nothing is inserted (the program comes back unchanged).
std::shared_ptr<Program> lower_async(const Program& program, bool allow_wgmma);

// True when a dot below `s` is marked as lowered to wgmma (after lower_async).
bool contains_wgmma_dot(const Stmt& s);

}  // namespace tilus
