// The IR verifier: checks the invariants every pass after the builder relies on, so that
// a pass that breaks them fails where it broke them instead of in generated code.
//
// verify(program, after) checks
//   * scoping: every variable an expression reads is a parameter, the variable of an
//     enclosing loop, or declared earlier in program order (scalars are function-wide,
//     as the transpiler binds them and the CUDA emitter hoists their declarations); every
//     tensor an instruction or expression reads is defined earlier in the same block or
//     an enclosing one (a tensor defined inside an if/for/while body ends with it); no
//     tensor is defined twice; the grid and workspace shapes use parameters only;
//   * operands: arity, scope, dtype and shape of every instruction (ir/inst.h), the
//     rules its handler's check enforces when the builder creates it: the handler's
//     verify stage, or its check run again (ops/op_handler.h);
//   * shared memory: no use of a tensor (or a view of it) after its free_shared;
//   * asynchronous copies (verify_async.cc): every copy_async committed before a wait and
//     before the kernel ends, and no read of a copy's destination while the copy is
//     still in flight on every path to the read.
// A failure throws ScriptError of kind "InternalError" located at the offending
// statement; the message starts with "IR verifier (after <after>)".
//
// Whether the builder and the passes call it is a process-wide switch (docs/architecture.md,
// "The verifier"): off for users, on in debug/test builds and under pytest.
#pragma once
#include <string>

#include "ir/stmt.h"

namespace tilus {

void verify(const Program& program, const char* after);

// The switch: passes call verify only when it is set. Its initial value is the build's
// TILUS_VERIFY option (CMakeLists.txt); tilus.option.verify sets it from Python.
bool verify_enabled();
void set_verify_enabled(bool on);
bool verify_build_default();

// The error every check throws: kind "InternalError", located at `loc`.
[[noreturn]] void verify_fail(const char* after, const SourceLoc& loc, const std::string& message);

// The async pairing check alone (verify_async.cc); verify() runs it.
void verify_async(const Program& program, const char* after);

}  // namespace tilus
