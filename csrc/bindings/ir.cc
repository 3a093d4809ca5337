// Bindings of the IR: data types, expressions, tensors, the builder and programs.
// Operator sugar (a + b on Exprs) lives in python/tilus/lang/values.py.
#include <pybind11/stl.h>

#include <optional>

#include "bindings/bindings.h"
#include "ir/builder.h"
#include "ir/expr_compare.h"
#include "ir/verifier.h"
#include "transforms/vector_extents.h"
#include "layout/register_layout.h"

namespace py = pybind11;

namespace tilus::bindings {

namespace {

BinaryOp binary_op_from(const std::string& s) {
  static const std::pair<const char*, BinaryOp> table[] = {
      {"+", BinaryOp::Add}, {"-", BinaryOp::Sub}, {"*", BinaryOp::Mul}, {"/", BinaryOp::Div},
      {"%", BinaryOp::Mod}, {"min", BinaryOp::Min}, {"max", BinaryOp::Max}, {"<", BinaryOp::Lt},
      {"<=", BinaryOp::Le}, {">", BinaryOp::Gt}, {">=", BinaryOp::Ge}, {"==", BinaryOp::Eq},
      {"!=", BinaryOp::Ne}, {"and", BinaryOp::And}, {"or", BinaryOp::Or},
      {"&", BinaryOp::BitAnd}, {"^", BinaryOp::BitXor}, {"|", BinaryOp::BitOr}, {"<<", BinaryOp::Shl},
      {">>", BinaryOp::Shr}};
  for (auto& [name, op] : table)
    if (s == name) return op;
  throw InternalError("unknown binary operator " + s);
}

const char* expr_kind_name(ExprKind k) {
  switch (k) {
    case ExprKind::Const: return "const";
    case ExprKind::Var: return "var";
    case ExprKind::BlockIdx: return "block_idx";
    case ExprKind::Unary: return "unary";
    case ExprKind::Binary: return "binary";
    case ExprKind::Select: return "select";
    case ExprKind::Cast: return "cast";
    case ExprKind::ElementAddr: return "element_addr";
    case ExprKind::ElementLoad: return "element_load";
    case ExprKind::Math: return "math";
  }
  return "?";
}

// ScriptError -> tilus.lang.errors.NativeError(kind, message, file, line, column, text),
// which the transpiler turns into the user-facing exception naming the script line.
void translate_errors() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ScriptError& e) {
      py::object cls = py::module_::import("tilus.lang.errors").attr("NativeError");
      py::object err = cls(e.kind(), e.what(), e.loc().file, e.loc().line, e.loc().column,
                           e.loc().text);
      PyErr_SetObject(cls.ptr(), err.ptr());
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace

void init_ir(py::module_& m) {
  translate_errors();

  // The docs build lists every instruction of this table and fails when one has no
  // documented Python surface (docs/_ext/instruction_reference.py).
  m.def(
      "instruction_table",
      [] {
        py::list out;
#define TILUS_OP(e, name, defines, family, effects, cost, layout) out.append(py::make_tuple(name, defines));
#include "ir/ops.def"
#undef TILUS_OP
        return out;
      },
      "The tile instruction table (csrc/ir/ops.def) in table order: one (script name, "
      "defines a new tensor) tuple per instruction.");

  py::class_<DataType>(m, "DataType",
                       "A tilus element type (``tilus.float16``, ...); ``~t`` is the pointer "
                       "type to ``t``.")
      .def_property_readonly("name", &DataType::name, "The type's name, e.g. ``'float16'``.")
      .def_property_readonly("c_name", &DataType::c_name, "The CUDA C++ spelling of the type.")
      .def_property_readonly("is_pointer", [](const DataType& t) { return t.is_pointer; },
                             "Whether this is a pointer type (``~float16``).")
      .def_property_readonly("is_void", [](const DataType& t) { return t.is_void; },
                             "Whether this is the untyped pointer ``void_p``.")
      .def_property_readonly("is_float", &DataType::is_float, "Whether the type is floating-point.")
      .def_property_readonly("is_integer", &DataType::is_integer, "Whether the type is an integer.")
      .def_property_readonly("is_bool", &DataType::is_bool, "Whether the type is ``boolean``.")
      .def_property_readonly("is_signed", &DataType::is_signed, "Whether the type is signed.")
      .def_property_readonly("bits", &DataType::bits, "The size of one element in bits.")
      .def_property_readonly(
          "nbytes", [](const DataType& t) { return whole_bytes(t, 1, "DataType.nbytes"); },
          "The size of one element in bytes (a TypeError for sub-byte types).")
      .def_property_readonly("pointee", &DataType::pointee,
                             "The element type a pointer type points to.")
      .def("__invert__",
           [](const DataType& t) {
             if (t.is_void)
               throw py::type_error(
                   "~void_p is not a type: void_p is already a pointer (to memory of any "
                   "dtype); annotate the parameter `void_p` itself and view it with "
                   "self.global_view(ptr, dtype=..., shape=[...])");
             return t.pointer_to();
           },
           "``~t``: the pointer type to ``t``.")
      .def("__eq__", [](const DataType& a, const DataType& b) { return a == b; })
      .def("__eq__", [](const DataType&, const py::object&) { return false; })
      .def("__hash__", [](const DataType& t) { return static_cast<int>(t.kind) * 4 + t.is_pointer + 2 * t.is_void; })
      .def("__repr__", &DataType::name)
      .def(py::pickle([](const DataType& t) { return t.name(); },
                      [](const std::string& s) { return dtype_from_name(s); }));
  m.def("dtype", &dtype_from_name, py::arg("name"));
  // ir/dtypes.def, one dict per row: the Python name maps (lang/types.py) derive from it.
  m.def("dtype_table", [] {
    py::list rows;
    for (const DTypeInfo* r = dtype_table_begin(); r != dtype_table_end(); ++r) {
      py::dict row;
      row["name"] = r->name;
      row["bits"] = r->bits;
      row["family"] = family_name(r->family);
      row["signed"] = r->is_signed;
      row["c_type"] = r->c_type;
      row["torch"] = r->torch;
      row["numpy"] = r->numpy;
      row["dlpack_code"] = r->dlpack_code;
      row["exponent_bits"] = r->exponent_bits;
      row["mantissa_bits"] = r->mantissa_bits;
      row["aliases"] = py::str(r->aliases).attr("split")();
      row["short"] = r->short_name;
      rows.append(row);
    }
    return rows;
  });
  m.def("promote", &promote);

  py::class_<ExprNode, std::shared_ptr<ExprNode>>(m, "Expr")
      .def_property_readonly("kind", [](const ExprNode& e) { return expr_kind_name(e.kind); })
      .def_property_readonly("dtype", [](const ExprNode& e) { return e.dtype; })
      .def_property_readonly("name", [](const ExprNode& e) { return e.name; })
      .def_property_readonly("is_const", &ExprNode::is_const)
      .def_property_readonly("value", [](const ExprNode& e) -> py::object {
        if (!e.is_const()) return py::none();
        if (e.dtype.is_float()) return py::float_(e.float_value);
        if (e.dtype.is_bool()) return py::bool_(e.int_value != 0);
        return py::int_(e.int_value);
      })
      // The tensor and indices of an element_load / element_addr (g[i, j].item_ptr()).
      .def_property_readonly("element_tensor", [](const ExprNode& e) { return e.tensor; })
      .def_property_readonly("element_indices", [](const ExprNode& e) {
        std::vector<std::shared_ptr<ExprNode>> r;
        for (const Expr& i : e.indices) r.push_back(std::const_pointer_cast<ExprNode>(i));
        return r;
      })
      .def("__str__", [](const std::shared_ptr<ExprNode>& e) { return expr_str(e); });

  auto ex = [](Expr e) { return std::const_pointer_cast<ExprNode>(e); };
  using EP = std::shared_ptr<ExprNode>;
  m.def("const_int", [ex](int64_t v, DataType t) { return ex(make_int(v, t)); });
  m.def("const_float", [ex](double v, DataType t) { return ex(make_float(v, t)); });
  m.def("const_bool", [ex](bool v) { return ex(make_bool(v)); });
  m.def("block_idx", [ex](int axis) { return ex(make_block_idx(axis)); });
  m.def("expr_mentions", [](EP e, const std::vector<EP>& vars) {
    std::unordered_set<int> ids;
    for (const EP& v : vars) ids.insert(v->var_id);
    return mentions(e, ids);
  }, "Whether the expression reads any of the variables `vars`.");
  m.def("binary", [ex](const std::string& op, EP a, EP b) { return ex(make_binary(binary_op_from(op), a, b)); });
  m.def("neg", [ex](EP a) { return ex(make_unary(UnaryOp::Neg, a)); });
  m.def("logical_not", [ex](EP a) { return ex(make_unary(UnaryOp::Not, a)); });
  m.def("select", [ex](EP c, EP a, EP b) { return ex(make_select(c, a, b)); });
  m.def("cast", [ex](EP a, DataType t) { return ex(make_cast(a, t)); });
  // math.exp(x) ... on a runtime x (python/tilus/lang/scalar_math.py): fn is the name.
  m.def("math", [ex](const std::string& fn, EP a) {
    MathFn f;
    if (!math_fn_from_name(fn, &f)) throw InternalError("unknown math function " + fn);
    return ex(make_math(f, a));
  }, py::arg("fn"), py::arg("a"));
  m.def("element_addr", [ex](Tensor t, std::vector<EP> idx) {
    return ex(make_element_addr(t, std::vector<Expr>(idx.begin(), idx.end())));
  });
  m.def("element_load", [ex](Tensor t, std::vector<EP> idx) {
    return ex(make_element_load(t, std::vector<Expr>(idx.begin(), idx.end())));
  });

  py::class_<TensorNode, std::shared_ptr<TensorNode>>(
      m, "Tensor",
      "A tile inside a script: a global, shared or register tensor. Operators and indexing "
      "are defined in python/tilus/lang/values.py.")
      .def_property_readonly("name", [](const TensorNode& t) { return t.name; },
                             "The tensor's name in the IR (the Python variable it was bound to).")
      .def_property_readonly("scope", [](const TensorNode& t) { return scope_name(t.scope); },
                             "Where it lives, one of ``'global'``, ``'shared'`` or ``'register'``.")
      .def_property_readonly("dtype", [](const TensorNode& t) { return t.dtype; },
                             "The element type (a :class:`tilus.DataType`).")
      .def_property_readonly("rank", &TensorNode::rank, "The number of dimensions.")
      .def_property_readonly("shape", [](const TensorNode& t) -> py::list {
        py::list out;
        if (t.scope == Scope::Global) {
          for (auto& e : t.global_shape) {
            if (is_const_int(e)) out.append(e->int_value);
            else out.append(std::const_pointer_cast<ExprNode>(e));
          }
        } else {
          for (auto s : t.shape) out.append(s);
        }
        return out;
      }, "The shape, compile-time ints for shared and register tensors, ints or runtime "
         "values for global tensors.")
      .def_property("layout", [](const TensorNode& t) { return t.layout; },
                    [](TensorNode& t, std::shared_ptr<RegisterLayout> layout) { t.layout = std::move(layout); },
                    "The register layout given at creation (or by view(layout=...)), or None "
                    "(inferred later).")
      .def("annotate_layout", [](TensorNode& t, std::shared_ptr<const RegisterLayout> layout) {
        // Tilus 0.2's annotate_layout: the layout this register tile must have, as if given
        // at creation; layout inference then plans around it.
        TILUS_CHECK(t.scope == Scope::Register, "TypeError", "annotate_layout: ", t.name,
                    " is a ", scope_name(t.scope), " tensor; a RegisterLayout annotates register tensors");
        auto dims = [](const std::vector<int64_t>& v) {
          std::string out = "[";
          for (size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + std::to_string(v[k]);
          return out + "]";
        };
        TILUS_CHECK(layout->shape == t.shape, "ValueError", "annotate_layout: the layout covers ",
                    dims(layout->shape), " but ", t.name, " has shape ", dims(t.shape));
        TILUS_CHECK(!t.layout || *t.layout == *layout, "ValueError", "annotate_layout: ", t.name,
                    " already has another layout");
        t.layout = std::move(layout);
      }, "Fix the register layout of this tile (Script.annotate_layout).")
      .def("type_str", &TensorNode::type_str, "The type as the IR prints it, e.g. "
                                              "``'register float32[64, 64]'``.")
      .def("__repr__", [](const TensorNode& t) { return "%" + t.name + ": " + t.type_str(); });

  py::class_<Program, std::shared_ptr<Program>>(m, "Program")
      .def_property_readonly("name", [](const Program& p) { return p.name; })
      .def_property_readonly("warps", [](const Program& p) { return p.warps; })
      .def_property_readonly("cluster", [](const Program& p) { return std::vector<int64_t>(p.cluster.begin(), p.cluster.end()); })
      .def_property_readonly("num_params", [](const Program& p) { return p.params.size(); })
      .def_property_readonly("param_names", [](const Program& p) {
        std::vector<std::string> out;
        for (auto& v : p.params) out.push_back(v->name);
        return out;
      })
      .def_property_readonly("param_dtypes", [](const Program& p) {
        std::vector<DataType> out;
        for (auto& v : p.params) out.push_back(v->dtype);
        return out;
      })
      .def_property_readonly("num_workspaces", [](const Program& p) { return p.workspaces.size(); })
      .def_property_readonly("vector_extent_params", &vector_extent_params,
                             "Indices of the integer parameters the aligned build assumes are "
                             "multiples of 16 (transforms/vector_extents.h).")
      .def_property_readonly("workspace_requires_clean", [](const Program& p) {
        std::vector<bool> out;
        for (auto& w : p.workspaces) out.push_back(w.requires_clean);
        return out;
      })
      .def("__str__", [](const Program& p) { return print_program(p); });

  auto opt = [](const EP& e) -> Expr { return e; };
  auto exprs = [](const std::vector<EP>& v) { return std::vector<Expr>(v.begin(), v.end()); };
  py::class_<IRBuilder>(m, "IRBuilder")
      .def(py::init<std::string, std::string>())
      .def("set_loc", &IRBuilder::set_loc)
      .def("add_param", [ex](IRBuilder& b, const std::string& n, DataType t) { return ex(b.add_param(n, t)); })
      .def("set_grid", [exprs](IRBuilder& b, std::vector<EP> g) { b.set_grid(exprs(g)); })
      .def("set_warps", &IRBuilder::set_warps)
      .def("set_cluster", &IRBuilder::set_cluster)
      .def("declare", [ex, opt](IRBuilder& b, const std::string& n, DataType t, EP init) {
        return ex(b.declare(n, t, opt(init)));
      }, py::arg("name"), py::arg("dtype"), py::arg("init").none(true))
      .def("declare_at_top", [ex](IRBuilder& b, const std::string& n, DataType t, EP init) {
        return ex(b.declare_at_top(n, t, init));
      })
      .def("begin_exit_guard", [](IRBuilder& b, EP not_exited) { b.begin_exit_guard(not_exited); })
      .def("assign", [](IRBuilder& b, EP var, EP value) { b.assign(var, value); })
      .def("begin_for", [ex](IRBuilder& b, const std::string& n, EP s, EP e, EP st, int unroll) {
        return ex(b.begin_for(n, s, e, st, unroll));
      })
      .def("end_for", &IRBuilder::end_for)
      .def("begin_if", [](IRBuilder& b, EP c) { b.begin_if(c); })
      .def("begin_else", &IRBuilder::begin_else)
      .def("end_if", &IRBuilder::end_if)
      .def("begin_while", [](IRBuilder& b, EP c) { b.begin_while(c); })
      .def("end_while", &IRBuilder::end_while)
      .def("begin_thread_group", &IRBuilder::begin_thread_group)
      .def("end_thread_group", &IRBuilder::end_thread_group)
      .def("current_thread_group", &IRBuilder::current_thread_group)
      .def("emit_break", &IRBuilder::emit_break)
      .def("emit_continue", &IRBuilder::emit_continue)
      .def("global_view", [exprs](IRBuilder& b, EP ptr, DataType t, std::vector<EP> shape,
                                  std::vector<EP> strides, const std::string& name) {
        return b.global_view(ptr, t, exprs(shape), exprs(strides), name);
      })
      .def("global_tensor", [exprs](IRBuilder& b, DataType t, std::vector<EP> shape, bool clean,
                                    const std::string& name) {
        return b.global_tensor(t, exprs(shape), clean, name);
      })
      .def("shared_tensor", &IRBuilder::shared_tensor)
      .def("register_tensor", [opt](IRBuilder& b, DataType t, std::vector<int64_t> shape, EP init,
                                    std::shared_ptr<RegisterLayout> layout, const std::string& name) {
        return b.register_tensor(t, shape, opt(init), layout, name);
      }, py::arg("dtype"), py::arg("shape"), py::arg("init").none(true),
         py::arg("layout").none(true), py::arg("name"))
      .def("slice_shared", [exprs](IRBuilder& b, Tensor s, std::vector<EP> idx) {
        return b.slice_shared(s, exprs(idx));
      })
      .def("load_global", [exprs](IRBuilder& b, Tensor g, std::vector<EP> off,
                                  std::vector<int64_t> shape, std::vector<int> dims) {
        return b.load_global(g, exprs(off), shape, dims);
      })
      .def("store_global", [exprs](IRBuilder& b, Tensor g, Tensor x, std::vector<EP> off,
                                   std::vector<int> dims) { b.store_global(g, x, exprs(off), dims); })
      .def("load_shared", &IRBuilder::load_shared)
      .def("store_shared", &IRBuilder::store_shared)
      .def("free_shared", &IRBuilder::free_shared)
      .def("sync", &IRBuilder::sync)
      .def("copy_async", [exprs](IRBuilder& b, Tensor src, Tensor dst, std::vector<EP> off,
                                 std::vector<int> dims) { b.copy_async(src, dst, exprs(off), dims); })
      .def("copy_async_commit_group", &IRBuilder::copy_async_commit_group)
      .def("copy_async_wait_group", &IRBuilder::copy_async_wait_group)
      .def("copy_async_wait_all", &IRBuilder::copy_async_wait_all)
      .def("dot", &IRBuilder::dot, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("out").none(true))
      .def("cast", &IRBuilder::cast)
      .def("tile_op", [exprs](IRBuilder& b, const std::string& op, std::vector<Tensor> inputs,
                              std::vector<int> dims, int64_t int_attr, std::vector<EP> args,
                              std::optional<DataType> dtype, std::vector<int64_t> shape,
                              std::string text, Tensor out) {
        IRBuilder::TileOpOperands o{std::move(inputs), std::move(dims), int_attr, exprs(args),
                                    dtype.value_or(DataType{}), std::move(shape), std::move(text)};
        o.out = std::move(out);
        return b.tile_op(op_from_name(op), std::move(o));
      }, py::arg("op"), py::arg("inputs"), py::arg("dims") = std::vector<int>{},
         py::arg("int_attr") = 0, py::arg("args") = std::vector<EP>{},
         py::arg("dtype") = std::nullopt, py::arg("shape") = std::vector<int64_t>{},
         py::arg("text") = "", py::arg("out") = Tensor(),
         "An instruction checked by its handler (csrc/ops/); operands as in ir/inst.h; out: "
         "the existing tensor an op that writes one (defines = false in ir/ops.def) writes.")
      .def("binary", [](IRBuilder& b, const std::string& op, Tensor x, Tensor y, Tensor out) {
        return b.binary(binary_op_from(op), x, y, out);
      }, py::arg("op"), py::arg("a"), py::arg("b"), py::arg("out").none(true))
      .def("binary_scalar", [](IRBuilder& b, const std::string& op, Tensor x, EP s, bool lhs, Tensor out) {
        return b.binary_scalar(binary_op_from(op), x, s, lhs, out);
      }, py::arg("op"), py::arg("x"), py::arg("scalar"), py::arg("scalar_lhs"), py::arg("out").none(true))
      .def("neg", [](IRBuilder& b, Tensor x) { return b.unary(UnaryOp::Neg, x); })
      .def("logical_not", [](IRBuilder& b, Tensor x) { return b.unary(UnaryOp::Not, x); })
      .def("where", &IRBuilder::where)
      .def("assign_tensor", &IRBuilder::assign_tensor)
      .def("lock_semaphore", [](IRBuilder& b, EP s, EP v) { b.lock_semaphore(s, v); })
      .def("release_semaphore", [](IRBuilder& b, EP s, EP v) { b.release_semaphore(s, v); })
      .def("print_tensor", &IRBuilder::print_tensor)
      .def("name_tensor", &IRBuilder::name_tensor)
      .def("finish", &IRBuilder::finish);

  m.def("verify", [](const std::shared_ptr<Program>& program, const std::string& after) {
    TILUS_CHECK(program != nullptr, "TypeError", "verify: program is None");
    verify(*program, after.c_str());
  }, py::arg("program"), py::arg("after") = "a check",
     "Run the IR verifier (csrc/ir/verifier.h) on `program` now, whatever the switch says; "
     "a failure raises NativeError of kind 'InternalError' located at the statement.");
  m.def("set_verify", &set_verify_enabled,
        "Native side of tilus.option.verify (python/tilus/option.py).");
  m.def("verify_enabled", &verify_enabled, "Whether the builder and the passes run the verifier.");
  m.def("verify_build_default", &verify_build_default,
        "The build's TILUS_VERIFY option: whether the verifier runs unless told otherwise.");
}

}  // namespace tilus::bindings
