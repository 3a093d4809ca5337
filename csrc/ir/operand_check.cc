#include "ir/operand_check.h"

#include "ir/operand_rules.h"
#include "ir/verifier.h"

namespace tilus {

namespace {
bool is_int_index(const Expr& e) { return e && (e->dtype.is_integer() || e->dtype.is_bool()); }
}  // namespace

void OperandCheck::fail_message(const std::string& message) const { verify_fail(after_, loc_, message); }

std::string OperandCheck::str(const Tensor& t) { return t ? t->name + " (" + t->type_str() + ")" : "nothing"; }

std::string OperandCheck::shape_str(const std::vector<int64_t>& shape) { return tilus::shape_str(shape); }

void OperandCheck::arity(const Instruction& i, size_t inputs, size_t args_min, size_t args_max) const {
  if (i.inputs.size() != inputs)
    fail(op_name(i.op), " takes ", inputs, " tensor operands, got ", i.inputs.size());
  if (i.args.size() < args_min || i.args.size() > args_max)
    fail(op_name(i.op), " takes ", args_min, args_min == args_max ? "" : "+", " scalar arguments, got ",
         i.args.size());
  for (const Expr& a : i.args)
    if (!a) fail(op_name(i.op), ": a scalar argument is missing");
}

void OperandCheck::no_output(const Instruction& i) const {
  if (i.output) fail(op_name(i.op), " writes no tensor, but has output ", str(i.output));
}

void OperandCheck::scope(const Instruction& i, const Tensor& t, Scope s, const char* operand) const {
  if (!t || t->scope != s)
    fail(op_name(i.op), ": ", operand, " must be a ", scope_name(s), " tensor, got ", str(t));
}

void OperandCheck::same_dtype(const Instruction& i, const Tensor& a, const Tensor& b) const {
  if (a->dtype != b->dtype) fail(op_name(i.op), ": ", str(a), " and ", str(b), " differ in dtype");
}

void OperandCheck::same_shape(const Instruction& i, const Tensor& a, const Tensor& b) const {
  if (a->shape != b->shape) fail(op_name(i.op), ": ", str(a), " and ", str(b), " differ in shape");
}

void OperandCheck::positive_shape(const Instruction& i, const Tensor& t) const {
  if (t->shape.empty()) fail(op_name(i.op), ": ", str(t), " has no dimensions");
  for (int64_t s : t->shape)
    if (s <= 0) fail(op_name(i.op), ": ", str(t), " has a non-positive extent");
}

void OperandCheck::int_args(const Instruction& i, size_t from, size_t to) const {
  for (size_t k = from; k < to && k < i.args.size(); ++k)
    if (!is_int_index(i.args[k]))
      fail(op_name(i.op), ": argument ", k, " (", expr_str(i.args[k]), ") must be an integer");
}

void OperandCheck::window(const Instruction& i, const Tensor& global, const std::vector<int64_t>& tile) const {
  const int rank = global->rank();
  if (static_cast<int>(i.args.size()) != rank)
    fail(op_name(i.op), ": ", rank, " offsets expected for ", str(global), ", got ", i.args.size());
  int_args(i, 0, i.args.size());
  if (i.dims.size() != tile.size())
    fail(op_name(i.op), ": dims has ", i.dims.size(), " entries for a tile of shape ", shape_str(tile));
  for (size_t k = 0; k < i.dims.size(); ++k)
    if (i.dims[k] < 0 || i.dims[k] >= rank || (k && i.dims[k] <= i.dims[k - 1]))
      fail(op_name(i.op), ": dims must be increasing dimensions of a rank-", rank, " tensor");
  for (int64_t s : tile)
    if (s <= 0) fail(op_name(i.op), ": tile shape ", shape_str(tile), " must be positive");
}

void OperandCheck::global_shape(const Instruction& i) const {
  const Tensor& t = i.output;
  if (t->global_shape.empty() || t->global_shape.size() != t->global_strides.size())
    fail(op_name(i.op), ": ", str(t), " has ", t->global_shape.size(), " extents and ",
         t->global_strides.size(), " strides");
  for (const Expr& e : t->global_shape)
    if (!is_int_index(e)) fail(op_name(i.op), ": extent ", expr_str(e), " is not an integer");
  for (const Expr& e : t->global_strides)
    if (!is_int_index(e)) fail(op_name(i.op), ": stride ", expr_str(e), " is not an integer");
}

}  // namespace tilus
