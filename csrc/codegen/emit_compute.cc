// Register tensors, elementwise tile operations, casts and semaphores.
#include "codegen/emitter.h"
#include "ir/small_floats.h"
#include "ops/reduction.h"

namespace tilus {

namespace {
const char* binary_helper(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Mod: return "mod";
    case BinaryOp::Min: return "min_";
    case BinaryOp::Max: return "max_";
    case BinaryOp::Lt: return "lt";
    case BinaryOp::Le: return "le";
    case BinaryOp::Gt: return "gt";
    case BinaryOp::Ge: return "ge";
    case BinaryOp::Eq: return "eq";
    case BinaryOp::Ne: return "ne";
    case BinaryOp::And: return "and_";
    case BinaryOp::Or: return "or_";
    case BinaryOp::BitXor: return "bit_xor";  // integer and boolean tiles (x ^ y)
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::Shl:
    case BinaryOp::Shr: break;  // scalar-only, never a tile op
  }
  return "?";
}

std::string cast_to(DataType to, DataType from, const std::string& x) {
  if (to == from) return x;
  return "tilus::cast<" + CudaEmitter::ctype(to) + ">(" + x + ")";
}
}  // namespace

void CudaEmitter::emit_register_tensor(const Instruction& i) {
  const Tensor& t = i.output;
  const RegisterLayout& layout = plan_.layout_of(t);
  std::string r = declare_reg(t, layout);
  if (i.args.empty()) return;
  std::string value = expr(i.args[0]);
  line("#pragma unroll");
  open("for (int i = 0; i < " + std::to_string(layout.local_size()) + "; ++i)");
  line(r + "[i] = " + value + ";");
  close();
}

// The flat loop over local elements shared by elementwise instructions whose operands
// all have the output's layout.
namespace {
void flat_loop(CudaEmitter& e, int64_t n, const std::string& body) {
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(n) + "; ++i)");
  e.line(body);
  e.close();
}
}  // namespace

std::string CudaEmitter::operand_at(const Tensor& t, const Tensor& out, const RegisterLayout& out_layout) {
  if (t->shape == out->shape) return reg_operand(t, out_layout) + "[i]";
  auto [arr, index] = operand_elements(t, out, out_layout);
  const int64_t n = out_layout.local_size();
  // As arithmetic on i: a sum over the output's local modes of digit * weight, the
  // weight 0 for modes of broadcast dimensions.
  std::string e;
  int64_t inner = 1;
  std::vector<std::pair<int64_t, int64_t>> digits;  // (stride in i, size)
  for (size_t k = out_layout.local_modes.size(); k-- > 0;) {
    const int64_t size = out_layout.mode_shape[out_layout.local_modes[k]];
    digits.push_back({inner, size});
    inner *= size;
  }
  bool linear = true;
  std::vector<int64_t> weight;
  for (auto [st, size] : digits) weight.push_back(index[st]);
  for (int64_t l = 0; l < n && linear; ++l) {
    int64_t j = 0;
    for (size_t k = 0; k < digits.size(); ++k) j += l / digits[k].first % digits[k].second * weight[k];
    linear = j == index[l];
  }
  if (!linear) {  // not expected for layouts in canonical form; a table is always right
    const std::string table = fresh("tl_bcast");
    std::string init;
    for (int64_t l = 0; l < n; ++l) init += (l ? ", " : "") + std::to_string(index[l]);
    line("const int " + table + "[" + std::to_string(n) + "] = {" + init + "};");
    return arr + "[" + table + "[i]]";
  }
  for (size_t k = 0; k < digits.size(); ++k) {
    if (weight[k] == 0) continue;
    std::string term = "i";
    if (digits[k].first > 1) term = "(" + term + " / " + std::to_string(digits[k].first) + ")";
    if (digits[k].first * digits[k].second < n) term = "(" + term + " % " + std::to_string(digits[k].second) + ")";
    if (weight[k] > 1) term += " * " + std::to_string(weight[k]);
    e += (e.empty() ? "" : " + ") + term;
  }
  return arr + "[" + (e.empty() ? "0" : e) + "]";
}

std::pair<std::string, std::vector<int64_t>> CudaEmitter::operand_elements(const Tensor& t, const Tensor& out,
                                                                          const RegisterLayout& out_layout) {
  const int64_t n = out_layout.local_size();
  std::vector<int64_t> index(n);
  if (t->shape == out->shape) {
    for (int64_t l = 0; l < n; ++l) index[l] = l;
    return {reg_operand(t, out_layout), index};
  }
  const RegisterLayout need = ops::broadcast_layout(out_layout, out->shape, t->shape);
  const std::string arr = reg_operand(t, need);
  // Which operand element output element l reads: its coordinate with the leading
  // dimensions dropped and the broadcast ones at 0. Threads agree on it (need holds,
  // per thread, exactly the rows of that thread's output elements), so it depends on l
  // only.
  const int lead = out_layout.rank() - t->rank();
  for (int64_t l = 0; l < n; ++l) {
    std::vector<int64_t> c = out_layout.local_coords(l);
    c.erase(c.begin(), c.begin() + lead);
    for (int d = 0; d < t->rank(); ++d)
      if (t->shape[d] == 1) c[d] = 0;
    index[l] = need.owner(c).first;
  }
  return {arr, index};
}

namespace {
// The casts tilus::cast4 (device/lowp_vec.cuh) does four at a time with bit tricks:
// one-byte codes (sub-byte and 8-bit integers, small floats) to float16 / bfloat16.
bool vector_cast4_supported(DataType to, DataType from) {
  if (to.is_pointer || from.is_pointer) return false;
  const bool to_half = to == dtypes::float16, to_bf16 = to == dtypes::bfloat16;
  if (!to_half && !to_bf16) return false;
  if (from == dtypes::int8 || from == dtypes::uint8) return to_half;
  if (!is_low_precision(from)) return false;
  const DTypeInfo& info = dtype_info(from.kind);
  if (info.family == TypeFamily::Int) return true;
  if (from.bits() == 8) return true;  // FP8: cvt on sm_89+ (and e5m2 bits), the codec before
  return info.exponent_bits <= 4;     // finite formats whose rebiasing stays in range
}
}  // namespace

namespace {
// For a cast of sub-byte integer codes a view unpacked from 32-bit words into a layout
// that reorders each thread's registers: the group of 8 codes of each group of 8 results
// when every group q takes its pairs (2j, 2j + 1) from codes j and j + 4 of one group W_q
// (for 4-bit codes W_q is a word: the order tilus::int4x8_paired_to_half converts in, one
// lop3 a pair, no byte shuffles; 3-bit codes: tilus::int3x8_paired_to), else
// nullopt. `src` is in_thread_sources(input layout, output layout).
std::optional<std::vector<int64_t>> paired_code_groups(const std::vector<int64_t>& src) {
  if (src.size() % 8) return std::nullopt;
  std::vector<int64_t> words;
  for (size_t q = 0; q < src.size(); q += 8) {
    const int64_t w = src[q] / 8;
    for (int j = 0; j < 4; ++j)
      if (src[q + 2 * j] != 8 * w + j || src[q + 2 * j + 1] != 8 * w + j + 4) return std::nullopt;
    words.push_back(w);
  }
  return words;
}
}  // namespace

void CudaEmitter::emit_cast(const Instruction& i) {
  const Tensor& x = i.inputs[0];
  const Tensor& y = i.output;
  const RegisterLayout& layout = plan_.layout_of(y);
  if (!x->dtype.is_pointer && dtype_info(x->dtype.kind).family == TypeFamily::Int)
    integer_casts_[y->id] = x->dtype;  // its values are integers of that type (emit_zero_fold)
  // Sub-byte codes a view just unpacked convert from the packed words (the one-byte
  // copies the view made go unused and vanish).
  const PackedWords* words = packed_words_of(x);
  const DTypeInfo& from = dtype_info(x->dtype.kind);
  const int bits = x->dtype.bits();
  if (words && (bits == 3 || bits == 4) && from.family == TypeFamily::Int &&
      (y->dtype == dtypes::float16 || y->dtype == dtypes::bfloat16) && plan_.layout_of(x) != layout) {
    // Codes packed so that each result pair is codes j and j + 4 of an eight (the view's
    // layout orders them so; the consumer fixed the output's): 4-bit ones four lop3 a
    // word; 3-bit ones, their pairs 12 bits apart, one window, one lop3 and one fma a pair
    if (auto order = in_thread_sources(plan_.layout_of(x), layout)) {
      if (auto groups = paired_code_groups(*order)) {
        if (bits == 4) {
          PairedCast pc{x, declare_reg(y, layout), words->name, *groups, from.is_signed,
                        y->dtype == dtypes::float16, scopes_.back()};
          emit_paired_cast(pc);
          paired_casts_[y->id] = pc;
          return;
        }
        const std::string dst = declare_reg(y, layout);
        const std::string fn = "tilus::int3x8_paired_to<" + ctype(y->dtype) + ", " + (from.is_signed ? "true" : "false");
        for (size_t q = 0; q < groups->size(); ++q)
          line(fn + ", " + std::to_string((*groups)[q]) + ">(" + dst + " + " + std::to_string(8 * q) + ", " +
               words->name + ");" + (q == 0 ? "  // eight at a time, paired 3-bit codes" : ""));
        return;
      }
    }
  }
  std::string src = reg_operand(x, layout);
  std::string dst = declare_reg(y, layout);
  if (words && plan_.layout_of(x) == layout && bits < 8 && vector_cast4_supported(y->dtype, x->dtype)) {
    if (bits == 4 && from.family == TypeFamily::Int && y->dtype == dtypes::float16 &&
        layout.local_size() % 8 == 0) {
      // 4-bit integers to half: eight per word
      flat_loop(*this, layout.local_size() / 8,
                "tilus::int4x8_to_half<" + std::string(from.is_signed ? "true" : "false") + ">(" + dst +
                    " + 8 * i, " + words->name + "[i]);  // eight at a time, from the packed word");
      return;
    }
    if (layout.local_size() % 2 == 0) {  // the others: two per 32-bit result
      if (from.family == TypeFamily::Float) float_packed_casts_[y->id] = {x, words->name, scopes_.back()};
      line("tilus::packed_cast<" + ctype(y->dtype) + ", " + ctype(x->dtype) + ", " +
           std::to_string(layout.local_size()) + ">(" + dst + ", " + words->name + ");  // from the packed words");
      return;
    }
  }
  if (layout.local_size() % 4 == 0 && vector_cast4_supported(y->dtype, x->dtype)) {
    flat_loop(*this, layout.local_size() / 4,
              "tilus::cast4(" + dst + " + 4 * i, " + src + " + 4 * i);  // four at a time");
    return;
  }
  flat_loop(*this, layout.local_size(), dst + "[i] = " + cast_to(y->dtype, x->dtype, src + "[i]") + ";");
}

namespace {
// +, - and * of two half (or two bfloat16) operands into a tile of the same type: the
// emitter pairs elements into one f16x2 / bf16x2 instruction (tilus::add2 etc.).
bool pairs_16bit_float(const Instruction& i, DataType operand_type) {
  const DataType t = i.output->dtype;
  if (t != dtypes::float16 && t != dtypes::bfloat16) return false;
  if (i.binary_op != BinaryOp::Add && i.binary_op != BinaryOp::Sub && i.binary_op != BinaryOp::Mul) return false;
  if (operand_type != t || i.inputs[0]->dtype != t) return false;
  return i.inputs.size() == 1 ? i.args[0]->dtype == t : i.inputs[1]->dtype == t;
}
}  // namespace

namespace {
// Whether result elements 2p and 2p + 1 read the same operand element for every p
// (operand_elements' index): a zero point or scale that one paired instruction applies.
bool one_operand_a_pair(const std::vector<int64_t>& index) {
  for (size_t l = 0; l + 1 < index.size(); l += 2)
    if (index[l] != index[l + 1]) return false;
  return index.size() % 2 == 0;
}
}  // namespace

void CudaEmitter::emit_paired_cast(const PairedCast& pc) {
  const std::string fn = std::string("tilus::int4x8_paired_to_") + (pc.to_half ? "half" : "bf16") + "<" +
                         (pc.is_signed ? "true" : "false") + ">(" + pc.dst + " + 8 * ";
  bool in_order = true;
  for (size_t q = 0; q < pc.word_of_group.size(); ++q)
    in_order = in_order && pc.word_of_group[q] == static_cast<int64_t>(q);
  if (in_order) {
    flat_loop(*this, pc.word_of_group.size(), fn + "i, " + pc.words + "[i]);  // eight at a time, paired nibbles");
  } else {
    for (size_t q = 0; q < pc.word_of_group.size(); ++q)
      line(fn + std::to_string(q) + ", " + pc.words + "[" + std::to_string(pc.word_of_group[q]) + "]);");
  }
}

// codes - zero, for the codes of a paired 4-bit cast (`pc`, its result not written since)
// and zero points that are integers of a small type (a cast from one: the zero points of
// quantised weights kept as codes) and one value per result pair: each zero goes into
// the constant the conversion subtracts, one instruction a pair fewer, bit for bit the
// same (tilus::int4x8_paired_minus_to_half: exact for integers of magnitude up to 1024 in
// half, 64 in bfloat16). The conversion's own result is then left unread, and dropped by
// the compiler unless something else reads it. Returns false, having emitted nothing,
// where that does not apply.
bool CudaEmitter::emit_zero_fold(const Instruction& i) {
  auto cast = paired_casts_.find(i.inputs[0]->id);
  auto zero_type = integer_casts_.find(i.inputs[1]->id);
  if (cast == paired_casts_.end() || zero_type == integer_casts_.end()) return false;
  const PairedCast& pc = cast->second;
  const Tensor& out = i.output;
  const RegisterLayout& layout = plan_.layout_of(out);
  const PackedWords* words = packed_words_of(pc.codes);
  if (pc.scope != scopes_.back() || !words || words->name != pc.words || plan_.layout_of(i.inputs[0]) != layout ||
      i.inputs[1]->shape == out->shape)
    return false;  // a loop between them, other words, another layout, or a zero per element
  // |z| < 2^(bits - 1) (signed) or 2^bits: within 1024 (half) or 64 (bfloat16)
  const DataType zt = zero_type->second;
  const int magnitude_bits = dtype_info(zt.kind).is_signed ? zt.bits() - 1 : zt.bits();
  if (magnitude_bits > (pc.to_half ? 10 : 6)) return false;
  auto [zeros, index] = operand_elements(i.inputs[1], out, layout);
  if (!one_operand_a_pair(index)) return false;  // one zero a pair
  const std::string dst = i.defines_output ? declare_reg(out, layout) : reg_name(out);
  const std::string s = pc.is_signed ? "true" : "false";
  const int64_t nz = *std::max_element(index.begin(), index.end()) + 1;  // the zeros the pairs read
  const std::string lo = fresh("tl_zero_lo"), hi = pc.to_half ? fresh("tl_zero_hi") : lo;
  line("// " + out->name + " = " + i.inputs[0]->name + " - " + i.inputs[1]->name +
       ": the integer zero points folded into the conversion's constants");
  line("tilus::uint32_t " + lo + "[" + std::to_string(nz) + "];");
  if (pc.to_half) {
    line("tilus::uint32_t " + hi + "[" + std::to_string(nz) + "];");
    flat_loop(*this, nz, lo + "[i] = tilus::paired_minus_low<" + s + ">(" + zeros + "[i]); " + hi +
                             "[i] = tilus::paired_minus_high<" + s + ">(" + zeros + "[i]);");
  } else {
    flat_loop(*this, nz, lo + "[i] = tilus::paired_minus_bf16<" + s + ">(" + zeros + "[i]);");
  }
  const std::string fn = std::string("tilus::int4x8_paired_minus_to_") + (pc.to_half ? "half" : "bf16") + "<" + s + ">(";
  for (size_t q = 0; q < pc.word_of_group.size(); ++q) {
    std::string call = fn + dst + " + " + std::to_string(8 * q) + ", " + pc.words + "[" +
                       std::to_string(pc.word_of_group[q]) + "]";
    for (int r = 0; r < 4; ++r)  // pair r: a low pair (r even) or, half, a high one
      call += ", " + ((r % 2 == 0) ? lo : hi) + "[" + std::to_string(index[8 * q + 2 * r]) + "]";
    line(call + ");");
  }
  return true;
}

// codes * scale, for the result of a packed_cast of finite small-float codes (its value
// unchanged since, its words still in scope) and scales with one value a result pair (a
// group's scale, broadcast along k): the multiplication by 2^(15 - bias) that rebiases
// each placed code (tilus::rebias_half) moves into the scales, once a scale, leaving one
// multiplication a pair (tilus::times_pair of tilus::packed_place's pairs). Exact while
// scale * 2^(15 - bias) is finite in the 16-bit type (|scale| < 16 for float6_e3m2 to
// half): the product of a placed code and it is then the one rounding of code * scale,
// bit for bit the conversion then the multiplication, which the else branch does where a
// scale does not fit. Both branches multiply the same placed pairs (the cast's own
// result is then dead and dropped). Returns false, having emitted nothing, where that
// does not apply.
bool CudaEmitter::emit_scale_fold(const Instruction& i) {
  if (!options_.fold_scales) return false;
  int side = 0;
  auto cast = float_packed_casts_.find(i.inputs[0]->id);
  if (cast == float_packed_casts_.end()) {
    side = 1;
    cast = float_packed_casts_.find(i.inputs[1]->id);
  }
  if (cast == float_packed_casts_.end()) return false;
  const FloatPackedCast& pc = cast->second;
  const Tensor& values = i.inputs[side];
  const Tensor& scales = i.inputs[1 - side];
  const Tensor& out = i.output;
  const RegisterLayout& layout = plan_.layout_of(out);
  const PackedWords* words = packed_words_of(pc.codes);
  if (pc.scope != scopes_.back() || !words || words->name != pc.words || plan_.layout_of(values) != layout ||
      scales->shape == out->shape || scales->dtype != out->dtype || layout.local_size() % 2 != 0)
    return false;  // a loop between them, other words, another layout, or a scale per element
  auto [scale_regs, index] = operand_elements(scales, out, layout);
  if (!one_operand_a_pair(index)) return false;  // one scale a pair
  const int64_t ns = *std::max_element(index.begin(), index.end()) + 1;
  const std::string to = ctype(out->dtype), from = ctype(pc.codes->dtype), n = std::to_string(index.size());
  const std::string dst = i.defines_output ? declare_reg(out, layout) : reg_name(out);
  const std::string fits = fresh("tl_scales_fit"), folded = fresh("tl_rebiased_scales"),
                    placed = fresh("tl_placed");
  line("// " + out->name + " = " + values->name + " * " + scales->name +
       ": the codes' rebias folded into the scales, one multiplication a pair (where they fit)");
  line("tilus::uint32_t " + placed + "[" + std::to_string(index.size() / 2) + "];");
  line("tilus::packed_place<" + to + ", " + from + ", " + n + ">(" + placed + ", " + pc.words + ");");
  line("bool " + fits + " = true;");
  line("tilus::uint32_t " + folded + "[" + std::to_string(ns) + "];");
  flat_loop(*this, ns, folded + "[i] = tilus::rebiased_scale<" + to + ", " + from + ">(" + scale_regs + "[i], " +
                           fits + ");");
  const std::string times = "tilus::times_pair<" + to + ">(";
  open("if (" + fits + ")");
  for (size_t l = 0; l < index.size(); l += 2)
    line("tilus::store_word(" + dst + " + " + std::to_string(l) + ", " + times + placed + "[" + std::to_string(l / 2) +
         "], " + folded + "[" + std::to_string(index[l]) + "]));");
  close();
  open("else");  // the rebias, then the scale: packed_cast then the multiplication
  for (size_t l = 0; l < index.size(); l += 2)
    line("tilus::store_word(" + dst + " + " + std::to_string(l) + ", " + times + "tilus::rebias_placed<" + to + ", " +
         from + ">(" + placed + "[" + std::to_string(l / 2) + "]), tilus::splat_pair(" + scale_regs + "[" +
         std::to_string(index[l]) + "])));");
  close();
  return true;
}

void CudaEmitter::emit_elementwise(const Instruction& i) {
  const Tensor& out = i.output;
  const RegisterLayout& layout = plan_.layout_of(out);
  DataType operand_type = i.inputs.size() == 2 ? promote(i.inputs[0]->dtype, i.inputs[1]->dtype)
                                               : i.args[0]->dtype;
  if (i.inputs.size() == 2 && i.binary_op == BinaryOp::Sub && pairs_16bit_float(i, operand_type) &&
      emit_zero_fold(i))
    return;
  if (i.inputs.size() == 2 && i.binary_op == BinaryOp::Mul && pairs_16bit_float(i, operand_type) &&
      emit_scale_fold(i))
    return;
  std::string a = cast_to(operand_type, i.inputs[0]->dtype, operand_at(i.inputs[0], out, layout));
  std::string b;
  if (i.inputs.size() == 2) {
    b = cast_to(operand_type, i.inputs[1]->dtype, operand_at(i.inputs[1], out, layout));
  } else {
    std::string scalar = fresh("tl_scalar");
    line("const " + ctype(operand_type) + " " + scalar + " = " + expr(i.args[0]) + ";");
    b = scalar;
    if (i.scalar_lhs) std::swap(a, b);
  }
  DataType result = is_comparison(i.binary_op) || is_logical(i.binary_op) ? dtypes::boolean : operand_type;
  std::string dst = i.defines_output ? declare_reg(out, layout) : reg_name(out);
  const int64_t n = layout.local_size();
  if (pairs_16bit_float(i, operand_type) && n % 2 == 0) {
    // Two elements per f16x2 / bf16x2 instruction: the operands of elements p and p + 1
    // are read with i bound to each (a and b are expressions of i), then one paired op.
    const std::string t = ctype(out->dtype);
    line("#pragma unroll");
    open("for (int tl_p = 0; tl_p < " + std::to_string(n) + "; tl_p += 2)");
    line(t + " x0, x1, y0, y1;");
    line("{ const int i = tl_p; x0 = " + a + "; y0 = " + b + "; }");
    line("{ const int i = tl_p + 1; x1 = " + a + "; y1 = " + b + "; }");
    line("tilus::" + std::string(binary_helper(i.binary_op)) + "2(" + dst + " + tl_p, x0, x1, y0, y1);");
    close();
    return;
  }
  std::string value = "tilus::" + std::string(binary_helper(i.binary_op)) + "(" + a + ", " + b + ")";
  flat_loop(*this, n, dst + "[i] = " + cast_to(out->dtype, result, value) + ";");
}

void CudaEmitter::emit_unary(const Instruction& i) {
  const RegisterLayout& layout = plan_.layout_of(i.output);
  std::string x = reg_operand(i.inputs[0], layout);
  std::string dst = declare_reg(i.output, layout);
  std::string value = i.unary_op == UnaryOp::Neg ? "tilus::neg(" + x + "[i])" : "!" + x + "[i]";
  flat_loop(*this, layout.local_size(), dst + "[i] = " + value + ";");
}

void CudaEmitter::emit_where(const Instruction& i) {
  const Tensor& out = i.output;
  const RegisterLayout& layout = plan_.layout_of(out);
  std::string c = operand_at(i.inputs[0], out, layout);
  std::string a = cast_to(out->dtype, i.inputs[1]->dtype, operand_at(i.inputs[1], out, layout));
  std::string b = cast_to(out->dtype, i.inputs[2]->dtype, operand_at(i.inputs[2], out, layout));
  std::string dst = declare_reg(out, layout);
  flat_loop(*this, layout.local_size(), dst + "[i] = " + c + " ? " + a + " : " + b + ";");
}

void CudaEmitter::emit_assign(const Instruction& i) {
  const Tensor& src = i.inputs[0];
  write_back(i.output, reg_name(src), plan_.layout_of(src));
}

void CudaEmitter::emit_semaphore(const Instruction& i) {
  const char* fn = i.op == Op::LockSemaphore ? "lock_semaphore" : "release_semaphore";
  std::string ok;
  const Expr& addr = i.args[0];
  if (addr->kind == ExprKind::ElementAddr) {  // ~g[i]: checked against g's tensor
    const GlobalInfo& g = globals_.at(addr->tensor->id);
    Expr off = make_int(0);
    for (size_t d = 0; d < addr->indices.size(); ++d)
      off = make_binary(BinaryOp::Add, off, make_binary(BinaryOp::Mul, addr->indices[d], g.stride_v[d]));
    ok = bounds_guard(fn, addr->tensor, g, "true", off, "4", addr->indices);
  }
  // The address is the same in every thread, so a skipped semaphore is skipped by the
  // whole block (or thread group) and its barriers stay matched.
  if (!ok.empty()) open("if (" + ok + ")");
  if (groups_.empty()) {
    line(std::string("tilus::") + fn + "(" + expr(i.args[0]) + ", " + expr(i.args[1]) + ");");
  } else {
    // inside a thread group: its first thread waits or publishes, its barrier orders the rest
    const std::string leader = "if (threadIdx.x == " + std::to_string(group_begin()) + ") ";
    if (i.op == Op::LockSemaphore) {
      line(leader + "tilus::semaphore_wait(" + expr(i.args[0]) + ", " + expr(i.args[1]) + ");");
      line(block_sync());
    } else {
      line(block_sync());
      line(leader + "tilus::semaphore_publish(" + expr(i.args[0]) + ", " + expr(i.args[1]) + ");");
    }
  }
  if (!ok.empty()) close();
}

void CudaEmitter::emit_print(const Instruction& i) {
  const Tensor& t = i.inputs[0];
  TILUS_CHECK(t->scope == Scope::Register, "ValueError",
              "print_tensor of shared tensors runs only in the CPU interpreter");
  const RegisterLayout& layout = plan_.layout_of(t);
  std::string r = reg_name(t);
  line("// print_tensor: every thread of block (0, 0, 0) prints its elements");
  open("if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0)");
  for_each_local(layout, 1, [&](const Element& el) {
    const std::string mask = tile_mask(layout, t->shape, el);
    std::string fmt = "\"" + i.text + " [";
    std::string args;
    for (size_t d = 0; d < el.coords.size(); ++d) {
      fmt += (d ? ", %d" : "%d");
      args += ", (int)(" + expr(el.coords[d]) + ")";
    }
    fmt += "] = %f\\n\"";
    line((mask.empty() ? "" : "if (" + mask + ") ") + "printf(" + fmt + args + ", (double)tilus::cast<float>(" + r + "[" + expr(el.local) + "]));");
  });
  close();
}

}  // namespace tilus
