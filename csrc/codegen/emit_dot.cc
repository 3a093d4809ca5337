// dot: wgmma (sm_90a) or mma.sync on tensor cores, or fused multiply-adds on CUDA
// cores (SIMT).
#include "codegen/emitter.h"

namespace tilus {

void CudaEmitter::emit_dot(const Instruction& i) {
  const DotPlan& plan = plan_.dots.at(&i);
  const BlockLayouts& bl = plan.layouts;
  TILUS_ASSERT(plan.wgmma == (dot_lowering(i) != DotLowering::Plain),
               "dot: the async pass (transforms/async_waits.h) did not mark it for this target");
  if (plan.wgmma) {
    bool in_place = false;
    std::string acc = dot_accumulator(i, reg_operand(i.inputs[2], bl.c), bl.c, in_place);
    const bool async = in_place || accumulates_into_output(i, bl.c);
    TILUS_ASSERT(async == (dot_lowering(i) == DotLowering::WgmmaAsync),
                 "dot: the async pass and the emitter disagree on whether it runs on");
    if (options_.omit_mma)
      line("// (tilus.option.debug.omit: the product left out)");
    else
      emit_wgmma(i, plan, acc, async);
    finish_dot(i, acc, bl.c, in_place);
    return;
  }
  DotOperands ops;
  ops.a = reg_operand(i.inputs[0], bl.a);
  ops.b = reg_operand(i.inputs[1], bl.b);
  ops.acc = dot_accumulator(i, reg_operand(i.inputs[2], bl.c), bl.c, ops.in_place);
  if (options_.omit_mma)
    line("// (tilus.option.debug.omit: the product left out)");
  else if (plan.mma)
    emit_mma(i, plan, ops);
  else
    emit_simt_dot(i, plan, ops);
  finish_dot(i, ops.acc, bl.c, ops.in_place);
}

namespace {
std::string mma_function(MmaKind kind, DataType in, DataType acc) {
  if (kind == MmaKind::M16N8K8) return "tilus::mma_m16n8k8_tf32_f32";
  if (kind == MmaKind::M16N8K32)
    return in == dtypes::uint8 ? "tilus::mma_m16n8k32_u8_s32" : "tilus::mma_m16n8k32_s8_s32";
  if (in == dtypes::bfloat16) return "tilus::mma_m16n8k16_bf16_f32";
  return acc == dtypes::float16 ? "tilus::mma_m16n8k16_f16_f16" : "tilus::mma_m16n8k16_f16_f32";
}
}  // namespace

// A dot that defines its output in the accumulator's layout accumulates in the output's
// own array.
bool CudaEmitter::accumulates_into_output(const Instruction& i, const RegisterLayout& c_layout) const {
  return i.defines_output && plan_.layout_of(i.output) == c_layout;
}

// The array a dot accumulates into: c's own array when the dot updates c in place in
// the layout the dot needs; otherwise a fresh array (the new output's, when the dot
// defines one in that layout) initialised from c. `in_place` tells which.
std::string CudaEmitter::dot_accumulator(const Instruction& i, const std::string& rc,
                                         const RegisterLayout& c_layout, bool& in_place) {
  const Tensor &c = i.inputs[2], &d = i.output;
  in_place = !i.defines_output && d == c && plan_.layout_of(d) == c_layout;
  if (in_place) return rc;
  std::string acc;
  if (accumulates_into_output(i, c_layout)) {
    acc = declare_reg(d, c_layout);
  } else {
    acc = fresh("tl_acc");
    line("__align__(16) " + ctype(d->dtype) + " " + acc + "[" + std::to_string(c_layout.local_size()) + "];");
  }
  line("#pragma unroll");
  open("for (int i = 0; i < " + std::to_string(c_layout.local_size()) + "; ++i)");
  line(acc + "[i] = " + rc + "[i];");
  close();
  return acc;
}

// Hands the accumulated result to the dot's output tensor.
void CudaEmitter::finish_dot(const Instruction& i, const std::string& acc, const RegisterLayout& c_layout,
                             bool in_place) {
  const Tensor& d = i.output;
  if (in_place) return;
  if (accumulates_into_output(i, c_layout)) return;  // acc is d's own array
  if (i.defines_output) declare_reg(d, plan_.layout_of(d));
  write_back(d, acc, c_layout);
}

void CudaEmitter::emit_mma(const Instruction& i, const DotPlan& plan, const DotOperands& ops) {
  const BlockLayouts& bl = plan.layouts;
  const Tensor &a = i.inputs[0], &d = i.output;
  const std::string &ra = ops.a, &rb = ops.b, &acc = ops.acc;
  const int64_t a_regs = 4;  // 32-bit registers per A atom (every atom alike)
  int64_t b_regs = 2;
  bool f16_acc = d->dtype == dtypes::float16;
  int64_t c_regs = f16_acc ? 2 : 4;
  std::string fn = mma_function(plan.kind, a->dtype, d->dtype);
  std::string cast_c = f16_acc ? "reinterpret_cast<unsigned int*>(" + acc + ")" : acc;
  std::string im = fresh("im"), in = fresh("in"), ik = fresh("ik");
  auto loop = [&](const std::string& v, int64_t n) {
    line("#pragma unroll");
    open("for (int " + v + " = 0; " + v + " < " + std::to_string(n) + "; ++" + v + ")");
  };
  line("// dot: " + std::to_string(bl.warps_m) + "x" + std::to_string(bl.warps_n) + " warps, " +
       std::to_string(bl.rep_m) + "x" + std::to_string(bl.rep_n) + "x" + std::to_string(bl.rep_k) +
       " " + mma_kind_name(plan.kind) + " atoms per warp");
  loop(ik, bl.rep_k);
  emit_streamed_operands(i, ik);
  loop(im, bl.rep_m);
  loop(in, bl.rep_n);
  std::string c_at = cast_c + " + (" + im + " * " + std::to_string(bl.rep_n) + " + " + in + ") * " + std::to_string(c_regs);
  line(fn + "(" + c_at + ", reinterpret_cast<const unsigned int*>(" + ra + ") + (" + im + " * " +
       std::to_string(bl.rep_k) + " + " + ik + ") * " + std::to_string(a_regs) +
       ", reinterpret_cast<const unsigned int*>(" + rb + ") + (" + ik + " * " + std::to_string(bl.rep_n) +
       " + " + in + ") * " + std::to_string(b_regs) + ", " + c_at + ");");
  close();
  close();
  close();
}

void CudaEmitter::emit_simt_dot(const Instruction& i, const DotPlan& plan, const DotOperands& ops) {
  const BlockLayouts& bl = plan.layouts;
  const Tensor &a = i.inputs[0], &b = i.inputs[1], &d = i.output;
  const std::string &ra = ops.a, &rb = ops.b, &acc = ops.acc;
  const int64_t k = a->shape[1];
  DataType acc_t = d->dtype;
  // Accumulate in float for 16-bit types, in the accumulator type otherwise.
  DataType math_t = (acc_t == dtypes::float64 || acc_t.is_integer()) ? acc_t : dtypes::float32;
  auto as_math = [&](DataType t, const std::string& x) {
    return t == math_t ? x : "tilus::cast<" + ctype(math_t) + ">(" + x + ")";
  };
  line("// dot on CUDA cores: " + std::to_string(bl.c.local_size()) + " accumulators x " +
       std::to_string(k) + " steps per thread");
  for (int64_t l = 0; l < bl.c.local_size(); ++l) {
    auto rc_coords = bl.c.local_coords(l);
    std::string sum = fresh("tl_sum");
    line(ctype(math_t) + " " + sum + " = " + as_math(acc_t, acc + "[" + std::to_string(l) + "]") + ";");
    for (int64_t kk = 0; kk < k; ++kk) {
      auto [la, ta] = bl.a.owner({rc_coords[0], kk});
      auto [lb, tb] = bl.b.owner({kk, rc_coords[1]});
      TILUS_ASSERT(ta == 0 && tb == 0, "SIMT operand layouts do not line up with the accumulator");
      line(sum + " += " + as_math(a->dtype, ra + "[" + std::to_string(la) + "]") + " * " +
           as_math(b->dtype, rb + "[" + std::to_string(lb) + "]") + ";");
    }
    line(acc + "[" + std::to_string(l) + "] = " +
         (math_t == acc_t ? sum : "tilus::cast<" + ctype(acc_t) + ">(" + sum + ")") + ";");
  }
}

}  // namespace tilus
