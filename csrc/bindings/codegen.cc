// Bindings of the CUDA code generator and of the build entry (runtime/build.h).
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "codegen/codegen.h"
#include <algorithm>
#include <cstring>

#include "runtime/build.h"
#include "runtime/tma_maps.h"
#include "transforms/async_waits.h"
#include "transforms/layout_inference.h"
#include "transforms/verify_layouts.h"

namespace py = pybind11;

namespace tilus::bindings {
namespace {

// tma_maps: a TmaMaps over the kernel's tensor maps (None when it has none).
py::dict generated_dict(const GeneratedKernel& k, const std::shared_ptr<Program>& program) {
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
  out["tma_maps"] = k.tma_maps.empty() ? py::object(py::none())
                                       : py::cast(std::make_shared<runtime::TmaMaps>(program, k.tma_maps));
  out["bounds_params"] = hidden;
  out["bounds_sites"] = sites;
  out["nvrtc_options"] = k.nvrtc_options;
  return out;
}

py::dict encode_params_dict(const runtime::TmaEncodeParams& p) {
  py::dict d;
  const size_t r = p.rank;
  d["data_type"] = p.data_type;
  d["rank"] = p.rank;
  d["address"] = p.address;
  d["dims"] = std::vector<uint64_t>(p.dims, p.dims + r);
  d["strides"] = std::vector<uint64_t>(p.strides, p.strides + (r ? r - 1 : 0));
  d["box"] = std::vector<uint32_t>(p.box, p.box + r);
  d["element_strides"] = std::vector<uint32_t>(p.element_strides, p.element_strides + r);
  d["interleave"] = p.interleave;
  d["swizzle"] = p.swizzle;
  d["l2_promotion"] = p.l2_promotion;
  d["oob_fill"] = p.oob_fill;
  return d;
}

void bind_tma_maps(py::module_& m) {
  using runtime::TmaMaps;
  py::class_<TmaMaps, std::shared_ptr<TmaMaps>>(
      m, "TmaMaps", "The tensor maps of one generated kernel's TMA copies (runtime/tma_maps.h).")
      .def("__len__", &TmaMaps::size)
      .def(
          "spec",
          [](const TmaMaps& maps, size_t k) {
            TILUS_CHECK(k < maps.size(), "IndexError", "tensor map ", k, " of ", maps.size());
            const TmaMapSpec& s = maps.spec(k);
            py::dict d;
            d["view"] = s.view_name;
            d["pointer_param"] = s.pointer_param;
            d["dtype"] = s.dtype;
            d["box"] = s.box;
            d["swizzle_bytes"] = s.swizzle_bytes;
            d["where"] = s.where;
            return d;
          },
          py::arg("k"), "Map k as the code generator described it (outermost dimension first).")
      .def(
          "params",
          [](const TmaMaps& maps, py::list args) {
            std::vector<HostArg> host = to_host_args(maps.program(), args);
            py::list out;
            for (size_t k = 0; k < maps.size(); ++k) out.append(encode_params_dict(maps.params(k, host)));
            return out;
          },
          py::arg("args"),
          "cuTensorMapEncodeTiled's arguments of every map for these runtime arguments "
          "(innermost dimension first); a ValueError naming the parameter when TMA cannot take them.")
      .def(
          "encode",
          [](TmaMaps& maps, py::list args) {
            std::vector<HostArg> host = to_host_args(maps.program(), args);
            std::vector<runtime::TmaBlob> blobs;
            maps.encode(host, blobs);
            py::list out;
            for (auto& b : blobs) out.append(py::bytes(reinterpret_cast<const char*>(b.data()), b.size()));
            return out;
          },
          py::arg("args"),
          "The 128-byte CUtensorMap of every map for these runtime arguments (cached while they repeat).")
      .def_property_readonly("encodings", &TmaMaps::encodings, "cuTensorMapEncodeTiled calls so far.")
      .def(
          "use_fake_encoder",
          [](TmaMaps& maps) {
            // Writes the parameters themselves (address, dims, strides, box, swizzle) into
            // the blob: tests see what would have been encoded without a GPU.
            maps.set_encoder([](void* out, const runtime::TmaEncodeParams& p) {
              unsigned char* b = static_cast<unsigned char*>(out);
              std::memset(b, 0, 128);
              std::memcpy(b, &p.address, 8);
              std::memcpy(b + 8, p.dims, 40);
              std::memcpy(b + 48, p.strides, 32);
              std::memcpy(b + 80, p.box, 20);
              std::memcpy(b + 100, &p.swizzle, 4);
              std::memcpy(b + 104, &p.data_type, 4);
              return 0;
            });
          },
          "Tests without a GPU: encode by copying the parameters (address, dims, strides at "
          "offsets 0/8/48, box at 80, swizzle at 100, data type at 104) instead of calling the driver.");
}

}  // namespace

const char* const kCodegenChoiceNames =
    "wgmma, unroll_budget, bounds_check, copy_tma, ptxas_optimize, omit, hang_check_ns, fold_scales, "
    "unaligned_params";

CodegenOptions codegen_options_from(const std::string& arch, bool pointers_aligned, const py::kwargs& choices) {
  bool wgmma = true, bounds_check = false, copy_tma = true, ptxas_optimize = true, fold_scales = true;
  int64_t unroll_budget = 64, hang_check_ns = 0;
  std::string omit;
  std::vector<int> unaligned_params;
  for (const auto& [key, value] : choices) {
    const std::string name = py::cast<std::string>(key);
    if (name == "wgmma") wgmma = py::cast<bool>(value);
    else if (name == "unroll_budget") unroll_budget = py::cast<int64_t>(value);
    else if (name == "bounds_check") bounds_check = py::cast<bool>(value);
    else if (name == "copy_tma") copy_tma = py::cast<bool>(value);
    else if (name == "ptxas_optimize") ptxas_optimize = py::cast<bool>(value);
    else if (name == "omit") omit = py::cast<std::string>(value);
    else if (name == "hang_check_ns") hang_check_ns = py::cast<int64_t>(value);
    else if (name == "fold_scales") fold_scales = py::cast<bool>(value);
    else if (name == "unaligned_params") unaligned_params = py::cast<std::vector<int>>(value);
    else throw py::type_error("unexpected keyword argument '" + name + "'; the code generator's options are " +
                              kCodegenChoiceNames);
  }
  CodegenOptions options = runtime::codegen_options_for(arch, pointers_aligned, wgmma, unroll_budget, bounds_check,
                                                        copy_tma, ptxas_optimize, omit, hang_check_ns);
  std::sort(unaligned_params.begin(), unaligned_params.end());
  unaligned_params.erase(std::unique(unaligned_params.begin(), unaligned_params.end()), unaligned_params.end());
  options.unaligned_params = std::move(unaligned_params);
  options.fold_scales = fold_scales;
  return options;
}

void init_codegen(py::module_& m) {
  bind_tma_maps(m);
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
         const py::kwargs& choices) {
        return generated_dict(generate_cuda(*program, codegen_options_from(arch, pointers_aligned, choices)),
                              program);
      },
      py::arg("program"), py::arg("pointers_aligned") = true, py::arg("arch") = "",
      (std::string("The CUDA C++ of `program` for `arch` as a dict (name, source, threads, dynamic_smem, "
                   "params, tma_maps, bounds_params, bounds_sites). Keyword arguments: the code generator's "
                   "options (") + kCodegenChoiceNames + "; python/tilus/option.py CodegenChoices): wgmma=False "
          "keeps dots on mma.sync; unroll_budget: codegen/unroll_budget.h; bounds_check: "
          "tilus.option.debug.bounds_check; copy_tma=False keeps copy_async on cp.async on sm_90a "
          "(ops/async_copy.cc); ptxas_optimize=False adds --ptxas-options=-O0 to the dict's nvrtc_options; "
          "omit ('mma' or 'loads'): tilus.option.debug.omit; hang_check_ns: tilus.option.debug.hang_check; "
          "unaligned_params (parameter indices): a partly aligned build, CodegenOptions::unaligned_params.")
          .c_str());
  m.def(
      "build_kernel",
      [](const std::shared_ptr<Program>& program, const std::string& arch, bool pointers_aligned,
         const py::kwargs& choices) {
        CodegenOptions options = codegen_options_from(arch, pointers_aligned, choices);
        runtime::KernelBuild build;
        {
          py::gil_scoped_release release;
          build = runtime::build_kernel(*program, options, arch, runtime::global_compile_cache());
        }
        py::dict out = generated_dict(build.generated, program);
        out["cubin"] = py::bytes(build.cubin);
        out["cache_key"] = build.cache_key;
        return out;
      },
      py::arg("program"), py::arg("arch"), py::arg("pointers_aligned") = true,
      "Generate and compile one program through the process-wide compile cache, exactly as "
      "autotune.build_all does: generate_cuda's dict plus cubin (bytes) and cache_key. Keyword "
      "arguments: the code generator's options, as for generate_cuda.");
}

}  // namespace tilus::bindings
