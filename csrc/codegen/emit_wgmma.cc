// wgmma dots (sm_90a): the instruction helper, the dot itself, and the bookkeeping that
// lets a dot run asynchronously past the code after it.
//
// A wgmma dot returns before the tensor cores are done (wait_group 1: the dots before it
// are finished, it may still run). Until a later wait, two things are in flight: reads
// of the dot's shared tiles and writes of its accumulator registers. So before each
// instruction (wgmma_guard):
//   * anything that reads or writes the accumulator waits for it (a wgmma dot chaining
//     on the same accumulator excepted: the hardware orders those);
//   * a shared-memory write into an allocation the dot reads waits when it may hit the
//     dot's own tile: for views of the same allocation with frozen leading indices
//     (sa[stage]), only when the indices are equal at run time (a pipeline writes the
//     stage the previous dot read, which the wait_group 1 already finished);
//   * free_shared of such an allocation waits;
//   * with more than one warpgroup, a barrier waits first: after it, other warpgroups may
//     write what this one's dot reads, and their waits do not cover it.
// Block-level instructions (copies, stores, barriers) already need block-uniform control
// flow, so a warpgroup-collective wait placed before them is reached by whole warpgroups.
// Where the emitter cannot tell (the dot ran in an earlier loop iteration or another
// branch, its indices out of scope) it waits for everything.
#include "codegen/emitter.h"
#include "ir/functor.h"

#include <algorithm>

namespace tilus {

std::string CudaEmitter::wgmma_helper(int64_t n, DataType operand) {
  const std::string type = operand == dtypes::bfloat16 ? "bf16" : "f16";
  const std::string name = "tl_wgmma_m64n" + std::to_string(n) + "k16_f32_" + type;
  if (!helper_names_.insert(name).second) return name;
  const int64_t regs = n / 2;
  std::ostringstream h;
  h << "// D[64, " << n << "] += A[64, 16] (K-major) @ B[16, " << n << "] (N-major), "
    << "both read through shared-memory descriptors (tilus/wgmma.cuh)\n";
  h << "static __device__ __forceinline__ void " << name
    << "(float* d, unsigned long long desc_a, unsigned long long desc_b) {\n";
  h << "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
  h << "  asm volatile(\n";
  h << "      \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << regs + 2 << ", 0;\\n\"\n";
  h << "      \"wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type << "." << type << " {";
  for (int64_t r = 0; r < regs; ++r) h << (r ? ", " : "") << "%" << r;
  h << "}, %" << regs << ", %" << regs + 1 << ", p, 1, 1, 0, 1;\\n}\\n\"\n";
  h << "      :";
  for (int64_t r = 0; r < regs; ++r) h << (r ? ", " : " ") << "\"+f\"(d[" << r << "])";
  h << "\n      : \"l\"(desc_a), \"l\"(desc_b), \"r\"(1));\n";
  h << "#endif\n}\n";
  helpers_.push_back(h.str());
  return name;
}

// A wgmma dot: every warpgroup issues slabs x k_steps wgmma.m64n<n_inst>k16 reading A
// and B from the shared tiles of the folded loads. Offsets into the tiles are
// unswizzled (the descriptor's start address; the hardware swizzles).
void CudaEmitter::emit_wgmma(const Instruction& i, const DotPlan& plan, const std::string& acc,
                             bool in_place) {
  const WgmmaTiling& t = plan.tiling;
  const Tensor& a = i.inputs[0];
  const SharedInfo& sa = shared_.at(plan.load_a->inputs[0]->id);
  const SharedInfo& sb = shared_.at(plan.load_b->inputs[0]->id);
  const SharedLayout& la = plan_.shared.at(sa.root);
  const SharedLayout& lb = plan_.shared.at(sb.root);
  // unswizzled byte offset of (r, c) of one trailing matrix of a layout
  auto byte_offset = [&](const SharedLayout& l, int64_t r, int64_t c) {
    std::vector<int64_t> coords(l.rank(), 0);
    coords[l.rank() - 2] = r;
    coords[l.rank() - 1] = c;
    return whole_bytes(a->dtype, unswizzled_offset(l, coords), "wgmma: a descriptor's address");
  };
  auto swizzle_mode = [&](const SharedLayout& l) {
    int64_t row = whole_bytes(a->dtype, l.col_block ? l.col_block : l.shape.back(), "wgmma: a swizzled row");
    return row == 128 ? 1 : 2;  // 128-byte or 64-byte (shared_wgmma_operand)
  };
  // A, K-major: 8-row groups SBO apart (the leading offset is unused when swizzled).
  const int64_t a_sbo = byte_offset(la, 8, 0);
  // B, N-major: 64-column blocks LBO apart, 8-row (k) groups SBO apart.
  const int64_t b_lbo = t.n_inst > 64 ? byte_offset(lb, 0, 64) : 16, b_sbo = byte_offset(lb, 8, 0);
  std::string helper = wgmma_helper(t.n_inst, a->dtype);
  const int64_t regs = t.n_inst / 2, total = t.c.local_size();
  line("// dot: wgmma m64n" + std::to_string(t.n_inst) + "k16, " + std::to_string(t.wg_m) + "x" +
       std::to_string(t.wg_n) + " warpgroups, " + std::to_string(t.slabs) + " m64 slab(s) x " +
       std::to_string(t.k_steps) + " k16 step(s) each, A and B from shared memory");
  auto fence_acc = [&] {
    line("#pragma unroll");
    line("for (int i = 0; i < " + std::to_string(total) + "; ++i) tilus::fence_register(" + acc + "[i]);");
  };
  fence_acc();
  line("tilus::wgmma_fence();");
  open("");
  std::string wg = fresh("tl_warpgroup"), pa = fresh("tl_a_smem"), pb = fresh("tl_b_smem");
  line("const int " + wg + " = tl_tid / 128;");
  const Expr zero = make_int(0);
  line("const unsigned int " + pa + " = tilus::smem_u32(" + sa.ptr + " + " +
       expr(shared_offset(sa, {zero, zero})) + ") + " + wg + " / " + std::to_string(t.wg_n) + " * " +
       std::to_string(byte_offset(la, t.slabs * 64, 0)) + ";");
  line("const unsigned int " + pb + " = tilus::smem_u32(" + sb.ptr + " + " +
       expr(shared_offset(sb, {zero, zero})) + ") + " + wg + " % " + std::to_string(t.wg_n) + " * " +
       std::to_string(byte_offset(lb, 0, t.n_inst)) + ";");
  // A descriptor per instruction (measured faster than one per tile plus constant
  // offsets, which saves ~15% of the loop's instructions: 0.253 vs 0.265 ms at 4096^3).
  for (int64_t kk = 0; kk < t.k_steps; ++kk) {
    for (int64_t s = 0; s < t.slabs; ++s) {
      line(helper + "(" + acc + " + " + std::to_string(s * regs) + ", tilus::wgmma_desc(" + pa + " + " +
           std::to_string(byte_offset(la, s * 64, kk * 16)) + ", 16, " + std::to_string(a_sbo) + ", " +
           std::to_string(swizzle_mode(la)) + "), tilus::wgmma_desc(" + pb + " + " +
           std::to_string(byte_offset(lb, kk * 16, 0)) + ", " + std::to_string(b_lbo) + ", " +
           std::to_string(b_sbo) + ", 1));");
    }
  }
  close();
  line("tilus::wgmma_commit_group();");
  if (!in_place) {  // the result is copied out right away
    line("tilus::wgmma_wait_group<0>();");
    fence_acc();
    inflight_ = WgmmaInFlight{};
    return;
  }
  // Only this dot may still run: what follows (the next stage's copies, the barrier)
  // overlaps it, and every access that could touch its tiles or accumulator waits first.
  line("tilus::wgmma_wait_group<1>();  // the dots before this one are done");
  // Earlier dots into other accumulators are done now: pin their registers after the wait
  // (not this dot's: touching a running accumulator would make ptxas serialise).
  for (auto& array : inflight_.arrays)
    if (array.tensor != i.output->id && array.tensor != i.inputs[2]->id && array.name != acc) pin(array);
  WgmmaInFlight now;
  now.active = true;
  now.known = true;
  now.scope = scopes_.back();
  now.reads = {{sa.root, sa.lead}, {sb.root, sb.lead}};
  now.accumulators = {i.output->id, i.inputs[2]->id};
  now.arrays = {{i.output->id, acc, total}};
  inflight_ = now;
}


bool CudaEmitter::contains_wgmma(const Stmt& s) const {
  bool found = false;
  for_each_inst(s, [&](const StmtNode& st) {
    if (st.inst->op != Op::Dot) return;
    auto it = plan_.dots.find(st.inst.get());
    found = found || (it != plan_.dots.end() && it->second.wgmma);
  });
  return found;
}

// After a wait that retired the dot writing `array`: an empty asm "rewriting" each of its
// registers, so no read of them moves above the wait. Arrays out of scope are skipped
// (nothing can read them any more).
void CudaEmitter::pin(const WgmmaInFlight::Array& array) {
  auto it = reg_scopes_.find(array.tensor);
  if (it == reg_scopes_.end() || std::find(scopes_.begin(), scopes_.end(), it->second) == scopes_.end())
    return;
  line("#pragma unroll");
  line("for (int i = 0; i < " + std::to_string(array.size) + "; ++i) tilus::fence_register(" + array.name + "[i]);");
}

void CudaEmitter::wgmma_wait_all(const std::string& why, bool fence_arrays) {
  if (!inflight_.active) return;
  line("tilus::wgmma_wait_group<0>();  // " + why);
  if (fence_arrays)
    for (auto& array : inflight_.arrays) pin(array);
  inflight_ = WgmmaInFlight{};
}

void CudaEmitter::wgmma_guard(const Instruction& i) {
  if (!inflight_.active) return;
  bool chains = false;  // a wgmma dot accumulating in place into the running accumulator
  if (i.op == Op::Dot) {
    auto it = plan_.dots.find(&i);
    chains = it != plan_.dots.end() && it->second.wgmma && i.output == i.inputs[2];
  }
  if (!chains) {
    auto touches = [&](const Tensor& t) { return t && inflight_.accumulators.count(t->id); };
    bool hit = touches(i.output);
    for (auto& t : i.inputs) hit = hit || touches(t);
    if (hit) return wgmma_wait_all("the accumulator is used next");
  }
  auto reads_root = [&](int root) {
    if (!inflight_.known) return plan_.wgmma_roots.count(root) > 0;  // some wgmma dot's tile
    for (auto& r : inflight_.reads)
      if (r.first == root) return true;
    return false;
  };
  switch (i.op) {
    case Op::CopyAsync:
    case Op::StoreShared: {
      const Tensor& target = i.op == Op::CopyAsync ? i.inputs[1] : i.inputs[0];
      const SharedInfo& s = shared_.at(target->id);
      if (!reads_root(s.root)) return;
      bool comparable = inflight_.known && !s.lead.empty() &&
                        std::find(scopes_.begin(), scopes_.end(), inflight_.scope) != scopes_.end();
      if (!comparable) return wgmma_wait_all("writing a tile a running dot may read");
      std::vector<std::string> same;  // conditions under which the write hits the dot's tile
      for (auto& [root, lead] : inflight_.reads) {
        if (root != s.root) continue;
        if (lead.size() != s.lead.size()) return wgmma_wait_all("writing a tile the dot may read");
        std::string cond;
        bool never = false;
        for (size_t d = 0; d < lead.size(); ++d) {
          if (lead[d]->is_const() && s.lead[d]->is_const()) {
            never = never || lead[d]->int_value != s.lead[d]->int_value;
            continue;
          }
          if (stages_differ(lead[d], s.lead[d])) {
            never = true;
            continue;
          }
          cond += (cond.empty() ? "" : " && ") + expr(s.lead[d]) + " == " + expr(lead[d]);
        }
        if (never) continue;
        if (cond.empty()) return wgmma_wait_all("writing the tile the dot reads");
        same.push_back("(" + cond + ")");
      }
      if (same.empty()) return;
      std::string any;
      for (auto& c : same) any += (any.empty() ? "" : " || ") + c;
      open("if (" + any + ")");
      // A write to another stage leaves the dot running. No accumulator fence here: the
      // accumulator is not read in this branch (a later read waits again), and ptxas
      // serialises every wgmma when a conditional path touches the accumulators.
      WgmmaInFlight keep = inflight_;
      wgmma_wait_all("this write hits the tile the dot reads", /*fence_arrays=*/false);
      inflight_ = keep;
      close();
      return;
    }
    case Op::FreeShared:
      if (reads_root(plan_.root_of(i.inputs[0]))) wgmma_wait_all("freeing a tile the dot may read");
      return;
    case Op::Sync:
      if (program_.warps > 4) wgmma_wait_all("other warpgroups may write its tiles after the barrier");
      return;
    case Op::GlobalView:
    case Op::GlobalTensor:
    case Op::SharedTensor:
    case Op::RegisterTensor:
    case Op::SliceShared:
    case Op::LoadGlobal:
    case Op::StoreGlobal:
    case Op::LoadShared:
    case Op::CopyAsyncCommitGroup:
    case Op::CopyAsyncWaitGroup:
    case Op::Dot:
    case Op::Cast:
    case Op::Elementwise:
    case Op::UnaryElementwise:
    case Op::Where:
    case Op::Exp:
    case Op::Sum:  // its cross-warp scratch is fresh shared memory, never a dot's tile
    case Op::Assign:
    case Op::LockSemaphore:
    case Op::ReleaseSemaphore:
    case Op::PrintTensor: return;
  }
}

namespace {

// v = (v + 1) % S or v = (1 + v) % S: S, else 0.
int64_t ring_modulus(const Expr& value, int var) {
  if (!value || value->kind != ExprKind::Binary || value->binary_op != BinaryOp::Mod) return 0;
  const Expr &sum = value->a, &m = value->b;
  if (!m->is_const() || m->int_value < 1) return 0;
  if (!sum || sum->kind != ExprKind::Binary || sum->binary_op != BinaryOp::Add) return 0;
  auto is_v = [&](const Expr& e) { return e->is_var() && e->var_id == var; };
  auto is_1 = [&](const Expr& e) { return e->is_const() && e->int_value == 1; };
  return ((is_v(sum->a) && is_1(sum->b)) || (is_1(sum->a) && is_v(sum->b))) ? m->int_value : 0;
}

}  // namespace

void CudaEmitter::find_ring_counters() {
  struct Uses {
    int declares = 0, assigns = 0;
    Expr start;
    const StmtNode* declare_loop = nullptr;  // innermost loop body around the declaration
    RingCounter ring;
  };
  // loop_body: the innermost loop body around the statement, when that body is a Seq
  // (the only place a ring update is recognised).
  struct Walk : StmtVisitor {
    std::unordered_map<int, Uses> uses;
    const StmtNode* loop_body = nullptr;

    void visit_seq(const Stmt& s) override {
      for (size_t j = 0; j < s->seq.size(); ++j) {
        const Stmt& c = s->seq[j];
        if (c && c->kind == StmtKind::Assign && s.get() == loop_body) {
          Uses& u = uses[c->var->var_id];
          ++u.assigns;
          u.ring = {ring_modulus(c->value, c->var->var_id), 0, s.get(), j};
          continue;
        }
        visit_stmt(c);
      }
    }
    void visit_declare(const Stmt& s) override {
      Uses& u = uses[s->var->var_id];
      ++u.declares;
      u.start = s->value;
      u.declare_loop = loop_body;
    }
    void visit_assign(const Stmt& s) override { uses[s->var->var_id].assigns += 2; }  // not a ring update
    void visit_for(const Stmt& s) override {
      uses[s->var->var_id].assigns += 2;
      loop(s->body);
    }
    void visit_while(const Stmt& s) override { loop(s->body); }
    void loop(const Stmt& body) {
      const StmtNode* outer = loop_body;
      loop_body = body && body->kind == StmtKind::Seq ? body.get() : nullptr;
      visit_stmt(body);
      loop_body = outer;
    }
  } walk;
  walk.visit_stmt(program_.body);
  auto& uses = walk.uses;
  for (auto& [var, u] : uses) {
    if (u.declares != 1 || u.assigns != 1 || u.ring.modulus < 1 || !u.start || !u.start->is_const()) continue;
    if (u.declare_loop == u.ring.body) continue;  // reset every iteration
    if (u.start->int_value < 0 || u.start->int_value >= u.ring.modulus) continue;
    u.ring.start = u.start->int_value;
    u.ring.declared_in = u.declare_loop;
    rings_[var] = u.ring;
  }
}

bool CudaEmitter::stages_differ(const Expr& a, const Expr& b) const {
  if (!a->is_var() || !b->is_var()) return false;
  auto oa = stage_origins_.find(a->var_id), ob = stage_origins_.find(b->var_id);
  if (oa == stage_origins_.end() || ob == stage_origins_.end()) return false;
  const RingCounter &ra = rings_.at(oa->second.ring_var), &rb = rings_.at(ob->second.ring_var);
  // same loop, same period, reset together (declared in the same enclosing loop body)
  if (ra.body != rb.body || ra.modulus != rb.modulus || ra.declared_in != rb.declared_in) return false;
  // In one iteration ring x holds x0 + i (+1 once past its update), all mod S.
  const int64_t va = ra.start + (oa->second.position > ra.update ? 1 : 0);
  const int64_t vb = rb.start + (ob->second.position > rb.update ? 1 : 0);
  return ((va - vb) % ra.modulus + ra.modulus) % ra.modulus != 0;
}

}  // namespace tilus
