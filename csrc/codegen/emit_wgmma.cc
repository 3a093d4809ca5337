// wgmma dots (sm_90a): the instruction helper, the dot itself, and the waits for it.
//
// A wgmma dot returns before the tensor cores are done. Whether it keeps running past
// the instruction, and where the program waits for it, is decided by the async pass
// (transforms/async_waits.cc): a WgmmaAsync dot is followed by WgmmaCommitGroup and
// WgmmaWaitGroup instructions, which this file prints; a WgmmaSync dot commits and
// waits inside, before its result is converted into the output.
#include "codegen/emitter.h"
#include "ir/functor.h"

#include <algorithm>

namespace tilus {

std::string CudaEmitter::wgmma_helper(int64_t n, DataType operand, bool b_kmajor) {
  const std::string type = operand == dtypes::bfloat16 ? "bf16" : "f16";
  const std::string name = "tl_wgmma_m64n" + std::to_string(n) + "k16_f32_" + type + (b_kmajor ? "_bk" : "");
  if (!helper_names_.insert(name).second) return name;
  const int64_t regs = n / 2;
  std::ostringstream h;
  h << "// D[64, " << n << "] += A[64, 16] (K-major) @ B[16, " << n << "] (" << (b_kmajor ? "K" : "N")
    << "-major), both read through shared-memory descriptors (tilus/wgmma.cuh)\n";
  h << "static __device__ __forceinline__ void " << name
    << "(float* d, unsigned long long desc_a, unsigned long long desc_b) {\n";
  h << "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
  h << "  asm volatile(\n";
  h << "      \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << regs + 2 << ", 0;\\n\"\n";
  h << "      \"wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type << "." << type << " {";
  for (int64_t r = 0; r < regs; ++r) h << (r ? ", " : "") << "%" << r;
  h << "}, %" << regs << ", %" << regs + 1 << ", p, 1, 1, 0, " << (b_kmajor ? 0 : 1) << ";\\n}\\n\"\n";
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
  const SharedInfo& sb = shared_.at(plan.b_view()->id);
  const bool b_kmajor = plan.b_kmajor != nullptr;
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
  // B, N-major: 64-column blocks LBO apart, 8-row (k) groups SBO apart. K-major (stored
  // [n, k] like A): 8-row (n) groups SBO apart.
  const int64_t b_lbo = !b_kmajor && t.n_inst > 64 ? byte_offset(lb, 0, 64) : 16,
                b_sbo = byte_offset(lb, 8, 0);
  // (n, k) of B -> its unswizzled byte offset, whichever way it is stored
  auto b_offset = [&](int64_t n, int64_t k) { return b_kmajor ? byte_offset(lb, n, k) : byte_offset(lb, k, n); };
  std::string helper = wgmma_helper(t.n_inst, a->dtype, b_kmajor);
  const int64_t regs = t.n_inst / 2, total = t.c.local_size();
  line("// dot: wgmma m64n" + std::to_string(t.n_inst) + "k16, " + std::to_string(t.wg_m) + "x" +
       std::to_string(t.wg_n) + " warpgroups, " + std::to_string(t.slabs) + " m64 slab(s) x " +
       std::to_string(t.k_steps) + " k16 step(s) each, A and B from shared memory" +
       (b_kmajor ? " (B K-major)" : ""));
  auto fence_acc = [&] {
    line("#pragma unroll");
    line("for (int i = 0; i < " + std::to_string(total) + "; ++i) tilus::fence_register(" + acc + "[i]);");
  };
  fence_acc();
  line("tilus::wgmma_fence();");
  open("");
  std::string wg = fresh("tl_warpgroup"), pa = fresh("tl_a_smem"), pb = fresh("tl_b_smem");
  line("const int " + wg + " = " + uniform_warpgroup() + ";");
  const Expr zero = make_int(0);
  line("const unsigned int " + pa + " = tilus::smem_u32(" + sa.ptr + " + " +
       expr(shared_offset(sa, {zero, zero})) + ") + " + wg + " / " + std::to_string(t.wg_n) + " * " +
       std::to_string(byte_offset(la, t.slabs * 64, 0)) + ";");
  line("const unsigned int " + pb + " = tilus::smem_u32(" + sb.ptr + " + " +
       expr(shared_offset(sb, {zero, zero})) + ") + " + wg + " % " + std::to_string(t.wg_n) + " * " +
       std::to_string(b_offset(t.n_inst, 0)) + ";");
  // One descriptor per tile and one add per instruction (wgmma_desc_add).
  const std::string da = fresh("tl_a_desc"), db = fresh("tl_b_desc");
  line("const unsigned long long " + da + " = tilus::wgmma_desc(" + pa + ", 16, " + std::to_string(a_sbo) + ", " +
       std::to_string(swizzle_mode(la)) + ");");
  line("const unsigned long long " + db + " = tilus::wgmma_desc(" + pb + ", " + std::to_string(b_lbo) + ", " +
       std::to_string(b_sbo) + ", " + std::to_string(b_kmajor ? swizzle_mode(lb) : 1) + ");");
  for (int64_t kk = 0; kk < t.k_steps; ++kk) {
    for (int64_t s = 0; s < t.slabs; ++s) {
      line(helper + "(" + acc + " + " + std::to_string(s * regs) + ", tilus::wgmma_desc_add(" + da + ", " +
           std::to_string(byte_offset(la, s * 64, kk * 16)) + "), tilus::wgmma_desc_add(" + db + ", " +
           std::to_string(b_offset(0, kk * 16)) + "));");
    }
  }
  close();
  if (in_place) return;  // WgmmaAsync: the commit and the waits are instructions of their own
  line("tilus::wgmma_commit_group();");  // WgmmaSync: the result is copied out right away
  line("tilus::wgmma_wait_group<0>();");
  fence_acc();
}

// After a wait that retired the dot writing `acc`: an empty asm "rewriting" each of its
// registers, so no read of them moves above the wait. Arrays out of scope are skipped
// (nothing can read them any more).
void CudaEmitter::pin(const Tensor& acc) {
  auto it = reg_scopes_.find(acc->id);
  if (it == reg_scopes_.end() || std::find(scopes_.begin(), scopes_.end(), it->second) == scopes_.end())
    return;
  line("#pragma unroll");
  line("for (int i = 0; i < " + std::to_string(plan_.layout_of(acc).local_size()) +
       "; ++i) tilus::fence_register(" + reg_name(acc) + "[i]);");
}

// A wait the async pass placed. With shared views as operands it is conditional: the
// write into inputs[0] waits only when its leading indices equal those of a view the
// running dot reads (inputs[1..]; dimensions where both are constants are equal, or the
// pass would have dropped the view). Otherwise the operands are accumulators to pin.
void CudaEmitter::emit_wgmma_wait(const Instruction& i) {
  const std::string wait = "tilus::wgmma_wait_group<" + std::to_string(i.int_attr) + ">();" +
                           (i.text.empty() ? "" : "  // " + i.text);
  if (i.inputs.empty() || i.inputs[0]->scope != Scope::Shared) {
    line(wait);
    for (const Tensor& acc : i.inputs) pin(acc);
    return;
  }
  const SharedInfo& target = shared_.at(i.inputs[0]->id);
  std::string any;
  for (size_t k = 1; k < i.inputs.size(); ++k) {
    const SharedInfo& read = shared_.at(i.inputs[k]->id);
    TILUS_ASSERT(read.lead.size() == target.lead.size(), "wgmma wait: views of different ranks");
    std::string cond;
    for (size_t d = 0; d < read.lead.size(); ++d) {
      if (read.lead[d]->is_const() && target.lead[d]->is_const()) continue;
      cond += (cond.empty() ? "" : " && ") + expr(target.lead[d]) + " == " + expr(read.lead[d]);
    }
    any += (any.empty() ? "(" : " || (") + cond + ")";
  }
  open("if (" + any + ")");
  line(wait);
  close();
}

}  // namespace tilus
