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

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  return out + "]";
}

const Tensor& shared_operand(const Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() == 1, "ValueError", op_name(inst.op), " takes one tensor, got ",
              inst.inputs.size());
  const Tensor& x = inst.inputs[0];
  TILUS_CHECK(x->scope == Scope::Shared, "TypeError", op_name(inst.op), ": the tensor must be a shared tensor, got a ",
              scope_name(x->scope), " tensor (", x->type_str(), ")");
  return x;
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
}  // namespace

const OpHandler kGlobalView = {
    nullptr, nullptr, interp::exec_global_view,
    [](CudaEmitter& e, const Instruction& i) { e.emit_global_view(i); }};
const OpHandler kGlobalTensor = {
    nullptr, nullptr, interp::exec_global_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_global_tensor(i); }};
const OpHandler kSharedTensor = {
    nullptr, shared_tensor_layout, interp::exec_shared_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_shared_tensor(i); }};
const OpHandler kRegisterTensor = {
    nullptr, nullptr, interp::exec_register_tensor,
    [](CudaEmitter& e, const Instruction& i) { e.emit_register_tensor(i); }};
const OpHandler kSliceShared = {
    nullptr, slice_shared_layout, interp::exec_slice_shared,
    [](CudaEmitter& e, const Instruction& i) { e.emit_slice_shared(i); }};
const OpHandler kReshapeShared = {reshape_shared_check, slice_shared_layout, reshape_shared_interpret,
                                  shared_view_emit};
const OpHandler kPermuteShared = {permute_shared_check, slice_shared_layout, permute_shared_interpret,
                                  shared_view_emit};

}  // namespace tilus::ops
