// tilus._C.autotune: parallel builds, the written-parameter analysis, scratch buffers
// and event timing. Thin translation only; the logic lives in csrc/autotune.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "autotune/compile_workers.h"
#include "autotune/parallel_build.h"
#include "autotune/scratch_buffer.h"
#include "autotune/timing.h"
#include "transforms/written_params.h"
#include "bindings/bindings.h"

namespace tilus::bindings {
namespace {

namespace py = pybind11;
using autotune::BuildResult;
using autotune::BuildStatus;
using autotune::ScratchBuffer;

py::tuple build_result_tuple(const BuildResult& r) {
  py::dict meta;
  meta["status"] = autotune::build_status_name(r.status);
  meta["name"] = r.generated.name;
  meta["source"] = r.generated.source;
  meta["threads"] = r.generated.threads;
  meta["dynamic_smem"] = r.generated.dynamic_smem;
  meta["codegen_ms"] = r.codegen_ms;
  meta["compile_ms"] = r.compile_ms;
  meta["cache_key"] = r.cache_key;
  if (!r.script_kind.empty()) {
    const SourceLoc& loc = r.script_loc;
    meta["script_error"] = py::make_tuple(r.script_kind, r.script_message, loc.file, loc.line,
                                          loc.column, loc.text);
  }
  if (r.status == BuildStatus::Ok) return py::make_tuple(py::bytes(r.cubin), meta);
  return py::make_tuple(py::str(r.error), meta);
}

void bind_build(py::module_& m) {
  m.def(
      "build_all",
      [](std::vector<std::shared_ptr<Program>> programs, bool pointers_aligned, std::string arch,
         int threads, int64_t smem_limit, int max_threads, std::optional<py::function> progress,
         const py::kwargs& choices) {
        autotune::BuildOptions options;
        options.codegen = codegen_options_from(arch, pointers_aligned, choices);
        options.arch = std::move(arch);
        options.threads = threads;
        options.smem_limit = smem_limit;
        options.max_threads = max_threads;
        std::function<void(size_t)> on_progress;
        if (progress) {
          on_progress = [&progress](size_t done) {
            py::gil_scoped_acquire gil;
            (*progress)(done);
          };
        }
        std::vector<BuildResult> results;
        {
          py::gil_scoped_release release;
          results = autotune::build_all(programs, options, runtime::global_compile_cache(),
                                        on_progress);
        }
        py::list out;
        for (const BuildResult& r : results) out.append(build_result_tuple(r));
        return out;
      },
      py::arg("programs"), py::arg("pointers_aligned"), py::arg("arch"), py::arg("threads") = 0,
      py::arg("smem_limit") = 0, py::arg("max_threads") = 1024, py::arg("progress") = py::none(),
      "Generate and compile every program on `threads` worker threads (0: all cores) through "
      "the process-wide compile cache. Returns one (cubin bytes, meta) or (error str, meta) "
      "per program; meta['status'] is 'ok', 'unfit' (over smem_limit / max_threads, not "
      "compiled), 'codegen' or 'compile'; meta['cache_key'] is the compile cache's key of a built "
      "one (the key _C.build_kernel uses). progress(done) is called on this thread. Keyword "
      "arguments: the code generator's options, as for _C.generate_cuda.");
}

void bind_analysis(py::module_& m) {
  m.def(
      "written_params",
      [](const std::shared_ptr<Program>& program) { return written_params(*program); },
      py::arg("program"),
      "One bool per runtime parameter: may the program write through this pointer?");
}

void bind_scratch_buffer(py::module_& m) {
  py::class_<ScratchBuffer>(m, "ScratchBuffer")
      .def(py::init<int, size_t, uintptr_t>(), py::arg("device"), py::arg("bytes"),
           py::arg("like_address") = 0)
      .def_property_readonly("address", &ScratchBuffer::address)
      .def_property_readonly("bytes", &ScratchBuffer::bytes)
      .def_property_readonly("device", &ScratchBuffer::device)
      .def("copy_from", &ScratchBuffer::copy_from, py::arg("source"), py::arg("stream"))
      .def("fill", &ScratchBuffer::fill, py::arg("value"), py::arg("stream"));
}

void bind_timing(py::module_& m) {
  py::class_<autotune::TimingResult>(m, "TimingResult")
      .def_readonly("times", &autotune::TimingResult::times)
      .def_readonly("dropped", &autotune::TimingResult::dropped)
      .def_readonly("most_flushes", &autotune::TimingResult::most_flushes);
  m.def(
      "time_runs",
      [](const py::function& run, uintptr_t stream, int warmup, int repeat,
         uintptr_t flush_address, size_t flush_bytes, double prune_ms) {
        autotune::TimingOptions options;
        options.warmup = warmup;
        options.repeat = repeat;
        options.flush_address = flush_address;
        options.flush_bytes = flush_bytes;
        options.prune_ms = prune_ms;
        py::gil_scoped_release release;  // held only while `run` runs
        return autotune::time_runs(
            [&run] {
              py::gil_scoped_acquire gil;
              run();
            },
            stream, options);
      },
      py::arg("run"), py::arg("stream"), py::arg("warmup") = 2, py::arg("repeat") = 10,
      py::arg("flush_address") = 0, py::arg("flush_bytes") = 0, py::arg("prune_ms") = 0.0,
      "TimingResult of run() (which launches on `stream`): `warmup` untimed runs, then timed "
      "runs, each after overwriting the flush buffer as many times as covers the host's launch "
      "time; runs the host outlasted are dropped and timed again; with prune_ms > 0 only the "
      "first two kept runs when both took longer than prune_ms.");
  m.def("flushes_to_cover", &autotune::flushes_to_cover, py::arg("host_ms"), py::arg("flush_ms"));
  m.def("host_was_covered", &autotune::host_was_covered, py::arg("host_ms"), py::arg("flushes"),
        py::arg("flush_ms"));
  m.attr("MAX_FLUSHES") = autotune::kMaxFlushes;
  m.def("median", &autotune::median, py::arg("times"));
}

void bind_compile_workers(py::module_& m) {
  m.def(
      "set_compile_worker",
      [](std::string path) { autotune::CompileWorkers::instance().set_executable(std::move(path)); },
      py::arg("path"),
      "The compile worker executable build_all hands its compiles to (\"\": compile in its "
      "own threads).");
  m.def("compile_worker", []() { return autotune::CompileWorkers::instance().executable(); });
  m.def("compile_workers_started", []() { return autotune::CompileWorkers::instance().workers_started(); },
        "Worker processes started so far in this process.");
}

}  // namespace

void init_autotune(pybind11::module_& m) {
  py::module_ sub = m.def_submodule("autotune", "autotuning: parallel builds and timing");
  bind_build(sub);
  bind_compile_workers(sub);
  bind_analysis(sub);
  bind_scratch_buffer(sub);
  bind_timing(sub);
}

}  // namespace tilus::bindings
