// Bindings of the layout algebra (csrc/layout) as the submodule tilus._C.layout.
// python/tilus/layout.py re-exports these with docstrings and Python exception classes.
// RegisterLayout is held by std::shared_ptr<RegisterLayout>, as IRBuilder.register_tensor
// takes it.
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "ir/dtype.h"
#include "layout/block_layouts.h"
#include "layout/register_layout.h"
#include "layout/register_views.h"
#include "layout/shared_layout.h"
#include "support/error.h"

namespace py = pybind11;

namespace tilus::bindings {

namespace {

// f(4, 2) and f([4, 2]) both mean the shape [4, 2].
std::vector<int64_t> shape_of(const py::args& args) {
  if (args.size() == 1 && py::isinstance<py::sequence>(args[0]))
    return args[0].cast<std::vector<int64_t>>();
  return args.cast<std::vector<int64_t>>();
}

py::tuple tuple_of(const std::vector<int64_t>& v) { return py::tuple(py::cast(v)); }

py::dict dict_of(const BlockLayouts& b) {
  py::dict d;
  d["a"] = b.a;
  d["b"] = b.b;
  d["c"] = b.c;
  d["warps_m"] = b.warps_m;
  d["warps_n"] = b.warps_n;
  d["rep_m"] = b.rep_m;
  d["rep_n"] = b.rep_n;
  d["rep_k"] = b.rep_k;
  return d;
}

py::dict block_or_throw(const std::optional<BlockLayouts>& b, const std::string& why) {
  if (!b) throw ScriptError("ValueError", why);
  return dict_of(*b);
}

}  // namespace

void init_layout(py::module_& m) {
  py::module_ l = m.def_submodule("layout", "The layout algebra (csrc/layout).");
  using RL = RegisterLayout;

  py::class_<RL, std::shared_ptr<RL>>(l, "RegisterLayout", "How the elements of a register tile are spread over the threads of a block: (thread, local index) -> coordinate, stored as modes (csrc/layout/register_layout.h).")
      .def(py::init(&make_register_layout), py::arg("shape"), py::arg("mode_shape"),
           py::arg("spatial_modes"), py::arg("local_modes"))
      .def_property_readonly("shape", [](const RL& x) { return x.shape; }, "The tile shape the layout covers.")
      .def_property_readonly("mode_shape", [](const RL& x) { return x.mode_shape; }, "Each dimension split into modes, outer to inner, dimension 0 first.")
      .def_property_readonly("spatial_modes", [](const RL& x) { return x.spatial_modes; }, "The modes indexed by the thread id (outer to inner); -k is a replication over k thread groups.")
      .def_property_readonly("local_modes", [](const RL& x) { return x.local_modes; }, "The modes indexed by the local index (outer to inner).")
      .def_property_readonly("rank", &RL::rank, "The number of dimensions.")
      .def_property_readonly("numel", &RL::numel, "The number of elements of the tile.")
      .def_property_readonly("num_threads", &RL::num_threads, "The threads the layout spans (replications included).")
      .def_property_readonly("local_size", &RL::local_size, "The elements each thread holds.")
      .def_property_readonly("replication", &RL::replication, "How many thread groups hold the same data (1 when none).")
      .def("is_replicated", &RL::is_replicated)
      .def("mode_dims", &RL::mode_dims)
      .def("coords", [](const RL& x, int64_t t, int64_t i) { return tuple_of(x.coords(t, i)); },
           py::arg("thread"), py::arg("local"))
      .def("local_coords", [](const RL& x, int64_t i) { return tuple_of(x.local_coords(i)); })
      .def("owner", [](const RL& x, const std::vector<int64_t>& c) { return x.owner(c); },
           py::arg("coords"))
      .def("simplify", &RL::simplify)
      .def("spatial", [](const RL& x, py::args a) { return x * spatial(shape_of(a)); })
      .def("column_spatial", [](const RL& x, py::args a) { return x * column_spatial(shape_of(a)); })
      .def("local", [](const RL& x, py::args a) { return x * local(shape_of(a)); })
      .def("column_local", [](const RL& x, py::args a) { return x * column_local(shape_of(a)); })
      .def("replicate", [](const RL& x, int64_t k) { return x * replicate(k, x.rank()); })
      .def("__mul__", [](const RL& a, const RL& b) { return a * b; }, py::is_operator())
      .def("__eq__", [](const RL& a, const RL& b) { return a == b; }, py::is_operator())
      .def("__eq__", [](const RL&, const py::object&) { return false; })
      .def("__hash__", [](const RL& x) { return py::hash(py::str(x.str())); })
      .def("__str__", &RL::str)
      .def("__repr__", &RL::str);

  l.def("spatial", [](py::args a) { return spatial(shape_of(a)); });
  l.def("column_spatial", [](py::args a) { return column_spatial(shape_of(a)); });
  l.def("local", [](py::args a) { return local(shape_of(a)); });
  l.def("column_local", [](py::args a) { return column_local(shape_of(a)); });
  l.def("replicate", &replicate, py::arg("k"), py::arg("rank"));
  l.def("compose", &compose, py::arg("outer"), py::arg("inner"));
  l.def("divide", &divide, py::arg("layout"), py::arg("inner"));
  l.def("in_thread_sources", &in_thread_sources, py::arg("from"), py::arg("to"));
  // layout/register_views.h: the layouts of register shape changes (ops/reshape.cc)
  l.def("reshape_layout", &reshape_layout, py::arg("layout"), py::arg("shape"));
  l.def("permute_layout", &permute_layout, py::arg("layout"), py::arg("dims"));
  l.def("repeat_layout", &repeat_layout, py::arg("layout"), py::arg("repeats"));
  l.def("repeat_interleave_layout", &repeat_interleave_layout, py::arg("layout"), py::arg("repeats"));
  l.def("auto_global_layout", &auto_global_layout, py::arg("shape"), py::arg("num_threads"),
        py::arg("vector_elems"));

  l.def("mma_atom", [](const std::string& kind) {
    MmaAtom a = mma_atom(parse_mma_kind(kind));
    py::dict d;
    d["kind"] = kind;
    d["m"] = a.m;
    d["n"] = a.n;
    d["k"] = a.k;
    d["a"] = a.a;
    d["b"] = a.b;
    d["c"] = a.c;
    return d;
  }, py::arg("kind"));
  l.def("mma_kind_for", [](const std::string& dtype) -> py::object {
    auto k = mma_kind_for(dtype_from_name(dtype));
    if (!k) return py::none();
    return py::str(mma_kind_name(*k));
  }, py::arg("dtype"));
  l.def("mma_block_layouts", [](const std::string& kind, int64_t m, int64_t n, int64_t k,
                                int64_t warps, std::optional<int64_t> warps_m) {
    std::string why;
    if (warps_m) {
      const bool divides = *warps_m >= 1 && warps % *warps_m == 0;
      auto b = divides ? mma_block_layouts_on(parse_mma_kind(kind), m, n, k, *warps_m, warps / *warps_m)
                       : std::nullopt;
      return block_or_throw(b, cat("no ", *warps_m, " x ", divides ? warps / *warps_m : 0, " grid of ", warps,
                                   " warps tiles a ", m, "x", n, "x", k, " dot with ", kind, " atoms"));
    }
    auto b = mma_block_layouts(parse_mma_kind(kind), m, n, k, warps, &why);
    return block_or_throw(b, why);
  }, py::arg("kind"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("num_warps"),
     py::arg("warps_m") = py::none());
  l.def("simt_block_layouts", [](int64_t m, int64_t n, int64_t k, int64_t warps) {
    std::string why;
    auto b = simt_block_layouts(m, n, k, warps, &why);
    return block_or_throw(b, why);
  }, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("num_warps"));

  using SL = SharedLayout;
  py::class_<SL, std::shared_ptr<SL>>(l, "SharedLayout", "Where each element of a shared tile lives in its buffer: strided, optionally with 16-byte chunks XOR-swizzled per row (csrc/layout/shared_layout.h).")
      .def_property_readonly("shape", [](const SL& x) { return x.shape; }, "The tile shape.")
      .def_property_readonly("strides", [](const SL& x) { return x.strides; }, "Strides in elements, before the swizzle.")
      .def_property_readonly("rank", &SL::rank, "The number of dimensions.")
      .def_property_readonly("size", &SL::size, "The elements the buffer needs.")
      .def_property_readonly("chunk_elems", [](const SL& x) { return x.chunk_elems; }, "Elements per 16-byte chunk (0 without a swizzle).")
      .def_property_readonly("swizzle_chunks", [](const SL& x) { return x.swizzle_chunks; }, "Chunks in one swizzled segment, 8 (128 bytes) or 4 (64 bytes), or 0 without a swizzle.")
      .def_property_readonly("rows_per_phase", [](const SL& x) { return x.rows_per_phase; }, "Rows sharing one XOR value.")
      .def_property_readonly("col_block", [](const SL& x) { return x.col_block; }, "Width of the column blocks a matrix is stored in, 0 for none (used by wgmma operands).")
      .def("unswizzled_offset", [](const SL& x, py::args a) { return unswizzled_offset(x, shape_of(a)); })
      .def("is_swizzled", &SL::is_swizzled)
      .def("offset", [](const SL& x, py::args a) { return x.offset(shape_of(a)); })
      .def("__eq__", [](const SL& a, const SL& b) { return a == b; }, py::is_operator())
      .def("__eq__", [](const SL&, const py::object&) { return false; })
      .def("__hash__", [](const SL& x) { return py::hash(py::str(x.str())); })
      .def("__str__", &SL::str)
      .def("__repr__", &SL::str);

  l.def("shared_row_major", [](py::args a) { return shared_row_major(shape_of(a)); });
  l.def("shared_column_major", [](py::args a) { return shared_column_major(shape_of(a)); });
  l.def("shared_swizzled", &shared_swizzled, py::arg("shape"), py::arg("dtype_bits"));
  l.def("can_swizzle", &can_swizzle, py::arg("shape"), py::arg("dtype_bits"));
  l.def("auto_shared_layout", &auto_shared_layout, py::arg("shape"), py::arg("dtype_bits"));
  l.def("shared_wgmma_operand", &shared_wgmma_operand, py::arg("shape"), py::arg("dtype_bits"));
}

}  // namespace tilus::bindings
