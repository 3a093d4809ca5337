// mbarriers (Tilus 0.2's self.mbarrier group: python/tilus/lang/inst_hopper.py) and the
// async-proxy fences (self.fence). The interpreter's model is ops/hopper_state.h.
//
// CUDA: the barriers of one alloc are a static __shared__ array initialised by thread 0
// (mbarrier.init, then fence.mbarrier_init on sm_90a so the TMA unit sees it) followed by
// a block barrier; the script's handle is the array's 32-bit shared address. The phase
// wait spins on mbarrier.try_wait.parity (test_wait.parity on sm_80). Transaction counts
// (arrive_and_expect_tx) and proxy fences exist only on sm_90a and are refused elsewhere.
#include <string>

#include "codegen/emitter.h"
#include "interp/tile_math.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ops/arrive_order.h"
#include "ops/hopper_state.h"
#include "ops/op_handler.h"
#include "support/error.h"

namespace tilus {

namespace interp {

HopperState& hopper_state(BlockState& st) {
  if (!st.hopper) st.hopper = std::make_shared<HopperState>();
  return *st.hopper;
}

std::string barrier_name(const MBarrier& b) {
  std::string where = b.alloc && b.alloc->loc.known() ? cat(" allocated at line ", b.alloc->loc.line) : "";
  return cat("mbarrier ", b.index, where);
}

MBarrier& barrier_at(BlockState& st, uint32_t address, const char* what) {
  HopperState* hp = &hopper_state(st);
  // An address from cluster.map_shared_addr names a barrier of another block of the cluster.
  if (const uint32_t peer = (address & kRankMask) >> kRankShift) {
    TILUS_CHECK(st.cluster && peer <= static_cast<uint32_t>(st.cluster->size()), "ValueError", what, ": ",
                address, " is not the address of a barrier in this cluster");
    hp = st.cluster->hopper[peer - 1].get();
    address &= ~kRankMask;
  }
  HopperState& h = *hp;
  const uint32_t k = (address - kBarrierBase) / 8;
  TILUS_CHECK(address >= kBarrierBase && (address - kBarrierBase) % 8 == 0 && k < h.barriers.size(),
              "ValueError", what, ": ", address, " is not the address of a barrier from "
              "self.mbarrier.alloc in this block");
  return h.barriers[k];
}

void barrier_update(MBarrier& b, int64_t arrivals, int64_t tx_delta) {
  b.pending -= arrivals;
  b.tx += tx_delta;
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.count;
  }
}

}  // namespace interp

namespace ops {
namespace {

// Every thread of the current thread group executes the instruction.
int64_t block_threads(const interp::BlockState& st) { return st.threads(); }

void check_scalar(const Instruction& i, size_t k, const char* what) {
  TILUS_CHECK(k < i.args.size() && i.args[k] && i.args[k]->dtype.is_integer() && !i.args[k]->dtype.is_pointer,
              "TypeError", op_name(i.op), ": ", what, " must be an integer scalar");
}

void check_cta_scope(const Instruction& i) {
  TILUS_CHECK(i.int_attr >= 0 && (i.int_attr >> 2) <= 1, "ValueError", op_name(i.op),
              ": scope must be 'cta' or 'cluster'");
}

OutputType alloc_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.size() >= 2, "ValueError",
              "mbarrier.alloc: counts must name at least one barrier");
  TILUS_CHECK(i.args[0]->kind == ExprKind::Var && i.args[0]->dtype == dtypes::uint32, "TypeError",
              "mbarrier.alloc: the handle must be a uint32 variable");
  for (size_t k = 1; k < i.args.size(); ++k) {
    check_scalar(i, k, "a count");
    if (i.args[k]->kind == ExprKind::Const)
      TILUS_CHECK(i.args[k]->int_value > 0 && i.args[k]->int_value < (1 << 20), "ValueError",
                  "mbarrier.alloc: counts[", k - 1, "] = ", i.args[k]->int_value,
                  " is not an arrival count in [1, 2^20)");
  }
  return {dtypes::uint32, {}};
}

OutputType arrive_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.size() == 2, "ValueError", op_name(i.op),
              " takes a barrier and a count");
  check_scalar(i, 0, "barrier");
  check_scalar(i, 1, i.op == Op::MbarrierWait ? "phase" : i.op == Op::MbarrierArrive ? "count" : "transaction_bytes");
  check_cta_scope(i);
  const Expr& v = i.args[1];
  if (v->kind == ExprKind::Const) {
    if (i.op == Op::MbarrierWait)
      TILUS_CHECK(v->int_value == 0 || v->int_value == 1, "ValueError",
                  "mbarrier.wait: phase must be 0 or 1 (the parity of the phase waited for), got ", v->int_value);
    else if (i.op == Op::MbarrierArrive)
      TILUS_CHECK(v->int_value > 0, "ValueError", "mbarrier.arrive: count must be positive, got ", v->int_value);
    else
      TILUS_CHECK(v->int_value >= 0, "ValueError",
                  "mbarrier.arrive_and_expect_tx: transaction_bytes must be non-negative, got ", v->int_value);
  }
  return {dtypes::uint32, {}};
}

OutputType fence_check(Instruction& i) {
  TILUS_CHECK(i.inputs.empty() && i.args.empty(), "ValueError", op_name(i.op), " takes no operands");
  if (i.op == Op::FenceProxyAsync)
    TILUS_CHECK(i.text == "shared" || i.text == "global", "ValueError",
                "fence.proxy_async: space must be 'shared' or 'global', got '", i.text, "'");
  return {dtypes::uint32, {}};
}

// ---- interpreter

void alloc_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& i) {
  interp::HopperState& h = interp::hopper_state(st);
  const uint32_t base = interp::kBarrierBase + 8 * static_cast<uint32_t>(h.barriers.size());
  for (size_t k = 1; k < i.args.size(); ++k) {
    const int64_t c = interp::eval_int(st, i.args[k]);
    TILUS_CHECK(c > 0 && c < (1 << 20), "ValueError", "mbarrier.alloc: counts[", k - 1, "] = ", c,
                " is not an arrival count in [1, 2^20)");
    interp::MBarrier b;
    b.count = b.pending = c;
    b.alloc = &stmt;
    b.index = static_cast<int>(k - 1);
    h.barriers.push_back(b);
  }
  st.var(i.args[0].get()) = interp::Value::of_int(base);
}

uint32_t barrier_arg(interp::BlockState& st, const Instruction& i) {
  return static_cast<uint32_t>(interp::eval_int(st, i.args[0]));
}

void arrive_interpret(interp::BlockState& st, const StmtNode&, const Instruction& i) {
  const bool tx = i.op == Op::MbarrierArriveExpectTx;
  const char* what = tx ? "mbarrier.arrive_and_expect_tx" : "mbarrier.arrive";
  interp::MBarrier& b = interp::barrier_at(st, barrier_arg(st, i), what);
  const int64_t v = interp::eval_int(st, i.args[1]);
  const int64_t threads = block_threads(st);
  TILUS_CHECK(tx ? v >= 0 : v > 0, "ValueError", what, ": ", tx ? "transaction_bytes" : "count",
              " = ", v, tx ? " is negative" : " is not positive");
  const int64_t arrivals = tx ? threads : threads * v;
  TILUS_CHECK(arrivals <= b.pending, "RuntimeError", what, ": ", threads, " threads arrive ",
              arrivals, " times on ", interp::barrier_name(b), " (phase ", b.phase, ", parity ",
              b.phase & 1, "), which waits for only ", b.pending, " more of its ", b.count,
              " arrivals; the extra arrivals would complete a later phase early (allocate it with "
              "a count that matches the arriving threads)");
  interp::barrier_update(b, arrivals, tx ? threads * v : 0);
  interp::note_progress(st);
  interp::next_epoch(st);  // a release: accesses before it are ordered before the waiters'
}

void wait_interpret(interp::BlockState& st, const StmtNode& stmt, const Instruction& i) {
  const uint32_t address = barrier_arg(st, i);
  interp::MBarrier& b = interp::barrier_at(st, address, "mbarrier.wait");
  const int64_t parity = interp::eval_int(st, i.args[1]);
  TILUS_CHECK(parity == 0 || parity == 1, "ValueError",
              "mbarrier.wait: phase must be 0 or 1 (the parity of the phase waited for), got ", parity);
  interp::HopperState& h = interp::hopper_state(st);
  // The phase with this parity has completed once the barrier's parity differs.
  while ((b.phase & 1) == parity) {
    auto it = h.loads.begin();
    while (it != h.loads.end() && it->barrier != address) ++it;
    if (it == h.loads.end()) {
      // Another thread group may still arrive.
      const std::string state = cat(" for phase parity ", parity, " to complete, but the barrier is in phase ",
                                    b.phase, " with ", b.pending, " of ", b.count, " arrivals missing and ", b.tx,
                                    " transaction bytes outstanding, and no TMA copy in flight completes on it");
      if (interp::yield_to_groups(st, cat("waits on ", interp::barrier_name(b), state, " (line ", stmt.loc.line, ")")))
        continue;
      ScriptError e("RuntimeError",
                    cat("deadlock: block (", st.block_idx[0], ", ", st.block_idx[1], ", ", st.block_idx[2],
                        ") waits on ", interp::barrier_name(b), state,
                        st.group_threads ? "; nothing else can arrive (no other thread group runs beside this one)"
                                         : "; nothing else can arrive (every thread of the block is waiting here)"));
      e.set_loc_if_unknown(stmt.loc);
      throw e;
    }
    interp::TmaLoad load = std::move(*it);
    h.loads.erase(it);
    interp::land_load(st, load);
  }
  interp::next_epoch(st);  // an acquire: the arrivals' accesses are ordered before what follows
}

// ---- CUDA

void need_sm90(CudaEmitter& e, const Instruction& i, const char* what) {
  TILUS_CHECK(e.options_.sm90, "NotImplementedError", what, " needs sm_90a (Hopper): ",
              op_name(i.op), " has no sm_80 equivalent; build for sm_90a");
}

void alloc_emit(CudaEmitter& e, const Instruction& i) {
  const size_t n = i.args.size() - 1;
  const std::string arr = e.fresh("tl_mbar");
  e.line("__shared__ alignas(8) unsigned long long " + arr + "[" + std::to_string(n) + "];");
  e.open("if (threadIdx.x == " + std::to_string(e.group_begin()) + ")");
  for (size_t k = 0; k < n; ++k)
    e.line("asm volatile(\"mbarrier.init.shared.b64 [%0], %1;\" :: \"r\"((unsigned)__cvta_generic_to_shared(&" +
           arr + "[" + std::to_string(k) + "])), \"r\"((unsigned)(" + e.expr(i.args[k + 1]) + ")) : \"memory\");");
  e.close();
  // The TMA unit and other threads must see the initialised barriers before any use.
  if (e.options_.sm90) e.line("asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");");
  e.line(e.block_sync());
  e.line(e.expr(i.args[0]) + " = (unsigned)__cvta_generic_to_shared(" + arr + ");");
}

void arrive_emit(CudaEmitter& e, const Instruction& i) {
  const std::string bar = "(unsigned)(" + e.expr(i.args[0]) + ")";
  const std::string v = "(unsigned)(" + e.expr(i.args[1]) + ")";
  if (i.op == Op::MbarrierArriveExpectTx && e.options_.omit_loads) {
    need_sm90(e, i, "mbarrier.arrive_and_expect_tx");
    // the loads are left out (tilus.option.debug.omit): no bytes will come
    e.line("asm volatile(\"mbarrier.arrive" + arrive_order(i) + ".shared.b64 _, [%0];\" :: \"r\"(" + bar +
           ") : \"memory\");");
  } else if (i.op == Op::MbarrierArriveExpectTx) {
    need_sm90(e, i, "mbarrier.arrive_and_expect_tx");
    e.line("asm volatile(\"mbarrier.arrive.expect_tx" + arrive_order(i) + ".shared.b64 _, [%0], %1;\" :: \"r\"(" + bar +
           "), \"r\"(" + v + ") : \"memory\");");
  } else if (e.options_.sm90) {
    e.line("asm volatile(\"mbarrier.arrive" + arrive_order(i) + ".shared.b64 _, [%0], %1;\" :: \"r\"(" + bar + "), \"r\"(" +
           v + ") : \"memory\");");
  } else {  // sm_80 has no count operand: one arrival per step
    const std::string k = e.fresh("tl_k");
    e.open("for (unsigned " + k + " = 0; " + k + " < " + v + "; ++" + k + ")");
    e.line("asm volatile(\"{\\n .reg .b64 tl_st;\\n mbarrier.arrive.shared.b64 tl_st, [%0];\\n}\" :: \"r\"(" +
           bar + ") : \"memory\");");
    e.close();
  }
}

void wait_emit(CudaEmitter& e, const Instruction& i) {
  const std::string ok = e.fresh("tl_done");
  std::string op = e.options_.sm90 ? "try_wait" : "test_wait";
  if (e.options_.sm90 && (i.int_attr >> 2)) op += ".parity.acquire.cluster";  // scope='cluster'
  else op += ".parity";
  e.open("");
  e.line("unsigned " + ok + " = 0;");
  const std::string start = e.hang_clock();  // tilus.option.debug.hang_check
  e.open("while (!" + ok + ")");
  e.line("asm volatile(\"{\\n .reg .pred p;\\n mbarrier." + op +
         ".shared.b64 p, [%1], %2;\\n selp.u32 %0, 1, 0, p;\\n}\" : \"=r\"(" + ok + ") : \"r\"((unsigned)(" +
         e.expr(i.args[0]) + ")), \"r\"((unsigned)(" + e.expr(i.args[1]) + ")) : \"memory\");");
  const std::string give_up = e.hang_give_up(ok, e.expr(i.args[0]), e.expr(i.args[1]), start);
  if (!give_up.empty()) e.line(give_up);
  e.close();
  e.close();
}

void fence_emit(CudaEmitter& e, const Instruction& i) {
  need_sm90(e, i, i.op == Op::FenceProxyAsync ? "fence.proxy_async" : "fence.proxy_async_release");
  // The release-only variant (PTX 8.6) is implied by the full bidirectional fence, which
  // every NVRTC that targets sm_90a accepts.
  const std::string space = i.op == Op::FenceProxyAsync && i.text == "global" ? "global" : "shared::cta";
  e.line("asm volatile(\"fence.proxy.async." + space + ";\" ::: \"memory\");");
}

void nothing_interpret(interp::BlockState&, const StmtNode&, const Instruction&) {}

// ---- IR text and the verifier's operand checks
std::string alloc_print(const Instruction& i) {
  return expr_str(i.args[0]) + " = mbarrier_alloc(counts=" +
         inst_text::exprs(std::vector<Expr>(i.args.begin() + 1, i.args.end())) + ")";
}
void alloc_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 2, i.args.size());
  c.no_output(i);
}
std::string arrive_print(const Instruction& i) {
  const char* what = i.op == Op::MbarrierWait ? ", phase=" : i.op == Op::MbarrierArrive ? ", count=" : ", transaction_bytes=";
  return inst_text::call(i, expr_str(i.args[0]) + what + expr_str(i.args[1]));
}
void arrive_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 2, 2);
  c.no_output(i);
}
std::string fence_print(const Instruction& i) {
  return inst_text::call(i, i.op == Op::FenceProxyAsync ? "space=" + i.text : std::string());
}
void fence_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.no_output(i);
}

}  // namespace

const OpHandler kMbarrierAlloc = {alloc_check, nullptr, alloc_interpret, alloc_emit, alloc_print, alloc_verify};
const OpHandler kMbarrierArrive = {arrive_check, nullptr, arrive_interpret, arrive_emit, arrive_print, arrive_verify};
const OpHandler kMbarrierArriveExpectTx = {arrive_check, nullptr, arrive_interpret, arrive_emit, arrive_print,
                                           arrive_verify};
const OpHandler kMbarrierWait = {arrive_check, nullptr, wait_interpret, wait_emit, arrive_print, arrive_verify};
// The interpreter has one proxy: every write is visible to the next instruction.
const OpHandler kFenceProxyAsync = {fence_check, nullptr, nothing_interpret, fence_emit, fence_print, fence_verify};
const OpHandler kFenceProxyAsyncRelease = {fence_check, nullptr, nothing_interpret, fence_emit, fence_print,
                                           fence_verify};

}  // namespace ops
}  // namespace tilus
