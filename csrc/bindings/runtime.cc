// tilus._C.runtime: NVRTC, the compile cache, loaded kernels, device facts, workspaces.
// Thin translation only; the logic lives in csrc/runtime. Errors arrive in Python as
// RuntimeError subclasses: CudaError, NvrtcNotFoundError, CompileError.
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>

#include "bindings/bindings.h"
#include "codegen/device_headers.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "runtime/kernel_args.h"
#include "runtime/nvrtc.h"
#include "runtime/workspace.h"

namespace tilus::bindings {
namespace {

namespace py = pybind11;
using runtime::CompileCache;
using runtime::LaunchDims;
using runtime::LoadedKernel;
using runtime::ParamKind;
using HeaderList = nvrtc::HeaderList;

// `None` means the tilus device headers, which generated code includes as "tilus/...".
HeaderList headers_or_default(const std::optional<HeaderList>& headers) {
  return headers ? *headers : embedded_device_headers();
}

runtime::CompileRequest make_request(std::string source, std::string name, std::string arch,
                                     std::vector<std::string> options,
                                     const std::optional<HeaderList>& headers) {
  return {std::move(source), std::move(name), std::move(arch), std::move(options),
          headers_or_default(headers)};
}

py::dict device_info_dict(const runtime::DeviceInfo& info) {
  py::dict d;
  d["ordinal"] = info.ordinal;
  d["name"] = info.name;
  d["cc_major"] = info.cc_major;
  d["cc_minor"] = info.cc_minor;
  d["compute_capability"] = py::make_tuple(info.cc_major, info.cc_minor);
  d["arch"] = runtime::arch_string(info.cc_major, info.cc_minor);
  d["sm_count"] = info.sm_count;
  d["smem_per_block"] = info.smem_per_block;
  d["smem_per_block_optin"] = info.smem_per_block_optin;
  d["smem_per_sm"] = info.smem_per_sm;
  d["max_threads_per_block"] = info.max_threads_per_block;
  d["l2_cache_bytes"] = info.l2_cache_bytes;
  d["max_grid_dim"] = py::make_tuple(info.max_grid_dim[0], info.max_grid_dim[1],
                                     info.max_grid_dim[2]);
  return d;
}

py::dict stats_dict(const runtime::CompileCacheStats& stats) {
  py::dict d;
  d["memory_hits"] = stats.memory_hits;
  d["disk_hits"] = stats.disk_hits;
  d["compiles"] = stats.compiles;
  d["inflight_waits"] = stats.inflight_waits;
  d["cross_process_waits"] = stats.cross_process_waits;
  d["corrupt_entries"] = stats.corrupt_entries;
  d["disk_write_failures"] = stats.disk_write_failures;
  return d;
}

// grid: an int, or a sequence of 1 to 3 ints (missing dimensions are 1).
void read_grid(py::handle grid, LaunchDims* dims) {
  if (PyLong_Check(grid.ptr())) {
    dims->grid[0] = grid.cast<int64_t>();
    dims->grid[1] = dims->grid[2] = 1;
    return;
  }
  auto sequence = py::reinterpret_borrow<py::sequence>(grid);
  size_t n = sequence.size();
  if (n < 1 || n > 3) throw py::value_error("grid must have 1 to 3 dimensions");
  for (size_t i = 0; i < 3; ++i) dims->grid[i] = i < n ? sequence[i].cast<int64_t>() : 1;
}

LaunchDims make_dims(py::handle grid, int64_t threads, int64_t smem) {
  LaunchDims dims;
  read_grid(grid, &dims);
  dims.block_threads = threads;
  dims.dynamic_smem_bytes = smem;
  return dims;
}

// One (kind, value) argument of LoadedKernel.launch, appended to `args`: a kind name
// of runtime/kernel_args.h and an int, a float, a pointer (an int or anything with
// data_ptr(), a torch tensor) or, for "opaque", bytes.
void add_argument(runtime::KernelArgs& args, const std::string& kind_name, py::handle value) {
  ParamKind kind;
  try {
    kind = runtime::param_kind_from_name(kind_name);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
  const size_t index = args.size();
  if (kind == ParamKind::Opaque) {
    std::string blob = value.cast<py::bytes>();
    args.add_opaque(blob.data(), blob.size());
    return;
  }
  py::object number = py::reinterpret_borrow<py::object>(value);
  if (kind == ParamKind::Pointer && py::hasattr(value, "data_ptr") && !PyLong_Check(value.ptr())) {
    number = value.attr("data_ptr")();
  }
  uint64_t bits = 0;
  bool fits;
  if (kind == ParamKind::F32 || kind == ParamKind::F64 || kind == ParamKind::F16 ||
      kind == ParamKind::BF16) {
    fits = runtime::encode_float(kind, number.cast<double>(), bits);
  } else if (!PyLong_Check(number.ptr()) && !PyBool_Check(number.ptr()) &&
             !py::hasattr(number, "__index__")) {
    throw py::type_error("kernel argument " + std::to_string(index) + " (" + kind_name +
                         ") must be an integer, got " +
                         std::string(py::str(py::type::of(number).attr("__name__"))));
  } else {
    py::int_ integer(number);
    if (integer < py::int_(0)) {
      fits = runtime::encode_int(kind, integer.cast<int64_t>(), bits);
    } else {
      fits = integer <= py::int_(UINT64_MAX) &&
             runtime::encode_uint(kind, integer.cast<uint64_t>(), bits);
    }
  }
  if (!fits) {
    throw py::value_error("kernel argument " + std::to_string(index) + " = " +
                          std::string(py::repr(number)) + " does not fit in " + kind_name);
  }
  args.add(kind, bits);
}

void bind_nvrtc(py::module_& m) {
  m.def("set_nvrtc_search_dirs", &nvrtc::set_nvrtc_search_dirs, py::arg("dirs"),
        "Directories searched for libnvrtc after $TILUS_NVRTC_PATH (before the first load).");
  m.def("nvrtc_available", &nvrtc::nvrtc_available);
  m.def("nvrtc_version", &nvrtc::nvrtc_version, "(major, minor) of the loaded NVRTC.");
  m.def("nvrtc_library_path", &nvrtc::nvrtc_library_path);
  m.def(
      "compile_to_cubin",
      [](std::string source, std::string name, std::string arch, std::vector<std::string> options,
         std::optional<HeaderList> headers) {
        HeaderList all_headers = headers_or_default(headers);
        std::string cubin;
        {
          py::gil_scoped_release release;
          cubin = nvrtc::compile_to_cubin(source, name, arch, options, all_headers);
        }
        return py::bytes(cubin);
      },
      py::arg("source"), py::arg("name"), py::arg("arch"),
      py::arg("options") = std::vector<std::string>{}, py::arg("headers") = py::none(),
      "Compile CUDA C++ to a cubin (bytes). headers=None uses the tilus device headers.");
  m.def(
      "compile_report",
      [](std::string source, std::string name, std::string arch, std::vector<std::string> options,
         std::optional<HeaderList> headers) {
        HeaderList all_headers = headers_or_default(headers);
        nvrtc::CompileResult r;
        {
          py::gil_scoped_release release;
          r = nvrtc::compile(source, name, arch, options, all_headers);
        }
        py::dict out;
        out["cubin"] = py::bytes(r.cubin);
        out["log"] = r.log;
        out["spill_bytes"] = r.spill_bytes;
        out["registers"] = r.registers;
        out["min_blocks_retry"] = r.min_blocks_retry;
        return out;
      },
      py::arg("source"), py::arg("name"), py::arg("arch"),
      py::arg("options") = std::vector<std::string>{}, py::arg("headers") = py::none(),
      "compile_to_cubin with ptxas's statistics: a dict of cubin, log, spill_bytes, registers "
      "(-1 when not reported) and min_blocks_retry (the spill policy's second compile won).");
}

void bind_compile_cache(py::module_& m) {
  py::class_<CompileCache, std::shared_ptr<CompileCache>>(m, "CompileCache")
      .def(py::init([](std::string cache_dir) { return std::make_shared<CompileCache>(cache_dir); }),
           py::arg("cache_dir"), "A private cache (\"\" = memory only); most code uses compile_cache().")
      .def(
          "get_or_compile",
          [](CompileCache& cache, std::string source, std::string name, std::string arch,
             std::vector<std::string> options, std::optional<HeaderList> headers) {
            runtime::CompileRequest request = make_request(
                std::move(source), std::move(name), std::move(arch), std::move(options), headers);
            std::string cubin;
            {
              py::gil_scoped_release release;
              cubin = cache.get_or_compile(request);
            }
            return py::bytes(cubin);
          },
          py::arg("source"), py::arg("name"), py::arg("arch"),
          py::arg("options") = std::vector<std::string>{}, py::arg("headers") = py::none())
      .def(
          "key",
          [](CompileCache& cache, std::string source, std::string name, std::string arch,
             std::vector<std::string> options, std::optional<HeaderList> headers) {
            return cache.key_of(make_request(std::move(source), std::move(name), std::move(arch),
                                             std::move(options), headers));
          },
          py::arg("source"), py::arg("name"), py::arg("arch"),
          py::arg("options") = std::vector<std::string>{}, py::arg("headers") = py::none())
      .def("entry_path", &CompileCache::entry_path, py::arg("key"))
      .def("stats", [](const CompileCache& cache) { return stats_dict(cache.stats()); })
      .def("reset_stats", &CompileCache::reset_stats)
      .def("clear_memory", &CompileCache::clear_memory)
      .def("cache_dir", &CompileCache::cache_dir)
      .def(
          "set_cache_dir",
          [](CompileCache& cache, std::optional<std::string> dir) {
            cache.set_cache_dir(dir ? *dir : runtime::default_cache_dir());
          },
          py::arg("path"),
          "Use `path` for the disk store (\"\" = memory only; None = $TILUS_CACHE_DIR, "
          "~/.cache/tilus when it is unset, read now).")
      .def("warnings", &CompileCache::warnings)
      .def("take_warnings", &CompileCache::take_warnings);

  m.def(
      "compile_cache",
      [] {
        // One holder for the never-destroyed singleton, so Python never deletes it.
        static auto* holder =
            new std::shared_ptr<CompileCache>(&runtime::global_compile_cache(), [](auto*) {});
        return *holder;
      },
      "The process-wide compile cache.");
  m.def("default_cache_dir", &runtime::default_cache_dir);
}

void bind_kernel(py::module_& m) {
  py::class_<LoadedKernel>(m, "LoadedKernel")
      .def(py::init([](py::bytes cubin, std::string name) {
             std::string image = cubin;
             py::gil_scoped_release release;
             return std::make_unique<LoadedKernel>(std::move(image), std::move(name));
           }),
           py::arg("cubin"), py::arg("name"))
      .def(
          "launch",
          [](LoadedKernel& kernel, py::handle grid, int64_t threads, int64_t smem,
             uintptr_t stream, py::sequence args) {
            LaunchDims dims = make_dims(grid, threads, smem);
            runtime::KernelArgs packed;
            for (py::handle arg : args) {
              auto pair = py::reinterpret_borrow<py::sequence>(arg);
              if (pair.size() != 2) throw py::value_error("each argument must be (kind, value)");
              add_argument(packed, pair[0].cast<std::string>(), pair[1]);
            }
            py::gil_scoped_release release;
            kernel.launch(dims, stream, packed.pointers());
          },
          py::arg("grid"), py::arg("threads"), py::arg("smem"), py::arg("stream"), py::arg("args"),
          "args: (kind, value) per kernel parameter; kinds as param_kind names them "
          "(runtime/kernel_args.h). A value that does not fit its kind is a ValueError.")
      .def(
          "launch_packed",
          [](LoadedKernel& kernel, py::handle grid, int64_t threads, int64_t smem,
             uintptr_t stream, py::bytes blob, py::object sizes) {
            LaunchDims dims = make_dims(grid, threads, smem);
            char* data = nullptr;
            Py_ssize_t length = 0;
            if (PyBytes_AsStringAndSize(blob.ptr(), &data, &length) != 0) {
              throw py::error_already_set();
            }
            if (sizes.is_none()) {
              if (length % 8 != 0) throw py::value_error("packed arguments must be 8-byte slots");
              py::gil_scoped_release release;
              kernel.launch_packed(dims, stream, data, size_t(length), nullptr, size_t(length) / 8);
              return;
            }
            std::vector<uint32_t> byte_sizes = sizes.cast<std::vector<uint32_t>>();
            py::gil_scoped_release release;
            kernel.launch_packed(dims, stream, data, size_t(length), byte_sizes.data(),
                                 byte_sizes.size());
          },
          py::arg("grid"), py::arg("threads"), py::arg("smem"), py::arg("stream"), py::arg("blob"),
          py::arg("sizes") = py::none(),
          "blob: one 8-byte little-endian slot per argument (sizes=None), or values back to "
          "back with the given byte sizes.")
      .def_property_readonly("name", &LoadedKernel::name)
      .def_property_readonly("num_regs", &LoadedKernel::num_regs)
      .def_property_readonly("static_smem", &LoadedKernel::static_smem_bytes)
      .def_property_readonly("local_bytes", &LoadedKernel::local_bytes)
      .def_property_readonly("const_bytes", &LoadedKernel::const_bytes)
      .def_property_readonly("max_threads", &LoadedKernel::max_threads_per_block);
}

void bind_param_kinds(py::module_& m) {
  m.def(
      "param_kind", [](DataType dtype) { return runtime::param_kind_name(runtime::param_kind_of(dtype)); },
      py::arg("dtype"), "The kind a kernel parameter of `dtype` is passed as: 'i32', 'f16', 'ptr', ...");
}

void bind_device(py::module_& m) {
  m.def("cuda_available", &cuda::cuda_available, "True when libcuda loads and sees a GPU.");
  m.def("driver_version", &cuda::driver_version);
  m.def("current_device", &cuda::current_device);
  m.def("set_device", [](int ordinal) { cuda::ensure_context_for_device(ordinal); },
        py::arg("ordinal"), "Make the primary context of `ordinal` current on this thread.");
  m.def("device_count", &cuda::device_count, "Visible CUDA devices (0 without a driver).");
  // `with _C.runtime.DeviceScope(1): ...` launches on device 1 and leaves the current
  // device as it was (cuda_driver.h DeviceScope).
  struct PyDeviceScope {
    int ordinal;
    std::unique_ptr<cuda::DeviceScope> scope;
  };
  py::class_<PyDeviceScope>(m, "DeviceScope")
      .def(py::init([](int ordinal) { return PyDeviceScope{ordinal, nullptr}; }), py::arg("ordinal"))
      .def("__enter__", [](PyDeviceScope& s) {
        s.scope = std::make_unique<cuda::DeviceScope>(s.ordinal);
        return s.scope->switched();
      })
      .def("__exit__", [](PyDeviceScope& s, py::object, py::object, py::object) {
        s.scope.reset();
        return false;
      });
  m.def("pointer_device", [](uintptr_t pointer) { return cuda::pointer_device(pointer); },
        py::arg("pointer"));
  m.def("bytes_to_allocation_end", [](uintptr_t pointer) { return cuda::bytes_to_allocation_end(pointer); },
        py::arg("pointer"));
  m.def("current_device_info", [] { return device_info_dict(runtime::current_device_info()); });
  m.def("device_info", [](int ordinal) { return device_info_dict(runtime::device_info(ordinal)); },
        py::arg("ordinal"));
  m.def(
      "arch_string",
      [](std::optional<std::pair<int, int>> capability) {
        if (capability) return runtime::arch_string(capability->first, capability->second);
        return runtime::arch_string();
      },
      py::arg("capability") = py::none(),
      "NVRTC arch for (major, minor), or for the current device: 'sm_90a', 'sm_80', ...");
  m.def(
      "synchronize",
      [](uintptr_t stream) {
        cuda::ensure_context();
        py::gil_scoped_release release;
        TILUS_CU_CHECK(cuStreamSynchronize(reinterpret_cast<cuda::CUstream>(stream)));
      },
      py::arg("stream") = 0);
  // The bounds-check record (python/tilus/runtime/bounds.py): read after the launch's
  // stream is synchronised, cleared for the next launch.
  m.def(
      "read_device",
      [](uintptr_t pointer, size_t nbytes) {
        cuda::ensure_context();
        std::string out(nbytes, '\0');
        {
          py::gil_scoped_release release;
          TILUS_CU_CHECK(cuMemcpyDtoH(out.data(), static_cast<cuda::CUdeviceptr>(pointer), nbytes));
        }
        return py::bytes(out);
      },
      py::arg("pointer"), py::arg("nbytes"),
      "Copies nbytes of device memory at `pointer` to the host (synchronously).");
  m.def(
      "zero_device",
      [](uintptr_t pointer, size_t nbytes, uintptr_t stream) {
        cuda::ensure_context();
        TILUS_CU_CHECK(cuMemsetD8Async(static_cast<cuda::CUdeviceptr>(pointer), 0, nbytes,
                                       reinterpret_cast<cuda::CUstream>(stream)));
      },
      py::arg("pointer"), py::arg("nbytes"), py::arg("stream") = 0,
      "Zeroes nbytes of device memory at `pointer`, in order on `stream`.");
}

void bind_workspace(py::module_& m) {
  m.def(
      "get_workspace",
      [](const std::string& key, size_t nbytes, bool clean, uintptr_t stream) {
        return runtime::get_workspace(key, nbytes, clean, stream);
      },
      py::arg("key"), py::arg("nbytes"), py::arg("clean"), py::arg("stream") = 0,
      "Device pointer (int) reused across launches; clean ones are zeroed once on allocation.");
  m.def("workspace_bytes", &runtime::workspace_bytes);
  m.def("release_workspaces", &runtime::release_workspaces);
}

}  // namespace

void init_runtime(pybind11::module_& m) {
  py::module_ sub = m.def_submodule("runtime", "CUDA runtime: NVRTC, compile cache, launches");
  py::register_exception<cuda::CudaError>(sub, "CudaError", PyExc_RuntimeError);
  py::register_exception<nvrtc::NvrtcLoadError>(sub, "NvrtcNotFoundError", PyExc_RuntimeError);
  py::register_exception<nvrtc::CompileError>(sub, "CompileError", PyExc_RuntimeError);
  py::register_exception<runtime::LaunchRefused>(sub, "LaunchRefusedError", PyExc_RuntimeError);
  bind_nvrtc(sub);
  bind_compile_cache(sub);
  bind_kernel(sub);
  bind_param_kinds(sub);
  bind_device(sub);
  bind_workspace(sub);
}

}  // namespace tilus::bindings
