// The fast launch path: a call whose arguments are all as expected (CUDA torch tensors
// of the right dtype, contiguous, all on one device; scalars of the right Python type)
// is checked and launched here without going back to Python. Anything unusual returns
// false and the Python slow path handles it, raising the proper error, so this file
// never has to phrase one.
//
// Any device: the launch goes to the tensors' device, whichever is current, on that
// device's current torch stream, with that device's loaded kernel (one per device,
// registered by the slow path after its first launch there); a DeviceScope makes the
// device's context current for the launch only, so the caller's current device stays.
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "bindings/bindings.h"
#include "bindings/tensor_query.h"
#include "transforms/host_launch_shape.h"
#include "transforms/vector_extents.h"
#include "transforms/view_extents.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel.h"
#include "runtime/kernel_args.h"
#include "runtime/tma_maps.h"
#include "runtime/workspace.h"

namespace py = pybind11;

namespace tilus::bindings {

namespace {

// tilus.option.check_view_bounds: when set, a launch whose global views reach past the
// tensors passed in is refused before it runs. Off, the fast path reads only this flag.
bool check_view_bounds = false;
// tilus.option.interpret: every call runs in the CPU interpreter, GPU tensors included
// (python/tilus/host_run.py copies them); the native path steps aside for it.
bool interpret_everything = false;
// tilus.option.debug.bounds_check: launches go through the Python launcher, which builds
// the checked kernel, passes the tensor sizes and reads the error record afterwards.
bool bounds_check = false;

using runtime::ParamKind;

ParamKind kind_from(const std::string& s) {
  try {
    return runtime::param_kind_from_name(s);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
}

struct RuntimeParam {
  int arg_index;
  ParamKind kind;
  py::object dtype;  // pointers: the expected torch dtype (None: void_p, any dtype);
                     // boolean scalars: Python bool
  int64_t lo = 0, hi = 0;  // range of integer scalars
  // The aligned build assumes this integer is a multiple of kVectorExtentMultiple
  // (transforms/vector_extents.h).
  bool vector_extent = false;
};

struct JitParam {
  int arg_index;
  PyTypeObject* type;  // int, float or bool: the exact type the slow path accepted
};

class FastLauncher {
 public:
  FastLauncher(std::shared_ptr<Program> program, py::object tensor_type, py::object stream_fn,
               int device, const std::vector<py::tuple>& params, const std::vector<py::tuple>& jit,
               std::vector<std::string> workspace_keys, std::vector<bool> workspace_clean, int threads)
      : program_(std::move(program)), evaluator_(*program_), views_(*program_, evaluator_),
        queries_(reinterpret_cast<PyTypeObject*>(tensor_type.ptr())), stream_fn_(std::move(stream_fn)),
        workspace_keys_(std::move(workspace_keys)),
        workspace_clean_(std::move(workspace_clean)), threads_(threads) {
    tensor_type_ = reinterpret_cast<PyTypeObject*>(tensor_type.ptr());
    tensor_type_ref_ = tensor_type;
    for (auto& p : params) {
      RuntimeParam rp{p[0].cast<int>(), kind_from(p[1].cast<std::string>()), p[2]};
      rp.lo = p[3].cast<int64_t>();
      rp.hi = p[4].cast<int64_t>();
      params_.push_back(rp);
    }
    for (int k : vector_extent_params(*program_)) params_.at(k).vector_extent = true;
    for (auto& j : jit) jit_.push_back({j[0].cast<int>(), reinterpret_cast<PyTypeObject*>(j[1].ptr())});
    (void)device;  // the device of the first launch; each call now reads its tensors'
    for (const RuntimeParam& p : params_) {
      if (p.kind == ParamKind::Opaque) throw py::value_error("FastLauncher: an opaque parameter");
      args_.add(p.kind);
    }
    for (size_t w = 0; w < workspace_keys_.size(); ++w) args_.add(ParamKind::Pointer);
    host_args_.resize(params_.size());
    param_bytes_.assign(params_.size(), -1);
  }

  // The kernel of one variant on one device (the LoadedKernel has that device's module),
  // and its TMA tensor maps (None: it has none), encoded before each launch. `unaligned`:
  // the variant's parameters that the call need not meet the aligned build's assumption
  // for, one bit each (0: the aligned build; runtime/launcher.py alignment_of).
  void set_kernel(uint64_t unaligned, py::object kernel, int64_t smem, int device, py::object tma) {
    if (device < 0 || device >= kMaxDevices) throw py::value_error("FastLauncher: bad device ordinal");
    if (size_t(device) >= devices_.size()) devices_.resize(device + 1);
    std::vector<std::pair<uint64_t, Variant>>& list = devices_[device];
    auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == unaligned; });
    if (it == list.end()) it = list.insert(list.end(), {unaligned, Variant{}});
    Variant& v = it->second;
    v.owner = kernel;
    v.kernel = kernel.cast<runtime::LoadedKernel*>();
    v.smem = smem;
    v.tma = tma.is_none() ? nullptr : tma.cast<std::shared_ptr<runtime::TmaMaps>>();
    // The maps follow the workspaces; a variant with fewer maps leaves the last slots
    // unread (cuLaunchKernel reads as many parameters as the kernel has).
    const size_t maps = v.tma ? v.tma->size() : 0;
    while (tma_slots_ < maps) {
      args_.add_opaque(nullptr, 0);
      ++tma_slots_;
    }
  }

  bool call(py::args args) {
    uint64_t unaligned = 0;
    int device = -1;
    if (!read_args(args.ptr(), unaligned, device)) return false;
    // A view that does not fit goes to the slow path, which refuses it by name.
    if (interpret_everything || bounds_check) return false;
    if (check_view_bounds && views_.size() && !views_fit(args.ptr())) return false;
    if (views_.size() && !views_.offsets_fit(host_args_)) return false;  // refused by name there
    Variant* v = variant(device, unaligned);
    if (!v) return false;  // the Python side builds this variant for this device first
    LaunchShape shape;
    if (!evaluator_.launch_shape(host_args_, shape)) return false;
    if (!encode_maps(*v)) return false;  // the slow path names what TMA cannot take
    uintptr_t stream = current_stream(device);
    if (stream == UINTPTR_MAX) return false;
    cuda::DeviceScope scope(device);
    launch(*v, shape, stream);
    return true;
  }

  // Whether all four tensor queries call torch's C functions directly.
  bool direct_tensor_queries() const {
    const Queries& q = queries_;
    return q.dtype.direct() && q.is_contiguous.direct() && q.get_device.direct() && q.data_ptr.direct();
  }

  // Host nanoseconds per call spent in each phase of `call`, each phase repeated
  // `iterations` times on its own (bench_launch.py prints them). The launch phase
  // launches the kernel `iterations` times.
  py::dict time_phases(py::tuple args, int iterations) {
    using clock = std::chrono::steady_clock;
    py::dict out;
    auto timed = [&](const char* name, auto&& phase) {
      auto start = clock::now();
      for (int i = 0; i < iterations; ++i) {
        if (!phase()) throw py::value_error(std::string("phase '") + name + "' refused these arguments");
      }
      out[name] = std::chrono::duration<double, std::nano>(clock::now() - start).count() / iterations;
    };
    uint64_t unaligned = 0;
    int device = -1;
    timed("arguments", [&] { unaligned = 0; return read_args(args.ptr(), unaligned, device); });
    Variant* v = variant(device, unaligned);
    if (!v) throw py::value_error("call the kernel once before timing its launches");
    if (check_view_bounds && views_.size()) timed("view_bounds", [&] { return views_fit(args.ptr()); });
    timed("device", [&] { cuda::DeviceScope scope(device); return true; });
    LaunchShape shape;
    timed("launch_shape", [&] { return evaluator_.launch_shape(host_args_, shape); });
    if (v->tma) timed("tma_maps", [&] { return encode_maps(*v); });
    uintptr_t stream = 0;
    timed("stream", [&] { stream = current_stream(device); return stream != UINTPTR_MAX; });
    cuda::DeviceScope scope(device);
    timed("launch", [&] { launch(*v, shape, stream); return true; });
    return out;
  }

 private:
  struct Variant {
    py::object owner;
    runtime::LoadedKernel* kernel = nullptr;
    int64_t smem = 0;
    std::shared_ptr<runtime::TmaMaps> tma;
  };

  // The variant's tensor maps for this call's arguments (read_args filled host_args_)
  // into their parameter slots; false when TMA cannot take the arguments.
  bool encode_maps(Variant& v) {
    if (!v.tma) return true;
    try {
      v.tma->encode(host_args_, tma_blobs_);
    } catch (const std::exception&) {
      return false;
    }
    const size_t first = params_.size() + workspace_keys_.size();
    for (size_t k = 0; k < tma_blobs_.size(); ++k)
      args_.set_opaque(first + k, tma_blobs_[k].data(), tma_blobs_[k].size());
    return true;
  }
  static constexpr int kMaxDevices = 1024;

  static bool mark_unaligned(uint64_t& unaligned, size_t param) {
    if (param >= 64) return false;  // the slow path keys its variants without a limit
    unaligned |= uint64_t(1) << param;
    return true;
  }

  // A device's variants, keyed by their unaligned parameters (a call meets one or two).
  Variant* variant(int device, uint64_t unaligned) {
    if (device < 0 || size_t(device) >= devices_.size()) return nullptr;
    for (auto& [key, v] : devices_[device])
      if (key == unaligned) return v.kernel ? &v : nullptr;
    return nullptr;
  }

  // Reads the runtime arguments into args_ / host_args_; false if any is not what the
  // plan expects. `unaligned` gets bit i for parameter i when it is a tensor address not
  // 16-byte aligned or a vector extent not a multiple of 16 (past 64 parameters: false);
  // `device` is the tensors' device (all must share it; the slow path names the
  // parameters otherwise), or the current device without tensors.
  bool read_args(PyObject* tuple, uint64_t& unaligned, int& device) {
    device = -1;
    const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    for (auto& j : jit_)
      if (j.arg_index >= n || Py_TYPE(PyTuple_GET_ITEM(tuple, j.arg_index)) != j.type) return false;
    for (size_t i = 0; i < params_.size(); ++i) {
      const RuntimeParam& p = params_[i];
      if (p.arg_index >= n) return false;
      PyObject* obj = PyTuple_GET_ITEM(tuple, p.arg_index);
      HostArg& h = host_args_[i];
      uint64_t bits = 0;
      if (p.kind == ParamKind::Pointer) {
        uintptr_t address;
        if (!tensor_address(obj, p.dtype.ptr(), address, device)) return false;
        if (address % 16 && !mark_unaligned(unaligned, i)) return false;
        h.ptr = address;
        bits = static_cast<uint64_t>(address);
      } else if (p.kind == ParamKind::F32 || p.kind == ParamKind::F64 || p.kind == ParamKind::F16 ||
                 p.kind == ParamKind::BF16) {
        if (!PyFloat_CheckExact(obj) && !PyLong_CheckExact(obj)) return false;
        double v = PyFloat_AsDouble(obj);
        if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
        h.f = v;
        // a value that would round to infinity: the slow path says it does not fit
        if (!runtime::encode_float(p.kind, v, bits)) return false;
      } else {
        // a boolean parameter (dtype slot = Python's bool) takes True/False as the slow
        // path does; numpy ints and bools for integer parameters take the slow path
        const bool boolean = p.dtype.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type);
        if (!PyLong_CheckExact(obj) && !(boolean && PyBool_Check(obj))) return false;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred()) || v < p.lo || v > p.hi) {
          PyErr_Clear();
          return false;
        }
        h.i = v;
        if (p.vector_extent && v % kVectorExtentMultiple && !mark_unaligned(unaligned, i)) return false;
        if (!runtime::encode_int(p.kind, v, bits)) return false;
      }
      args_.set(i, bits);
    }
    if (device < 0) {  // no tensor parameter: the current device, as the slow path does
      try {
        device = cuda::current_device();
      } catch (const std::exception&) {
        return false;
      }
    }
    return true;
  }

  // Whether every view fits its tensor; read_args accepted these arguments.
  bool views_fit(PyObject* tuple) {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].kind != ParamKind::Pointer) continue;
      PyObject* n = queries_.nbytes(PyTuple_GET_ITEM(tuple, params_[i].arg_index));
      if (!n) { PyErr_Clear(); return false; }
      param_bytes_[i] = PyLong_AsLongLong(n);
      Py_DECREF(n);
      if (PyErr_Occurred()) { PyErr_Clear(); return false; }
    }
    return views_.fit(host_args_, param_bytes_);
  }

  void launch(Variant& v, const LaunchShape& shape, uintptr_t stream) {
    for (size_t w = 0; w < workspace_keys_.size(); ++w) {
      // one allocation per (kernel, index, size), as the Python launcher keys it
      const std::string key = workspace_keys_[w] + ":" + std::to_string(shape.workspace_bytes[w]);
      args_.set(params_.size() + w,
                runtime::get_workspace(key, static_cast<size_t>(shape.workspace_bytes[w]),
                                       workspace_clean_[w], stream));
    }
    runtime::LaunchDims dims;
    for (int d = 0; d < 3; ++d) dims.grid[d] = shape.grid[d];
    dims.block_threads = threads_;
    dims.dynamic_smem_bytes = v.smem;
    v.kernel->launch(dims, stream, args_.pointers());
  }

  // A CUDA torch tensor of `dtype`, contiguous, on `device` (the first tensor sets it):
  // its address. Four torch queries, each a direct call of torch's C function for plain
  // torch.Tensor objects (tensor_query.h).
  bool tensor_address(PyObject* obj, PyObject* dtype, uintptr_t& address, int& device) {
    if (!PyObject_TypeCheck(obj, tensor_type_)) return false;
    const Queries& q = queries_;
    PyObject* d = q.dtype(obj);
    if (!d) { PyErr_Clear(); return false; }
    bool ok = dtype == Py_None || d == dtype;  // void_p takes any dtype
    Py_DECREF(d);
    ok = ok && query_is(q.is_contiguous, obj, Py_True);
    if (!ok) return false;
    PyObject* where = q.get_device(obj);
    if (!where) { PyErr_Clear(); return false; }
    long index = PyLong_AsLong(where);
    Py_DECREF(where);
    if (index < 0 || index >= kMaxDevices) { PyErr_Clear(); return false; }  // -1: a CPU tensor
    if (device < 0) device = int(index);
    if (index != device) return false;  // two devices: refused by the slow path
    PyObject* ptr = q.data_ptr(obj);
    if (!ptr) { PyErr_Clear(); return false; }
    address = static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(ptr));
    Py_DECREF(ptr);
    if (PyErr_Occurred()) { PyErr_Clear(); return false; }
    return true;
  }

  static bool query_is(const TensorQuery& query, PyObject* obj, PyObject* expected) {
    PyObject* r = query(obj);
    if (!r) { PyErr_Clear(); return false; }
    bool same = r == expected;
    Py_DECREF(r);
    return same;
  }

  // torch's current stream of `device` (under CUDA graph capture: the capturing one).
  uintptr_t current_stream(int device) {
    if (size_t(device) >= device_objs_.size()) {
      for (size_t d = device_objs_.size(); d <= size_t(device); ++d) device_objs_.push_back(py::int_(d));
    }
    PyObject* r = PyObject_CallOneArg(stream_fn_.ptr(), device_objs_[device].ptr());
    if (!r) { PyErr_Clear(); return UINTPTR_MAX; }
    uintptr_t s = PyLong_AsUnsignedLongLong(r);
    Py_DECREF(r);
    if (PyErr_Occurred()) { PyErr_Clear(); return UINTPTR_MAX; }
    return s;
  }

  std::shared_ptr<Program> program_;
  HostEvaluator evaluator_;
  ViewExtents views_;
  // the four queries tensor_address makes, resolved once on torch.Tensor
  struct Queries {
    explicit Queries(PyTypeObject* t)
        : dtype(t, "dtype", false), is_contiguous(t, "is_contiguous", true),
          get_device(t, "get_device", true), data_ptr(t, "data_ptr", true), nbytes(t, "nbytes", false) {}
    TensorQuery dtype, is_contiguous, get_device, data_ptr;
    TensorQuery nbytes;  // only with check_view_bounds
  } queries_;
  PyTypeObject* tensor_type_ = nullptr;
  py::object tensor_type_ref_, stream_fn_;
  std::vector<py::object> device_objs_;  // Python ints 0..n, the stream function's argument
  std::vector<RuntimeParam> params_;
  std::vector<JitParam> jit_;
  std::vector<std::string> workspace_keys_;
  std::vector<bool> workspace_clean_;
  int threads_;
  std::vector<std::vector<std::pair<uint64_t, Variant>>> devices_;  // by device ordinal
  // reused per call (the GIL serialises calls on one launcher)
  runtime::KernelArgs args_;  // the runtime parameters, the workspaces, the tensor maps
  size_t tma_slots_ = 0;
  std::vector<runtime::TmaBlob> tma_blobs_;
  std::vector<HostArg> host_args_;
  std::vector<int64_t> param_bytes_;
};

}  // namespace

bool run_fast_launcher(PyObject* launcher, PyObject* args) {
  py::detail::make_caster<FastLauncher> caster;
  if (!caster.load(launcher, /*convert=*/false)) return false;
  return py::detail::cast_op<FastLauncher&>(caster).call(py::reinterpret_borrow<py::args>(args));
}

void init_launch(py::module_& m) {
  // The launch shape as the native launcher computes it (None when it would defer to
  // the interpreter's evaluator); tests compare it with evaluate_launch_shape.
  m.def("host_launch_shape", [](const std::shared_ptr<Program>& program, const std::vector<int64_t>& ints)
                                 -> py::object {
    std::vector<HostArg> args(ints.size());
    for (size_t i = 0; i < ints.size(); ++i) args[i].i = ints[i];
    LaunchShape shape;
    if (!HostEvaluator(*program).launch_shape(args, shape)) return py::none();
    return py::make_tuple(py::make_tuple(shape.grid[0], shape.grid[1], shape.grid[2]),
                          shape.workspace_bytes);
  });
  m.def("set_check_view_bounds", [](bool on) { check_view_bounds = on; },
        "Native side of tilus.option.check_view_bounds (python/tilus/option.py).");
  m.def("check_view_bounds", [] { return check_view_bounds; });
  m.def("set_bounds_check", [](bool on) { bounds_check = on; },
        "Native side of tilus.option.debug.bounds_check (python/tilus/option.py): the native "
        "launch path steps aside while it is on.");
  m.def("bounds_check", [] { return bounds_check; });
  m.def("set_interpret_everything", [](bool on) { interpret_everything = on; },
        "Native side of tilus.option.interpret (python/tilus/option.py).");
  py::class_<FastLauncher>(m, "FastLauncher")
      .def(py::init<std::shared_ptr<Program>, py::object, py::object, int, const std::vector<py::tuple>&,
                    const std::vector<py::tuple>&, std::vector<std::string>, std::vector<bool>, int>())
      .def("set_kernel", &FastLauncher::set_kernel, py::arg("unaligned"), py::arg("kernel"), py::arg("smem"),
           py::arg("device"), py::arg("tma") = py::none())
      .def("__call__", &FastLauncher::call)
      .def("time_phases", &FastLauncher::time_phases)
      .def_property_readonly("direct_tensor_queries", &FastLauncher::direct_tensor_queries);
}

}  // namespace tilus::bindings
