// TMA bulk tensor copies (Tilus 0.2's self.tma group: python/tilus/lang/inst_hopper.py).
//
// global_to_shared completes on an mbarrier (its transaction bytes: the whole box, as
// the hardware counts out-of-range elements it fills with zeros); shared_to_global is
// retired by commit_group / wait_group. The interpreter's model is ops/hopper_state.h.
//
// CUDA: the copies need tensor maps encoded on the host (cuTensorMapEncodeTiled) and
// passed as __grid_constant__ CUtensorMap parameters; that plumbing is not built yet,
// so code generation refuses the copies at their script line. The bulk-group commit
// and wait lower to cp.async.bulk.{commit,wait}_group.
#include <string>

#include "codegen/emitter.h"
#include "interp/debug_checks.h"
#include "interp/tile_math.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/hopper_state.h"
#include "ops/op_handler.h"
#include "support/error.h"

namespace tilus {

namespace interp {

void land_load(BlockState& st, TmaLoad& load) {
  perform_copy(*st.launch, load.copy);
  shared_tma_landed(st, load.copy);
  MBarrier& b = barrier_at(st, load.barrier, "tma.global_to_shared");
  barrier_update(b, 0, -load.bytes);
}

namespace {

void land_store(BlockState& st, const TmaStore& s) {
  try {
    transfer_window(*st.launch, s.dst, s.offsets, s.dims, const_cast<uint8_t*>(s.src), s.src_dtype,
                    s.src_shape, Transfer::Store, "tma.shared_to_global");
  } catch (ScriptError& e) {
    if (s.stmt) e.set_loc_if_unknown(s.stmt->loc);
    throw;
  }
}

void complete_stores(BlockState& st, size_t keep_groups) {
  HopperState& h = hopper_state(st);
  while (h.committed_stores.size() > keep_groups) {
    for (const TmaStore& s : h.committed_stores.front()) land_store(st, s);
    h.committed_stores.pop_front();
  }
}

}  // namespace

void complete_hopper_copies(BlockState& st) {
  HopperState& h = hopper_state(st);
  while (!h.loads.empty()) {
    TmaLoad load = std::move(h.loads.front());
    h.loads.pop_front();
    land_load(st, load);
  }
  complete_stores(st, 0);
  for (const TmaStore& s : h.open_stores) land_store(st, s);
  h.open_stores.clear();
}

}  // namespace interp

namespace ops {
namespace {

// The box (the shared tile's shape) must be one the TMA unit can move: at most 5
// dimensions of at most 256 elements, the innermost a multiple of 16 bytes; the tile's
// dimension p comes from global dimension dims[p].
OutputType copy_check(Instruction& i) {
  const bool load = i.op == Op::TmaGlobalToShared;
  const char* what = load ? "tma.global_to_shared" : "tma.shared_to_global";
  TILUS_CHECK(i.inputs.size() == 2, "ValueError", what, " takes src and dst");
  const Tensor& g = load ? i.inputs[0] : i.inputs[1];
  const Tensor& s = load ? i.inputs[1] : i.inputs[0];
  TILUS_CHECK(g->scope == Scope::Global, "TypeError", what, ": ", load ? "src" : "dst",
              " must be a global tensor, got a ", scope_name(g->scope), " tensor");
  TILUS_CHECK(s->scope == Scope::Shared, "TypeError", what, ": ", load ? "dst" : "src",
              " must be a shared tensor, got a ", scope_name(s->scope), " tensor");
  TILUS_CHECK(g->dtype == s->dtype, "TypeError", what, ": the global tensor is ", g->dtype.name(),
              " but the shared tensor is ", s->dtype.name(), "; TMA copies do not convert");
  const size_t grank = static_cast<size_t>(g->rank()), srank = s->shape.size();
  const size_t first = load ? 1 : 0;  // args: [mbarrier,] offsets
  TILUS_CHECK(i.args.size() == first + grank, "ValueError", what, ": offsets has ",
              i.args.size() - first, " entries for a rank-", grank, " global tensor");
  if (load)
    TILUS_CHECK(i.args[0]->dtype.is_integer() && !i.args[0]->dtype.is_pointer, "TypeError",
                what, ": mbarrier must be a barrier from self.mbarrier.alloc (a uint32 address)");
  if (i.dims.empty())
    for (size_t d = 0; d < srank; ++d) i.dims.push_back(static_cast<int>(grank - srank + d));
  TILUS_CHECK(i.dims.size() == srank, "ValueError", what, ": dims has ", i.dims.size(),
              " entries for a rank-", srank, " shared tensor");
  for (size_t p = 0; p < srank; ++p) {
    TILUS_CHECK(i.dims[p] >= 0 && static_cast<size_t>(i.dims[p]) < grank && (p == 0 || i.dims[p] > i.dims[p - 1]),
                "ValueError", what, ": dims must be increasing dimensions of the rank-", grank,
                " global tensor, got dims[", p, "] = ", i.dims[p]);
  }
  TILUS_CHECK(grank <= 5, "ValueError", what, ": TMA copies tensors of at most 5 dimensions, got ", grank);
  for (size_t p = 0; p < srank; ++p)
    TILUS_CHECK(s->shape[p] >= 1 && s->shape[p] <= 256, "ValueError", what, ": the box (the shared tile ",
                s->type_str(), ") has extent ", s->shape[p], " in dimension ", p,
                "; TMA boxes are at most 256 elements per dimension");
  const int64_t inner_bits = s->shape.back() * s->dtype.bits();
  TILUS_CHECK(inner_bits % 128 == 0, "ValueError", what, ": the box's innermost extent ", s->shape.back(),
              " x ", s->dtype.bits(), " bits is not a multiple of 16 bytes, which TMA requires");
  return {s->dtype, {}};
}

OutputType group_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.empty(), "ValueError", op_name(i.op), " takes no tensors");
  if (i.op == Op::TmaWaitGroup)
    TILUS_CHECK(i.int_attr >= 0 && i.int_attr <= 7, "ValueError",
                "tma.wait_group: n must be a constant in [0, 7], got ", i.int_attr);
  return {dtypes::uint32, {}};
}

void g2s_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& i) {
  const interp::TensorValue& g = interp::input(st, i.inputs[0], i);
  const interp::TensorValue& dst = interp::input(st, i.inputs[1], i);
  interp::TmaLoad load;
  load.barrier = static_cast<uint32_t>(interp::eval_int(st, i.args[0]));
  interp::barrier_at(st, load.barrier, "tma.global_to_shared");  // refused when issued
  load.copy.src = g;
  load.copy.keep_alive = dst.storage;
  load.copy.dst = dst.data;
  load.copy.dst_dtype = dst.dtype;
  load.copy.dst_shape = *dst.shape;
  load.copy.shadow = dst.shadow;  // the debug checks mark the landed elements written
  load.copy.dst_offsets = dst.elem_offsets;
  for (size_t k = 1; k < i.args.size(); ++k) load.copy.offsets.push_back(interp::eval_int(st, i.args[k]));
  load.copy.dims = i.dims;
  load.copy.stmt = &stmt;
  load.bytes = storage_bytes(dst.numel * dst.dtype.bits());
  interp::hopper_state(st).loads.push_back(std::move(load));
}

void s2g_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& i) {
  const interp::TensorValue& src = interp::input(st, i.inputs[0], i);
  const interp::TensorValue& g = interp::input(st, i.inputs[1], i);
  interp::TmaStore s;
  s.dst = g;
  s.keep_alive = src.storage;
  s.src = src.data;
  s.src_dtype = src.dtype;
  s.src_shape = *src.shape;
  for (const Expr& a : i.args) s.offsets.push_back(interp::eval_int(st, a));
  s.dims = i.dims;
  s.stmt = &stmt;
  interp::hopper_state(st).open_stores.push_back(std::move(s));
}

void commit_interpret(interp::BlockState& st, const StmtNode&, const Instruction&) {
  interp::HopperState& h = interp::hopper_state(st);
  h.committed_stores.push_back(std::move(h.open_stores));
  h.open_stores.clear();
}

void wait_group_interpret(interp::BlockState& st, const StmtNode&, const Instruction& i) {
  interp::HopperState& h = interp::hopper_state(st);
  while (h.committed_stores.size() > static_cast<size_t>(i.int_attr)) {
    for (const interp::TmaStore& s : h.committed_stores.front()) {
      interp::transfer_window(*st.launch, s.dst, s.offsets, s.dims, const_cast<uint8_t*>(s.src), s.src_dtype,
                              s.src_shape, interp::Transfer::Store, "tma.shared_to_global");
    }
    h.committed_stores.pop_front();
  }
}

void copy_emit(CudaEmitter&, const Instruction& i) {
  throw ScriptError("NotImplementedError",
                    cat(i.op == Op::TmaGlobalToShared ? "tma.global_to_shared" : "tma.shared_to_global",
                        ": the CUDA lowering of TMA copies (tensor maps encoded on the host with "
                        "cuTensorMapEncodeTiled) is not implemented yet; the program runs in the "
                        "interpreter when its tensors are on the CPU"));
}

void group_emit(CudaEmitter& e, const Instruction& i) {
  TILUS_CHECK(e.options_.sm90, "NotImplementedError", i.op == Op::TmaCommitGroup ? "tma.commit_group" : "tma.wait_group",
              " needs sm_90a (Hopper); build for sm_90a");
  if (i.op == Op::TmaCommitGroup) {
    e.line("asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\");");
  } else {
    e.line(std::string("asm volatile(\"cp.async.bulk.wait_group") + (i.dims.size() == 1 && i.dims[0] ? ".read" : "") +
           " " + std::to_string(i.int_attr) + ";\" ::: \"memory\");");
  }
}

// ---- IR text, the verifier's operand checks, and a running wgmma dot
std::string copy_print(const Instruction& i) {
  std::string s = inst_text::ref(i.inputs[0]) + ", " + inst_text::ref(i.inputs[1]) + ", offsets=";
  if (i.op == Op::TmaGlobalToShared)
    return inst_text::call(i, s + inst_text::exprs(std::vector<Expr>(i.args.begin() + 1, i.args.end())) +
                                  ", dims=" + inst_text::ints(i.dims) + ", mbarrier=" + expr_str(i.args[0]));
  return inst_text::call(i, s + inst_text::exprs(i.args) + ", dims=" + inst_text::ints(i.dims));
}
void copy_verify(OperandCheck& c, const Instruction& i) {
  const bool load = i.op == Op::TmaGlobalToShared;
  const Tensor& g = i.inputs.size() == 2 ? i.inputs[load ? 0 : 1] : nullptr;
  const size_t n = (load ? 1 : 0) + (g ? static_cast<size_t>(g->rank()) : 0);
  c.arity(i, 2, n, n);
  c.scope(i, i.inputs[load ? 0 : 1], Scope::Global, load ? "src" : "dst");
  c.scope(i, i.inputs[load ? 1 : 0], Scope::Shared, load ? "dst" : "src");
  c.no_output(i);
}
// A TMA load overwrites its shared dst asynchronously, so a dot still reading that tile
// must finish first.
WgmmaHazard load_hazard(const Instruction&, const LayoutPlan&, int) {
  return {WgmmaHazard::WritesShared, 1, "a TMA load overwrites a tile a running dot may read"};
}
std::string group_print(const Instruction& i) {
  if (i.op == Op::TmaCommitGroup) return inst_text::call(i, "");
  return inst_text::call(i, std::to_string(i.int_attr) + (i.dims.size() == 1 && i.dims[0] ? ", read=True" : ""));
}
void group_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.no_output(i);
}

}  // namespace

const OpHandler kTmaGlobalToShared = {copy_check, nullptr, g2s_interpret, copy_emit, copy_print, copy_verify, load_hazard};
const OpHandler kTmaSharedToGlobal = {copy_check, nullptr, s2g_interpret, copy_emit, copy_print, copy_verify};
const OpHandler kTmaCommitGroup = {group_check, nullptr, commit_interpret, group_emit, group_print, group_verify};
const OpHandler kTmaWaitGroup = {group_check, nullptr, wait_group_interpret, group_emit, group_print, group_verify};

}  // namespace ops
}  // namespace tilus
