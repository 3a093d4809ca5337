// Binding of the CUDA code generator.
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "codegen/codegen.h"

namespace py = pybind11;

namespace tilus::bindings {

void init_codegen(py::module_& m) {
  m.def(
      "generate_cuda",
      [](const std::shared_ptr<Program>& program, bool pointers_aligned, const std::string& arch) {
        CodegenOptions options = codegen_options_for(arch, pointers_aligned);
        GeneratedKernel k = generate_cuda(*program, options);
        py::list params;
        for (auto& p : k.params) params.append(py::make_tuple(p.name, p.dtype, p.workspace));
        py::dict out;
        out["name"] = k.name;
        out["source"] = k.source;
        out["threads"] = k.threads;
        out["dynamic_smem"] = k.dynamic_smem;
        out["params"] = params;
        return out;
      },
      py::arg("program"), py::arg("pointers_aligned") = true, py::arg("arch") = "");
}

}  // namespace tilus::bindings
