// Prefix scans of a register tile along one dimension: scan(op = add, mul, max, min, and
// the bitwise and, or, xor of integer tiles), inclusive or exclusive; cumsum and cumprod
// are scan with add and mul.
//
// Operands: inputs[0] = x, dims[0] = the dimension, text = the op, int_attr = exclusive.
// The result has x's shape, dtype and layout (LayoutRule::SameAsInputs).
//
// CUDA lowering, read off the layout: the modes of dimension d are the digits of a
// position along d (outer to inner). Going from the innermost mode outwards, every
// element holds the scan of its block (the positions that differ from it only in the
// modes done so far); the next mode adds, to each element, the totals of the blocks
// before its own along that mode. A block's total is the value of its last element
// (inner digits at their maximum: the same thread, a shuffle from the lane whose bits
// of those modes are all ones, or shared memory across warps). The totals before a
// digit are combined in the thread for a local mode, with a shfl_up ladder for a mode
// of lanes, and through shared memory for a mode of warps. Positions of a padded
// layout past the tile's end come after every real one, so they change nothing.
#include <cmath>
#include <cstdint>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"
#include "ops/reduction.h"

namespace tilus::ops {

namespace {

Combine scan_combine(const std::string& op) {
  if (op == "add") return Combine::Sum;
  if (op == "mul") return Combine::Mul;
  if (op == "max") return Combine::Max;
  if (op == "and") return Combine::And;
  if (op == "or") return Combine::Or;
  if (op == "xor") return Combine::Xor;
  TILUS_ASSERT(op == "min", "scan op ", op);
  return Combine::Min;
}

OutputType scan_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() == 1, "ValueError", "scan takes one tensor, got ", inst.inputs.size());
  const Tensor& x = inst.inputs[0];
  TILUS_CHECK(x->scope == Scope::Register, "TypeError", "scan: x must be a register tensor, got a ",
              scope_name(x->scope), " tensor (", x->type_str(), ")");
  TILUS_CHECK(x->dtype.is_float() || x->dtype.is_integer(), "TypeError",
              "scan: x must be a float or integer tensor, got ", x->dtype.name());
  const bool bitwise = inst.text == "and" || inst.text == "or" || inst.text == "xor";
  TILUS_CHECK(inst.text == "add" || inst.text == "mul" || inst.text == "max" || inst.text == "min" || bitwise,
              "ValueError", "scan: op must be 'add', 'mul', 'max', 'min', 'and', 'or' or 'xor', got '",
              inst.text, "'");
  TILUS_CHECK(!bitwise || x->dtype.is_integer(), "TypeError", "scan: op='", inst.text,
              "' is bitwise and needs an integer tensor, got ", x->dtype.name(), " (", x->type_str(), ")");
  TILUS_CHECK(inst.dims.size() == 1, "ValueError", "scan: dim must be one integer");
  const int rank = x->rank();
  int d = inst.dims[0];
  TILUS_CHECK(rank >= 1 && d >= -rank && d < rank, "ValueError", "scan: dim=", d,
              " is not a dimension of ", x->type_str(), " (rank ", rank, ")");
  if (d < 0) d += rank;
  inst.dims[0] = d;
  return {x->dtype, x->shape};
}

// Floats combine in double and round each output once; integers wrap to the dtype.
void scan_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), inst.output->dtype);
  const Combine c = scan_combine(inst.text);
  const bool exclusive = inst.int_attr != 0;
  const std::vector<int64_t>& shape = *x.shape;
  const int d = inst.dims[0];
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < d; ++k) outer *= shape[k];
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  const int64_t n = shape[d];
  const ScalarKind kind = x.dtype.kind;
  const int b = interp::element_bytes(x.dtype);
  const bool wide_unsigned = x.dtype.is_integer() && !x.dtype.is_signed() && x.dtype.bits() == 64;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto in = [&](int64_t k) { return x.data + ((o * n + k) * inner + i) * b; };
      auto out = [&](int64_t k) { return y.data + ((o * n + k) * inner + i) * b; };
      if (x.dtype.is_float()) {
        double acc = c == Combine::Sum ? 0.0 : c == Combine::Mul ? 1.0
                   : c == Combine::Max ? -HUGE_VAL : HUGE_VAL;
        for (int64_t k = 0; k < n; ++k) {
          const double v = interp::load_f(in(k), kind);
          if (exclusive) interp::store_f(out(k), kind, acc);
          if (c == Combine::Sum) acc += v;
          else if (c == Combine::Mul) acc *= v;
          else if (acc == acc && (v != v || (c == Combine::Max ? v > acc : v < acc))) acc = v;
          if (!exclusive) interp::store_f(out(k), kind, acc);
        }
      } else {
        uint64_t acc = c == Combine::Sum || c == Combine::Or || c == Combine::Xor ? 0
                     : c == Combine::And ? ~uint64_t{0} : 1;
        bool first = true;  // max/min: the identity is the dtype's extreme; start from x[0]
        for (int64_t k = 0; k < n; ++k) {
          const int64_t v = interp::load_i(in(k), kind);
          if (exclusive) {
            int64_t e = static_cast<int64_t>(acc);
            if (first && (c == Combine::Max || c == Combine::Min)) {
              const bool u = !x.dtype.is_signed();
              const int bits = static_cast<int>(x.dtype.bits());
              if (c == Combine::Max) e = u ? 0 : (bits == 64 ? INT64_MIN : -(int64_t{1} << (bits - 1)));
              else e = u ? (bits == 64 ? -1 : (int64_t{1} << bits) - 1)
                         : (bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1);
            }
            interp::store_i(out(k), kind, interp::wrap_int(e, kind));
          }
          if (c == Combine::Sum) acc += static_cast<uint64_t>(v);
          else if (c == Combine::Mul) acc *= static_cast<uint64_t>(v);
          else if (c == Combine::And) acc &= static_cast<uint64_t>(v);
          else if (c == Combine::Or) acc |= static_cast<uint64_t>(v);
          else if (c == Combine::Xor) acc ^= static_cast<uint64_t>(v);
          else if (first) acc = static_cast<uint64_t>(v);
          else {
            const int64_t a = static_cast<int64_t>(acc);
            const bool greater = wide_unsigned ? static_cast<uint64_t>(v) > acc : v > a;
            const bool less = wide_unsigned ? static_cast<uint64_t>(v) < acc : v < a;
            if (c == Combine::Max ? greater : less) acc = static_cast<uint64_t>(v);
          }
          first = false;
          if (!exclusive) interp::store_i(out(k), kind, interp::wrap_int(static_cast<int64_t>(acc), kind));
        }
      }
    }
  }
}

void scan_emit(CudaEmitter& e, const Instruction& inst) {
  const Tensor& x = inst.inputs[0];
  const Tensor& y = inst.output;
  const int d = inst.dims[0];
  const bool exclusive = inst.int_attr != 0;
  const RegisterLayout& layout = e.plan_.layout_of(y);
  const CudaCombine cc = cuda_combine(e, scan_combine(inst.text), x->dtype);
  const std::string& acc_t = cc.acc_t;
  auto f = [&](const std::string& a, const std::string& b) { return cc.helper + "(" + a + ", " + b + ")"; };
  const int64_t n = layout.local_size();
  const int64_t threads = e.threads_;
  const std::string src = e.reg_operand(x, layout);
  const std::string N = std::to_string(n);

  // Each mode: its size, and its stride in the local index or the thread index.
  const std::vector<int> dims = layout.mode_dims();
  const int modes = static_cast<int>(layout.mode_shape.size());
  std::vector<int64_t> local_stride(modes, 0), thread_stride(modes, 0);
  int64_t s = 1;
  for (size_t k = layout.local_modes.size(); k-- > 0;) {
    local_stride[layout.local_modes[k]] = s;
    s *= layout.mode_shape[layout.local_modes[k]];
  }
  s = 1;
  for (size_t k = layout.spatial_modes.size(); k-- > 0;) {
    const int m = layout.spatial_modes[k];
    if (m >= 0) thread_stride[m] = s;
    s *= m < 0 ? -m : layout.mode_shape[m];
  }

  const std::string v = e.fresh("tl_scan"), p = e.fresh("tl_before"), t = e.fresh("tl_total");
  e.line(acc_t + " " + v + "[" + N + "], " + p + "[" + N + "], " + t + "[" + N + "];");
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + N + "; ++i)");
  e.line(v + "[i] = tilus::cast<" + acc_t + ">(" + src + "[i]);");
  e.line(p + "[i] = " + cc.identity + ";");
  e.close();

  std::vector<int> done;               // modes of d already scanned (inner ones)
  for (int m = modes - 1; m >= 0; --m) {
    if (dims[m] != d) continue;
    const int64_t size = layout.mode_shape[m];
    // Block totals: the value at the block's last element (done modes at their maximum).
    int64_t thread_mask = 0;
    std::vector<int64_t> last(n);
    for (int64_t l = 0; l < n; ++l) {
      int64_t j = l;
      for (int q : done) {
        const int64_t ls = local_stride[q], ms = layout.mode_shape[q];
        if (ls) j += (ms - 1 - j / ls % ms) * ls;
      }
      last[l] = j;
    }
    for (int q : done)
      if (thread_stride[q]) thread_mask |= thread_stride[q] * (layout.mode_shape[q] - 1);
    if (thread_mask == 0) {
      for (int64_t l = 0; l < n; ++l) e.line(t + "[" + std::to_string(l) + "] = " + v + "[" + std::to_string(last[l]) + "];");
    } else if (thread_mask < 32) {
      for (int64_t l = 0; l < n; ++l)
        e.line(t + "[" + std::to_string(l) + "] = __shfl_sync(0xffffffffu, " + v + "[" + std::to_string(last[l]) +
               "], (tl_tid | " + std::to_string(thread_mask) + ") & 31);");
    } else {
      const int64_t offset = e.smem_.allocate(threads * n * cc.acc_bytes);
      e.open("{  // scan: block totals from other warps through shared memory");
      const std::string buf = e.fresh("tl_scan_buf");
      e.line(acc_t + "* " + buf + " = reinterpret_cast<" + acc_t + "*>(tl_smem + " + std::to_string(offset) + ");");
      e.line(e.block_sync());
      e.line("#pragma unroll");
      e.open("for (int i = 0; i < " + N + "; ++i)");
      e.line(buf + "[i * " + std::to_string(threads) + " + tl_tid] = " + v + "[i];");
      e.close();
      e.line(e.block_sync());
      for (int64_t l = 0; l < n; ++l)
        e.line(t + "[" + std::to_string(l) + "] = " + buf + "[" + std::to_string(last[l] * threads) + " + (tl_tid | " +
               std::to_string(thread_mask) + ")];");
      e.line(e.block_sync());
      e.close();
      e.smem_.release(offset);
    }
    // The totals of the blocks before each element's own along mode m.
    const std::string q = e.fresh("tl_q");
    e.line(acc_t + " " + q + "[" + N + "];");
    if (local_stride[m]) {
      const int64_t ls = local_stride[m];
      for (int64_t l = 0; l < n; ++l) {
        const int64_t a = l / ls % size;
        std::string acc = cc.identity;
        for (int64_t b = 0; b < a; ++b) acc = f(acc, t + "[" + std::to_string(l - (a - b) * ls) + "]");
        e.line(q + "[" + std::to_string(l) + "] = " + acc + ";");
      }
    } else {
      const int64_t ts = thread_stride[m];
      const std::string digit = e.fresh("tl_digit");
      e.line("const int " + digit + " = (tl_tid / " + std::to_string(ts) + ") % " + std::to_string(size) + ";");
      if (ts * size <= 32) {
        // Inclusive scan of the totals over the mode's lanes (a shfl_up ladder), then
        // shifted by one lane for the totals strictly before.
        e.line("#pragma unroll");
        e.open("for (int i = 0; i < " + N + "; ++i)");
        e.line(acc_t + " r = " + t + "[i];");
        for (int64_t off = 1; off < size; off *= 2) {
          e.line("{ const " + acc_t + " o = __shfl_up_sync(0xffffffffu, r, " + std::to_string(off * ts) + "); if (" +
                 digit + " >= " + std::to_string(off) + ") r = " + f("o", "r") + "; }");
        }
        e.line("{ const " + acc_t + " o = __shfl_up_sync(0xffffffffu, r, " + std::to_string(ts) + "); " + q + "[i] = " +
               digit + " > 0 ? o : " + cc.identity + "; }");
        e.close();
      } else {
        const int64_t offset = e.smem_.allocate(threads * n * cc.acc_bytes);
        e.open("{  // scan across warps through shared memory");
        const std::string buf = e.fresh("tl_scan_buf");
        e.line(acc_t + "* " + buf + " = reinterpret_cast<" + acc_t + "*>(tl_smem + " + std::to_string(offset) + ");");
        e.line(e.block_sync());
        e.line("#pragma unroll");
        e.open("for (int i = 0; i < " + N + "; ++i)");
        e.line(buf + "[i * " + std::to_string(threads) + " + tl_tid] = " + t + "[i];");
        e.close();
        e.line(e.block_sync());
        e.line("#pragma unroll");
        e.open("for (int i = 0; i < " + N + "; ++i)");
        e.line(q + "[i] = " + cc.identity + ";");
        e.open("for (int b = 0; b < " + digit + "; ++b)");
        e.line(q + "[i] = " + f(q + "[i]", buf + "[i * " + std::to_string(threads) + " + tl_tid - (" + digit + " - b) * " +
                                             std::to_string(ts) + "]") + ";");
        e.close();
        e.close();
        e.line(e.block_sync());
        e.close();
        e.smem_.release(offset);
      }
    }
    e.line("#pragma unroll");
    e.open("for (int i = 0; i < " + N + "; ++i)");
    e.line(v + "[i] = " + f(q + "[i]", v + "[i]") + ";");
    e.line(p + "[i] = " + f(q + "[i]", p + "[i]") + ";");
    e.close();
    done.push_back(m);
  }

  // Exclusive: what the blocks before each element added; inclusive: that and itself.
  const std::string ctype = CudaEmitter::ctype(y->dtype);
  const std::string dst = inst.defines_output ? e.declare_reg(y, layout) : e.reg_name(y);
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + N + "; ++i)");
  e.line(dst + "[i] = tilus::cast<" + ctype + ">(" + (exclusive ? p : v) + "[i]);");
  e.close();
}

// ---- IR text and the verifier's operand checks
std::string scan_print(const Instruction& i) {
  return inst_text::call(i, inst_text::ref(i.inputs[0]) + ", dim=" + std::to_string(i.dims.at(0)) + ", op='" + i.text +
                                "', exclusive=" + (i.int_attr ? "True" : "False"));
}
void scan_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.scope(i, i.inputs[0], Scope::Register, "the operand");
  c.scope(i, i.output, Scope::Register, "the output");
  c.same_shape(i, i.inputs[0], i.output);
}

}  // namespace

// Across warps a scan exchanges through shared memory at a barrier, as a reduction does.
const OpHandler kScan = {scan_check, same_layout_as_inputs, scan_interpret, scan_emit,
                         scan_print, scan_verify, reduction_wgmma_hazard};

}  // namespace tilus::ops
