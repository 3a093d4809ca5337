// Elements and slices of register tensors at runtime indices: Tilus 0.2's `r[i]`,
// `r[i, :]` (slice_register) and `r[i] = v`, `r[i] ^= 1` (slice_assign_register), as
// pipelines keep one mbarrier phase per stage in a small register array.
//
// Both fix the sliced tensor's layout to "every thread holds every element" (the local
// index is the row-major one), and the slice's the same way: any thread can then read
// or write any element without moving data between threads. A runtime index reads the
// thread's own array at a runtime position; nvcc keeps such small arrays in local memory
// unless the index folds.
//
// Operands: slice_register: inputs[0] = the register tensor, args = one offset per
// dimension (0 for the dimensions kept), dims = the kept dimensions (the slice's
// dimensions, in order; none: the slice is the one element, shape [1]). slice_assign_register: inputs[0] = the value (the slice's shape),
// output = the register tensor written, args and dims as for slice_register.
#include <algorithm>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {

// The register tensor indexed (the source of a slice, the target of an assignment) and
// the slice.
const Tensor& whole_of(const Instruction& i) { return i.op == Op::SliceRegister ? i.inputs[0] : i.output; }
const Tensor& part_of(const Instruction& i) { return i.op == Op::SliceRegister ? i.output : i.inputs[0]; }

// The kept extents; an element (no dimension kept) is a tile of shape [1], tilus having no
// rank-0 tiles (Tilus 0.2's rank-0 element works wherever a scalar does, as this does).
std::vector<int64_t> slice_shape(const Tensor& whole, const std::vector<int>& dims) {
  std::vector<int64_t> shape;
  for (int d : dims) shape.push_back(whole->shape[d]);
  if (shape.empty()) shape.push_back(1);
  return shape;
}

// Checks the offsets and kept dimensions against the indexed tensor; the slice's shape.
std::vector<int64_t> check_indices(const Instruction& i, const Tensor& whole, const char* what) {
  TILUS_CHECK(whole->scope == Scope::Register, "TypeError", what, ": ", whole->name, " is a ",
              scope_name(whole->scope), " tensor; only register tensors are indexed this way");
  TILUS_CHECK(whole->dtype.bits() >= 8, "TypeError", what, ": indexing a register tensor of ",
              whole->dtype.name(), " (sub-byte elements share registers) is not supported; cast it first");
  // Every thread holds the whole tensor: past 255 32-bit registers no thread could.
  const int64_t bytes = storage_bytes(whole->numel() * whole->dtype.bits());
  TILUS_CHECK(bytes <= 255 * 4, "ValueError", what, ": ", whole->name, " (", whole->type_str(), ", ", bytes,
              " bytes) is too large to index at runtime positions: every thread would hold all of it, more than "
              "a thread's 255 registers; keep such a tensor in shared memory");
  TILUS_CHECK(i.args.size() == whole->shape.size(), "IndexError", what, ": ", whole->name, " has ",
              whole->shape.size(), " dimension(s), got ", i.args.size(), " index(es)");
  int previous = -1;
  for (int d : i.dims) {
    TILUS_CHECK(d > previous && d < static_cast<int>(whole->shape.size()), "ValueError", what,
                ": the kept dimensions must be increasing dimensions of ", whole->name);
    previous = d;
  }
  for (size_t d = 0; d < i.args.size(); ++d) {
    const Expr& offset = i.args[d];
    TILUS_CHECK(offset->dtype.is_integer() && !offset->dtype.is_pointer, "TypeError", what, ": index ", d,
                " must be an integer, got ", offset->dtype.name());
    const bool kept = std::find(i.dims.begin(), i.dims.end(), static_cast<int>(d)) != i.dims.end();
    if (offset->is_const())
      TILUS_CHECK(kept ? offset->int_value == 0 : offset->int_value >= 0 && offset->int_value < whole->shape[d],
                  "IndexError", what, ": index ", offset->int_value, " is out of range for dimension ", d,
                  " of ", whole->name, " (extent ", whole->shape[d], ")");
  }
  return slice_shape(whole, i.dims);
}

OutputType slice_check(Instruction& i) {
  TILUS_CHECK(i.inputs.size() == 1, "ValueError", "slice_register takes one register tensor");
  return {i.inputs[0]->dtype, check_indices(i, i.inputs[0], "indexing")};
}

OutputType slice_assign_check(Instruction& i) {
  TILUS_CHECK(i.inputs.size() == 1 && i.output, "ValueError",
              "slice_assign_register takes the value and the register tensor written");
  const std::vector<int64_t> shape = check_indices(i, i.output, "assigning to an element");
  const Tensor& value = i.inputs[0];
  TILUS_CHECK(value->scope == Scope::Register && value->shape == shape && value->dtype == i.output->dtype,
              "TypeError", "assigning to an element of ", i.output->name, " (", i.output->type_str(),
              "): the value must be a ", i.output->dtype.name(), " register tensor of shape ",
              inst_text::ints(shape), ", got a ", value->type_str(), " tensor");
  return {};
}

// Every thread holds the whole tile, elements in row-major order.
RegisterLayout everywhere(int64_t threads, const std::vector<int64_t>& shape) {
  return replicate(threads, static_cast<int>(shape.size())) * local(shape);
}

void slice_layout(LayoutRules& rules, const Instruction& i, const SourceLoc& loc) {
  const int64_t threads = rules.warps(i) * 32;
  rules.fix(whole_of(i), everywhere(threads, whole_of(i)->shape), loc);
  rules.fix(part_of(i), everywhere(threads, part_of(i)->shape), loc);
}

// Element k of the slice (row-major over the kept dimensions) as a step from the offsets:
// its coordinate in each kept dimension of `whole`, 0 in the others.
std::vector<int64_t> step_to_element(const Tensor& whole, const std::vector<int>& dims, int64_t k) {
  std::vector<int64_t> step(whole->shape.size(), 0);
  for (size_t j = dims.size(); j-- > 0;) {
    step[dims[j]] = k % whole->shape[dims[j]];
    k /= whole->shape[dims[j]];
  }
  return step;
}

// The row-major position in `whole` of element `k` of the slice, at run time offsets
// `offsets`; a RuntimeError naming the script's index when it is out of range.
int64_t whole_position(const Tensor& whole, const std::vector<int>& dims, const std::vector<int64_t>& offsets,
                       int64_t k) {
  std::vector<int64_t> index = offsets;
  const std::vector<int64_t> step = step_to_element(whole, dims, k);
  for (size_t d = 0; d < index.size(); ++d) index[d] += step[d];
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    TILUS_CHECK(index[d] >= 0 && index[d] < whole->shape[d], "IndexError", "index ", index[d],
                " is out of range for dimension ", d, " of ", whole->name, " (", whole->type_str(), ")");
    flat = flat * whole->shape[d] + index[d];
  }
  return flat;
}

std::vector<int64_t> offsets_of(interp::BlockState& st, const Instruction& i) {
  std::vector<int64_t> offsets;
  for (const Expr& e : i.args) offsets.push_back(interp::eval_int(st, e));
  return offsets;
}

void slice_interpret(interp::BlockState& st, const StmtNode&, const Instruction& i) {
  const std::vector<int64_t> offsets = offsets_of(st, i);
  const interp::TensorValue& whole = interp::input(st, i.inputs[0], i);
  const uint8_t* src = whole.data;  // define_output below may reuse a buffer, not this one
  interp::TensorValue& out = interp::define_output(st, i.output.get(), i.output->dtype);
  const int64_t bytes = interp::element_bytes(i.output->dtype);
  for (int64_t k = 0; k < i.output->numel(); ++k)
    std::copy_n(src + whole_position(i.inputs[0], i.dims, offsets, k) * bytes, bytes, out.data + k * bytes);
}

void slice_assign_interpret(interp::BlockState& st, const StmtNode&, const Instruction& i) {
  const std::vector<int64_t> offsets = offsets_of(st, i);
  const interp::TensorValue& value = interp::input(st, i.inputs[0], i);
  interp::TensorValue& whole = interp::existing_output(st, i);  // keeps the other elements
  const int64_t bytes = interp::element_bytes(i.output->dtype);
  for (int64_t k = 0; k < i.inputs[0]->numel(); ++k)
    std::copy_n(value.data + k * bytes, bytes, whole.data + whole_position(i.output, i.dims, offsets, k) * bytes);
}

// The C++ position in the whole tile's register array of slice element k: the offsets
// plus k's coordinates in the kept dimensions, row-major.
std::string position_expr(CudaEmitter& e, const Instruction& i, int64_t k) {
  const Tensor& whole = whole_of(i);
  std::vector<Expr> index = i.args;
  const std::vector<int64_t> step = step_to_element(whole, i.dims, k);
  for (int d : i.dims) index[d] = make_binary(BinaryOp::Add, index[d], make_int(step[d], index[d]->dtype));
  Expr flat = make_int(0);
  for (size_t d = 0; d < index.size(); ++d)
    flat = make_binary(BinaryOp::Add, make_binary(BinaryOp::Mul, flat, make_int(whole->shape[d])),
                       make_cast(index[d], dtypes::int32));
  return e.expr(flat);
}

void slice_emit(CudaEmitter& e, const Instruction& i) {
  const std::string src = e.reg_name(i.inputs[0]);
  const std::string dst = e.declare_reg(i.output, e.plan_.layout_of(i.output));
  for (int64_t k = 0; k < i.output->numel(); ++k)
    e.line(dst + "[" + std::to_string(k) + "] = " + src + "[" + position_expr(e, i, k) + "];");
}

void slice_assign_emit(CudaEmitter& e, const Instruction& i) {
  const std::string src = e.reg_name(i.inputs[0]);
  const std::string dst = e.reg_name(i.output);
  for (int64_t k = 0; k < i.inputs[0]->numel(); ++k)
    e.line(dst + "[" + position_expr(e, i, k) + "] = " + src + "[" + std::to_string(k) + "];");
}

// `%r = %x[i, :]`, `%x[i, :] := %v`
std::string index_text(const Instruction& i) {
  std::string s = inst_text::ref(whole_of(i)) + "[";
  for (size_t d = 0; d < i.args.size(); ++d) {
    const bool kept = std::find(i.dims.begin(), i.dims.end(), static_cast<int>(d)) != i.dims.end();
    s += (d ? ", " : "") + (kept ? std::string(":") : expr_str(i.args[d]));
  }
  return s + "]";
}
std::string slice_print(const Instruction& i) { return inst_text::ref(i.output) + " = " + index_text(i); }
std::string slice_assign_print(const Instruction& i) {
  return index_text(i) + " := " + inst_text::ref(i.inputs[0]);
}

// The default verify re-runs a defining op's check; an assignment writes an existing
// tensor, so its check runs here.
void slice_assign_verify(OperandCheck& c, const Instruction& i) {
  Instruction copy = i;
  try {
    slice_assign_check(copy);
  } catch (const std::exception& error) {
    c.fail(error.what());
  }
}

}  // namespace

const OpHandler kSliceRegister = {slice_check, slice_layout, slice_interpret, slice_emit, slice_print};
const OpHandler kSliceAssignRegister = {slice_assign_check, slice_layout, slice_assign_interpret,
                                        slice_assign_emit, slice_assign_print, slice_assign_verify};

}  // namespace tilus::ops
