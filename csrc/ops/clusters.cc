// Register reallocation and thread-block clusters: Tilus 0.2's self.setmaxnreg (hidet's
// setmaxnreg primitive), self.cluster (sync, blockIdx, clusterDim, blockRank,
// map_shared_addr), the cluster forms of mbarrier arrivals, and tile loads and stores of
// a peer block's shared tensor (self.cluster.load_shared / store_shared, ours)
// (python/tilus/lang/inst_groups.py, inst_cluster.py).
//
// CUDA: a kernel with self.attrs.cluster_blocks is declared __cluster_dims__ (emitter.cc),
// so an ordinary launch runs it in clusters. The interpreter runs the blocks of a cluster
// side by side (interp/thread_groups.cc run_clusters); a shared address mapped to a peer
// carries the peer's rank (ops/hopper_state.h kRankMask), which barrier_at follows.
#include <string>

#include "codegen/emitter.h"
#include "interp/debug_checks.h"
#include "interp/state.h"
#include "interp/tile_math.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ir/packed.h"
#include "ops/arrive_order.h"
#include "ops/hopper_state.h"
#include "ops/op_handler.h"
#include "support/error.h"

namespace tilus {

// ClusterQuery's int_attr.
enum ClusterWhat : int64_t { kBlockIdxX, kBlockIdxY, kBlockIdxZ, kClusterDimX, kClusterDimY, kClusterDimZ, kBlockRank };

const char* cluster_what_name(int64_t what) {
  static const char* const names[] = {"blockIdx.x",   "blockIdx.y",   "blockIdx.z", "clusterDim.x",
                                      "clusterDim.y", "clusterDim.z", "blockRank"};
  return what >= 0 && what <= kBlockRank ? names[what] : "?";
}

namespace ops {
namespace {

void need_sm90(CudaEmitter& e, const Instruction& i) {
  TILUS_CHECK(e.options_.sm90, "NotImplementedError", op_name(i.op),
              " needs sm_90a (Hopper); build for sm_90a");
}

void check_int(const Instruction& i, size_t k, const char* what) {
  TILUS_CHECK(k < i.args.size() && i.args[k] && i.args[k]->dtype.is_integer() && !i.args[k]->dtype.is_pointer,
              "TypeError", op_name(i.op), ": ", what, " must be an integer scalar");
}

void check_out_var(const Instruction& i) {
  TILUS_CHECK(!i.args.empty() && i.args[0]->kind == ExprKind::Var && i.args[0]->dtype == dtypes::uint32,
              "TypeError", op_name(i.op), ": the result must be a uint32 variable");
}

// ---- setmaxnreg

OutputType setmaxnreg_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.empty() && i.dims.size() == 1, "ValueError",
              "setmaxnreg takes a register count and an action");
  TILUS_CHECK(i.int_attr >= 24 && i.int_attr <= 256 && i.int_attr % 8 == 0, "ValueError",
              "setmaxnreg: nregs must be a multiple of 8 in [24, 256], got ", i.int_attr);
  return {dtypes::uint32, {}};
}

void setmaxnreg_emit(CudaEmitter& e, const Instruction& i) {
  need_sm90(e, i);
  e.reallocates_registers_ = true;
  e.line(std::string("asm volatile(\"setmaxnreg.") + (i.dims[0] ? "inc" : "dec") + ".sync.aligned.u32 " +
         std::to_string(i.int_attr) + ";\" ::: \"memory\");");
}

// The interpreter has no register file; the builder checked where it may run.
void nothing_interpret(interp::BlockState&, const StmtNode&, const Instruction&) {}

// ---- cluster.sync

OutputType sync_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.empty(), "ValueError", "cluster.sync takes no operands");
  return {dtypes::uint32, {}};
}

void sync_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction&) {
  interp::ClusterRun* c = st.cluster;
  if (!c) return;  // a cluster of one block: every thread of it executes the barrier
  const int64_t total = c->size() * int64_t{st.launch->program->warps} * 32;
  const uint64_t generation = c->generation;
  // For the race checks: the barrier orders every block's accesses before it with every
  // access after it, as a release by each block and an acquire of all of them.
  const uintptr_t key = reinterpret_cast<uintptr_t>(c) + 8 * (generation + 1);
  if (interp::DebugState* d = st.launch->debug.get()) {
    interp::VectorClock& joined = d->released[key];
    for (const auto& [block, clock] : st.clock) joined[block] = std::max(joined[block], clock);
    ++st.clock[st.linear];
  }
  c->arrived += st.threads();
  ++c->progress;
  if (c->arrived >= total) {
    c->arrived = 0;
    ++c->generation;
  }
  while (c->generation == generation) {
    const std::string why = cat("waits in cluster.sync (line ", stmt.loc.line, ") for ", total - c->arrived,
                                " more of the cluster's ", total, " threads");
    if (!interp::yield_to_groups(st, why)) {
      ScriptError e("RuntimeError", cat("deadlock: block (", st.block_idx[0], ", ", st.block_idx[1], ", ",
                                        st.block_idx[2], ") ", why, ", and no other thread can arrive"));
      e.set_loc_if_unknown(stmt.loc);
      throw e;
    }
  }
  interp::debug_acquire(st, key);
}

void sync_emit(CudaEmitter& e, const Instruction& i) {
  need_sm90(e, i);
  // Not .aligned: a thread group may be part of a warp. arrive releases, wait acquires.
  e.line("asm volatile(\"barrier.cluster.arrive;\\n\\tbarrier.cluster.wait;\" ::: \"memory\");");
}

// ---- cluster.blockIdx / clusterDim / blockRank

OutputType query_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.size() == 1, "ValueError", "cluster_query sets one variable");
  check_out_var(i);
  TILUS_CHECK(i.int_attr >= 0 && i.int_attr <= kBlockRank, "ValueError", "cluster_query: unknown query ",
              i.int_attr);
  return {dtypes::uint32, {}};
}

void query_interpret(interp::BlockState& st, const StmtNode&, const Instruction& i) {
  std::array<int64_t, 3> dims{1, 1, 1}, idx{0, 0, 0};
  int64_t rank = 0;
  if (st.cluster) {
    dims = st.cluster->dims;
    rank = st.cluster_rank;
    idx = {rank % dims[0], rank / dims[0] % dims[1], rank / (dims[0] * dims[1])};
  }
  int64_t v = 0;
  switch (static_cast<ClusterWhat>(i.int_attr)) {
    case kBlockIdxX:
    case kBlockIdxY:
    case kBlockIdxZ: v = idx[i.int_attr - kBlockIdxX]; break;
    case kClusterDimX:
    case kClusterDimY:
    case kClusterDimZ: v = dims[i.int_attr - kClusterDimX]; break;
    case kBlockRank: v = rank; break;
  }
  st.var(i.args[0].get()) = interp::Value::of_int(v);
}

void query_emit(CudaEmitter& e, const Instruction& i) {
  need_sm90(e, i);
  static const char* const regs[] = {"%%cluster_ctaid.x",  "%%cluster_ctaid.y",  "%%cluster_ctaid.z",
                                     "%%cluster_nctaid.x", "%%cluster_nctaid.y", "%%cluster_nctaid.z",
                                     "%%cluster_ctarank"};
  e.line("asm volatile(\"mov.u32 %0, " + std::string(regs[i.int_attr]) + ";\" : \"=r\"(" + e.expr(i.args[0]) +
         "));");
}

// ---- cluster.map_shared_addr

OutputType map_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.size() == 3, "ValueError",
              "cluster.map_shared_addr takes an address and a target rank");
  check_out_var(i);
  check_int(i, 1, "addr");
  check_int(i, 2, "target_rank");
  return {dtypes::uint32, {}};
}

int64_t checked_rank(interp::BlockState& st, const Expr& e, const char* what) {
  const int64_t rank = interp::eval_int(st, e);
  const int64_t size = st.cluster ? st.cluster->size() : 1;
  TILUS_CHECK(rank >= 0 && rank < size, "ValueError", what, ": target rank ", rank, " is not a block of the cluster (",
              size, " blocks)");
  return rank;
}

void map_interpret(interp::BlockState& st, const StmtNode&, const Instruction& i) {
  const uint32_t addr = static_cast<uint32_t>(interp::eval_int(st, i.args[1])) & ~interp::kRankMask;
  const int64_t rank = checked_rank(st, i.args[2], "cluster.map_shared_addr");
  // Within a cluster of one block the address stays local.
  const uint32_t mapped = st.cluster ? addr | (static_cast<uint32_t>(rank + 1) << interp::kRankShift) : addr;
  st.var(i.args[0].get()) = interp::Value::of_int(mapped);
}

std::string mapa(CudaEmitter& e, const std::string& addr, const std::string& rank) {
  const std::string v = e.fresh("tl_mapped");
  e.line("unsigned " + v + ";");
  e.line("asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(" + v + ") : \"r\"((unsigned)(" + addr +
         ")), \"r\"((unsigned)(" + rank + ")));");
  return v;
}

void map_emit(CudaEmitter& e, const Instruction& i) {
  need_sm90(e, i);
  e.open("");
  const std::string v = mapa(e, e.expr(i.args[1]), e.expr(i.args[2]));
  e.line(e.expr(i.args[0]) + " = " + v + ";");
  e.close();
}

// ---- mbarrier.arrive_and_expect_tx_remote / _multicast

OutputType arrive_cluster_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.size() == 3 && i.dims.size() == 1, "ValueError", op_name(i.op),
              " takes a barrier, transaction bytes and a target");
  check_int(i, 0, "barrier");
  check_int(i, 1, "transaction_bytes");
  check_int(i, 2, i.dims[0] ? "multicast_mask" : "target_rank");
  if (i.args[1]->kind == ExprKind::Const)
    TILUS_CHECK(i.args[1]->int_value >= 0, "ValueError", "transaction_bytes must be non-negative, got ",
                i.args[1]->int_value);
  return {dtypes::uint32, {}};
}

// One arrival with `bytes` expected on the barrier at `address` of block `rank`.
void arrive_on(interp::BlockState& st, uint32_t address, int64_t rank, int64_t arrivals, int64_t bytes,
               const char* what) {
  const uint32_t mapped =
      st.cluster ? (address & ~interp::kRankMask) | (static_cast<uint32_t>(rank + 1) << interp::kRankShift) : address;
  interp::MBarrier& b = interp::barrier_at(st, mapped, what);
  TILUS_CHECK(arrivals <= b.pending, "RuntimeError", what, ": ", arrivals, " arrivals on ", interp::barrier_name(b),
              " of the block of rank ", rank, ", which waits for only ", b.pending, " more of its ", b.count);
  interp::barrier_update(b, arrivals, arrivals * bytes);
  if (st.cluster) ++st.cluster->hopper[rank]->progress;
  interp::note_progress(st);
}

void arrive_cluster_interpret(interp::BlockState& st, const StmtNode&, const Instruction& i) {
  const uint32_t address = static_cast<uint32_t>(interp::eval_int(st, i.args[0]));
  const int64_t bytes = interp::eval_int(st, i.args[1]);
  TILUS_CHECK(bytes >= 0, "ValueError", "transaction_bytes = ", bytes, " is negative");
  if (!i.dims[0]) {
    // Every thread of the group arrives on the peer's barrier.
    const int64_t rank = checked_rank(st, i.args[2], "mbarrier.arrive_and_expect_tx_remote");
    arrive_on(st, address, rank, st.threads(), bytes, "mbarrier.arrive_and_expect_tx_remote");
    return;
  }
  // Thread r of the group arrives once on rank r's barrier for each bit r of the mask.
  const int64_t mask = interp::eval_int(st, i.args[2]);
  const int64_t size = st.cluster ? st.cluster->size() : 1;
  TILUS_CHECK(st.threads() >= 16, "ValueError",
              "mbarrier.arrive_and_expect_tx_multicast needs a thread group of at least 16 threads, got ",
              st.threads());
  TILUS_CHECK(mask >= 0 && mask < (int64_t{1} << size), "ValueError", "multicast_mask ", mask,
              " names blocks outside the cluster of ", size);
  for (int64_t r = 0; r < size; ++r)
    if ((mask >> r) & 1) arrive_on(st, address, r, 1, bytes, "mbarrier.arrive_and_expect_tx_multicast");
}

void arrive_cluster_emit(CudaEmitter& e, const Instruction& i) {
  need_sm90(e, i);
  // with the loads left out (tilus.option.debug.omit) no bytes will come
  const std::string bytes = e.options_.omit_loads ? "0u" : "(unsigned)(" + e.expr(i.args[1]) + ")";
  // scope='cluster' (the default): release at cluster scope; scope='cta' the plain
  // (release.cta) arrival, which does not wait for this thread's earlier memory
  // operations to reach the peers: the cheap form for freeing a slot whose reads were
  // retired otherwise (a wgmma wait), as producer/consumer pipelines do.
  auto arrive = [&](const std::string& remote) {
    e.line("asm volatile(\"mbarrier.arrive.expect_tx" + arrive_order(i) + ".shared::cluster.b64 _, [%0], %1;\" :: \"r\"(" +
           remote + "), \"r\"(" + bytes + ") : \"memory\");");
  };
  e.open("");
  if (!i.dims[0]) {
    arrive(mapa(e, e.expr(i.args[0]), e.expr(i.args[2])));
  } else {
    // Thread r of the group signals the block of rank r when bit r of the mask is set.
    e.open("if (tl_tid < 16 && ((unsigned)(" + e.expr(i.args[2]) + ") >> tl_tid & 1u))");
    arrive(mapa(e, e.expr(i.args[0]), "tl_tid"));
    e.close();
  }
  e.close();
}

// ---- cluster.store_shared / cluster.load_shared: a peer block's instance of a shared
// tensor (distributed shared memory). The address of each element is this block's
// address of it mapped to the peer (mapa), so the same view (a slice, a permuted view)
// names the same elements in every block of the cluster.

OutputType peer_rank_check(Instruction& i, const char* what) {
  TILUS_CHECK(i.args.size() == 1, "ValueError", what, " takes one target rank");
  check_int(i, 0, "target_rank");
  const Tensor& shared = i.inputs.at(0);
  require_shared(shared, what);
  TILUS_CHECK(!is_packed(shared->dtype), "TypeError", what, ": ", shared->name, " holds packed ",
              shared->dtype.name(), " elements; move their bytes (a uint8 view) instead");
  return {};
}

OutputType peer_store_check(Instruction& i) {
  expect_inputs(i, 2);
  peer_rank_check(i, "cluster.store_shared");
  const Tensor &shared = i.inputs[0], &value = i.inputs[1];
  require_register(value, "cluster.store_shared", "the value");
  TILUS_CHECK(value->shape == shared->shape, "ValueError", "cluster.store_shared: the value has shape ",
              shape_str(value->shape), " but shared tensor ", shared->name, " has shape ", shape_str(shared->shape));
  TILUS_CHECK(value->dtype == shared->dtype, "TypeError", "cluster.store_shared: cannot store a ",
              value->dtype.name(), " tile into shared tensor ", shared->name, " of ", shared->dtype.name(),
              "; cast it first");
  return {};
}

OutputType peer_load_check(Instruction& i) {
  expect_inputs(i, 1);
  peer_rank_check(i, "cluster.load_shared");
  return {i.inputs[0]->dtype, i.inputs[0]->shape};
}

// `view` as it lies in the block of rank `rank`: the same offset in that block's instance
// of the allocation. Refused when that block has not allocated it, has freed it, or has
// finished (on the GPU its shared memory is gone then: the access faults or reads
// another kernel's data).
interp::TensorValue peer_view(interp::BlockState& st, const interp::TensorValue& view, int64_t rank,
                              const char* what, const std::string& name) {
  if (!st.cluster || rank == st.cluster_rank) return view;
  interp::BlockState& peer = *st.cluster->blocks[static_cast<size_t>(rank)];
  TILUS_CHECK(!peer.finished, "RuntimeError", what, ": the block of rank ", rank,
              " has already finished, and its shared memory with it; a self.cluster.sync() after the "
              "accesses keeps every block of the cluster alive until they are done");
  const size_t root = interp::shared_root_slot(st, view);
  const interp::TensorValue& peer_root = peer.tensors[root];
  TILUS_CHECK(peer_root.defined && peer_root.storage, "RuntimeError", what, ": the block of rank ", rank,
              " has not allocated ", name, "'s shared tensor, or has freed it (synchronise the cluster after "
              "allocating and before reaching into a peer)");
  interp::TensorValue v = view;
  v.data = peer_root.data + (view.data - st.tensors[root].data);
  v.storage = peer_root.storage;
  v.shadow = peer_root.shadow;
  return v;
}

void peer_store_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& i) {
  const interp::TensorValue& value = interp::input(st, i.inputs[1], i);
  const interp::TensorValue& local = interp::input(st, i.inputs[0], i);
  const int64_t rank = checked_rank(st, i.args[0], "cluster.store_shared");
  interp::TensorValue dst = peer_view(st, local, rank, "cluster.store_shared", i.inputs[0]->name);
  interp::BlockState& owner = st.cluster && rank != st.cluster_rank ? *st.cluster->blocks[rank] : st;
  interp::wgmma_shared_write(owner, dst, "cluster.store_shared", i.inputs[0]->name);
  interp::copy_tensor(value, dst, i);
  if (&owner == &st)
    interp::shared_tile_access(st, dst, i.inputs[1].get(), interp::Access::Write, stmt);
  else
    interp::shared_peer_access(st, dst, rank, interp::Access::Write, stmt);
  interp::note_progress(st);
}

void peer_load_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& i) {
  const interp::TensorValue& local = interp::input(st, i.inputs[0], i);
  const int64_t rank = checked_rank(st, i.args[0], "cluster.load_shared");
  const interp::TensorValue src = peer_view(st, local, rank, "cluster.load_shared", i.inputs[0]->name);
  interp::copy_tensor(src, interp::define_output(st, i.output.get(), i.output->dtype), i);
  if (!st.cluster || rank == st.cluster_rank)
    interp::shared_tile_access(st, src, i.output.get(), interp::Access::Read, stmt);
  else
    interp::shared_peer_access(st, src, rank, interp::Access::Read, stmt);
}

// View s's base as a .shared::cluster address in the block of rank `rank` (one mapa an
// access); the view's element at offset k (elements of its dtype) lies k * size further.
std::string peer_base(CudaEmitter& e, const CudaEmitter::SharedInfo& s, const Expr& rank) {
  return mapa(e, "tilus::smem_u32(" + s.ptr + ")", e.expr(rank));
}

void peer_store_emit(CudaEmitter& e, const Instruction& i) {
  need_sm90(e, i);
  const Tensor& x = i.inputs[1];
  const RegisterLayout& layout = e.plan_.layout_of(x);
  const CudaEmitter::SharedInfo& s = e.shared_.at(i.inputs[0]->id);
  const std::string r = e.reg_name(x);
  const int64_t vec = e.shared_vector(layout, x, s);
  const int64_t bytes = whole_bytes(x->dtype.bits() * vec, "cluster.store_shared: one access");
  const int64_t elem = x->dtype.bits() / 8;
  e.open("");
  const std::string base = peer_base(e, s, i.args[0]);
  const std::string leader = e.replica_leader(layout);
  if (!leader.empty()) e.open("if (" + leader + ")");
  e.for_each_local(layout, vec, [&](const CudaEmitter::Element& el) {
    const std::string mask = e.tile_mask(layout, x->shape, el);
    if (!mask.empty()) e.open("if (" + mask + ")");
    e.line("tilus::store_shared_cluster_vec<" + std::to_string(bytes) + ">(" + base + " + (unsigned)(" +
           e.expr(e.element_offset(s, layout, vec, el)) + ") * " + std::to_string(elem) + "u, &" + r + "[" +
           e.expr(el.local) + "]);");
    if (!mask.empty()) e.close();
  });
  if (!leader.empty()) e.close();
  e.close();
}

void peer_load_emit(CudaEmitter& e, const Instruction& i) {
  need_sm90(e, i);
  const Tensor& t = i.output;
  const RegisterLayout& layout = e.plan_.layout_of(t);
  const CudaEmitter::SharedInfo& s = e.shared_.at(i.inputs[0]->id);
  const std::string r = e.declare_reg(t, layout);
  const int64_t vec = e.shared_vector(layout, t, s);
  const int64_t bytes = whole_bytes(t->dtype.bits() * vec, "cluster.load_shared: one access");
  const int64_t elem = t->dtype.bits() / 8;
  e.open("");
  const std::string base = peer_base(e, s, i.args[0]);
  e.for_each_local(layout, vec, [&](const CudaEmitter::Element& el) {
    const std::string mask = e.tile_mask(layout, t->shape, el);
    if (!mask.empty()) e.open("if (" + mask + ")");
    e.line("tilus::load_shared_cluster_vec<" + std::to_string(bytes) + ">(&" + r + "[" + e.expr(el.local) +
           "], " + base + " + (unsigned)(" + e.expr(e.element_offset(s, layout, vec, el)) + ") * " +
           std::to_string(elem) + "u);");
    if (!mask.empty()) e.close();
  });
  e.close();
}

void peer_store_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 2, 1, 1);
  c.no_output(i);
  c.scope(i, i.inputs[0], Scope::Shared, "the destination");
  c.scope(i, i.inputs[1], Scope::Register, "the value");
  c.same_shape(i, i.inputs[0], i.inputs[1]);
  c.same_dtype(i, i.inputs[0], i.inputs[1]);
}
void peer_load_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 1, 1);
  c.scope(i, i.inputs[0], Scope::Shared, "the source");
  c.scope(i, i.output, Scope::Register, "the output");
  c.same_shape(i, i.inputs[0], i.output);
  c.same_dtype(i, i.inputs[0], i.output);
}
std::string peer_print(const Instruction& i) {
  return inst_text::call(i, "target_rank=" + expr_str(i.args[0]));
}

std::string setmaxnreg_print(const Instruction& i) {
  return inst_text::call(i, std::to_string(i.int_attr) + (i.dims.at(0) ? ", inc" : ", dec"));
}
std::string query_print(const Instruction& i) {
  return expr_str(i.args[0]) + " = cluster_query(" + cluster_what_name(i.int_attr) + ")";
}
std::string map_print(const Instruction& i) {
  return expr_str(i.args[0]) + " = cluster_map_shared_addr(" + expr_str(i.args[1]) + ", rank=" +
         expr_str(i.args[2]) + ")";
}
std::string arrive_cluster_print(const Instruction& i) {
  return inst_text::call(i, expr_str(i.args[0]) + ", transaction_bytes=" + expr_str(i.args[1]) +
                                (i.dims.at(0) ? ", multicast_mask=" : ", target_rank=") + expr_str(i.args[2]));
}
// Scalars and barriers only: args[0, n) and no tensors.
template <size_t kArgs>
void scalar_args_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, kArgs, kArgs);
  c.no_output(i);
}

}  // namespace

const OpHandler kSetMaxNReg = {setmaxnreg_check,         nullptr, nothing_interpret, setmaxnreg_emit, setmaxnreg_print,
                               scalar_args_verify<0>, nullptr, ThreadsRule::Warpgroups};
const OpHandler kClusterSync = {sync_check, nullptr, sync_interpret, sync_emit, nullptr, scalar_args_verify<0>,
                                nullptr, ThreadsRule::Block};
const OpHandler kClusterQuery = {query_check, nullptr, query_interpret, query_emit, query_print, scalar_args_verify<1>};
const OpHandler kClusterMapSharedAddr = {map_check, nullptr, map_interpret, map_emit, map_print, scalar_args_verify<3>};
const OpHandler kClusterStoreShared = {peer_store_check, nullptr, peer_store_interpret, peer_store_emit,
                                       peer_print,       peer_store_verify};
const OpHandler kClusterLoadShared = {peer_load_check, nullptr, peer_load_interpret, peer_load_emit,
                                      peer_print,      peer_load_verify};
const OpHandler kMbarrierArriveCluster = {arrive_cluster_check, nullptr,
                                          arrive_cluster_interpret, arrive_cluster_emit,
                                          arrive_cluster_print,  scalar_args_verify<3>};

}  // namespace ops
}  // namespace tilus
