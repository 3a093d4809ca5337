// The wgmma family: Tilus 0.2's explicit warpgroup MMA, self.wgmma.fence / mma /
// commit_group / wait_group, for scripts that pipeline the tensor cores themselves.
//
// Semantics. mma(a, b, d) issues d[M, N] += a[M, K] @ b[K, N] on the tensor cores and
// returns at once; the product lands in d when a wait_group retires the commit group the
// mma belongs to (groups retire in commit order; wait_group(n) leaves the n newest
// running). Until then d must not be touched except by further mmas into it (the
// hardware chains those). The interpreter models exactly that: an mma computes its result
// at issue (reading a and b then) into the group's pending values, wait_group writes them
// into d, and any other instruction touching a d still in flight is a RuntimeError naming
// the mma's line (wgmma_guard, run before every instruction while something is pending).
//
// Layouts. a and b are read by the tensor cores from shared memory through matrix
// descriptors, so their allocations take a layout wgmma reads (operand_layout): for an
// allocation [..., R, C] (C contiguous) rows of a multiple of 128 bytes get the 128-byte
// swizzle in 128-byte column blocks, 64-byte rows the 64-byte swizzle, 32-byte rows the
// 32-byte swizzle, other multiples of 16 bytes no swizzle with 8-row x 16-byte core
// matrices stored contiguously (16-byte column blocks). Which dimension of the operand C
// is depends on the view: a [M, K] viewed directly is K-major, a transposed view
// (sa_t.transpose()) M-major; b [K, N] directly is N-major, b_t.transpose() K-major.
// tf32 and fp8 operands must be K-major (the instruction has no transpose for them). d's
// register layout is the instruction's fragment, fixed here (LayoutRules::fix):
//   spatial(wg_m, wg_n) * local(slabs, n_wg / 8) * spatial(4, 1) * mma_atom(M16N8K16).c
// the layout the automatic path gives a wgmma dot's accumulator (block_layouts.h). A
// register a (wgmma's register form) is fixed to the A fragment: per warp mma.sync's A
// fragment of the same k, 4 32-bit registers per slab and k step, replicated over the
// warpgroups along N. The hardware reads those registers asynchronously too, until the
// wait_group that retires the group; ptxas does not keep them for it (a loop that writes
// a again behind a wait_group(1) got them reused at once, 2026-11-28: garbage on the
// GPU), so the interpreter refuses any write of a register operand in flight.
//
// Warpgroups. Every thread of the current thread group (the block outside groups) issues
// the instructions, so the group must be whole warpgroups starting at a warpgroup (the
// handlers' ThreadsRule::Warpgroups: the builder refuses any other with the line); its
// warpgroups split d along M first (wg_m), then N, each issuing its part (a warp-
// specialised kernel's consumer warpgroups share one accumulator this way).
//
// Waits and the async pass. These instructions are the script's: transforms/async_waits.cc
// places waits only for dots it lowered to wgmma itself and adds or removes none around
// these (its guard has no case for them). Mixing both in one kernel is correct because
// wgmma groups retire in order: the pass's wait_group(k) and the script's count each
// other's groups, which only makes a wait wait longer.
#include <algorithm>
#include <deque>
#include <unordered_map>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/debug_checks.h"
#include "interp/state.h"
#include "interp/tile_math.h"
#include "ir/functor.h"
#include "layout/block_layouts.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"
#include "transforms/layout_inference.h"

namespace tilus {

namespace ops {
namespace {

// The K of one instruction for an operand pair; 0 when no wgmma takes it.
int64_t inst_k(DataType a, DataType b) {
  auto fp8 = [](DataType t) { return t == dtypes::float8_e4m3 || t == dtypes::float8_e5m2; };
  if (a.is_pointer || b.is_pointer) return 0;
  if ((a == dtypes::float16 && b == dtypes::float16) || (a == dtypes::bfloat16 && b == dtypes::bfloat16)) return 16;
  if (a == dtypes::tfloat32 && b == dtypes::tfloat32) return 8;
  if (fp8(a) && fp8(b)) return 32;
  return 0;
}

bool is_16bit(DataType t) { return t == dtypes::float16 || t == dtypes::bfloat16; }

std::string ptx_type(DataType t) {
  if (t == dtypes::float16) return "f16";
  if (t == dtypes::bfloat16) return "bf16";
  if (t == dtypes::tfloat32) return "tf32";
  if (t == dtypes::float8_e4m3) return "e4m3";
  return "e5m2";
}

// How the block's warpgroups split d and how each issues its part.
struct Tiling {
  int64_t wg_m = 1, wg_n = 1;
  int64_t slabs = 1;   // m64 instructions along M per warpgroup
  int64_t n_wg = 8;    // d's columns per warpgroup
  int64_t n_inst = 8;  // the N of each instruction (divides n_wg, at most 256)
  int64_t k_inst = 16, k_steps = 1;
  RegisterLayout c;
  RegisterLayout a;  // a register operand a's fragment layout
};

// The per-warp A fragment of an m64 instruction: mma.sync's A fragment of the same k
// (PTX "Register Fragments and Shared Memory Matrix Layouts" for wgmma), 4 32-bit registers.
MmaKind a_atom_kind(int64_t k_inst) {
  return k_inst == 16 ? MmaKind::M16N8K16 : k_inst == 8 ? MmaKind::M16N8K8 : MmaKind::M16N8K32;
}

std::optional<Tiling> tiling_for(int64_t m, int64_t n, int64_t k, int64_t k_inst, int64_t warps, std::string* why) {
  if (warps < 4 || warps % 4) {
    *why = cat("wgmma is issued by whole warpgroups (4 warps each), but the kernel has ", warps, " warps");
    return std::nullopt;
  }
  const int64_t groups = warps / 4;
  for (int64_t wg_m = groups; wg_m >= 1; --wg_m) {
    if (groups % wg_m) continue;
    const int64_t wg_n = groups / wg_m;
    if (m % (64 * wg_m) || n % (8 * wg_n)) continue;
    Tiling t;
    t.wg_m = wg_m;
    t.wg_n = wg_n;
    t.slabs = m / (64 * wg_m);
    t.n_wg = n / wg_n;
    for (t.n_inst = std::min<int64_t>(256, t.n_wg) / 8 * 8; t.n_wg % t.n_inst; t.n_inst -= 8) {
    }
    t.k_inst = k_inst;
    t.k_steps = k / k_inst;
    t.c = spatial({wg_m, wg_n}) * local({t.slabs, t.n_wg / 8}) * spatial({4, 1}) * mma_atom(MmaKind::M16N8K16).c;
    // a's rows of each warpgroup row, the same for every warpgroup along N; registers of
    // slab s, k step kk at (s * k_steps + kk) * (4 registers)
    RegisterLayout rows = wg_n > 1 ? spatial({wg_m, 1}) * replicate(wg_n, 2) : spatial({wg_m, 1});
    t.a = rows * local({t.slabs, t.k_steps}) * spatial({4, 1}) * mma_atom(a_atom_kind(k_inst)).a;
    return t;
  }
  *why = cat("no grid of ", groups, " warpgroups splits d [", m, ", ", n,
             "] into m64 slabs and multiples of 8 columns");
  return std::nullopt;
}

// The layout wgmma reads an operand allocation [..., R, C] in (see the file comment).
std::optional<SharedLayout> operand_layout(const std::vector<int64_t>& shape, int64_t bits) {
  if (auto l = shared_wgmma_operand(shape, bits)) return l;
  if (shape.size() < 2 || 128 % bits || shape[shape.size() - 2] % 8) return std::nullopt;
  const int64_t row_bits = shape.back() * bits;
  if (row_bits % 128) return std::nullopt;
  SharedLayout l = shared_row_major(shape);
  l.chunk_elems = 128 / bits;
  if (row_bits == 256) {  // 32-byte swizzle: chunk ^= (row / 4) % 2
    l.swizzle_chunks = 2;
    l.rows_per_phase = 4;
  } else {
    l.col_block = 128 / bits;  // no swizzle: core matrices of 8 rows x 16 bytes
  }
  return l;
}

const char* operand_name(int k) { return k == 0 ? "a" : "b"; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  return out;
}

OutputType no_operands_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.empty() && inst.args.empty(), "ValueError", op_name(inst.op), " takes no operands");
  return {};
}

OutputType wait_check(Instruction& inst) {
  no_operands_check(inst);
  TILUS_CHECK(inst.int_attr >= 0, "ValueError", "wgmma.wait_group: n must be >= 0, got ", inst.int_attr);
  return {};
}

OutputType mma_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() == 3, "ValueError", "wgmma.mma takes a, b and d, got ", inst.inputs.size(),
              " tensors");
  const Tensor &a = inst.inputs[0], &b = inst.inputs[1], &d = inst.inputs[2];
  TILUS_CHECK(a->scope != Scope::Global, "TypeError", "wgmma.mma: a must be a shared or register tensor, got ",
              a->type_str());
  TILUS_CHECK(b->scope == Scope::Shared, "TypeError", "wgmma.mma: b must be a shared tensor, got ", b->type_str());
  TILUS_CHECK(d->scope == Scope::Register, "TypeError", "wgmma.mma: d (the accumulator) must be a register tensor, got ",
              d->type_str());
  TILUS_CHECK(a->rank() == 2 && b->rank() == 2 && d->rank() == 2, "ValueError",
              "wgmma.mma needs 2-D tensors, got a ", a->type_str(), ", b ", b->type_str(), ", d ", d->type_str());
  const int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  TILUS_CHECK(b->shape[0] == k && d->shape[0] == m && d->shape[1] == n, "ValueError", "wgmma.mma: a ",
              a->type_str(), " @ b ", b->type_str(), " does not give d ", d->type_str());
  const int64_t ki = inst_k(a->dtype, b->dtype);
  TILUS_CHECK(ki > 0, "TypeError", "wgmma.mma: no wgmma multiplies ", a->dtype.name(), " by ", b->dtype.name(),
              "; the operands must be float16 x float16, bfloat16 x bfloat16, tfloat32 x tfloat32 or "
              "float8_e4m3 / float8_e5m2");
  TILUS_CHECK(d->dtype == dtypes::float32, "TypeError", "wgmma.mma: the accumulator d must be float32, got ",
              d->dtype.name());
  TILUS_CHECK(m % 64 == 0, "ValueError", "wgmma.mma: M = ", m, " (a's rows) must be a multiple of 64");
  TILUS_CHECK(k % ki == 0, "ValueError", "wgmma.mma: K = ", k, " must be a multiple of ", ki, " for ",
              a->dtype.name(), " operands (m64nNk", ki, ")");
  TILUS_CHECK(n % 8 == 0, "ValueError", "wgmma.mma: N = ", n, " (b's columns) must be a multiple of 8");
  inst.output = d;  // written in place
  inst.defines_output = false;
  return {d->dtype, d->shape};
}

void mma_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc& loc) {
  const Tensor &a = inst.inputs[0], &b = inst.inputs[1], &d = inst.inputs[2];
  std::string why;
  auto t = tiling_for(a->shape[0], b->shape[1], a->shape[1], inst_k(a->dtype, b->dtype), rules.warps(inst), &why);
  if (!t) throw ScriptError("ValueError", "wgmma.mma: " + why, loc);
  rules.fix(d, t->c, loc);
  if (a->scope == Scope::Register) rules.fix(a, t->a, loc);
  LayoutPlan& plan = rules.plan();
  for (int k = a->scope == Scope::Register ? 1 : 0; k < 2; ++k) {
    const Tensor& view = inst.inputs[k];
    const int root = plan.root_of(view);
    auto it = plan.shared.find(root);
    TILUS_ASSERT(it != plan.shared.end(), "wgmma.mma: no layout for the allocation of ", view->name);
    const std::vector<int64_t> shape = it->second.shape;
    const size_t r = shape.size();
    if (r < 2 || shape[r - 2] * shape[r - 1] != view->numel())
      throw ScriptError("ValueError",
                        cat("wgmma.mma: ", operand_name(k), " (", view->type_str(),
                            ") must be a whole matrix of the last two dimensions of its shared allocation ",
                            "(sa or sa[stage], or its transpose), whose shape is [", shape_str(shape), "]"),
                        loc);
    auto layout = operand_layout(shape, view->dtype.bits());
    if (!layout)
      throw ScriptError("ValueError",
                        cat("wgmma.mma: no wgmma shared-memory layout holds the allocation [", shape_str(shape),
                            "] of ", operand_name(k), ": its rows (the last dimension) must be a multiple of "
                            "16 bytes and the row count a multiple of 8"),
                        loc);
    it->second = *layout;
    plan.wgmma_roots.insert(root);
  }
}

// ---- CUDA

// The view's last two dimensions as dimensions of its allocation: false when the view is
// the allocation's trailing matrix, true when it is that matrix transposed. nullopt for
// views wgmma cannot read (a reshape).
std::optional<bool> transposed(const CudaEmitter::SharedInfo& s, int root_rank) {
  std::vector<int> map;
  for (int d = static_cast<int>(s.lead.size()); d < root_rank; ++d) map.push_back(d);
  for (const auto& step : s.steps) {
    switch (step.kind) {
      case CudaEmitter::ViewStep::Kind::Slice: map.erase(map.begin(), map.begin() + step.lead.size()); break;
      case CudaEmitter::ViewStep::Kind::Permute: {
        std::vector<int> next;
        for (int d : step.dims) next.push_back(map[d]);
        map = next;
        break;
      }
      case CudaEmitter::ViewStep::Kind::Reshape: return std::nullopt;
    }
  }
  if (map.size() != 2) return std::nullopt;
  if (map[0] == root_rank - 2 && map[1] == root_rank - 1) return false;
  if (map[0] == root_rank - 1 && map[1] == root_rank - 2) return true;
  return std::nullopt;
}

// One operand as the descriptors see it: coordinates (row, col) of its allocation's
// trailing matrix, the contiguous one col.
struct Operand {
  const CudaEmitter::SharedInfo* info = nullptr;
  const SharedLayout* layout = nullptr;
  bool k_major = true;
  int64_t bytes_per_elem_bits = 16;

  // unswizzled byte offset of (row, col) from the matrix's origin
  int64_t offset(int64_t row, int64_t col) const {
    std::vector<int64_t> coords(layout->rank(), 0);
    coords[layout->rank() - 2] = row;
    coords[layout->rank() - 1] = col;
    return whole_bytes(bytes_per_elem_bits * unswizzled_offset(*layout, coords), "wgmma: a descriptor's address");
  }
  int64_t swizzle_code() const {
    if (!layout->is_swizzled()) return 0;
    return layout->swizzle_chunks == 8 ? 1 : layout->swizzle_chunks == 4 ? 2 : 3;
  }
  // Elements along C one swizzle atom (or one core matrix, unswizzled) spans.
  int64_t atom() const {
    const int64_t chunk = 128 / bytes_per_elem_bits;
    return layout->is_swizzled() ? chunk * layout->swizzle_chunks : chunk;
  }
  // Leading and stride byte offsets (PTX "Matrix Descriptor Format"; the canonical
  // layouts of CUTLASS's GmmaDescriptor): K-major: 8-row groups SBO apart, unswizzled
  // 16-byte K columns LBO apart; MN-major: 8-row (K) groups SBO apart and swizzle atoms
  // along MN LBO apart, unswizzled MN core matrices SBO apart and K groups LBO apart.
  std::pair<int64_t, int64_t> lbo_sbo(int64_t mn_extent) const {
    const int64_t chunk = 128 / bytes_per_elem_bits, cols = layout->shape.back();
    if (k_major) return {swizzle_code() ? 16 : offset(0, chunk), offset(8, 0)};
    if (!swizzle_code()) return {offset(8, 0), offset(0, chunk)};
    return {mn_extent > atom() && cols > atom() ? offset(0, atom()) : 16, offset(8, 0)};
  }
};

// a_regs: A from 4 32-bit registers per thread (the fragment), not a descriptor.
std::string helper(CudaEmitter& e, int64_t n, int64_t k, DataType ta, DataType tb, bool tnsp_a, bool tnsp_b,
                   bool a_regs) {
  const bool tnsp = is_16bit(ta);
  std::string name = cat("tl_wgmma_m64n", n, "k", k, "_f32_", ptx_type(ta), "_", ptx_type(tb));
  if (tnsp) name += cat("_", a_regs ? "r" : tnsp_a ? "mn" : "k", tnsp_b ? "mn" : "k");
  else if (a_regs) name += "_r";
  if (!e.helper_names_.insert(name).second) return name;
  const int64_t regs = n / 2, a_ops = a_regs ? 4 : 1, pred = regs + a_ops + 1;
  std::ostringstream h;
  h << "// D[64, " << n << "] += A[64, " << k << "] @ B[" << k << ", " << n << "], A "
    << (a_regs ? "from registers" : tnsp_a ? "M-major" : "K-major") << ", B " << (tnsp_b ? "N" : "K")
    << "-major, shared operands read through descriptors (self.wgmma.mma)\n";
  h << "static __device__ __forceinline__ void " << name << "(float* d, "
    << (a_regs ? "const unsigned int* a" : "unsigned long long desc_a") << ", unsigned long long desc_b) {\n";
  h << "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
  h << "  asm volatile(\n";
  h << "      \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << pred << ", 0;\\n\"\n";
  h << "      \"wgmma.mma_async.sync.aligned.m64n" << n << "k" << k << ".f32." << ptx_type(ta) << "."
    << ptx_type(tb) << " {";
  for (int64_t r = 0; r < regs; ++r) h << (r ? ", " : "") << "%" << r;
  h << "}, ";
  if (a_regs) h << "{%" << regs << ", %" << regs + 1 << ", %" << regs + 2 << ", %" << regs + 3 << "}";
  else h << "%" << regs;
  h << ", %" << regs + a_ops << ", p, 1, 1";
  if (tnsp && !a_regs) h << ", " << (tnsp_a ? 1 : 0);  // the register form has no A transpose
  if (tnsp) h << ", " << (tnsp_b ? 1 : 0);
  h << ";\\n}\\n\"\n      :";
  for (int64_t r = 0; r < regs; ++r) h << (r ? ", " : " ") << "\"+f\"(d[" << r << "])";
  h << "\n      : ";
  if (a_regs) h << "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3])";
  else h << "\"l\"(desc_a)";
  h << ", \"l\"(desc_b), \"r\"(1));\n";
  h << "#endif\n}\n";
  e.helpers_.push_back(h.str());
  return name;
}

// (Whole warpgroups issue the four: ThreadsRule::Warpgroups, checked by the builder.)
void need_sm90(const CudaEmitter& e, const char* what) {
  TILUS_CHECK(e.options_.sm90, "ValueError", what,
              " needs an sm_90a target (wgmma is Hopper's); this kernel is being compiled for an earlier "
              "architecture");
}

void mma_emit(CudaEmitter& e, const Instruction& inst) {
  need_sm90(e, "wgmma.mma");
  const Tensor &a = inst.inputs[0], &b = inst.inputs[1], &d = inst.inputs[2];
  std::string why;
  auto t = tiling_for(a->shape[0], b->shape[1], a->shape[1], inst_k(a->dtype, b->dtype), e.group_threads() / 32, &why);
  TILUS_CHECK(t.has_value(), "ValueError", "wgmma.mma: ", why);
  const RegisterLayout& dl = e.plan_.layout_of(d);
  TILUS_CHECK(dl == t->c, "ValueError", "wgmma.mma: d must have wgmma's accumulator layout ", t->c.str(),
              ", but it has ", dl.str());
  const bool a_regs = a->scope == Scope::Register;
  if (a_regs) {
    const RegisterLayout& al = e.plan_.layout_of(a);
    TILUS_CHECK(al == t->a, "ValueError", "wgmma.mma: a register operand a must have wgmma's A fragment layout ",
                t->a.str(), ", but it has ", al.str());
  }
  Operand ops[2];
  for (int k = a_regs ? 1 : 0; k < 2; ++k) {
    const Tensor& v = inst.inputs[k];
    Operand& o = ops[k];
    o.info = &e.shared_.at(v->id);
    o.layout = &e.plan_.shared.at(o.info->root);
    o.bytes_per_elem_bits = v->dtype.bits();
    auto tr = transposed(*o.info, o.layout->rank());
    TILUS_CHECK(tr.has_value(), "ValueError", "wgmma.mma: ", operand_name(k), " (", v->type_str(),
                ") must be its allocation's trailing matrix or that matrix transposed (no reshaped views)");
    // a [M, K]: K-major unless transposed; b [K, N]: K-major only when transposed
    o.k_major = k == 0 ? !*tr : *tr;
    TILUS_CHECK(o.k_major || is_16bit(v->dtype), "ValueError", "wgmma.mma: ", operand_name(k), " (",
                v->type_str(), ") is stored ", k == 0 ? "M" : "N", "-major (its ", k == 0 ? "M" : "N",
                " dimension is contiguous in shared memory), which wgmma allows only for float16 and "
                "bfloat16; store it K-major (", k == 0 ? "a as [M, K]" : "b as [N, K], passing b.transpose()",
                ")");
  }
  Operand &oa = ops[0], &ob = ops[1];
  // MN-major operands start each warpgroup's / instruction's descriptor at a swizzle atom
  if (!ob.k_major)
    TILUS_CHECK(t->n_wg % ob.atom() == 0 || t->wg_n == 1, "ValueError", "wgmma.mma: with b N-major, each of the ",
                t->wg_n, " warpgroups along N takes ", t->n_wg, " columns, not a multiple of ", ob.atom());
  if (!ob.k_major && t->n_wg > t->n_inst)
    TILUS_CHECK(t->n_inst % ob.atom() == 0, "ValueError", "wgmma.mma: with b N-major, the n", t->n_inst,
                " instructions must start at multiples of ", ob.atom(), " columns");
  if (e.options_.omit_mma) {
    e.line("// wgmma.mma left out (tilus.option.debug.omit)");
    return;
  }
  const std::string acc = e.reg_name(d);
  const std::string h = helper(e, t->n_inst, t->k_inst, a->dtype, b->dtype, !a_regs && !oa.k_major, !ob.k_major, a_regs);
  const int64_t total = dl.local_size(), n_reps = t->n_wg / t->n_inst;
  e.line(cat("// wgmma.mma: m64n", t->n_inst, "k", t->k_inst, ", ", t->wg_m, "x", t->wg_n, " warpgroups, ",
             t->slabs, " slab(s) x ", n_reps, " n-block(s) x ", t->k_steps, " k step(s); A ",
             a_regs ? "from registers" : oa.k_major ? "K-major" : "M-major", ", B ", ob.k_major ? "K" : "N", "-major"));
  e.line("#pragma unroll");
  e.line(cat("for (int i = 0; i < ", total, "; ++i) tilus::fence_register(", acc, "[i]);"));
  e.open("");
  const std::string wg = e.fresh("tl_warpgroup"), pa = a_regs ? "" : e.fresh("tl_a_smem"), pb = e.fresh("tl_b_smem");
  e.line("const int " + wg + " = " + e.uniform_warpgroup() + ";");
  const Expr zero = make_int(0);
  // each warpgroup's corner: M rows gm * slabs * 64, N columns gn * n_wg
  if (!a_regs) {
    const int64_t a_step = oa.k_major ? oa.offset(t->slabs * 64, 0) : oa.offset(0, t->slabs * 64);
    e.line(cat("const unsigned int ", pa, " = tilus::smem_u32(", oa.info->ptr, " + ",
               e.expr(e.shared_offset(*oa.info, {zero, zero})), ") + ", wg, " / ", t->wg_n, " * ", a_step, ";"));
  }
  const int64_t b_step = ob.k_major ? ob.offset(t->n_wg, 0) : ob.offset(0, t->n_wg);
  e.line(cat("const unsigned int ", pb, " = tilus::smem_u32(", ob.info->ptr, " + ",
             e.expr(e.shared_offset(*ob.info, {zero, zero})), ") + ", wg, " % ", t->wg_n, " * ", b_step, ";"));
  const auto [a_lbo, a_sbo] = a_regs ? std::pair<int64_t, int64_t>{0, 0} : oa.lbo_sbo(64);
  const auto [b_lbo, b_sbo] = ob.lbo_sbo(t->n_inst);
  const std::string ra = a_regs ? e.reg_name(a) : "";
  // one descriptor per operand tile, one add per instruction (wgmma_desc_add)
  const std::string da = a_regs ? "" : e.fresh("tl_a_desc"), db = e.fresh("tl_b_desc");
  if (!a_regs)
    e.line(cat("const unsigned long long ", da, " = tilus::wgmma_desc(", pa, ", ", a_lbo, ", ", a_sbo, ", ",
               oa.swizzle_code(), ");"));
  e.line(cat("const unsigned long long ", db, " = tilus::wgmma_desc(", pb, ", ", b_lbo, ", ", b_sbo, ", ",
             ob.swizzle_code(), ");"));
  for (int64_t kk = 0; kk < t->k_steps; ++kk) {
    const int64_t k0 = kk * t->k_inst;
    for (int64_t s = 0; s < t->slabs; ++s) {
      // A: a descriptor, or the 4 registers of slab s, k step kk (t.a's local order)
      const std::string a_arg =
          a_regs ? cat("reinterpret_cast<const unsigned int*>(", ra, ") + ", (s * t->k_steps + kk) * 4)
                 : cat("tilus::wgmma_desc_add(", da, ", ", oa.k_major ? oa.offset(s * 64, k0) : oa.offset(k0, s * 64),
                       ")");
      for (int64_t j = 0; j < n_reps; ++j) {
        const int64_t n0 = j * t->n_inst;
        const int64_t b_off = ob.k_major ? ob.offset(n0, k0) : ob.offset(k0, n0);
        const int64_t reg = s * (t->n_wg / 2) + j * (t->n_inst / 2);
        e.line(cat(h, "(", acc, " + ", reg, ", ", a_arg, ", tilus::wgmma_desc_add(", db, ", ", b_off, "));"));
      }
    }
  }
  e.close();
}

// The accumulators of every wgmma.mma of the program: after a wait their registers may
// hold new values, so no read of them may move above it.
void pin_accumulators(CudaEmitter& e) {
  std::vector<int> seen;
  for_each_inst(e.program_.body, [&](const StmtNode& s) {
    if (s.inst->op != Op::WgmmaMma) return;
    const Tensor& d = s.inst->inputs[2];
    if (std::find(seen.begin(), seen.end(), d->id) != seen.end()) return;
    seen.push_back(d->id);
    e.pin(d);
  });
}

// ---- the interpreter

}  // namespace

}  // namespace ops

namespace interp {

// What wgmma work is in flight in one block (see the file comment).
struct WgmmaState {
  struct Result {
    const TensorNode* d = nullptr;
    std::vector<float> value;  // d once this group's mmas into it are done
  };
  // An operand the group reads until it retires (the hardware reads a's registers and the
  // shared operands asynchronously): writing one before is a race. A register a is named
  // by its tensor, a shared operand by its bytes [lo, hi).
  struct Read {
    const TensorNode* operand = nullptr;
    const StmtNode* stmt = nullptr;  // the mma reading it
    const uint8_t *lo = nullptr, *hi = nullptr;
  };
  struct Group {
    std::vector<Result> results;
    std::vector<Read> registers, shared;
  };
  Group open;
  std::deque<Group> committed;
  // d -> its value after every mma issued so far, and the last mma's statement
  std::unordered_map<const TensorNode*, std::vector<float>> latest;
  std::unordered_map<const TensorNode*, const StmtNode*> issued_at;

  // The first read in the open or a committed group that `hit` accepts, or null.
  template <class Hit>
  const Read* find_read(std::vector<Read> Group::*kind, Hit hit) const {
    for (const Read& r : open.*kind)
      if (hit(r)) return &r;
    for (const Group& g : committed)
      for (const Read& r : g.*kind)
        if (hit(r)) return &r;
    return nullptr;
  }

  static void record(Group& g, const TensorNode* d, const std::vector<float>& v) {
    for (Result& r : g.results)
      if (r.d == d) {
        r.value = v;
        return;
      }
    g.results.push_back({d, v});
  }
};

namespace {

bool is_16bit_float(DataType t) { return t == dtypes::float16 || t == dtypes::bfloat16; }

WgmmaState& wgmma_state(BlockState& st) {
  if (!st.wgmma) st.wgmma = std::make_shared<WgmmaState>();
  return *st.wgmma;
}

std::vector<float> read_floats(const TensorValue& x) {
  std::vector<float> out(static_cast<size_t>(x.numel));
  const int bytes = element_bytes(x.dtype);
  for (int64_t i = 0; i < x.numel; ++i) {
    const int64_t at = x.elem_offsets ? (*x.elem_offsets)[i] : i;
    out[i] = static_cast<float>(load_f(x.data + at * bytes, x.dtype.kind));
  }
  return out;
}

// The bytes [first, last) a shared tensor value spans (a view's, through its offsets).
std::pair<const uint8_t*, const uint8_t*> shared_bytes(const TensorValue& v) {
  if (v.numel == 0) return {v.data, v.data};
  int64_t first = 0, last = v.numel - 1;
  if (v.elem_offsets) {
    auto [lo, hi] = std::minmax_element(v.elem_offsets->begin(), v.elem_offsets->end());
    first = *lo;
    last = *hi;
  }
  const int64_t bits = v.dtype.bits();
  return {v.data + first * bits / 8, v.data + ((last + 1) * bits + 7) / 8};
}

void mma_interpret(BlockState& st, const StmtNode& stmt, const Instruction& inst) {
  WgmmaState& w = wgmma_state(st);
  const Tensor &a = inst.inputs[0], &b = inst.inputs[1], &d = inst.inputs[2];
  const int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  const TensorValue &ta = input(st, a, inst), &tb = input(st, b, inst);
  // tf32 and fp8 operands must be K-major, as CUDA code generation requires: a's K (its
  // last dimension) and b's K (its first) must be the contiguous one in shared memory.
  if (!is_16bit_float(a->dtype)) {
    auto step = [](const TensorValue& x, int64_t index) {
      return x.elem_offsets ? (*x.elem_offsets)[index] - (*x.elem_offsets)[0] : index;
    };
    const bool a_k_major = a->scope == Scope::Register || k == 1 || step(ta, 1) == 1;
    const bool b_k_major = k == 1 || step(tb, n) == 1;
    TILUS_CHECK(a_k_major && b_k_major, "ValueError", "wgmma.mma: ", a_k_major ? "b" : "a", " (",
                (a_k_major ? b : a)->type_str(), ") is stored ", a_k_major ? "N" : "M",
                "-major, which wgmma allows only for float16 and bfloat16; store it K-major");
  }
  std::vector<float> av = read_floats(ta), bv = read_floats(tb);
  auto it = w.latest.find(d.get());
  std::vector<float> acc = it != w.latest.end() ? it->second : read_floats(input(st, d, inst));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) {
      const float x = av[i * k + kk];
      for (int64_t j = 0; j < n; ++j) acc[i * n + j] += x * bv[kk * n + j];
    }
  WgmmaState::record(w.open, d.get(), acc);
  w.latest[d.get()] = std::move(acc);
  w.issued_at[d.get()] = &stmt;
  if (a->scope == Scope::Register) w.open.registers.push_back({a.get(), &stmt});
  auto note_shared = [&](const Tensor& t, const TensorValue& v) {
    if (t->scope != Scope::Shared) return;
    if (st.launch->debug) shared_operand_read(st, v, stmt);
    auto [lo, hi] = shared_bytes(v);
    w.open.shared.push_back({t.get(), &stmt, lo, hi});
  };
  note_shared(a, ta);
  note_shared(b, tb);
}

void commit_interpret(BlockState& st, const StmtNode&, const Instruction&) {
  if (!st.wgmma) return;
  WgmmaState& w = *st.wgmma;
  w.committed.push_back(std::move(w.open));  // an empty group still counts for wait_group
  w.open = {};
}

void wait_interpret(BlockState& st, const StmtNode&, const Instruction& inst) {
  if (!st.wgmma) return;
  WgmmaState& w = *st.wgmma;
  while (static_cast<int64_t>(w.committed.size()) > inst.int_attr) {
    for (const WgmmaState::Result& r : w.committed.front().results) {
      TensorValue& dv = st.tensor(r.d);
      std::memcpy(dv.data, r.value.data(), r.value.size() * sizeof(float));
      dv.unset = false;
    }
    w.committed.pop_front();
  }
  // accumulators no group still writes are settled
  for (auto it = w.issued_at.begin(); it != w.issued_at.end();) {
    bool running = false;
    auto writes = [&](const WgmmaState::Group& g) {
      for (const auto& r : g.results) running = running || r.d == it->first;
    };
    writes(w.open);
    for (const auto& g : w.committed) writes(g);
    if (running) {
      ++it;
    } else {
      w.latest.erase(it->first);
      it = w.issued_at.erase(it);
    }
  }
}

}  // namespace

void wgmma_shared_write(BlockState& st, const TensorValue& dst, const char* what, const std::string& target,
                        std::ptrdiff_t shift) {
  if (!st.wgmma) return;
  auto [lo, hi] = shared_bytes(dst);
  lo += shift;
  hi += shift;
  const WgmmaState::Read* r =
      st.wgmma->find_read(&WgmmaState::Group::shared, [&](const auto& r) { return lo < r.hi && r.lo < hi; });
  if (r)
    throw ScriptError("RuntimeError",
                      cat(what, " writes ", target, " while the wgmma.mma reading ", r->operand->name,
                          " there (line ", r->stmt->loc.line, ") may still run: the tensor cores read its "
                          "shared operands until the self.wgmma.wait_group that retires its commit group; "
                          "free the slot (or write it) only after that wait"));
}

void wgmma_guard(BlockState& st, const StmtNode&, const Instruction& inst) {
  WgmmaState& w = *st.wgmma;
  if (w.issued_at.empty() && w.open.registers.empty() && w.committed.empty()) return;
  // an mma chains on d (the hardware orders those); a and b are shared
  if (inst.op == Op::WgmmaMma || inst.op == Op::WgmmaFence || inst.op == Op::WgmmaCommit || inst.op == Op::WgmmaWait)
    return;
  auto check = [&](const Tensor& t) {
    if (!t) return;
    auto it = w.issued_at.find(t.get());
    if (it == w.issued_at.end()) return;
    throw ScriptError("RuntimeError",
                      cat(op_name(inst.op), " uses ", t->name, " while the wgmma.mma writing it (line ",
                          it->second->loc.line, ") is still in flight: its result lands at the "
                          "self.wgmma.wait_group that retires its commit group; commit and wait first"));
  };
  check(inst.output);
  for (const Tensor& t : inst.inputs) check(t);
  // a register operand a in flight may be read (by another mma, say), not written: ptxas
  // does not keep its registers for the running group and the new values would race
  if (!inst.output) return;
  const TensorNode* out = inst.output.get();
  if (const WgmmaState::Read* r =
          w.find_read(&WgmmaState::Group::registers, [&](const auto& r) { return r.operand == out; }))
    throw ScriptError("RuntimeError",
                      cat(op_name(inst.op), " writes ", out->name, " while the wgmma.mma reading it as "
                          "its register operand a (line ", r->stmt->loc.line, ") is still in flight: the "
                          "tensor cores read a's registers until the self.wgmma.wait_group that retires its "
                          "commit group; wait for it before writing ", out->name, " again"));
}

}  // namespace interp

namespace {
std::string wait_print(const Instruction& i) { return inst_text::call(i, std::to_string(i.int_attr)); }
std::string mma_print(const Instruction& i) {
  return inst_text::call(i, inst_text::ref(i.inputs[0]) + ", " + inst_text::ref(i.inputs[1]) + ", " +
                                inst_text::ref(i.inputs[2]));
}
void no_operands_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.no_output(i);
}
// d += a @ b written in place: the output is d and defines nothing.
void mma_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 3, 0, 0);
  if (i.inputs[0]->scope != Scope::Register) c.scope(i, i.inputs[0], Scope::Shared, "a");
  c.scope(i, i.inputs[1], Scope::Shared, "b");
  c.scope(i, i.inputs[2], Scope::Register, "d");
  const Tensor &a = i.inputs[0], &b = i.inputs[1], &d = i.inputs[2];
  if (a->shape.size() != 2 || b->shape.size() != 2 || d->shape.size() != 2 || a->shape[1] != b->shape[0] ||
      d->shape[0] != a->shape[0] || d->shape[1] != b->shape[1])
    c.fail(op_name(i.op), ": ", c.str(a), " @ ", c.str(b), " does not give ", c.str(d));
  if (i.output != d || i.defines_output) c.fail(op_name(i.op), ": must write d in place");
}
}  // namespace

namespace ops {

const OpHandler kWgmmaFence = {
    no_operands_check, nullptr, [](interp::BlockState&, const StmtNode&, const Instruction&) {},
    [](CudaEmitter& e, const Instruction&) {
      need_sm90(e, "wgmma.fence");
      e.line("tilus::wgmma_fence();");
    },
    nullptr, no_operands_verify, nullptr, ThreadsRule::Warpgroups};

const OpHandler kWgmmaMma = {mma_check, mma_layout, interp::mma_interpret, mma_emit, mma_print, mma_verify,
                             nullptr, ThreadsRule::Warpgroups};

const OpHandler kWgmmaCommit = {
    no_operands_check, nullptr, interp::commit_interpret, [](CudaEmitter& e, const Instruction&) {
      need_sm90(e, "wgmma.commit_group");
      e.line("tilus::wgmma_commit_group();");
    },
    nullptr, no_operands_verify, nullptr, ThreadsRule::Warpgroups};

const OpHandler kWgmmaWait = {
    wait_check, nullptr, interp::wait_interpret, [](CudaEmitter& e, const Instruction& i) {
      need_sm90(e, "wgmma.wait_group");
      e.line(cat("tilus::wgmma_wait_group<", i.int_attr, ">();"));
      pin_accumulators(e);
    },
    wait_print, no_operands_verify, nullptr, ThreadsRule::Warpgroups};

}  // namespace ops
}  // namespace tilus
