// Reductions of a register tile over one dimension: sum, max, min, any, all. One
// implementation; the op only picks the combine (Combine below: its identity, how two
// partial results merge, the type partial results are kept in).
//
// Layout rule (LayoutRule::Derived): the result's layout is the operand's with the
// reduced dimension taken out (reduced_layout): its local modes are dropped and its
// spatial modes become replication, so each thread ends up holding the results of
// exactly the rows it held operands of, and the threads that shared a row all hold it.
//
// CUDA lowering, read off the operand's layout: each thread combines its own elements of
// a row; then threads that hold parts of the same row combine across lanes with
// __shfl_xor_sync (a butterfly: every lane ends with the same result, in the same
// order, so replicas agree bit for bit); only spatial modes that span warps go through
// shared memory.
#include <algorithm>
#include <cstring>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"
#include "ops/reduction.h"

namespace tilus::ops {

RegisterLayout reduced_layout(const RegisterLayout& in, int d, bool keepdim) {
  const std::vector<int> dims = in.mode_dims();
  std::vector<int> index(in.mode_shape.size(), -1);
  std::vector<int64_t> modes;
  for (size_t m = 0; m < in.mode_shape.size(); ++m) {
    if (dims[m] == d) continue;
    index[m] = static_cast<int>(modes.size());
    modes.push_back(in.mode_shape[m]);
  }
  std::vector<int> spatial, local;
  for (int m : in.spatial_modes) {
    if (m < 0) spatial.push_back(m);
    else if (dims[m] == d) spatial.push_back(-static_cast<int>(in.mode_shape[m]));
    else spatial.push_back(index[m]);
  }
  for (int m : in.local_modes)
    if (dims[m] != d) local.push_back(index[m]);
  std::vector<int64_t> shape = in.shape;
  shape[d] = 1;
  if (!keepdim) shape.erase(shape.begin() + d);
  return make_register_layout(shape, modes, spatial, local);
}

RegisterLayout broadcast_layout(const RegisterLayout& out, const std::vector<int64_t>& out_shape,
                                const std::vector<int64_t>& shape) {
  const int R = out.rank(), lead = R - static_cast<int>(shape.size());
  TILUS_ASSERT(lead >= 0 && static_cast<int>(out_shape.size()) == R,
               "broadcast_layout: operand of rank ", shape.size(), " against rank ", R);
  RegisterLayout l = out;
  // Highest dimension first: reducing d leaves the lower dimensions' indices as they are.
  for (int d = R - 1; d >= 0; --d) {
    if (d < lead) l = reduced_layout(l, d, false);
    else if (shape[d - lead] == 1 && out_shape[d] != 1) l = reduced_layout(l, d, true);
    else TILUS_ASSERT(shape[d - lead] == out_shape[d], "broadcast_layout: shapes do not broadcast");
  }
  return l;
}

namespace {

// The handlers below are registered only for the reduction ops.
Combine combine_of(Op op) {
  if (op == Op::Max) return Combine::Max;
  if (op == Op::Min) return Combine::Min;
  if (op == Op::Any) return Combine::Any;
  if (op == Op::All) return Combine::All;
  TILUS_ASSERT(op == Op::Sum, "not a reduction: ", op_name(op));
  return Combine::Sum;
}

bool is_logical(Combine c) { return c == Combine::Any || c == Combine::All; }
bool is_bitwise(Combine c) { return c == Combine::And || c == Combine::Or || c == Combine::Xor; }

OutputType reduce_check(Instruction& inst) {
  const char* name = op_name(inst.op);
  const Combine c = combine_of(inst.op);
  TILUS_CHECK(inst.inputs.size() == 1, "ValueError", name, " takes one tensor, got ", inst.inputs.size());
  const Tensor& x = inst.inputs[0];
  TILUS_CHECK(x->scope == Scope::Register, "TypeError", name, ": x must be a register tensor, got a ",
              scope_name(x->scope), " tensor (", x->type_str(), ")");
  if (is_logical(c)) {
    TILUS_CHECK(x->dtype.is_bool(), "TypeError", name, ": x must be a boolean tensor, got ",
                x->dtype.name(), "; compare it first, e.g. x != 0");
  } else {
    TILUS_CHECK(x->dtype.is_float() || x->dtype.is_integer(), "TypeError", name,
                ": x must be a float or integer tensor, got ", x->dtype.name());
  }
  TILUS_CHECK(inst.dims.size() == 1, "ValueError", name, ": dim must be one integer");
  const int rank = x->rank();
  int d = inst.dims[0];
  TILUS_CHECK(d >= -rank && d < rank, "ValueError", name, ": dim=", d, " is not a dimension of ",
              x->type_str(), " (rank ", rank, ")");
  if (d < 0) d += rank;
  inst.dims[0] = d;
  const bool keepdim = inst.int_attr != 0;
  std::vector<int64_t> shape = x->shape;
  shape[d] = 1;
  if (!keepdim) shape.erase(shape.begin() + d);
  return {is_logical(c) ? dtypes::boolean : x->dtype, shape};
}

void reduce_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  const int d = inst.dims[0];
  const bool keepdim = inst.int_attr != 0;
  rules.derive(inst.inputs[0], inst.output,
               [d, keepdim](const RegisterLayout& in) { return reduced_layout(in, d, keepdim); });
}

// Floats combine in double (sum rounds once at the end; max/min propagate NaN, as
// torch); integers wrap to the dtype; any/all test != 0.
void reduce_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), inst.output->dtype);
  const Combine c = combine_of(inst.op);
  const std::vector<int64_t>& shape = *x.shape;
  const int d = inst.dims[0];
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < d; ++k) outer *= shape[k];
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  const int64_t n = shape[d];
  const ScalarKind kind = x.dtype.kind;
  const int b = interp::element_bytes(x.dtype);
  const int ob = interp::element_bytes(y.dtype);
  const bool wide_unsigned = x.dtype.is_integer() && !x.dtype.is_signed() && x.dtype.bits() == 64;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      uint8_t* out = y.data + (o * inner + i) * ob;
      auto at = [&](int64_t k) { return x.data + ((o * n + k) * inner + i) * b; };
      if (is_logical(c)) {
        bool acc = c == Combine::All;
        for (int64_t k = 0; k < n; ++k) {
          const bool v = interp::load_i(at(k), kind) != 0;
          acc = c == Combine::All ? (acc && v) : (acc || v);
        }
        interp::store_i(out, y.dtype.kind, acc ? 1 : 0);
      } else if (x.dtype.is_float()) {
        double acc = interp::load_f(at(0), kind);
        for (int64_t k = 1; k < n; ++k) {
          const double v = interp::load_f(at(k), kind);
          if (c == Combine::Sum) acc += v;
          else if (acc != acc) continue;
          else if (v != v || (c == Combine::Max ? v > acc : v < acc)) acc = v;
        }
        interp::store_f(out, kind, acc);
      } else {
        int64_t acc = interp::load_i(at(0), kind);
        for (int64_t k = 1; k < n; ++k) {
          const int64_t v = interp::load_i(at(k), kind);
          if (c == Combine::Sum) {
            acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
            continue;
          }
          const bool greater = wide_unsigned ? static_cast<uint64_t>(v) > static_cast<uint64_t>(acc) : v > acc;
          const bool less = wide_unsigned ? static_cast<uint64_t>(v) < static_cast<uint64_t>(acc) : v < acc;
          if (c == Combine::Max ? greater : less) acc = v;
        }
        interp::store_i(out, kind, interp::wrap_int(acc, kind));
      }
    }
  }
}

// Sum: float for floats up to 32 bits, double for float64, unsigned integers (wrapping
// addition) for integer types. Max/min: float/double, or the integer type widened to
// 32 bits (what shuffles move). Any/all: int (shuffles do not move bool).
}  // namespace

CudaCombine cuda_combine(CudaEmitter& e, Combine c, DataType t) {
  CudaCombine r;
  if (is_logical(c)) r.acc_t = "int";
  else if (t == dtypes::float64) r.acc_t = "double";
  else if (t.is_float()) r.acc_t = "float";
  else if (c == Combine::Sum || c == Combine::Mul || is_bitwise(c) || !t.is_signed()) r.acc_t = t.bits() > 32 ? "unsigned long long" : "unsigned int";
  else r.acc_t = t.bits() > 32 ? "long long" : "int";
  r.acc_bytes = r.acc_t == "double" || r.acc_t.find("long long") != std::string::npos ? 8 : 4;
  const bool is_f = r.acc_t == "float" || r.acc_t == "double";
  std::string body;
  switch (c) {
    case Combine::Sum: r.identity = "0"; body = "a + b"; break;
    case Combine::Mul: r.identity = "1"; body = "a * b"; break;
    case Combine::Any: r.identity = "0"; body = "a | b"; break;
    case Combine::All: r.identity = "1"; body = "a & b"; break;
    // Bitwise: on the unsigned accumulator a narrower dtype is sign- or zero-extended
    // into, so its own bits come out right when the result is cast back.
    case Combine::And:
      r.identity = r.acc_bytes == 8 ? "0xffffffffffffffffull" : "0xffffffffu";
      body = "a & b";
      break;
    case Combine::Or: r.identity = "0"; body = "a | b"; break;
    case Combine::Xor: r.identity = "0"; body = "a ^ b"; break;
    case Combine::Max:
    case Combine::Min: {
      const char* cmp = c == Combine::Max ? ">" : "<";
      // Floats: a NaN wins, as in torch. float: max.NaN / min.NaN (sm_80), one instruction
      // (the compare-and-select spelling costs three); double: a NaN first operand stays
      // first so every lane of a butterfly picks the same one.
      if (r.acc_t == "float")
        body = std::string("tilus::") + (c == Combine::Max ? "max" : "min") + "_nan(a, b)";
      else
        body = is_f ? std::string("(a ") + cmp + " b || a != a) ? a : b" : std::string("(a ") + cmp + " b) ? a : b";
      if (is_f) {  // -inf / +inf, spelled by their bits (no math_constants.h)
        if (r.acc_t == "float")
          r.identity = c == Combine::Max ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)";
        else
          r.identity = c == Combine::Max ? "__longlong_as_double(0xfff0000000000000ll)"
                                         : "__longlong_as_double(0x7ff0000000000000ll)";
      } else {
        const bool u = r.acc_t.rfind("unsigned", 0) == 0;
        const bool wide = r.acc_t.find("long long") != std::string::npos;
        // The dtype's own extreme: a narrower integer widened to 32 bits keeps its range.
        const int bits = static_cast<int>(t.bits());
        if (c == Combine::Max) {
          r.identity = u ? "0" : (wide ? "(-9223372036854775807ll - 1)"
                                       : "(" + std::to_string(-(int64_t{1} << (bits - 1))) + ")");
        } else {
          r.identity = u ? (wide ? "0xffffffffffffffffull" : std::to_string((uint64_t{1} << bits) - 1) + "u")
                         : (wide ? "9223372036854775807ll" : std::to_string((int64_t{1} << (bits - 1)) - 1));
        }
      }
      break;
    }
  }
  std::string tag = r.acc_t;
  for (char& ch : tag)
    if (ch == ' ') ch = '_';
  const char* names[] = {"sum", "max", "min", "any", "all", "mul", "and", "or", "xor"};
  r.helper = std::string("tl_reduce_") + names[static_cast<int>(c)] + "_" + tag;
  if (e.helper_names_.insert(r.helper).second) {
    e.helpers_.push_back("static __device__ __forceinline__ " + r.acc_t + " " + r.helper + "(" + r.acc_t +
                         " a, " + r.acc_t + " b) { return " + body + "; }\n");
  }
  return r;
}

namespace {

void reduce_emit(CudaEmitter& e, const Instruction& inst) {
  const Tensor& x = inst.inputs[0];
  const Tensor& y = inst.output;
  const Combine c = combine_of(inst.op);
  const int d = inst.dims[0];
  const bool keepdim = inst.int_attr != 0;
  const RegisterLayout& in = e.plan_.layout_of(x);
  const RegisterLayout have = reduced_layout(in, d, keepdim);
  const RegisterLayout kept = keepdim ? have : reduced_layout(in, d, true);
  const CudaCombine cc = cuda_combine(e, c, x->dtype);
  const std::string& acc_t = cc.acc_t;
  auto merge = [&](const std::string& a, const std::string& b) {
    return a + " = " + cc.helper + "(" + a + ", " + b + ");";
  };
  const int64_t n_out = have.local_size();
  const std::string src = e.reg_name(x);
  const std::string dst = e.declare_reg(y, e.plan_.layout_of(y));
  const std::string acc = e.fresh(std::string("tl_") + op_name(inst.op));

  // 1. This thread's own elements: local element l of x merges into the result element
  // holding its row (same local part of the coordinate, dimension d at 0). A row's
  // elements are dealt over up to kPartials partial results combined pairwise at the end,
  // so the dependent chain is short (32 elements: 8 + 2 steps, not 32) — the combine is
  // associative for every kind but float sums, whose rounding this order changes as any
  // tree would.
  constexpr int64_t kPartials = 4;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> rows(n_out);  // (l, position along d)
  for (int64_t l = 0; l < in.local_size(); ++l) {
    std::vector<int64_t> co = in.local_coords(l);
    const int64_t along = co[d];
    co[d] = 0;
    rows[kept.owner(co).first].push_back({l, along});
  }
  // Rows shorter than 8 keep one chain (splitting them saves no latency worth the merges).
  int64_t shortest = in.local_size();
  for (const auto& row : rows) shortest = std::min<int64_t>(shortest, row.size());
  const int64_t parts = shortest >= 2 * kPartials ? kPartials : 1;
  const std::string part = parts == 1 ? acc : e.fresh(acc + "_part");
  e.line(acc_t + " " + acc + "[" + std::to_string(n_out) + "];");
  if (parts > 1) e.line(acc_t + " " + part + "[" + std::to_string(n_out * parts) + "];");
  // A padded layout (block_layouts.h default_tile_layout) holds elements past the end of
  // dimension d: they are skipped. Padding in the other dimensions only makes results
  // for rows outside the tile, which nothing reads.
  std::string row_start;
  if (in.shape[d] > x->shape[d]) {
    row_start = e.fresh("tl_row");
    e.line("const int " + row_start + " = " + e.expr(in.thread_coord_exprs(e.tid_)[d]) + ";");
  }
  // Without padding each partial starts from its first element (no identity, one step
  // fewer); with it every element may be skipped, so they start from the identity.
  const bool seeded = row_start.empty() && shortest > 0;
  if (!seeded) {
    e.line("#pragma unroll");
    e.open("for (int i = 0; i < " + std::to_string(n_out * parts) + "; ++i)");
    e.line(part + "[i] = " + cc.identity + ";");
    e.close();
  }
  for (int64_t j = 0; j < n_out; ++j) {
    for (size_t t = 0; t < rows[j].size(); ++t) {
      const auto [l, along] = rows[j][t];
      const std::string target = part + "[" + std::to_string(j * parts + static_cast<int64_t>(t) % parts) + "]";
      const std::string value = "tilus::cast<" + acc_t + ">(" + src + "[" + std::to_string(l) + "])";
      if (seeded && static_cast<int64_t>(t) < parts) {
        e.line(target + " = " + value + ";");
        continue;
      }
      const std::string step = merge(target, value);
      if (row_start.empty()) e.line(step);
      else e.line("if (" + row_start + " + " + std::to_string(along) + " < " + std::to_string(x->shape[d]) + ") " + step);
    }
  }
  if (parts > 1) {
    for (int64_t j = 0; j < n_out; ++j) {
      const auto at = [&](int64_t p) { return part + "[" + std::to_string(j * parts + p) + "]"; };
      for (int64_t gap = 1; gap < parts; gap *= 2)
        for (int64_t p = 0; p + gap < parts; p += 2 * gap) e.line(merge(at(p), at(p + gap)));
      e.line(acc + "[" + std::to_string(j) + "] = " + at(0) + ";");
    }
  }

  // 2. Threads holding parts of the same row: the spatial modes of dimension d. A mode
  // of size s with thread stride t covers thread-index bits [log t, log t*s); the bits
  // below 32 are lanes (shuffles), the rest warps (shared memory).
  const std::vector<int> dims = in.mode_dims();
  std::vector<int64_t> lane_offsets;
  std::vector<std::pair<int64_t, int64_t>> warp_digits;  // (thread stride, size)
  int64_t stride = 1;
  for (int k = static_cast<int>(in.spatial_modes.size()) - 1; k >= 0; --k) {
    const int m = in.spatial_modes[k];
    const int64_t size = m < 0 ? -m : in.mode_shape[m];
    if (m >= 0 && dims[m] == d) {
      int64_t s = stride;
      for (; s < stride * size && s < 32; s *= 2) lane_offsets.push_back(s);
      if (s < stride * size) warp_digits.push_back({s, stride * size / s});
    }
    stride *= size;
  }
  for (int64_t off : lane_offsets) {
    e.line("#pragma unroll");
    e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
    e.line(merge(acc + "[i]", "__shfl_xor_sync(0xffffffffu, " + acc + "[i], " + std::to_string(off) + ")"));
    e.close();
  }
  if (!warp_digits.empty()) {
    const int64_t threads = e.threads_;
    const int64_t bytes = threads * n_out * cc.acc_bytes;
    const int64_t offset = e.smem_.allocate(bytes);
    e.open(std::string("{  // ") + op_name(inst.op) + " across warps through shared memory");
    const std::string buf = e.fresh("tl_red");
    e.line(acc_t + "* " + buf + " = reinterpret_cast<" + acc_t + "*>(tl_smem + " + std::to_string(offset) + ");");
    e.line(e.block_sync());
    e.line("#pragma unroll");
    e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
    e.line(buf + "[i * " + std::to_string(threads) + " + tl_tid] = " + acc + "[i];");
    e.close();
    e.line(e.block_sync());
    // The first thread of this thread's group (its warp digits of dimension d at 0),
    // then every member in a fixed order so all of them compute the same result.
    std::string base = "tl_tid";
    int64_t members = 1;
    for (auto& [t, s] : warp_digits) {
      base += " - (tl_tid / " + std::to_string(t) + " % " + std::to_string(s) + ") * " + std::to_string(t);
      members *= s;
    }
    const std::string first = e.fresh("tl_first");
    e.line("const int " + first + " = " + base + ";");
    e.line("#pragma unroll");
    e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
    e.line(acc + "[i] = " + cc.identity + ";");
    for (int64_t r = 0; r < members; ++r) {
      int64_t rest = r, member = 0;
      for (auto it = warp_digits.rbegin(); it != warp_digits.rend(); ++it) {
        member += rest % it->second * it->first;
        rest /= it->second;
      }
      e.line(merge(acc + "[i]", buf + "[i * " + std::to_string(threads) + " + " + first + " + " +
                                    std::to_string(member) + "]"));
    }
    e.close();
    e.line(e.block_sync());
    e.close();
    e.smem_.release(offset);
  }

  // 3. The result, in the derived layout; converted if the output's layout differs.
  const RegisterLayout& want = e.plan_.layout_of(y);
  const std::string ctype = CudaEmitter::ctype(y->dtype);
  std::string values = dst;
  if (have != want) {
    values = e.fresh(dst + "_red");
    e.line("__align__(16) " + ctype + " " + values + "[" + std::to_string(n_out) + "];");
  }
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
  e.line(values + "[i] = tilus::cast<" + ctype + ">(" + acc + "[i]);");
  e.close();
  if (have != want) e.write_back(y, values, have);
}

// ---- IR text, the verifier's operand checks, and a running wgmma dot
std::string reduce_print(const Instruction& i) {
  return inst_text::call(i, inst_text::ref(i.inputs[0]) + ", dim=" + std::to_string(i.dims.at(0)) +
                                ", keepdim=" + (i.int_attr ? "True" : "False"));
}
void reduce_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.scope(i, i.inputs[0], Scope::Register, "the operand");
  c.scope(i, i.output, Scope::Register, "the output");
  const auto &in = i.inputs[0]->shape, &out = i.output->shape;
  if (out.size() != in.size() && out.size() + 1 != in.size())
    c.fail(op_name(i.op), ": ", c.str(i.output), " is not a reduction of ", c.str(i.inputs[0]));
}
}  // namespace

// A reduction across warps meets the other warpgroups at a barrier (its scratch is
// fresh shared memory, never a dot's tile): as for sync, to be safe.
WgmmaHazard reduction_wgmma_hazard(const Instruction&, const LayoutPlan&, int warps) {
  if (warps > 4) return {WgmmaHazard::Waits, -1, "a reduction may synchronise the warpgroups"};
  return {};
}

namespace {

}  // namespace

const OpHandler kSum = {reduce_check, reduce_layout, reduce_interpret, reduce_emit, reduce_print,
                        reduce_verify, reduction_wgmma_hazard};
const OpHandler kMax = {reduce_check, reduce_layout, reduce_interpret, reduce_emit, reduce_print,
                        reduce_verify, reduction_wgmma_hazard};
const OpHandler kMin = {reduce_check, reduce_layout, reduce_interpret, reduce_emit, reduce_print,
                        reduce_verify, reduction_wgmma_hazard};
const OpHandler kAny = {reduce_check, reduce_layout, reduce_interpret, reduce_emit, reduce_print,
                        reduce_verify, reduction_wgmma_hazard};
const OpHandler kAll = {reduce_check, reduce_layout, reduce_interpret, reduce_emit, reduce_print,
                        reduce_verify, reduction_wgmma_hazard};

}  // namespace tilus::ops
