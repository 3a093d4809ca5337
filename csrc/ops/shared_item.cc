// The address of the one element of a shared tensor: Tilus 0.2's `s.item_ptr()`, a
// generic pointer (`~dtype`) as `&s[...]` in CUDA; what `s[i, j].item_ptr()` gives for
// the rank-0 view of element (i, j). (`s.item()` is a load_shared of the view followed
// by tensor_item, python/tilus/lang/values.py.)
//
// Operands: inputs[0] = the shared tensor or view (exactly one element), args[0] = the
// declared pointer variable (`~dtype` of the tensor) that receives the address.
#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {

OutputType item_ptr_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() == 1 && inst.args.size() == 1, "ValueError",
              "shared_item_ptr takes one shared tensor and the variable it sets");
  const Tensor& s = inst.inputs[0];
  TILUS_CHECK(s->scope == Scope::Shared, "TypeError", "item_ptr: the tensor must be a shared tensor, got a ",
              scope_name(s->scope), " tensor (", s->type_str(), ")");
  TILUS_CHECK(s->numel() == 1, "ValueError", "item_ptr: the tensor must have exactly one element, got ",
              s->type_str(), "; index it down to one element first (s[i, j].item_ptr())");
  const Expr& v = inst.args[0];
  TILUS_CHECK(v->kind == ExprKind::Var && v->dtype == s->dtype.pointer_to(), "TypeError",
              "item_ptr: the target must be a variable of type ~", s->dtype.name());
  return {s->dtype, {}};
}

// The interpreter's shared memory is host memory: the pointer is the element's host
// address, as a pointer variable holds any address there.
void item_ptr_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& s = interp::input(st, inst.inputs[0], inst);
  const int64_t element = s.elem_offsets ? (*s.elem_offsets)[0] : 0;
  const uint8_t* p = s.data + element * interp::element_bytes(s.dtype);
  st.var(inst.args[0].get()) = interp::Value::of_int(static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)));
}

void item_ptr_emit(CudaEmitter& e, const Instruction& inst) {
  const Tensor& s = inst.inputs[0];
  const CudaEmitter::SharedInfo& info = e.shared_.at(s->id);
  std::vector<Expr> zeros(s->shape.size(), make_int(0));
  e.line(e.expr(inst.args[0]) + " = " + info.ptr + " + (" + e.expr(e.shared_offset(info, zeros)) + ");");
}

}  // namespace

namespace {
std::string item_ptr_print(const Instruction& i) {
  return expr_str(i.args[0]) + " = " + inst_text::ref(i.inputs[0]) + ".item_ptr()";
}
void item_ptr_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 1, 1);
  c.no_output(i);
  c.scope(i, i.inputs[0], Scope::Shared, "the operand");
}
}  // namespace

const OpHandler kSharedItemPtr = {item_ptr_check, nullptr,        item_ptr_interpret,
                                  item_ptr_emit,  item_ptr_print, item_ptr_verify};

}  // namespace tilus::ops
