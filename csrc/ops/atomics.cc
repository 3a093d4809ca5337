// Atomics on shared and global memory, and scatter stores (Tilus's self.atomic group
// and store_{shared,global}_scatter; python/tilus/lang/inst_atomics.py).
//
// Operands (ir/inst.h conventions):
//   atomic_shared / atomic_global        inputs dst, values[, compare (cas)];
//                                        atomic_global: args = offsets, one per dst dim
//   atomic_*_scatter, store_*_scatter    inputs dst, indices, values; dims[0] = dim
//   text = the operation (add sub min max exch cas); int_attr = scope + 4 * sem
// The atomics define a register tile of the values each element held before
// (the old values); a non-atomic scatter store defines nothing. An add or sub whose old
// values nothing reads is emitted on global memory as PTX red, which waits for no reply;
// float32 ones of 2 or 4 aligned consecutive elements as one red.v2 / v4 (sm_90).
//
// Element k of the tile touches dst[offsets + k] (element-wise) or dst at k's
// coordinates with dimension `dim` replaced by indices[k] (scatter). Targets outside
// dst are dropped, as store_global drops them; their old value reads 0. Each element
// is applied once even when the register layout replicates it over threads (only the
// replica leader issues it; the old value reaches the replicas through shared memory).
//
// Interpreter: a block runs an instruction for all its threads at once and blocks
// interleave only at lock_semaphore, so applying the elements one after another in
// row-major order makes each read-modify-write indivisible (conflicting indices in
// one tile see each other's updates, in that order).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/debug_checks.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"
#include "support/error.h"

namespace tilus::ops {

namespace {

enum class Rmw { Add, Sub, Min, Max, Exch, Cas, Store };

Rmw rmw_of(const Instruction& i) {
  if (i.op == Op::StoreSharedScatter || i.op == Op::StoreGlobalScatter) return Rmw::Store;
  const std::string& t = i.text;
  if (t == "add") return Rmw::Add;
  if (t == "sub") return Rmw::Sub;
  if (t == "min") return Rmw::Min;
  if (t == "max") return Rmw::Max;
  if (t == "exch") return Rmw::Exch;
  if (t == "cas") return Rmw::Cas;
  throw ScriptError("ValueError", cat(op_name(i.op), ": unknown atomic operation '", t,
                                      "'; expected add, sub, min, max, exch or cas"));
}

bool is_scatter(Op op) {
  return op == Op::AtomicSharedScatter || op == Op::AtomicGlobalScatter ||
         op == Op::StoreSharedScatter || op == Op::StoreGlobalScatter;
}
bool on_global(Op op) {
  return op == Op::AtomicGlobal || op == Op::AtomicGlobalScatter || op == Op::StoreGlobalScatter;
}

const char* const kScopes[] = {"cta", "cluster", "gpu", "sys"};
const char* const kSems[] = {"relaxed", "acquire", "release", "acq_rel"};
enum Sem : int { kRelaxed, kAcquire, kRelease, kAcqRel };  // kSems' order

// The method a script wrote, for messages: self.atomic.global_scatter_add, ...
std::string surface(const Instruction& i) {
  if (i.op == Op::StoreSharedScatter || i.op == Op::StoreGlobalScatter) return op_name(i.op);
  return std::string("atomic.") + (on_global(i.op) ? "global_" : "shared_") +
         (is_scatter(i.op) ? "scatter_" : "") + i.text;
}

// Which dtypes the hardware's atomics take, per operation ("" when supported).
std::string unsupported(Rmw op, DataType t) {
  const ScalarKind k = t.kind;
  const bool i32 = k == ScalarKind::Int32 || k == ScalarKind::UInt32;
  const bool i64 = k == ScalarKind::Int64 || k == ScalarKind::UInt64;
  const bool f3264 = k == ScalarKind::Float32 || k == ScalarKind::Float64;
  const bool f16 = k == ScalarKind::Float16 || k == ScalarKind::BFloat16;
  switch (op) {
    case Rmw::Add:
    case Rmw::Sub:
      if (i32 || i64 || f3264 || f16) return "";
      return "int32, uint32, int64, uint64, float16, bfloat16, float32 and float64";
    case Rmw::Min:
    case Rmw::Max:
      if (i32 || i64) return "";
      return "int32, uint32, int64 and uint64 (the hardware has no float min/max atomics)";
    case Rmw::Exch:
    case Rmw::Cas:
      if (i32 || i64 || f3264) return "";
      return "int32, uint32, int64, uint64, float32 and float64 (32- and 64-bit elements)";
    case Rmw::Store: return "";
  }
  return "";
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t k = 0; k < s.size(); ++k) r += (k ? ", " : "") + std::to_string(s[k]);
  return r + "]";
}

OutputType check(Instruction& i) {
  const std::string what = surface(i);
  const Rmw op = rmw_of(i);
  const bool scatter = is_scatter(i.op), global = on_global(i.op);
  const bool cas = op == Rmw::Cas;
  const size_t want = scatter ? 3 : (cas ? 3 : 2);
  TILUS_CHECK(i.inputs.size() == want, "ValueError", what, ": takes ", want, " tensors, got ",
              i.inputs.size());
  const Tensor& dst = i.inputs[0];
  const Scope dst_scope = global ? Scope::Global : Scope::Shared;
  TILUS_CHECK(dst->scope == dst_scope, "TypeError", what, ": dst must be a ", scope_name(dst_scope),
              " tensor, got ", dst->type_str());
  const Tensor& values = scatter ? i.inputs[2] : i.inputs[1];
  TILUS_CHECK(values->scope == Scope::Register, "TypeError", what,
              ": values must be a register tensor, got ", values->type_str());
  TILUS_CHECK(values->dtype == dst->dtype, "TypeError", what, ": values (", values->type_str(),
              ") must have dst's dtype ", dst->dtype.name());
  TILUS_CHECK(dst->dtype.bits() % 8 == 0 && dst->dtype.bits() > 0, "TypeError", what,
              ": elements of ", dst->dtype.name(), " are not whole bytes");
  if (scatter && op != Rmw::Store)
    TILUS_CHECK(op != Rmw::Exch && op != Rmw::Cas, "ValueError", what,
                ": the scatter form has add, sub, min and max only (exch and cas are ambiguous "
                "under duplicate indices); use the element-wise form");
  const std::string why = unsupported(op, dst->dtype);
  TILUS_CHECK(why.empty(), "TypeError", what, ": ", dst->dtype.name(),
              " elements are not supported; this atomic takes ", why);
  TILUS_CHECK(i.int_attr >= 0 && i.int_attr < 16, "ValueError", what, ": bad scope/sem code ",
              i.int_attr);
  const size_t rank = static_cast<size_t>(dst->rank());
  TILUS_CHECK(static_cast<size_t>(values->rank()) == rank, "ValueError", what, ": values has rank ", values->rank(),
              " but dst has rank ", rank);
  if (cas) {
    const Tensor& cmp = i.inputs[2];
    TILUS_CHECK(cmp->scope == Scope::Register && cmp->dtype == dst->dtype && cmp->shape == values->shape,
                "TypeError", what, ": compare must be a register tensor like values (",
                values->type_str(), "), got ", cmp->type_str());
  }
  if (!scatter) {
    if (global) {
      TILUS_CHECK(i.args.size() == rank, "ValueError", what, ": ", rank, " offsets expected, got ",
                  i.args.size());
      for (size_t d = 0; d < rank; ++d)
        TILUS_CHECK(i.args[d]->dtype.is_integer(), "TypeError", what, ": offset ", d,
                    " must be an integer, got ", i.args[d]->dtype.name());
    } else {
      TILUS_CHECK(values->shape == dst->shape, "ValueError", what, ": dst shape ", shape_text(dst->shape),
                  " != values shape ", shape_text(values->shape));
    }
    return {dst->dtype, values->shape};
  }
  const Tensor& indices = i.inputs[1];
  TILUS_CHECK(indices->scope == Scope::Register && indices->dtype.is_integer() && !indices->dtype.is_bool(),
              "TypeError", what, ": indices must be an integer register tensor, got ", indices->type_str());
  TILUS_CHECK(indices->shape == values->shape, "ValueError", what, ": indices.shape ",
              shape_text(indices->shape), " != values.shape ", shape_text(values->shape));
  TILUS_CHECK(i.dims.size() == 1, "ValueError", what, ": needs one dim");
  int dim = i.dims[0];
  if (dim < 0) dim += static_cast<int>(rank);
  TILUS_CHECK(dim >= 0 && dim < static_cast<int>(rank), "ValueError", what, ": dim ", i.dims[0],
              " is out of range for a rank-", rank, " dst");
  i.dims[0] = dim;
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int>(d) == dim) continue;
    int64_t extent = 0;
    bool known = true;
    if (global) known = is_const_int(dst->global_shape[d], &extent);
    else extent = dst->shape[d];
    // A runtime extent of a global dst is checked per element (outside: dropped).
    TILUS_CHECK(!known || extent == indices->shape[d], "ValueError", what, ": non-scatter axis ", d,
                " mismatch: dst.shape[", d, "] = ", extent, ", indices.shape[", d, "] = ",
                indices->shape[d]);
  }
  return {dst->dtype, values->shape};
}

// ------------------------------------------------------------------ interpreter

// dst[p] = op(dst[p], v) on one element; writes the previous value to `old`.
void apply(Rmw op, DataType t, uint8_t* p, const uint8_t* v, const uint8_t* cmp, uint8_t* old) {
  using namespace interp;
  const int b = element_bytes(t);
  if (old) std::memcpy(old, p, b);
  const ScalarKind k = t.kind;
  switch (op) {
    case Rmw::Store:
    case Rmw::Exch: std::memcpy(p, v, b); return;
    case Rmw::Cas:
      if (std::memcmp(p, cmp, b) == 0) std::memcpy(p, v, b);  // bit patterns, as on the GPU
      return;
    case Rmw::Add:
    case Rmw::Sub:
      if (t.is_float()) {
        double x = load_f(p, k), y = load_f(v, k);
        double r = op == Rmw::Add ? x + y : x - y;
        if (k == ScalarKind::Float32) {
          // atom.add.f32 flushes subnormal inputs and results to sign-preserving zero.
          auto ftz = [](double d) { return std::fabs(d) < 1.17549435082228750797e-38 ? std::copysign(0.0, d) : d; };
          float fr = static_cast<float>(ftz(x)) + static_cast<float>(op == Rmw::Add ? ftz(y) : -ftz(y));
          r = ftz(static_cast<double>(fr));
        }
        store_f(p, k, r);
      } else {
        const uint64_t x = static_cast<uint64_t>(load_i(p, k)), y = static_cast<uint64_t>(load_i(v, k));
        store_i(p, k, static_cast<int64_t>(op == Rmw::Add ? x + y : x - y));
      }
      return;
    case Rmw::Min:
    case Rmw::Max: {
      const int64_t x = load_i(p, k), y = load_i(v, k);
      bool less;
      if (k == ScalarKind::UInt64) less = static_cast<uint64_t>(y) < static_cast<uint64_t>(x);
      else less = y < x;
      if ((op == Rmw::Min) == less && y != x) store_i(p, k, y);
      return;
    }
  }
}

void interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& i) {
  using namespace interp;
  const Rmw op = rmw_of(i);
  const bool scatter = is_scatter(i.op), global = on_global(i.op);
  // atomics with release/acquire semantics order blocks (debug_checks.h); scatter stores do not
  const int sem = op == Rmw::Store ? kRelaxed : static_cast<int>(i.int_attr >> 2);
  const TensorValue& dst = input(st, i.inputs[0], i);
  const TensorValue& values = input(st, scatter ? i.inputs[2] : i.inputs[1], i);
  const TensorValue* indices = scatter ? &input(st, i.inputs[1], i) : nullptr;
  const TensorValue* cmp = op == Rmw::Cas ? &input(st, i.inputs[2], i) : nullptr;
  TensorValue* old = i.output ? &define_output(st, i.output.get(), i.output->dtype) : nullptr;
  const DataType t = dst.dtype;
  const int b = element_bytes(t);
  const std::vector<int64_t>& tile = i.inputs[scatter ? 2 : 1]->shape;
  const size_t rank = tile.size();
  std::vector<int64_t> offsets(rank, 0);
  if (global && !scatter)
    for (size_t d = 0; d < rank; ++d) offsets[d] = eval_int(st, i.args[d]);
  const std::vector<int64_t>& extent = global ? dst.gshape : *dst.shape;
  const int dim = scatter ? i.dims[0] : -1;
  const std::string what = surface(i);
  std::vector<int64_t> coord(rank, 0), target(rank);
  for (int64_t e = 0; e < values.numel; ++e) {
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      target[d] = offsets[d] + coord[d];
      if (static_cast<int>(d) == dim) target[d] = load_i(indices->data + e * element_bytes(indices->dtype), indices->dtype.kind);
      if (target[d] < 0 || target[d] >= extent[d]) inside = false;
    }
    uint8_t* o = old ? old->data + e * b : nullptr;
    if (!inside) {
      if (o) std::memset(o, 0, b);
    } else {
      uint8_t* p;
      if (global) {
        int64_t elem = 0;
        for (size_t d = 0; d < rank; ++d) elem += target[d] * dst.gstrides[d];
        const uintptr_t addr = dst.base + static_cast<uintptr_t>(elem * b);
        check_global_access(*st.launch, addr, b, what.c_str(), &dst, target);
        if (sem == kRelease || sem == kAcqRel) debug_release_rmw(st, addr);
        p = reinterpret_cast<uint8_t*>(addr);
      } else {
        int64_t flat = 0;
        for (size_t d = 0; d < rank; ++d) flat = flat * extent[d] + target[d];
        p = dst.data + flat * b;
        if (st.launch->debug) shared_atomic_access(st, dst, p, stmt);
      }
      apply(op, t, p, values.data + e * b, cmp ? cmp->data + e * b : nullptr, o);
      if (global && (sem == kAcquire || sem == kAcqRel)) debug_acquire_rmw(st, reinterpret_cast<uintptr_t>(p));
    }
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {  // next row-major coordinate
      if (++coord[d] < tile[d]) break;
      coord[d] = 0;
    }
  }
}

// ------------------------------------------------------------------ CUDA

Expr add(Expr a, Expr b) { return make_binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return make_binary(BinaryOp::Mul, std::move(a), std::move(b)); }

const char* rmw_fn(Rmw op) {
  switch (op) {
    case Rmw::Add: return "tilus::atomic_add";
    case Rmw::Sub: return "tilus::atomic_sub";
    case Rmw::Min: return "tilus::atomic_min";
    case Rmw::Max: return "tilus::atomic_max";
    case Rmw::Exch: return "tilus::atomic_exch";
    case Rmw::Cas: return "tilus::atomic_cas";
    case Rmw::Store: return "";
  }
  return "";
}

void emit(CudaEmitter& e, const Instruction& i) {
  const Rmw op = rmw_of(i);
  const bool scatter = is_scatter(i.op), global = on_global(i.op);
  const Tensor& dst = i.inputs[0];
  const Tensor& values = scatter ? i.inputs[2] : i.inputs[1];
  const RegisterLayout& layout = e.plan_.layout_of(i.output ? i.output : values);
  const std::string vals = e.reg_operand(values, layout);
  const std::string idx = scatter ? e.reg_operand(i.inputs[1], layout) : "";
  const std::string cmp = op == Rmw::Cas ? e.reg_operand(i.inputs[2], layout) : "";
  const std::string ct = CudaEmitter::ctype(dst->dtype);
  const int scope = static_cast<int>(i.int_attr & 3), sem = static_cast<int>(i.int_attr >> 2);
  // Old values nothing reads: a relaxed or release global add or sub is a PTX red (no
  // reply from memory). An acquire keeps the atomic: it orders through the value read.
  const bool old_read = i.output && e.is_read(i.output);
  const bool fire_and_forget = global && !old_read && (op == Rmw::Add || op == Rmw::Sub) && (sem == 0 || sem == 2);
  const std::string old = i.output && !fire_and_forget ? e.declare_reg(i.output, layout) : "";
  const std::string fence = "tilus::atomic_fence<" + std::to_string(scope) + ">();";
  const std::string leader = e.replica_leader(layout);
  const int dim = scatter ? i.dims[0] : -1;
  const size_t rank = values->shape.size();

  // float32 reds of consecutive elements a thread holds, aligned: one vector red each
  // (red_add_vec) where the layout's innermost run and the offsets' divisibility allow.
  int64_t vec = 1;
  if (fire_and_forget && op == Rmw::Add && !scatter && dst->dtype == dtypes::float32) {
    std::vector<int> dims(rank);
    for (size_t d = 0; d < rank; ++d) dims[d] = static_cast<int>(d);
    vec = e.global_vector(e.globals_.at(dst->id), i.args, dims, values->shape.back(), 32, true);
    vec = std::min<int64_t>(4, memory_index::pow2_divisor(CudaEmitter::innermost_run(layout), vec));
  }
  e.line("// " + surface(i) + (op == Rmw::Store ? "" : std::string(" (") + kSems[sem] + ", " + kScopes[scope] + ")"));
  if (op != Rmw::Store && (sem == 2 || sem == 3)) e.line(fence);  // release
  // The old values also go to shared scratch when other threads replicate them.
  std::string scratch;
  int64_t scratch_offset = -1;
  if (!leader.empty() && old_read) {
    scratch_offset = e.smem_.allocate(values->numel() * (dst->dtype.bits() / 8));
    scratch = e.fresh("tl_atomic_old");
    e.line(ct + "* " + scratch + " = reinterpret_cast<" + ct + "*>(tl_smem + " +
           std::to_string(scratch_offset) + ");");
  }
  if (!leader.empty()) e.open("if (" + leader + ")");
  e.for_each_local(layout, vec, [&](const CudaEmitter::Element& el) {
    const std::string l = e.expr(el.local);
    std::vector<Expr> target = el.coords;
    if (global && !scatter)
      for (size_t d = 0; d < rank; ++d) target[d] = add(i.args[d], el.coords[d]);
    if (scatter) {
      std::string k = e.fresh("tl_index");
      e.line("const long long " + k + " = (long long)" + idx + "[" + l + "];");
      target[dim] = e.internal_var(k, dtypes::int64);
    }
    // Conditions: in range of every dst dim the element may leave.
    std::string cond;
    std::string ptr;
    if (global) {
      const CudaEmitter::GlobalInfo& g = e.globals_.at(dst->id);
      Expr off = make_int(0);
      for (size_t d = 0; d < rank; ++d) {
        cond += std::string(cond.empty() ? "" : " && ") + "(unsigned long long)(" + e.expr(target[d]) +
                ") < (unsigned long long)(" + g.shape_c[d] + ")";
        off = add(off, mul(target[d], g.stride_v[d]));
      }
      ptr = g.ptr + " + " + e.expr(off);
      const std::string mask = e.tile_mask(layout, values->shape, el);
      const std::string ok = e.bounds_guard(
          surface(i), dst, g, mask.empty() ? cond : mask + " && " + cond, off,
          std::to_string(whole_bytes(dst->dtype, vec, "bounds check")), target);
      if (!ok.empty()) cond += " && " + ok;
    } else {
      const CudaEmitter::SharedInfo& s = e.shared_.at(dst->id);
      if (scatter)
        cond = "(unsigned long long)(" + e.expr(target[dim]) + ") < " + std::to_string(dst->shape[dim]) + "ull";
      ptr = s.ptr + " + " + e.expr(e.shared_offset(s, target));
    }
    // Elements of a padded layout outside the tile (default_tile_layout) do nothing.
    const std::string mask = e.tile_mask(layout, values->shape, el);
    if (!mask.empty()) cond = cond.empty() ? mask : mask + " && " + cond;
    std::string call;
    const std::string v = vals + "[" + l + "]";
    if (op == Rmw::Store) call = "*(" + ptr + ") = " + v;
    else if (op == Rmw::Cas) call = std::string(rmw_fn(op)) + "<" + std::to_string(scope) + ">(" + ptr + ", " + cmp + "[" + l + "], " + v + ")";
    else if (vec > 1)
      call = "tilus::red_add_vec<" + std::to_string(scope) + ", " + std::to_string(vec) + ">(" + ptr + ", &" + v + ")";
    else if (fire_and_forget)
      call = std::string(op == Rmw::Add ? "tilus::red_add" : "tilus::red_sub") + "<" + std::to_string(scope) + ">(" + ptr + ", " + v + ")";
    else call = std::string(rmw_fn(op)) + "<" + std::to_string(scope) + ">(" + ptr + ", " + v + ")";
    if (i.output && !fire_and_forget) {
      const std::string o = old + "[" + l + "]";
      if (cond.empty()) e.line(o + " = " + call + ";");
      else e.line(o + " = (" + cond + ") ? " + call + " : " + CudaEmitter::zero(dst->dtype) + ";");
      if (!scratch.empty()) {
        Expr flat = make_int(0);
        for (size_t d = 0; d < rank; ++d) flat = add(mul(flat, make_int(values->shape[d])), el.coords[d]);
        e.line((mask.empty() ? "" : "if (" + mask + ") ") + scratch + "[" + e.expr(flat) + "] = " + o + ";");
      }
    } else {
      e.line(cond.empty() ? call + ";" : "if (" + cond + ") " + call + ";");
    }
  });
  if (!leader.empty()) e.close();
  if (!scratch.empty()) {
    e.line(e.block_sync() + "  // the replicas read the leaders' old values");
    e.for_each_local(layout, 1, [&](const CudaEmitter::Element& el) {
      Expr flat = make_int(0);
      for (size_t d = 0; d < rank; ++d) flat = add(mul(flat, make_int(values->shape[d])), el.coords[d]);
      const std::string mask = e.tile_mask(layout, values->shape, el);
      e.line((mask.empty() ? "" : "if (" + mask + ") ") + old + "[" + e.expr(el.local) + "] = " + scratch + "[" + e.expr(flat) + "];");
    });
    e.line(e.block_sync() + "  // before the scratch is reused");
    e.smem_.release(scratch_offset);
  }
  if (op != Rmw::Store && (sem == 1 || sem == 3)) e.line(fence);  // acquire
}

// ---- IR text and the verifier's operand checks
bool is_store(Op op) { return op == Op::StoreSharedScatter || op == Op::StoreGlobalScatter; }

std::string atomics_print(const Instruction& i) {
  static const char* const scopes[] = {"cta", "cluster", "gpu", "sys"};
  static const char* const sems[] = {"relaxed", "acquire", "release", "acq_rel"};
  std::string s;
  for (size_t k = 0; k < i.inputs.size(); ++k) s += (k ? ", " : "") + inst_text::ref(i.inputs[k]);
  if (i.op == Op::AtomicGlobal) s += ", offsets=" + inst_text::exprs(i.args);
  if (!i.dims.empty()) s += ", dim=" + std::to_string(i.dims[0]);
  if (!is_store(i.op))
    s += ", op=" + i.text + ", sem=" + sems[(i.int_attr >> 2) & 3] + ", scope=" + scopes[i.int_attr & 3];
  return inst_text::call(i, s);
}

void atomics_verify(OperandCheck& c, const Instruction& i) {
  const bool scatter = is_scatter(i.op);
  const bool global = on_global(i.op);
  const size_t n = scatter || i.text != "cas" ? (scatter ? 3 : 2) : 3;
  const size_t nargs = i.op == Op::AtomicGlobal ? static_cast<size_t>(i.inputs[0]->rank()) : 0;
  c.arity(i, n, nargs, nargs);
  c.scope(i, i.inputs[0], global ? Scope::Global : Scope::Shared, "dst");
  for (size_t k = 1; k < n; ++k) c.scope(i, i.inputs[k], Scope::Register, "an operand");
  const Tensor& values = i.inputs[scatter ? 2 : 1];
  if (is_store(i.op)) {
    c.no_output(i);
  } else {
    c.scope(i, i.output, Scope::Register, "the output");
    c.same_shape(i, values, i.output);
    c.same_dtype(i, values, i.output);
  }
  if (scatter && (i.dims.size() != 1 || i.dims[0] < 0 || i.dims[0] >= static_cast<int>(i.inputs[0]->rank())))
    c.fail(op_name(i.op), ": dim out of range for ", c.str(i.inputs[0]));
}

}  // namespace

const OpHandler kAtomicShared = {check, same_layout_as_inputs, interpret, emit, atomics_print, atomics_verify};
const OpHandler kAtomicGlobal = {check, same_layout_as_inputs, interpret, emit, atomics_print, atomics_verify};
const OpHandler kAtomicSharedScatter = {check, same_layout_as_inputs, interpret, emit, atomics_print, atomics_verify};
const OpHandler kAtomicGlobalScatter = {check, same_layout_as_inputs, interpret, emit, atomics_print, atomics_verify};
const OpHandler kStoreSharedScatter = {check, nullptr, interpret, emit, atomics_print, atomics_verify};
const OpHandler kStoreGlobalScatter = {check, nullptr, interpret, emit, atomics_print, atomics_verify};

}  // namespace tilus::ops
