// Elementwise instructions: casts, binary and unary operators, where, assignment.
// Every register operand has the output's layout (LayoutRule::SameAsInputs).
#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

const OpHandler kCast = {
    nullptr, same_layout_as_inputs, interp::exec_cast,
    [](CudaEmitter& e, const Instruction& i) { e.emit_cast(i); }};
const OpHandler kElementwise = {
    nullptr, same_layout_as_inputs,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_elementwise(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_elementwise(i); }};
const OpHandler kUnaryElementwise = {
    nullptr, same_layout_as_inputs,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_unary(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_unary(i); }};
const OpHandler kWhere = {
    nullptr, same_layout_as_inputs,
    [](interp::BlockState& st, const StmtNode&, const Instruction& i) { interp::exec_where(st, i); },
    [](CudaEmitter& e, const Instruction& i) { e.emit_where(i); }};
const OpHandler kAssign = {
    nullptr, same_layout_as_inputs, interp::exec_assign,
    [](CudaEmitter& e, const Instruction& i) { e.emit_assign(i); }};

}  // namespace tilus::ops
