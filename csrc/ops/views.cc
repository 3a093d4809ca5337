// Views and allocations: global views and workspaces, shared and register tensors,
// shared slices, and the shared views of the views family: reshape_shared and
// permute_shared (Tilus 0.2's SharedTensor.permute / transpose).
//
// A reshaped or permuted shared view addresses the same allocation through its layout
// (swizzle included): the CUDA emitter maps the view's coordinates back to the
// allocation's (CudaEmitter::unview), the interpreter keeps the element offsets of a
// permuted view (TensorValue::elem_offsets). Accesses through a view whose last
// dimension is not the allocation's move single elements; wgmma never reads one (layout
// inference keeps such dots on mma.sync).
#include "codegen/emitter.h"
#include "interp/state.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ops/op_handler.h"
#include "transforms/layout_inference.h"

namespace tilus::ops {

namespace {
void shared_tensor_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  rules.plan().shared[inst.output->id] = auto_shared_layout(inst.output->shape, inst.output->dtype.bits());
}

// A view's layout is its allocation's: record the allocation (root) it slices.
void slice_shared_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  LayoutPlan& plan = rules.plan();
  auto it = plan.shared_root.find(inst.inputs[0]->id);
  plan.shared_root[inst.output->id] = it == plan.shared_root.end() ? inst.inputs[0]->id : it->second;
  if (transforms_shared_view(inst) || plan.transformed_views.count(inst.inputs[0]->id))
    plan.transformed_views.insert(inst.output->id);
}

const Tensor& shared_operand(const Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() == 1, "ValueError", op_name(inst.op), " takes one tensor, got ",
              inst.inputs.size());
  const Tensor& x = inst.inputs[0];
  TILUS_CHECK(x->scope == Scope::Shared, "TypeError", op_name(inst.op), ": the tensor must be a shared tensor, got a ",
              scope_name(x->scope), " tensor (", x->type_str(), ")");
  return x;
}

// ---- the builder's checks of allocations and slices
OutputType shared_tensor_check(Instruction& inst) {
  expect_inputs(inst, 0);
  TILUS_CHECK(!inst.dtype.is_pointer, "TypeError", "shared_tensor: dtype must be a scalar type");
  TILUS_CHECK(!inst.shape.empty(), "ValueError", "shared_tensor: shape must have at least one dimension");
  for (auto s : inst.shape)
    TILUS_CHECK(s > 0, "ValueError", "shared_tensor: shape ", shape_str(inst.shape), " must be positive");
  return {inst.dtype, inst.shape, Scope::Shared};
}

// args: the init value (optional), made the tile's dtype.
OutputType register_tensor_check(Instruction& inst) {
  expect_inputs(inst, 0);
  TILUS_CHECK(!inst.dtype.is_pointer, "TypeError", "register_tensor: dtype must be a scalar type");
  TILUS_CHECK(!inst.shape.empty(), "ValueError", "register_tensor: shape must have at least one dimension");
  for (auto s : inst.shape)
    TILUS_CHECK(s > 0, "ValueError", "register_tensor: shape ", shape_str(inst.shape), " must be positive");
  TILUS_CHECK(inst.args.size() <= 1, "ValueError", "register_tensor takes one init value");
  if (!inst.args.empty()) {
    TILUS_CHECK(!inst.args[0]->dtype.is_pointer, "TypeError", "register_tensor: init must be a scalar");
    inst.args[0] = make_cast(inst.args[0], inst.dtype);
  }
  return {inst.dtype, inst.shape, Scope::Register};
}

// args: leading indices (made integers), at most the rank: as many indices as the rank
// give a rank-0 view of one element (what a full reduction is stored into, or read with
// .item()).
OutputType slice_shared_check(Instruction& inst) {
  expect_inputs(inst, 1);
  const Tensor& shared = inst.inputs[0];
  require_shared(shared, "indexing a shared tensor");
  std::vector<Expr>& indices = inst.args;
  TILUS_CHECK(!indices.empty() && indices.size() <= shared->shape.size(), "ValueError", "indexing shared tensor ",
              shared->name, " of shape ", shape_str(shared->shape), " with ", indices.size(),
              " indices: give at most one index per dimension");
  for (size_t i = 0; i < indices.size(); ++i) {
    indices[i] = int_operand(indices[i], "a shared tensor index");
    int64_t c;
    if (is_const_int(indices[i], &c))
      TILUS_CHECK(c >= 0 && c < shared->shape[i], "IndexError", "index ", c, " is out of range for dimension ", i,
                  " of ", shared->name, " (size ", shared->shape[i], ")");
  }
  return {shared->dtype, std::vector<int64_t>(shared->shape.begin() + indices.size(), shared->shape.end()),
          Scope::Shared};
}

OutputType reshape_shared_check(Instruction& inst) {
  const Tensor& x = shared_operand(inst);
  TILUS_CHECK(!inst.shape.empty(), "ValueError", "reshape_shared: the shape must have at least one dimension");
  int64_t n = 1;
  for (int64_t s : inst.shape) {
    TILUS_CHECK(s >= 1, "ValueError", "reshape_shared: shape ", shape_str(inst.shape), " has a size below 1");
    n *= s;
  }
  TILUS_CHECK(n == x->numel(), "ValueError", "reshape_shared: ", x->type_str(), " has ", x->numel(),
              " elements, shape ", shape_str(inst.shape), " holds ", n);
  return {x->dtype, inst.shape, Scope::Shared};
}

OutputType permute_shared_check(Instruction& inst) {
  const Tensor& x = shared_operand(inst);
  const int rank = x->rank();
  TILUS_CHECK(static_cast<int>(inst.dims.size()) == rank, "ValueError", "permute: dims has ",
              inst.dims.size(), " entries for ", x->type_str(), " of rank ", rank);
  std::vector<int> seen(rank, 0);
  std::vector<int64_t> shape;
  for (int& d : inst.dims) {
    TILUS_CHECK(d >= -rank && d < rank, "ValueError", "permute: dim ", d, " is not a dimension of ", x->type_str());
    if (d < 0) d += rank;
    TILUS_CHECK(!seen[d]++, "ValueError", "permute: dims lists dimension ", d, " twice");
    shape.push_back(x->shape[d]);
  }
  return {x->dtype, shape, Scope::Shared};
}

// The output is the input's storage seen through new coordinates.
interp::TensorValue& define_view(interp::BlockState& st, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  interp::TensorValue& y = st.tensor(inst.output.get());
  y = x;
  y.node = inst.output.get();
  y.shape = &inst.output->shape;
  return y;
}

// Row-major order is kept: the element offsets (if any) stay as they are.
void reshape_shared_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  define_view(st, inst);
}

void permute_shared_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const std::vector<int64_t>& xs = inst.inputs[0]->shape;
  const std::vector<int64_t>& ys = inst.output->shape;
  interp::TensorValue& y = define_view(st, inst);
  std::shared_ptr<const std::vector<int64_t>> from = y.elem_offsets;
  auto offsets = std::make_shared<std::vector<int64_t>>(y.numel);
  std::vector<int64_t> c(ys.size(), 0), xc(xs.size());
  for (int64_t i = 0; i < y.numel; ++i) {
    for (size_t k = 0; k < c.size(); ++k) xc[inst.dims[k]] = c[k];
    int64_t idx = 0;
    for (size_t d = 0; d < xs.size(); ++d) idx = idx * xs[d] + xc[d];
    (*offsets)[i] = from ? (*from)[idx] : idx;
    for (int d = static_cast<int>(ys.size()) - 1; d >= 0 && ++c[d] == ys[d]; --d) c[d] = 0;
  }
  y.elem_offsets = std::move(offsets);
}

void shared_view_emit(CudaEmitter& e, const Instruction& inst) {
  CudaEmitter::SharedInfo s = e.shared_.at(inst.inputs[0]->id);
  CudaEmitter::ViewStep step;
  if (inst.op == Op::PermuteShared) {
    step.kind = CudaEmitter::ViewStep::Kind::Permute;
    step.dims = inst.dims;
  } else {
    step.kind = CudaEmitter::ViewStep::Kind::Reshape;
    step.from = inst.inputs[0]->shape;
    step.to = inst.output->shape;
  }
  s.steps.push_back(std::move(step));
  s.shape = inst.output->shape;
  e.shared_[inst.output->id] = std::move(s);
  e.line("// " + inst.output->name + " = " + op_name(inst.op) + "(" + inst.inputs[0]->name + "): " +
         inst.output->type_str() + ", the same shared memory");
}

// ---- IR text and the verifier's operand checks
using inst_text::call;
using inst_text::ref;

std::string global_view_print(const Instruction& i) {
  return call(i, expr_str(i.args[0]) + ", dtype=" + i.dtype.name() + ", shape=" +
                     inst_text::exprs(i.output->global_shape));
}
std::string global_tensor_print(const Instruction& i) {
  return call(i, "dtype=" + i.dtype.name() + ", shape=" + inst_text::exprs(i.output->global_shape) +
                     ", requires_clean=" + (i.requires_clean ? "True" : "False"));
}
std::string shared_tensor_print(const Instruction& i) {
  return call(i, "dtype=" + i.dtype.name() + ", shape=" + inst_text::ints(i.output->shape));
}
std::string register_tensor_print(const Instruction& i) {
  return call(i, "dtype=" + i.dtype.name() + ", shape=" + inst_text::ints(i.output->shape) +
                     (i.args.empty() ? std::string() : ", init=" + expr_str(i.args[0])));
}
std::string slice_shared_print(const Instruction& i) {
  return ref(i.output) + " = " + ref(i.inputs[0]) + inst_text::exprs(i.args);
}
std::string reshape_shared_print(const Instruction& i) {
  return call(i, ref(i.inputs[0]) + ", shape=" + inst_text::ints(i.shape));
}
std::string permute_shared_print(const Instruction& i) {
  return call(i, ref(i.inputs[0]) + ", dims=" + inst_text::ints(i.dims));
}

void global_view_verify(OperandCheck& c, const Instruction& i) {
  const char* what = op_name(i.op);
  c.arity(i, 0, 1, 1);
  c.scope(i, i.output, Scope::Global, "the output");
  const Expr& ptr = i.args[0];
  // The pointer is typed as the view's dtype: a typed parameter of that dtype, or an
  // untyped one (void_p) cast to it; a void_p itself, or a cast of anything but a
  // void_p, is refused.
  if (!ptr->dtype.is_pointer || ptr->dtype.is_void || ptr->dtype.pointee() != i.output->dtype ||
      i.dtype != i.output->dtype)
    c.fail(what, ": pointer ", expr_str(ptr), " of type ", ptr->dtype.name(), " for a view of ",
           i.output->dtype.name());
  if (ptr->kind == ExprKind::Cast && !ptr->a->dtype.is_void)
    c.fail(what, ": pointer cast from ", ptr->a->dtype.name(), " to ", ptr->dtype.name(),
           " (only void_p is reinterpreted)");
  c.global_shape(i);
}

void global_tensor_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.scope(i, i.output, Scope::Global, "the output");
  const auto& workspaces = c.program().workspaces;
  if (i.workspace < 0 || i.workspace >= static_cast<int>(workspaces.size()) ||
      workspaces[i.workspace].tensor != i.output)
    c.fail(op_name(i.op), ": ", i.output->name, " is not workspace ", i.workspace, " of the program");
  c.global_shape(i);
}

void shared_tensor_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.scope(i, i.output, Scope::Shared, "the output");
  c.positive_shape(i, i.output);
  if (i.dtype != i.output->dtype) c.fail(op_name(i.op), ": dtype ", i.dtype.name(), " but ", c.str(i.output));
}

void register_tensor_verify(OperandCheck& c, const Instruction& i) {
  const char* what = op_name(i.op);
  c.arity(i, 0, 0, 1);
  c.scope(i, i.output, Scope::Register, "the output");
  c.positive_shape(i, i.output);
  if (i.dtype != i.output->dtype) c.fail(what, ": dtype ", i.dtype.name(), " but ", c.str(i.output));
  if (!i.args.empty() && i.args[0]->dtype != i.dtype)
    c.fail(what, ": init ", expr_str(i.args[0]), " is ", i.args[0]->dtype.name(), ", not ", i.dtype.name());
}

void slice_shared_verify(OperandCheck& c, const Instruction& i) {
  const char* what = op_name(i.op);
  const size_t n = i.args.size();
  c.arity(i, 1, 1, n ? n : 1);
  c.scope(i, i.inputs[0], Scope::Shared, "the sliced tensor");
  c.scope(i, i.output, Scope::Shared, "the output");
  const auto& in = i.inputs[0]->shape;
  c.int_args(i, 0, n);
  if (n > in.size() || std::vector<int64_t>(in.begin() + n, in.end()) != i.output->shape)
    c.fail(what, ": ", n, " indices into ", c.str(i.inputs[0]), " cannot give ", c.str(i.output));
  c.same_dtype(i, i.inputs[0], i.output);
  for (size_t k = 0; k < n; ++k) {
    int64_t v;
    if (is_const_int(i.args[k], &v) && (v < 0 || v >= in[k]))
      c.fail(what, ": index ", v, " is out of range for dimension ", k, " of ", c.str(i.inputs[0]));
  }
}

void shared_view_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.scope(i, i.inputs[0], Scope::Shared, "the viewed tensor");
  c.scope(i, i.output, Scope::Shared, "the output");
  c.same_dtype(i, i.inputs[0], i.output);
  if (i.inputs[0]->numel() != i.output->numel())
    c.fail(op_name(i.op), ": ", c.str(i.inputs[0]), " does not give ", c.str(i.output));
}
}  // namespace

const OpHandler kGlobalView = {
    nullptr, nullptr, interp::exec_global_view,
    [](CudaEmitter& e, const Instruction& i) { e.emit_global_view(i); }, global_view_print, global_view_verify};
const OpHandler kGlobalTensor = {
    nullptr, nullptr, interp::exec_global_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_global_tensor(i); }, global_tensor_print,
    global_tensor_verify};
const OpHandler kSharedTensor = {
    shared_tensor_check, shared_tensor_layout, interp::exec_shared_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_shared_tensor(i); }, shared_tensor_print,
    shared_tensor_verify};
const OpHandler kRegisterTensor = {
    register_tensor_check, nullptr, interp::exec_register_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_register_tensor(i); }, register_tensor_print,
    register_tensor_verify};
const OpHandler kSliceShared = {
    slice_shared_check, slice_shared_layout, interp::exec_slice_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_slice_shared(i); }, slice_shared_print,
    slice_shared_verify};
const OpHandler kReshapeShared = {reshape_shared_check, slice_shared_layout, reshape_shared_interpret,
                                  shared_view_emit, reshape_shared_print, shared_view_verify};
const OpHandler kPermuteShared = {permute_shared_check, slice_shared_layout, permute_shared_interpret,
                                  shared_view_emit, permute_shared_print, shared_view_verify};

}  // namespace tilus::ops
