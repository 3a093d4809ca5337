// TMA bulk tensor copies (Tilus 0.2's self.tma group: python/tilus/lang/inst_hopper.py).
//
// global_to_shared completes on an mbarrier (its transaction bytes: the whole box, as
// the hardware counts out-of-range elements it fills with zeros); shared_to_global is
// retired by commit_group / wait_group. The interpreter's model is ops/hopper_state.h.
//
// CUDA (sm_90a): each copy is cp.async.bulk.tensor through a tensor map, a
// `const __grid_constant__ tilus::TmaDescriptor tl_tma<k>` parameter after the
// workspaces, one per (global view, box, swizzle) (CudaEmitter::tma_maps_ ->
// GeneratedKernel::tma_maps); the host encodes it before each launch from the view's
// pointer, extents and strides (runtime/tma_maps.h). The thread group executes every
// instruction (any group, down to Tilus 0.2's `with self.single_thread():`), and the
// copy is issued by the group's thread 0 only (the interpreter's "issued once"):
//   global_to_shared  thread 0 issues the load; it completes on the mbarrier. With a
//                     multicast mask (int_attr 1, the mask the last arg) the box lands at
//                     the same shared offset in every block of the mask and completes on
//                     each one's barrier at the same offset (.multicast::cluster).
//   shared_to_global  fence.proxy.async + __syncthreads first (every thread's writes to
//                     the tile are complete and visible to the TMA unit), then thread 0
//                     issues the store into its bulk group.
//   commit_group      cp.async.bulk.commit_group (only thread 0 has copies in it).
//   wait_group        cp.async.bulk.wait_group, then __syncthreads: the other threads
//                     must not overwrite a tile before thread 0 knows it has been read.
// The kernel waits for outstanding store reads before it exits.
//
// The shared tile's layout must be one the TMA unit writes: the layout rule gives every
// allocation a TMA copies a row-major layout with the TMA swizzle of its row size
// (tma_shared_layout); the emitter checks the planned layout (which wgmma may have
// chosen) against the hardware's swizzle modes and refuses what it cannot express.
#include <algorithm>
#include <string>

#include "ir/functor.h"
#include "transforms/host_launch_shape.h"

#include "codegen/emitter.h"
#include "interp/debug_checks.h"
#include "interp/tile_math.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/hopper_state.h"
#include "ops/op_handler.h"
#include "ops/tma_layout.h"
#include "support/error.h"

namespace tilus {

namespace interp {

void land_load(BlockState& st, TmaLoad& load) {
  perform_copy(*st.launch, load.copy);
  shared_tma_landed(st, load.copy);
  MBarrier& b = barrier_at(st, load.barrier, "tma.global_to_shared");
  barrier_update(b, 0, -load.bytes);
  note_progress(st);
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

// A load with int_attr 1 multicasts: its last arg is the mask of the cluster's blocks
// whose shared memory (the same offset as dst here) and barrier (the same offset as the
// mbarrier here) it lands in.
bool multicast(const Instruction& i) { return i.op == Op::TmaGlobalToShared && i.int_attr == 1; }

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
  const size_t first = load ? 1 : 0;  // args: [mbarrier,] offsets [, multicast mask]
  const size_t mask = multicast(i) ? 1 : 0;
  TILUS_CHECK(load || !mask, "ValueError", what, " has no multicast form");
  TILUS_CHECK(i.args.size() == first + grank + mask, "ValueError", what, ": offsets has ",
              i.args.size() - first - mask, " entries for a rank-", grank, " global tensor");
  if (load)
    TILUS_CHECK(i.args[0]->dtype.is_integer() && !i.args[0]->dtype.is_pointer, "TypeError",
                what, ": mbarrier must be a barrier from self.mbarrier.alloc (a uint32 address)");
  if (mask)
    TILUS_CHECK(i.args.back()->dtype.is_integer() && !i.args.back()->dtype.is_pointer, "TypeError",
                what, ": multicast_mask must be an integer (bit r: the block of rank r of the cluster)");
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

// The TMA unit starts a box only at a 16-byte multiple along the innermost dimension: on
// sm_90 any other start is an illegal instruction that kills the CUDA context. Code
// generation must prove the offset aligned (copy_emit); the interpreter refuses a
// misaligned value when it runs, so CPU runs meet the same rule.
const char* copy_name(const Instruction& i);
int64_t inner_alignment(const Tensor& g) { return std::max<int64_t>(1, 128 / g->dtype.bits()); }

void check_inner_offset(const Instruction& i, const Tensor& g, int64_t offset) {
  const int64_t align = inner_alignment(g);
  TILUS_CHECK(offset % align == 0, "ValueError", copy_name(i), ": the offset ", offset, " along the last dimension of ",
              g->name, " is not a multiple of ", align, " ", g->dtype.name(),
              " elements (16 bytes); TMA boxes start only at 16-byte multiples along the contiguous dimension");
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
  const size_t end = i.args.size() - (multicast(i) ? 1 : 0);
  for (size_t k = 1; k < end; ++k) load.copy.offsets.push_back(interp::eval_int(st, i.args[k]));
  check_inner_offset(i, i.inputs[0], load.copy.offsets.back());
  load.copy.dims = i.dims;
  load.copy.stmt = &stmt;
  load.bytes = storage_bytes(dst.numel * dst.dtype.bits());
  if (!multicast(i)) {
    // the box may land at once: not into bytes a wgmma still in flight reads
    interp::wgmma_shared_write(st, dst, "tma.global_to_shared", i.inputs[1]->name);
    interp::hopper_state(st).loads.push_back(std::move(load));
    return;
  }
  // Multicast: the same box lands in every block of the mask, at dst's offset inside the
  // same allocation of that block, completing on that block's barrier at the same offset.
  TILUS_CHECK(st.cluster, "ValueError", "tma.global_to_shared: multicast_mask needs a cluster of blocks "
              "(self.attrs.cluster_blocks); this kernel runs blocks alone");
  const int64_t mask = interp::eval_int(st, i.args.back());
  const int64_t blocks = st.cluster->size();
  TILUS_CHECK(mask > 0 && mask < (int64_t{1} << blocks), "ValueError", "tma.global_to_shared: multicast_mask ",
              mask, " names blocks outside the cluster of ", blocks, " block(s)");
  const size_t root = interp::shared_root_slot(st, dst);
  const int64_t offset = dst.data - st.tensors[root].data;
  for (int64_t r = 0; r < blocks; ++r) {
    if (!(mask >> r & 1)) continue;
    interp::BlockState& peer = r == st.cluster_rank ? st : *st.cluster->blocks[r];
    const interp::TensorValue& peer_root = peer.tensors[root];
    TILUS_CHECK(peer_root.defined && peer_root.storage, "RuntimeError", "tma.global_to_shared: the block of rank ",
                r, " has not allocated ", i.inputs[1]->name, "'s shared tensor yet (synchronise the cluster "
                "after allocating, before multicasting)");
    interp::TmaLoad copy = load;
    interp::wgmma_shared_write(peer, dst, "tma.global_to_shared (multicast)", i.inputs[1]->name,
                               peer_root.data + offset - dst.data);
    copy.copy.keep_alive = peer_root.storage;
    copy.copy.dst = peer_root.data + offset;
    copy.copy.shadow = peer_root.shadow;
    interp::barrier_at(peer, load.barrier, "tma.global_to_shared");
    interp::hopper_state(peer).loads.push_back(std::move(copy));
    interp::note_progress(peer);
  }
}

void s2g_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& i) {
  const interp::TensorValue& src = interp::input(st, i.inputs[0], i);
  const interp::TensorValue& g = interp::input(st, i.inputs[1], i);
  if (st.launch->debug) interp::shared_operand_read(st, src, stmt);
  interp::TmaStore s;
  s.dst = g;
  s.keep_alive = src.storage;
  s.src = src.data;
  s.src_dtype = src.dtype;
  s.src_shape = *src.shape;
  for (const Expr& a : i.args) s.offsets.push_back(interp::eval_int(st, a));
  check_inner_offset(i, i.inputs[1], s.offsets.back());
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

// ---- layouts

const Tensor& shared_of(const Instruction& i) {
  return i.op == Op::TmaGlobalToShared ? i.inputs[1] : i.inputs[0];
}

void copy_layout(LayoutRules& rules, const Instruction& i, const SourceLoc&) {
  const Tensor& s = shared_of(i);
  LayoutPlan& plan = rules.plan();
  if (plan.transformed_views.count(s->id)) return;  // refused by the emitter
  const int root = plan.root_of(s);
  auto it = plan.shared.find(root);
  if (it == plan.shared.end()) return;
  it->second = tma_shared_layout(it->second.shape, s->dtype.bits());
  plan.tma_roots.insert(root);
}

// ---- CUDA

const char* copy_name(const Instruction& i) {
  return i.op == Op::TmaGlobalToShared ? "tma.global_to_shared" : "tma.shared_to_global";
}

std::string shape_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

// The GlobalView instruction that defines `view`, or null (a workspace).
const Instruction* view_of(const Program& program, const Tensor& view) {
  const Instruction* found = nullptr;
  for_each_inst(program.body, [&](const StmtNode& s) {
    if (s.inst->op == Op::GlobalView && s.inst->output == view) found = s.inst.get();
  });
  return found;
}

}  // namespace

// Why the TMA unit cannot copy through global view `g` ("" when it can). Its tensor map
// is encoded on the host before the launch, so the view must start at a pointer
// parameter and have extents and strides the host computes; rows must be contiguous and
// constant strides multiples of 16 bytes. `proven`: other strides too must be provably
// multiples of 16 bytes (copy_async's lowering may not fail at the launch).
std::string tma_view_refusal(CudaEmitter& e, const Tensor& g, const char* what, bool proven) {
  const Instruction* view = view_of(e.program_, g);
  if (!view)
    return cat(what, ": the global tensor ", g->name, " is a workspace (self.global_tensor); TMA copies need a view "
               "of a kernel parameter (self.global_view), whose tensor map the host encodes before the launch");
  HostEvaluator host(e.program_);
  if (host.pointer_param(view->args[0]) < 0)
    return cat(what, ": the global view ", g->name, " starts at ", expr_str(view->args[0]), "; TMA copies need a "
               "view whose pointer is a kernel parameter (its tensor map is encoded on the host before the launch)");
  const size_t rank = g->global_shape.size();
  const int64_t bits = g->dtype.bits();
  const Expr& last = g->global_strides[rank - 1];
  if (!last->is_const() || last->int_value != 1)
    return cat(what, ": the global view ", g->name, " has stride ", expr_str(last),
               " in its last dimension; TMA copies need it contiguous (stride 1)");
  for (size_t d = 0; d < rank; ++d) {
    for (const char* kind : {"extent", "stride"}) {
      const Expr& x = kind[0] == 'e' ? g->global_shape[d] : g->global_strides[d];
      if (!host.evaluable(x))
        return cat(what, ": the ", kind, " of dimension ", d, " of the global view ", g->name, " is ", expr_str(x),
                   ", which the host cannot compute before the launch; a TMA copy's view may only use the "
                   "kernel's parameters, constants and top-level variables");
    }
    const Expr& stride = g->global_strides[d];
    if (d + 1 == rank) continue;
    if (stride->is_const() && stride->int_value * bits % 128)
      return cat(what, ": the global view ", g->name, " has stride ", stride->int_value, " in dimension ", d, " (",
                 stride->int_value * bits / 8, " bytes); TMA needs strides of a multiple of 16 bytes");
    if (proven && bits % 8 == 0 && !e.div_.is_multiple(stride, 128 / bits))
      return cat(what, ": the stride ", expr_str(stride), " of ", g->name, " is not known to be a multiple of 16 bytes");
  }
  return "";
}

namespace {

// The tensor map of a copy through global view `g` (added to the kernel's parameters
// when new): the view's pointer, extents and strides, and the box.
int tensor_map(CudaEmitter& e, const char* what, const Tensor& g, const std::vector<int64_t>& box,
               int swizzle_bytes) {
  for (size_t m = 0; m < e.tma_maps_.size(); ++m) {
    const TmaMapSpec& t = e.tma_maps_[m];
    if (t.view == g->id && t.box == box && t.swizzle_bytes == swizzle_bytes) return static_cast<int>(m);
  }
  const std::string refusal = tma_view_refusal(e, g, what, false);
  TILUS_CHECK(refusal.empty(), "ValueError", refusal);
  TILUS_CHECK(g->dtype.bits() % 8 == 0, "TypeError", what, ": ", g->dtype.name(), " elements are ", g->dtype.bits(),
              " bits; TMA copies move whole bytes per element");
  TmaMapSpec t;
  t.view = g->id;
  t.view_name = g->name;
  t.pointer_param = HostEvaluator(e.program_).pointer_param(view_of(e.program_, g)->args[0]);
  t.shape = g->global_shape;
  t.strides = g->global_strides;
  t.dtype = g->dtype;
  t.box = box;
  t.swizzle_bytes = swizzle_bytes;
  t.where = cat(what, " at \"", e.loc_.file, "\", line ", e.loc_.line);
  e.tma_maps_.push_back(std::move(t));
  return static_cast<int>(e.tma_maps_.size() - 1);
}

}  // namespace

void emit_tma_boxes(CudaEmitter& e, const char* what, bool load, const Tensor& g, const Tensor& s,
                    const std::vector<Expr>& offsets, const std::vector<int>& dims, const TmaTiling& tiling,
                    const std::string& bar, const std::string& mask, const std::string& first) {
  const int grank = g->rank();
  std::vector<int64_t> box(grank, 1);
  for (size_t p = 0; p < dims.size(); ++p) box[dims[p]] = s->shape[p];
  box.back() = tiling.block_cols;
  const int map = tensor_map(e, what, g, box, tiling.swizzle_bytes);
  const CudaEmitter::SharedInfo& si = e.shared_.at(s->id);
  // The tile's first element, and the coordinates (innermost first) of its first box.
  std::vector<Expr> zeros(s->shape.size(), make_int(0));
  const std::string base = e.fresh("tl_tma_smem");
  e.open("");
  e.line("const unsigned " + base + " = tilus::smem_u32(" + si.ptr + " + " + e.expr(e.shared_offset(si, zeros)) +
         ");  // " + what + " " + s->name + " " + shape_text(s->shape));
  std::vector<std::string> coords;
  for (int d = grank - 1; d >= 0; --d) coords.push_back("(int)(" + e.expr(offsets[d]) + ")");
  if (!load) {
    // Every thread's writes to the tile are done and visible to the async proxy before
    // thread 0 hands it to the TMA unit.
    e.line("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
    e.line(e.block_sync());
    e.tma_stores_ = true;
  }
  e.open("if (tl_tid == 0)");
  if (!first.empty()) e.line(first);
  const int64_t block_bytes =
      storage_bytes(s->shape.size() >= 2 ? s->shape[s->shape.size() - 2] * tiling.block_cols * s->dtype.bits() : 0);
  for (int64_t j = 0; j < tiling.blocks; ++j) {
    std::string call = std::string("tilus::") + (load ? (mask.empty() ? "tma_load_" : "tma_load_multicast_") : "tma_store_") +
                       std::to_string(grank) + "d(&tl_tma" + std::to_string(map) + ", " + base +
                       (j ? " + " + std::to_string(j * block_bytes) : "");
    if (load) call += ", " + bar;
    if (!mask.empty()) call += ", " + mask;
    for (size_t k = 0; k < coords.size(); ++k)
      call += ", " + (k == 0 && j ? coords[k] + " + " + std::to_string(j * tiling.block_cols) : coords[k]);
    e.line(call + ");");
  }
  e.close();
  e.close();
}

namespace {

void copy_emit(CudaEmitter& e, const Instruction& i) {
  const bool load = i.op == Op::TmaGlobalToShared;
  const char* what = copy_name(i);
  TILUS_CHECK(e.options_.sm90, "NotImplementedError", what, " needs sm_90a (Hopper): TMA copies have no "
              "sm_80 equivalent; build for sm_90a, or use self.copy_async on sm_80");
  const Tensor& g = load ? i.inputs[0] : i.inputs[1];
  const Tensor& s = shared_of(i);
  const int grank = g->rank();
  const size_t first = load ? 1 : 0;
  TILUS_CHECK(i.dims.back() == grank - 1, "ValueError", what, ": the tile's last dimension is dimension ",
              i.dims.back(), " of the rank-", grank, " global tensor; TMA boxes run along its last "
              "(contiguous) dimension, so the tile's last dimension must be that one");
  const Expr& inner = i.args[first + grank - 1];
  TILUS_CHECK(e.div_.is_multiple(inner, inner_alignment(g)), "ValueError", what, ": the offset ", expr_str(inner),
              " along the last dimension of ", g->name, " must be a multiple of ", inner_alignment(g), " ",
              g->dtype.name(), " elements (16 bytes), and tilus cannot prove it is: TMA boxes start only at "
              "16-byte multiples along the contiguous dimension (any other start faults on the GPU). Build the "
              "offset from multiples of ", inner_alignment(g), " (e.g. blockIdx * a tile width)");
  const CudaEmitter::SharedInfo& si = e.shared_.at(s->id);
  TILUS_CHECK(si.steps.empty() && !e.plan_.transformed_views.count(s->id), "ValueError", what, ": ", s->name,
              " is a reshaped or permuted view of a shared tile; TMA copies whole tiles of an allocation "
              "(the allocation, or a slice of its leading dimensions)");
  const SharedLayout& layout = e.plan_.shared.at(si.root);
  const TmaTiling tiling = tma_tiling(layout, s->shape, s->dtype.bits(), si.lead.size());
  TILUS_CHECK(tiling.error.empty(), "ValueError", what, ": the shared tile ", s->name, " ", s->type_str(), " is laid out as ",
              layout.str(), ", which TMA cannot write: ", tiling.error);

  // A multicast outside a cluster has no peer to reach: refused here as in the interpreter
  // (g2s_interpret), rather than compiled to a copy the script did not mean.
  const auto& cluster = e.program_.cluster;
  const bool in_cluster = cluster[0] * cluster[1] * cluster[2] > 1;
  TILUS_CHECK(!multicast(i) || in_cluster, "ValueError", what,
              ": multicast_mask needs a cluster of blocks (self.attrs.cluster_blocks); this kernel runs "
              "blocks alone");
  const std::vector<Expr> offsets(i.args.begin() + first, i.args.begin() + first + grank);
  const std::string bar = load ? "(unsigned)(" + e.expr(i.args[0]) + ")" : "";
  // a multicast load: the 16-bit mask of the cluster's blocks it lands in
  const std::string mask = multicast(i) ? "(unsigned short)(" + e.expr(i.args.back()) + ")" : "";
  if (load && e.options_.omit_loads) return e.line(std::string("// ") + what + " left out (tilus.option.debug.omit)");
  emit_tma_boxes(e, what, load, g, s, offsets, i.dims, tiling, bar, mask, "");
}

void group_emit(CudaEmitter& e, const Instruction& i) {
  TILUS_CHECK(e.options_.sm90, "NotImplementedError", i.op == Op::TmaCommitGroup ? "tma.commit_group" : "tma.wait_group",
              " needs sm_90a (Hopper); build for sm_90a");
  if (i.op == Op::TmaCommitGroup) {
    e.line("asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\");");
  } else {
    e.line(std::string("asm volatile(\"cp.async.bulk.wait_group") + (i.dims.size() == 1 && i.dims[0] ? ".read" : "") +
           " " + std::to_string(i.int_attr) + ";\" ::: \"memory\");");
    // Only thread 0 issued stores: the others learn they are done here.
    e.line(e.block_sync());
  }
}

// ---- IR text, the verifier's operand checks, and a running wgmma dot
std::string copy_print(const Instruction& i) {
  std::string s = inst_text::ref(i.inputs[0]) + ", " + inst_text::ref(i.inputs[1]) + ", offsets=";
  if (i.op == Op::TmaGlobalToShared) {
    const auto end = i.args.end() - (multicast(i) ? 1 : 0);
    return inst_text::call(i, s + inst_text::exprs(std::vector<Expr>(i.args.begin() + 1, end)) + ", dims=" +
                                  inst_text::ints(i.dims) + ", mbarrier=" + expr_str(i.args[0]) +
                                  (multicast(i) ? ", multicast_mask=" + expr_str(i.args.back()) : ""));
  }
  return inst_text::call(i, s + inst_text::exprs(i.args) + ", dims=" + inst_text::ints(i.dims));
}
void copy_verify(OperandCheck& c, const Instruction& i) {
  const bool load = i.op == Op::TmaGlobalToShared;
  const Tensor& g = i.inputs.size() == 2 ? i.inputs[load ? 0 : 1] : nullptr;
  const size_t n = (load ? 1 : 0) + (g ? static_cast<size_t>(g->rank()) : 0) + (multicast(i) ? 1 : 0);
  c.arity(i, 2, n, n);
  c.scope(i, i.inputs[load ? 0 : 1], Scope::Global, load ? "src" : "dst");
  c.scope(i, i.inputs[load ? 1 : 0], Scope::Shared, load ? "dst" : "src");
  c.no_output(i);
}
// A TMA load overwrites its shared dst asynchronously, so a dot still reading that tile
// must finish first.
WgmmaHazard load_hazard(const Instruction&, const LayoutPlan&, int) {
  return {WgmmaHazard::WritesTile, 1, "a TMA load overwrites a tile a running dot may read"};
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

SharedLayout tma_shared_layout(const std::vector<int64_t>& shape, int64_t dtype_bits) {
  // Fewer than 8 rows per leading index ([stages, 1, n]: a scale row per pipeline stage):
  // the TMA unit swizzles by address bits in periods of 8 rows, so each stage would have
  // to start at a multiple of the period, and a few rows conflict little anyway.
  const bool few_rows = shape.size() >= 2 && shape[shape.size() - 2] < 8;
  if (shape.size() >= 2 && can_swizzle(shape, dtype_bits) && !few_rows) {
    const int64_t row_bits = shape.back() * dtype_bits;
    if (row_bits == 512 || row_bits == 1024) return shared_swizzled(shape, dtype_bits);  // 64B, 128B
    if (row_bits % 1024 == 0) return *shared_wgmma_operand(shape, dtype_bits);           // 128B blocks
  }
  return shared_row_major(shape);
}

TmaTiling tma_tiling(const SharedLayout& l, const std::vector<int64_t>& view_shape, int64_t dtype_bits,
                     size_t lead_dims) {
  TmaTiling t;
  const int64_t cols = l.shape.back();
  // Dense row-major order over the allocation (before the swizzle and the column blocks).
  if (!l.has_dense_strides()) {
    t.error = "it is not row-major";
    return t;
  }
  t.block_cols = l.col_block ? l.col_block : cols;
  t.blocks = cols / t.block_cols;
  const int64_t row_bytes = t.block_cols * dtype_bits / 8;
  // A view starts at the allocation's start plus whole leading slices; the TMA unit
  // swizzles by address bits, so each start must sit at a multiple of the swizzle
  // period (8 rows), and every box at a multiple of 128 bytes.
  int64_t align = 128;
  if (l.is_swizzled()) {
    const int64_t segment = l.swizzle_chunks * 16;
    if (l.chunk_elems * dtype_bits != 128 || l.rows_per_phase * segment != 128 ||
        (segment != 32 && segment != 64 && segment != 128)) {
      t.error = "its swizzle is none of the TMA unit's (32, 64 or 128 bytes over 16-byte chunks)";
      return t;
    }
    if (row_bytes != segment) {
      t.error = cat("its rows (", row_bytes, " bytes per box row) differ from its ", segment,
                    "-byte swizzle span; a TMA box's inner extent must fill the swizzle span exactly");
      return t;
    }
    if (view_shape.size() < 2) {
      t.error = "a single row of a swizzled tile is not a box the TMA unit swizzles the same way";
      return t;
    }
    t.swizzle_bytes = static_cast<int>(segment);
    align = 8 * segment;
  } else if (l.col_block) {
    t.error = "column blocks without a swizzle";
    return t;
  }
  if (t.blocks > 1) {
    if (view_shape.size() != 2) {
      t.error = "a tile in column blocks is copied one [rows, 128 bytes] block at a time, which needs a 2-D tile";
      return t;
    }
    if (view_shape[0] * row_bytes % align) {
      t.error = cat("its column blocks of ", view_shape[0], " rows do not start at multiples of ", align, " bytes");
      return t;
    }
  }
  for (size_t d = 0; d < lead_dims; ++d) {
    if (l.strides[d] * dtype_bits / 8 % align) {
      t.error = cat("a slice of its dimension ", d, " starts every ", l.strides[d] * dtype_bits / 8,
                    " bytes, not at multiples of ", align, " bytes as the TMA unit needs",
                    l.is_swizzled() ? " for its swizzle" : "");
      return t;
    }
  }
  return t;
}

const OpHandler kTmaGlobalToShared = {copy_check, copy_layout, g2s_interpret, copy_emit,
                                      copy_print, copy_verify, load_hazard};
const OpHandler kTmaSharedToGlobal = {copy_check, copy_layout, s2g_interpret, copy_emit,
                                      copy_print, copy_verify, nullptr};
const OpHandler kTmaCommitGroup = {group_check, nullptr, commit_interpret, group_emit, group_print, group_verify};
const OpHandler kTmaWaitGroup = {group_check, nullptr, wait_group_interpret, group_emit, group_print, group_verify};

}  // namespace ops
}  // namespace tilus
