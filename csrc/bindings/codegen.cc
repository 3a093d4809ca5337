// Bindings of the CUDA code generator and of the build entry (runtime/build.h).
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "codegen/codegen.h"
#include "runtime/build.h"
#include "transforms/async_waits.h"
#include "transforms/layout_inference.h"
#include "transforms/verify_layouts.h"

namespace py = pybind11;

namespace tilus::bindings {
namespace {

py::dict generated_dict(const GeneratedKernel& k) {
  py::list params;
  for (auto& p : k.params) params.append(py::make_tuple(p.name, p.dtype, p.workspace));
  // Bounds-checked kernels: their hidden parameters and where each checked access is.
  py::list hidden;
  for (auto& p : k.params) {
    if (p.bounds_of >= 0) hidden.append(py::make_tuple("size", p.bounds_of));
    if (p.bounds_record) hidden.append(py::make_tuple("record", -1));
  }
  py::list sites;
  for (auto& s : k.bounds_sites) {
    py::dict d;
    d["op"] = s.op;
    d["view"] = s.view;
    d["param"] = s.param;
    d["view_shape"] = s.view_shape;
    d["file"] = s.loc.file;
    d["line"] = s.loc.line;
    d["text"] = s.loc.text;
    sites.append(d);
  }
  py::dict out;
  out["name"] = k.name;
  out["source"] = k.source;
  out["threads"] = k.threads;
  out["dynamic_smem"] = k.dynamic_smem;
  out["params"] = params;
  out["bounds_params"] = hidden;
  out["bounds_sites"] = sites;
  return out;
}

}  // namespace

void init_codegen(py::module_& m) {
  m.def(
      "lower_async",
      [](const std::shared_ptr<Program>& program, const std::string& arch, bool wgmma) {
        return std::const_pointer_cast<Program>(
            lower_async(*program, runtime::codegen_options_for(arch, true, wgmma, 64).wgmma));
      },
      py::arg("program"), py::arg("arch"), py::arg("wgmma") = true,
      "The program as generate_cuda emits it for `arch`: dots marked with how they run, "
      "and the commits and waits of asynchronous wgmma dots placed "
      "(transforms/async_waits.h). str() prints it.");
  m.def(
      "verify_layouts",
      [](const std::shared_ptr<Program>& program, bool wgmma) {
        TILUS_CHECK(program != nullptr, "TypeError", "verify_layouts: program is None");
        verify_layouts(*program, infer_layouts(*program, wgmma), "layout inference");
      },
      py::arg("program"), py::arg("wgmma") = false,
      "Infer the layouts of `program` (wgmma: as for sm_90a) and run the verifier's layout "
      "check on them now, whatever the switch says.");
  m.def(
      "generate_cuda",
      [](const std::shared_ptr<Program>& program, bool pointers_aligned, const std::string& arch,
         bool wgmma, int64_t unroll_budget, bool bounds_check) {
        return generated_dict(generate_cuda(
            *program, runtime::codegen_options_for(arch, pointers_aligned, wgmma, unroll_budget,
                                                   bounds_check)));
      },
      py::arg("program"), py::arg("pointers_aligned") = true, py::arg("arch") = "",
      py::arg("wgmma") = true, py::arg("unroll_budget") = 64, py::arg("bounds_check") = false,
      "The CUDA C++ of `program` for `arch` as a dict (name, source, threads, dynamic_smem, "
      "params, bounds_params, bounds_sites). wgmma=False keeps dots on mma.sync; "
      "unroll_budget: codegen/unroll_budget.h; bounds_check: tilus.option.debug.bounds_check.");
  m.def(
      "build_kernel",
      [](const std::shared_ptr<Program>& program, const std::string& arch, bool pointers_aligned,
         bool wgmma, int64_t unroll_budget, bool bounds_check) {
        CodegenOptions options = runtime::codegen_options_for(arch, pointers_aligned, wgmma,
                                                              unroll_budget, bounds_check);
        runtime::KernelBuild build;
        {
          py::gil_scoped_release release;
          build = runtime::build_kernel(*program, options, arch, runtime::global_compile_cache());
        }
        py::dict out = generated_dict(build.generated);
        out["cubin"] = py::bytes(build.cubin);
        out["cache_key"] = build.cache_key;
        return out;
      },
      py::arg("program"), py::arg("arch"), py::arg("pointers_aligned") = true,
      py::arg("wgmma") = true, py::arg("unroll_budget") = 64, py::arg("bounds_check") = false,
      "Generate and compile one program through the process-wide compile cache, exactly as "
      "autotune.build_all does: generate_cuda's dict plus cubin (bytes) and cache_key.");
}

}  // namespace tilus::bindings
