// cp.async copies from global to shared memory, their commit groups and waits.
//
// On sm_90a the whole family lowers to TMA when every copy_async of the kernel can be a
// TMA box copy (prepare_copy_lowering; the seed's MatmulV5, each tile built both ways on
// one H100: 4096^3 0.26-0.29 -> 0.24-0.26 ms, 8192^3 2.11-2.25 -> 1.95-2.13 ms; docs/codegen.md
// has the rest). Thread 0 issues each tile as TMA boxes
// that complete on the mbarrier of the current commit group, one of a ring of
// kCopyRing; commit_group arrives on it; wait_group(n) waits, with the parity of the
// group's round, for every group but the newest n. The semantics are cp.async's, made
// stronger: after its wait every thread sees every copy of the group, not only its own.
// What a correct cp.async program already does keeps the lowering safe: a block barrier
// between the last reads of a tile and the next copy into it (another thread's cp.async
// could overwrite it too), and no thread more than kCopyRing groups ahead of another.
// Not lowered (all copies stay cp.async): sm_80, the unaligned build, bounds-checked
// builds, copies inside thread groups, and any copy TMA cannot do (a view of a workspace or
// of a partly aligned build's unaligned parameters,
// strides not provably 16-byte multiples, a tile layout the TMA unit cannot write...).
#include <string>
#include <unordered_set>

#include "codegen/emitter.h"
#include "interp/tile_ops.h"
#include "ir/functor.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "ir/operand_rules.h"
#include "ir/packed.h"
#include "ops/op_handler.h"
#include "ops/tma_layout.h"

namespace tilus::ops {

namespace {

constexpr int kCopyRing = 8;  // commit groups in flight at most (a power of two)
// Where the ring sits in dynamic shared memory: known only after the body (place_copy_ring).
constexpr const char* kRingOffset = "TL_COPY_RING_OFFSET";

// How copy_async `i` runs as TMA boxes; an error when it cannot. `transformed`: shared
// views whose indices are not their allocation's (reshaped, permuted, or slices of those).
TmaTiling copy_tiling(CudaEmitter& e, const Instruction& i, const std::unordered_set<int>& transformed) {
  TmaTiling no;
  const Tensor &g = i.inputs[0], &s = i.inputs[1];
  const int64_t bits = g->dtype.bits();
  const int grank = g->rank();
  no.error = "not a TMA copy";
  if (is_packed(g->dtype) || (bits != 8 && bits != 16 && bits != 32 && bits != 64) || grank > 5) return no;
  if (i.dims.back() != grank - 1 || transformed.count(s->id)) return no;
  // a view of a partly aligned build's unaligned parameters: its map would not encode
  if (e.scalar_globals_.has(g)) return no;
  if (!e.div_.is_multiple(i.args[grank - 1], 128 / bits)) return no;  // boxes start at 16-byte multiples
  if (!tma_view_refusal(e, g, "copy_async", true).empty()) return no;
  const int root = e.plan_.root_of(s);
  const SharedLayout& layout = e.plan_.shared.at(root);
  TmaTiling t = tma_tiling(layout, s->shape, bits, layout.rank() - s->shape.size());
  if (!t.error.empty()) return t;
  for (size_t p = 0; p + 1 < s->shape.size(); ++p)
    if (s->shape[p] > 256) return no;
  if (t.block_cols > 256 || t.block_cols * bits % 128) return no;
  return t;
}

// Finds the copies and whether each can be a TMA copy.
class CopyScan : public StmtVisitor {
 public:
  explicit CopyScan(CudaEmitter& e) : e_(e), transformed_(e.plan_.transformed_views) {}
  bool any = false, all_tma = true;
  std::unordered_set<int> roots;  // allocations the copies write

 protected:
  void visit_thread_group(const Stmt& s) override {
    ++groups_;
    StmtVisitor::visit_thread_group(s);
    --groups_;
  }
  void visit_inst(const Stmt& s) override {
    const Instruction& i = *s->inst;
    if (i.op == Op::SliceShared && transformed_.count(i.inputs[0]->id)) transformed_.insert(i.output->id);
    if (i.op != Op::CopyAsync) return;
    any = true;
    all_tma = all_tma && groups_ == 0 && copy_tiling(e_, i, transformed_).error.empty();
    roots.insert(e_.plan_.root_of(i.inputs[1]));
  }

 private:
  CudaEmitter& e_;
  std::unordered_set<int> transformed_;
  int groups_ = 0;
};

std::string ring_slot(const std::string& counter) {
  return "tl_copy_ring_base + (unsigned)(" + counter + " & " + std::to_string(kCopyRing - 1) + ") * 8u";
}

// Every group but the newest n has landed.
void emit_ring_wait(CudaEmitter& e, int64_t n) {
  e.open("while (tl_copy_waited + " + std::to_string(n) + " < tl_copy_committed)");
  // tilus.option.debug.hang_check: the time limit and the script line
  const std::string limit = e.options_.hang_check_ns > 0
                                ? ", " + std::to_string(e.options_.hang_check_ns) + "ull, " + e.hang_site()
                                : "";
  e.line("tilus::copy_ring_wait(" + ring_slot("tl_copy_waited") + ", (unsigned)(tl_copy_waited / " +
         std::to_string(kCopyRing) + ") & 1u" + limit + ");");
  e.line("++tl_copy_waited;");
  e.close();
}

// Closes the current group.
void emit_ring_arrive(CudaEmitter& e) {
  e.line("if (tl_tid == 0) tilus::copy_ring_arrive(" + ring_slot("tl_copy_committed") + ");");
  e.line("++tl_copy_committed;");
}

// Closes the current group and lets every group land (copies not yet committed too).
void emit_ring_wait_all(CudaEmitter& e) {
  emit_ring_arrive(e);
  emit_ring_wait(e, 0);
}

// The destination's allocation being live is the builder's (IRBuilder::copy_async).
OutputType copy_check(Instruction& i) {
  expect_inputs(i, 2);
  const Tensor &src = i.inputs[0], &dst = i.inputs[1];
  require_shared(dst, "copy_async (dst)");
  check_tile_window(src, i.args, dst->shape, i.dims, "copy_async");
  TILUS_CHECK(src->dtype == dst->dtype, "TypeError", "copy_async: src is ", src->dtype.name(), " but dst is ",
              dst->dtype.name());
  const int64_t row_bits = dst->shape.back() * dst->dtype.bits();
  TILUS_CHECK(dst->dtype.bits() <= 128 && row_bits >= 32, "ValueError",
              "copy_async: the innermost dimension of dst must span at least 4 bytes (32 bits), got ", row_bits,
              " bits");
  return {};
}

OutputType group_check(Instruction& i) {
  expect_inputs(i, 0);
  return {};
}

OutputType wait_group_check(Instruction& i) {
  expect_inputs(i, 0);
  TILUS_CHECK(i.int_attr >= 0, "ValueError", "copy_async_wait_group: n must be >= 0, got ", i.int_attr);
  return {};
}

void emit_copy_async(CudaEmitter& e, const Instruction& i) {
  if (e.options_.omit_loads) return e.line("// copy_async left out (tilus.option.debug.omit)");
  if (!e.copy_tma_) return e.emit_copy_async(i);
  const TmaTiling tiling = copy_tiling(e, i, e.plan_.transformed_views);
  TILUS_ASSERT(tiling.error.empty());  // prepare_copy_lowering checked every copy
  const Tensor& s = i.inputs[1];
  const int64_t bytes = storage_bytes(s->numel() * s->dtype.bits());  // the whole box, zero-filled parts too
  e.line("// copy_async lowered to TMA: " + std::to_string(bytes) + " bytes on the current group's barrier");
  emit_tma_boxes(e, "copy_async", true, i.inputs[0], s, i.args, i.dims, tiling, ring_slot("tl_copy_committed"), "",
                 "tilus::copy_ring_expect(" + ring_slot("tl_copy_committed") + ", " + std::to_string(bytes) + "u);");
}

void emit_commit_group(CudaEmitter& e, const Instruction&) {
  if (!e.copy_tma_) return e.line("tilus::cp_async_commit_group();");
  emit_ring_arrive(e);
  // a full ring retires its oldest group: a barrier is armed again only after its
  // previous round was waited for
  emit_ring_wait(e, kCopyRing - 1);
}

void emit_wait_group(CudaEmitter& e, const Instruction& i) {
  if (e.copy_tma_) return emit_ring_wait(e, i.int_attr);  // TMA writes need no proxy fence for wgmma
  e.line("tilus::cp_async_wait_group<" + std::to_string(i.int_attr) + ">();");
  e.fence_for_wgmma();
}

void emit_wait_all(CudaEmitter& e, const Instruction& i) {
  const std::string why = i.text.empty() ? "" : "  // " + i.text;
  if (e.copy_tma_) {
    e.line("// copy_async_wait_all" + why);
    return emit_ring_wait_all(e);
  }
  e.line("tilus::cp_async_wait_all();" + why);
  e.fence_for_wgmma();
}

using inst_text::call;
using inst_text::ref;

std::string copy_print(const Instruction& i) {
  return call(i, "src=" + ref(i.inputs[0]) + ", dst=" + ref(i.inputs[1]) + ", offsets=" + inst_text::exprs(i.args) +
                     inst_text::dims_attr(i, i.inputs[0]->rank(), i.inputs[1]->shape.size()));
}
std::string wait_group_print(const Instruction& i) { return call(i, "n=" + std::to_string(i.int_attr)); }
std::string wait_all_print(const Instruction& i) { return call(i, "") + (i.text.empty() ? "" : "   # " + i.text); }

void copy_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 2, 0, i.args.size());
  c.no_output(i);
  c.scope(i, i.inputs[0], Scope::Global, "the source");
  c.scope(i, i.inputs[1], Scope::Shared, "the destination");
  c.window(i, i.inputs[0], i.inputs[1]->shape);
  c.same_dtype(i, i.inputs[0], i.inputs[1]);
}
void no_operands_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 0, 0, 0);
  c.no_output(i);
}
void wait_group_verify(OperandCheck& c, const Instruction& i) {
  no_operands_verify(c, i);
  if (i.int_attr < 0) c.fail(op_name(i.op), ": ", i.int_attr, " groups (must be >= 0)");
}

// Its destination view, compared with a running wgmma dot's tiles by leading indices.
WgmmaHazard copy_hazard(const Instruction&, const LayoutPlan&, int) { return {WgmmaHazard::WritesTile, 1, nullptr}; }
}  // namespace

const OpHandler kCopyAsync = {copy_check, nullptr, interp::exec_copy_async, emit_copy_async,
                              copy_print, copy_verify, copy_hazard};
const OpHandler kCopyAsyncCommitGroup = {group_check, nullptr, interp::exec_copy_async_commit_group,
                                         emit_commit_group, nullptr, no_operands_verify};
const OpHandler kCopyAsyncWaitGroup = {wait_group_check, nullptr, interp::exec_copy_async_wait_group,
                                       emit_wait_group, wait_group_print, wait_group_verify};
// Written by a script, or placed after a free_shared by transforms/copy_waits.cc.
const OpHandler kCopyAsyncWaitAll = {group_check, nullptr, interp::exec_copy_async_wait_all,
                                     emit_wait_all, wait_all_print, no_operands_verify};

void prepare_copy_lowering(CudaEmitter& e) {
  const CodegenOptions& o = e.options_;
  if (!o.sm90 || !o.copy_tma || !o.pointers_aligned || o.bounds_check) return;
  CopyScan scan(e);
  scan.visit_stmt(e.program_.body);
  if (!scan.any || !scan.all_tma) return;
  e.copy_tma_ = true;
  // TMA swizzles by address bits: the tiles start at multiples of 1024 bytes
  e.plan_.tma_roots.insert(scan.roots.begin(), scan.roots.end());
  e.line("// copy_async lowered to TMA: a ring of " + std::to_string(kCopyRing) +
         " mbarriers after the tiles, one per commit group in flight (ops/async_copy.cc)");
  e.line(std::string("const unsigned tl_copy_ring_base = tilus::smem_u32(tl_smem) + ") + kRingOffset + ";");
  e.line("int tl_copy_committed = 0, tl_copy_waited = 0;");
  e.open("if (tl_tid == 0)");
  e.open("for (int k = 0; k < " + std::to_string(kCopyRing) + "; ++k)");
  e.line("tilus::copy_ring_init(tl_copy_ring_base + 8u * k);");
  e.close();
  e.line("asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");");
  e.close();
  e.line("__syncthreads();");
}

void place_copy_ring(const CudaEmitter& e, std::string& body, int64_t& dynamic_smem) {
  if (!e.copy_tma_) return;
  // After every tile (past the allocator's peak, never in a hole a tile used earlier):
  // 64 more bytes of dynamic shared memory, which the autotuner's and the launcher's
  // shared-memory checks see, and no static shared memory (that would round the dynamic
  // part's start up to its 1024-byte alignment).
  const int64_t offset = (dynamic_smem + 7) / 8 * 8;
  dynamic_smem = offset + 8 * kCopyRing;
  const size_t at = body.find(kRingOffset);  // prepare_copy_lowering's one use
  TILUS_ASSERT(at != std::string::npos);
  body.replace(at, std::char_traits<char>::length(kRingOffset), std::to_string(offset) + "u");
}

void finish_copy_lowering(CudaEmitter& e) {
  if (!e.copy_tma_) return;
  e.line("// no TMA copy may still write the block's shared memory when it exits");
  emit_ring_wait_all(e);
}

}  // namespace tilus::ops
