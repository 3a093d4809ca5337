// CPU interpreter: runs a Program on host memory with tile semantics.
//
// Each thread block runs as a cooperative task (a coroutine), so blocks that wait on a
// semaphore yield to the others; a wait no block can ever satisfy is reported as a
// deadlock instead of hanging. See docs/interpreter.md for the semantics.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/stmt.h"

namespace tilus {

// One runtime argument, matching Program::params[i]: an integer, float or bool value,
// or (pointer params) an address in host memory.
struct HostArg {
  int64_t i = 0;
  double f = 0.0;
  uintptr_t ptr = 0;
};

// Host memory a kernel may touch (the arguments' buffers). Global accesses outside
// every region are reported as errors naming the script line, not performed.
struct HostRegion {
  uintptr_t begin = 0;
  size_t bytes = 0;
  std::string name;
};

// Grid and workspace sizes of one launch, evaluated from the arguments on the host.
// Shared by the interpreter and the GPU launcher. The expressions may use parameters,
// constants and variables declared once at the top level of the kernel and never
// reassigned (`m_blocks = cdiv(m_size, block_m)`); anything else is a ScriptError.
struct LaunchShape {
  std::array<int64_t, 3> grid{1, 1, 1};
  std::vector<int64_t> workspace_bytes;  // one per Program::workspaces entry
};
LaunchShape evaluate_launch_shape(const Program& program, const std::vector<HostArg>& args);

// The interpreter's debugging checks (interp/debug_checks.h), process-wide: data races
// on shared and global memory, reads of uninitialised shared and register elements.
// Each launch reads them when it starts.
struct InterpChecks {
  bool races = true;
  bool uninit = true;
};
void set_interp_checks(InterpChecks checks);
InterpChecks interp_checks();

// Tile instructions the interpreter has executed in this process, over all blocks of
// all finished or failed launches (benchmarks/interp_throughput.py).
uint64_t interp_instruction_count();

// Runs the whole grid. Throws ScriptError (with the offending statement's location).
// The program's workspaces (global_tensor) are allocated here for this launch: zeroed
// when requires_clean, otherwise poisoned; `regions` need only cover the arguments.
// A region named like a pointer parameter is that argument's buffer: global views made
// from the parameter may touch only it.
// `poll`, when given, is called every few thousand loop iterations and blocks; what it
// throws abandons the launch and propagates (how Ctrl-C stops a kernel that never ends).
// Thread-safe: concurrent calls share no state.
void interpret(const Program& program, const std::vector<HostArg>& args,
               const std::vector<HostRegion>& regions,
               const std::function<void()>& poll = {});

}  // namespace tilus
