// Bindings for the CPU interpreter (csrc/interp). Only argument translation lives here.
//
//   interpret(program, args, regions) -> None  (Ctrl-C raises KeyboardInterrupt)
//     args:    one Python value per program.params entry: int for integer and pointer
//              params (the pointer is a host address), float for float params, bool.
//     regions: [(address, nbytes, name)], the host buffers the kernel may touch.
//   evaluate_launch_shape(program, args) -> ((gx, gy, gz), [workspace_bytes, ...])
//   view_extent_error(program, args, param_bytes) -> "" or why a global view does not
//     fit its tensor; param_bytes: the byte size behind each pointer param (-1: unknown).
//   view_offset_overflow(program, args) -> "" or which view's 32-bit offsets would wrap.
//
// ScriptError propagates through the translator registered in ir.cc.
#include <pybind11/stl.h>

#include <chrono>
#include <functional>
#include <memory>

#include "bindings/bindings.h"
#include "interp/interpreter.h"
#include "transforms/view_extents.h"
#include "support/error.h"

namespace py = pybind11;

namespace tilus::bindings {

std::vector<HostArg> to_host_args(const Program& program, const py::list& args) {
  TILUS_CHECK(args.size() == program.params.size(), "TypeError", program.name, " takes ",
              program.params.size(), " arguments but ", args.size(), " were given");
  std::vector<HostArg> out(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const DataType t = program.params[i]->dtype;
    py::handle a = args[i];
    try {
      if (t.is_pointer) {
        // Python ints are arbitrary precision: go through unsigned 64 bits.
        out[i].ptr = static_cast<uintptr_t>(a.cast<uint64_t>());
      } else if (t.is_float()) {
        out[i].f = a.cast<double>();
      } else if (t.kind == ScalarKind::UInt64) {
        out[i].i = static_cast<int64_t>(a.cast<uint64_t>());
      } else {
        out[i].i = a.cast<int64_t>();  // bool is an int; anything with __index__ works
      }
    } catch (const py::cast_error&) {
      throw ScriptError("TypeError",
                        cat("argument ", i, " ('", program.params[i]->name, "', ", t.name(),
                            ") cannot take a value of type ",
                            py::str(py::type::of(a).attr("__name__")).cast<std::string>()));
    }
  }
  return out;
}

namespace {

std::vector<HostRegion> to_regions(const py::list& regions) {
  std::vector<HostRegion> out;
  out.reserve(regions.size());
  for (py::handle r : regions) {
    auto t = r.cast<py::tuple>();
    TILUS_CHECK(t.size() == 3, "TypeError", "a region is (address, nbytes, name)");
    HostRegion h;
    h.begin = static_cast<uintptr_t>(t[0].cast<uint64_t>());
    h.bytes = static_cast<size_t>(t[1].cast<uint64_t>());
    h.name = py::str(t[2]).cast<std::string>();
    out.push_back(std::move(h));
  }
  return out;
}

// Ctrl-C while a kernel runs: Python only notes the signal, so the interpreter asks
// now and then (at most every 20 ms, taking the GIL for it) and a pending
// KeyboardInterrupt abandons the launch.
std::function<void()> check_signals_now_and_then() {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [last] {
    auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(20)) return;
    *last = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  };
}

}  // namespace

void init_interp(py::module_& m) {
  m.def(
      "interpret",
      [](std::shared_ptr<Program> program, py::list args, py::list regions) {
        TILUS_CHECK(program != nullptr, "TypeError", "interpret: program is None");
        std::vector<HostArg> host_args = to_host_args(*program, args);
        std::vector<HostRegion> host_regions = to_regions(regions);
        py::gil_scoped_release release;
        interpret(*program, host_args, host_regions, check_signals_now_and_then());
      },
      py::arg("program"), py::arg("args"), py::arg("regions"),
      "Run a program on host memory with the CPU interpreter.");
  m.def(
      "set_interp_checks",
      [](bool races, bool uninit) { set_interp_checks(InterpChecks{races, uninit}); },
      py::arg("races"), py::arg("uninit"),
      "Turn the interpreter's race and uninitialised-read checks on or off (process-wide).");
  m.def(
      "interp_checks",
      [] {
        InterpChecks c = interp_checks();
        return py::make_tuple(c.races, c.uninit);
      },
      "(races, uninit): the interpreter's checks now on.");
  m.def("interp_instruction_count", [] { return interp_instruction_count(); },
        "Tile instructions the interpreter has executed in this process (all blocks).");
  m.def(
      "evaluate_launch_shape",
      [](std::shared_ptr<Program> program, py::list args) {
        TILUS_CHECK(program != nullptr, "TypeError", "evaluate_launch_shape: program is None");
        LaunchShape s = evaluate_launch_shape(*program, to_host_args(*program, args));
        return py::make_tuple(py::make_tuple(s.grid[0], s.grid[1], s.grid[2]),
                              py::cast(s.workspace_bytes));
      },
      py::arg("program"), py::arg("args"),
      "The grid (x, y, z) and the byte size of each workspace for these arguments.");
  m.def(
      "view_extent_error",
      [](std::shared_ptr<Program> program, py::list args, std::vector<int64_t> param_bytes) {
        TILUS_CHECK(program != nullptr, "TypeError", "view_extent_error: program is None");
        TILUS_CHECK(param_bytes.size() == program->params.size(), "TypeError",
                    "view_extent_error: one size per parameter");
        HostEvaluator evaluator(*program);
        return ViewExtents(*program, evaluator).misfit_message(to_host_args(*program, args), param_bytes);
      },
      py::arg("program"), py::arg("args"), py::arg("param_bytes"),
      "Why a global view would reach past the tensor behind its pointer for these arguments "
      "(\"\" when every view whose extent the host can evaluate fits).");
  m.def(
      "view_offset_overflow",
      [](std::shared_ptr<Program> program, py::list args) {
        TILUS_CHECK(program != nullptr, "TypeError", "view_offset_overflow: program is None");
        HostEvaluator evaluator(*program);
        return ViewExtents(*program, evaluator).offset_overflow_message(to_host_args(*program, args));
      },
      py::arg("program"), py::arg("args"),
      "Which global view spans more elements than its 32-bit offsets reach for these arguments "
      "(\"\" when none does).");
}

}  // namespace tilus::bindings
