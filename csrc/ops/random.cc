// Counter-based random numbers (python/tilus/lang/inst_atomics.py: randint, randint4x,
// rand, randn): Philox-4x32 (Salmon et al., SC 2011), as Triton's tl.rand uses.
//
// Operands: inputs[0] = offsets (an integer register tile), args[0] = seed (an integer
// scalar, taken as uint64), int_attr = rounds, dims[0] = the word (randint: 0..3).
// Element k uses counter (lo32(offsets[k]), hi32 of a 64-bit offset else 0, 0, 0) and
// key (lo32(seed), hi32(seed)). The interpreter computes the same words as
// csrc/codegen/device/random.cuh, bit for bit; rand's float is exact on both
// ((x >> 8) * 2^-24); randn uses the libm log/cos of each side (a few ulp apart).
#include <cmath>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"
#include "support/error.h"

namespace tilus::ops {

namespace {

OutputType check(Instruction& i) {
  const char* what = op_name(i.op);
  TILUS_CHECK(i.inputs.size() == 1 && i.args.size() == 1, "ValueError", what,
              ": takes a seed and an offsets tile");
  const Tensor& off = i.inputs[0];
  TILUS_CHECK(off->scope == Scope::Register && off->dtype.is_integer() && !off->dtype.is_bool(),
              "TypeError", what, ": offset must be an integer register tensor, got ", off->type_str());
  const DataType seed = i.args[0]->dtype;
  TILUS_CHECK(seed.is_integer() && !seed.is_pointer && !seed.is_bool(), "TypeError", what,
              ": seed must be an integer, got ", seed.name());
  TILUS_CHECK(i.int_attr >= 1 && i.int_attr <= 64, "ValueError", what,
              ": n_rounds must be between 1 and 64, got ", i.int_attr);
  if (i.op == Op::Randint) {
    TILUS_CHECK(i.dims.size() == 1 && i.dims[0] >= 0 && i.dims[0] < 4, "ValueError", what,
                ": the word must be 0..3");
    return {dtypes::uint32, off->shape};
  }
  return {dtypes::float32, off->shape};
}

void philox(uint64_t seed, uint32_t c0, uint32_t c1, int rounds, uint32_t out[4]) {
  uint32_t c[4] = {c0, c1, 0u, 0u};
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < rounds; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0], p1 = uint64_t{0xCD9E8D57u} * c[2];
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = static_cast<uint32_t>(p1);
    c[2] = n2;
    c[3] = static_cast<uint32_t>(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int w = 0; w < 4; ++w) out[w] = c[w];
}

bool wide_offsets(DataType t) { return t.bits() == 64; }

void interpret(interp::BlockState& st, const StmtNode&, const Instruction& i) {
  using namespace interp;
  const TensorValue& off = input(st, i.inputs[0], i);
  TensorValue& y = define_output(st, i.output.get(), i.output->dtype);
  const uint64_t seed = static_cast<uint64_t>(
      convert(eval(st, i.args[0]), i.args[0]->dtype, dtypes::uint64).i);
  const int ob = element_bytes(off.dtype), yb = element_bytes(y.dtype);
  const bool wide = wide_offsets(off.dtype);
  for (int64_t e = 0; e < off.numel; ++e) {
    const uint64_t o = static_cast<uint64_t>(load_i(off.data + e * ob, off.dtype.kind));
    uint32_t w[4];
    philox(seed, static_cast<uint32_t>(o), wide ? static_cast<uint32_t>(o >> 32) : 0u,
           static_cast<int>(i.int_attr), w);
    uint8_t* p = y.data + e * yb;
    if (i.op == Op::Randint) {
      store_i(p, ScalarKind::UInt32, w[i.dims[0]]);
    } else if (i.op == Op::Rand) {
      store_f(p, ScalarKind::Float32, static_cast<float>(w[0] >> 8) * 5.9604644775390625e-08f);
    } else {
      const float u1 = static_cast<float>((w[0] >> 8) + 1u) * 5.9604644775390625e-08f;
      const float u2 = static_cast<float>(w[1] >> 8) * 5.9604644775390625e-08f;
      const float r = std::sqrt(-2.0f * std::log(u1));
      store_f(p, ScalarKind::Float32, r * std::cos(6.2831853071795865f * u2));
    }
  }
}

void emit(CudaEmitter& e, const Instruction& i) {
  const RegisterLayout& layout = e.plan_.layout_of(i.output);
  const std::string off = e.reg_operand(i.inputs[0], layout);
  const std::string y = e.declare_reg(i.output, layout);
  const bool wide = wide_offsets(i.inputs[0]->dtype);
  const std::string seed = e.fresh("tl_seed");
  e.line("const unsigned long long " + seed + " = (unsigned long long)(" + e.expr(i.args[0]) + ");");
  const std::string rounds = std::to_string(i.int_attr);
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(layout.local_size()) + "; ++i)");
  const std::string o = e.fresh("tl_offset");
  e.line("const unsigned long long " + o + " = (unsigned long long)" + off + "[i];");
  const std::string hi = wide ? "(unsigned int)(" + o + " >> 32)" : "0u";
  auto word = [&](int w) {
    return "tilus::philox_word(" + seed + ", (unsigned int)" + o + ", " + hi + ", " + rounds + ", " + std::to_string(w) + ")";
  };
  if (i.op == Op::Randint) e.line(y + "[i] = " + word(static_cast<int>(i.dims[0])) + ";");
  else if (i.op == Op::Rand) e.line(y + "[i] = tilus::uniform_from_bits(" + word(0) + ");");
  else e.line(y + "[i] = tilus::normal_from_bits(" + word(0) + ", " + word(1) + ");");
  e.close();
}

// ---- IR text and the verifier's operand checks
std::string random_print(const Instruction& i) {
  return inst_text::call(i, expr_str(i.args[0]) + ", " + inst_text::ref(i.inputs[0]) + ", n_rounds=" +
                                std::to_string(i.int_attr) +
                                (i.op == Op::Randint ? ", word=" + std::to_string(i.dims.at(0)) : std::string()));
}
void random_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 1, 1);
  c.scope(i, i.inputs[0], Scope::Register, "the offsets");
  c.scope(i, i.output, Scope::Register, "the output");
  c.same_shape(i, i.inputs[0], i.output);
}

}  // namespace

const OpHandler kRandint = {check, same_layout_as_inputs, interpret, emit, random_print, random_verify};
const OpHandler kRand = {check, same_layout_as_inputs, interpret, emit, random_print, random_verify};
const OpHandler kRandn = {check, same_layout_as_inputs, interpret, emit, random_print, random_verify};

}  // namespace tilus::ops
