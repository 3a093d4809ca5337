#include "codegen/rebias_moves.h"

#include <algorithm>

#include "ir/functor.h"
#include "ir/small_floats.h"

namespace tilus {
namespace {

bool is_zero_constant(const Expr& e) {
  return e && e->is_const() && (e->dtype.is_float() ? e->float_value == 0.0 : e->int_value == 0);
}

// The factor's exponent if `cast` converts finite small-float codes to float16, else 0.
int rebias_exponent(const Instruction& cast) {
  const DataType from = cast.inputs[0]->dtype, to = cast.output->dtype;
  if (to != dtypes::float16 || from.is_pointer || !is_lowp_float(from.kind) || lowp_scheme(from.kind) != lowp::kFinite)
    return 0;
  const int e = dtype_info(from.kind).exponent_bits;
  if (e > 4) return 0;  // (the conversions place only these)
  return 15 - ((1 << (e - 1)) - 1);
}

}  // namespace

std::unordered_map<const Instruction*, RebiasMove> find_rebias_moves(const Stmt& body) {
  std::unordered_map<int, int> reads = count_tensor_reads(body), writes;
  std::unordered_map<int, const Instruction*> writer;
  for_each_inst(body, [&](const StmtNode& s) {
    if (const Tensor& t = s.inst->output) {
      ++writes[t->id];
      writer[t->id] = s.inst.get();
    }
  });
  auto read_once = [&](const Tensor& t) { return reads[t->id] == 1; };
  auto only_writer = [&](const Tensor& t) { return writes[t->id] == 1 ? writer[t->id] : nullptr; };
  // The instruction after statement p of `seq` that reads t, and its place (t is read once:
  // its one reader, when that stands in the same list); null when none does.
  auto later_reader = [](const StmtNode& seq, size_t p, const Tensor& t, size_t& at) -> const Instruction* {
    for (at = p + 1; at < seq.seq.size(); ++at) {
      const StmtNode& s = *seq.seq[at];
      if (s.kind == StmtKind::Inst && std::find(s.inst->inputs.begin(), s.inst->inputs.end(), t) != s.inst->inputs.end())
        return s.inst.get();
    }
    return nullptr;
  };

  std::unordered_map<const Instruction*, RebiasMove> moves;
  for (const StmtNode* seq : statement_sequences(body)) {
    for (size_t p = 0; p < seq->seq.size(); ++p) {
      const StmtNode& s = *seq->seq[p];
      if (s.kind != StmtKind::Inst || s.inst->op != Op::Cast) continue;
      const Instruction& cast = *s.inst;
      const int exponent = rebias_exponent(cast);
      if (exponent == 0 || only_writer(cast.output) != &cast || !read_once(cast.output)) continue;
      size_t q = 0, r = 0;
      const Instruction* dot = later_reader(*seq, p, cast.output, q);
      if (!dot || dot->op != Op::Dot || dot->inputs[2] == cast.output || !dot->defines_output ||
          dot->output->dtype != dtypes::float32 || only_writer(dot->output) != dot || !read_once(dot->output))
        continue;
      // the accumulator: a zero tile only this dot reads
      const Instruction* zeros = only_writer(dot->inputs[2]);
      if (!zeros || zeros->op != Op::RegisterTensor || zeros->args.empty() || !is_zero_constant(zeros->args[0]) ||
          !read_once(dot->inputs[2]))
        continue;
      const Instruction* mul = later_reader(*seq, q, dot->output, r);
      if (!mul || mul->op != Op::Elementwise || mul->binary_op != BinaryOp::Mul || mul->inputs.size() != 2 ||
          mul->output->dtype != dtypes::float32)
        continue;
      const int scale_input = mul->inputs[0] == dot->output ? 1 : 0;
      const Tensor& scale = mul->inputs[scale_input];
      const Instruction* scale_cast = only_writer(scale);
      if (scale == dot->output || scale->dtype != dtypes::float32 || !scale_cast || scale_cast->op != Op::Cast ||
          scale_cast->inputs[0]->dtype != dtypes::float16)
        continue;  // |scale| <= 65504: times 2^15 stays finite and exact in float32
      moves[&cast] = {mul, scale_input, exponent};
    }
  }
  return moves;
}

}  // namespace tilus
