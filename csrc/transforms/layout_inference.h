// Layout inference: a register layout for every register tensor, a shared layout for
// every shared allocation, and the plan of every dot.
//
// Tensors tied by elementwise ops, casts, assignments and a dot's accumulator/result
// form groups that share one layout. A group takes, in order of priority: a layout the
// user gave (register_tensor(layout=...)), the layout a dot needs for its accumulator
// or operands (mma.sync fragments, or the SIMT thread tiles), else a coalesced layout
// with 16-byte vectors (auto_global_layout). Where an instruction later needs another
// layout than a tensor has, the code generator converts it through shared memory.
#pragma once
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/stmt.h"
#include "layout/block_layouts.h"
#include "layout/register_layout.h"
#include "layout/shared_layout.h"
#include "transforms/vector_extents.h"

namespace tilus {

struct DotPlan {
  bool mma = false;            // mma.sync, else SIMT fused multiply-adds (or wgmma)
  MmaKind kind = MmaKind::M16N8K16;
  BlockLayouts layouts;        // a, b, c layouts (and warp grid for mma); wgmma: c only
  // wgmma: the dot reads A and B straight from the shared tiles that the two load_shared
  // instructions before it name; those loads are folded into the dot (emit nothing).
  bool wgmma = false;
  WgmmaTiling tiling;
  const Instruction* load_a = nullptr;
  const Instruction* load_b = nullptr;
  // Set when B is read K-major: load_b reads a transpose (permute_shared [1, 0]) of this
  // [n, k] trailing matrix of its allocation, e.g. load_shared(sk[i].transpose()) for
  // Q K^T. The allocation then takes A's layout and wgmma reads it with imm-trans-b 0.
  Tensor b_kmajor;
  // The view of B's tile as stored: b_kmajor when set, else load_b's input.
  const Tensor& b_view() const { return b_kmajor ? b_kmajor : load_b->inputs[0]; }
};

struct LayoutPlan {
  std::unordered_map<int, RegisterLayout> reg;     // register tensor id -> layout
  std::unordered_map<int, SharedLayout> shared;    // shared allocation id -> layout
  std::unordered_map<int, int> shared_root;        // shared view id -> allocation id
  // Shared views that are not trailing parts of their allocation: reshape_shared /
  // permute_shared results and slices of them (ops/views.cc).
  std::unordered_set<int> transformed_views;
  std::unordered_map<const Instruction*, DotPlan> dots;
  std::unordered_set<const Instruction*> folded_loads;  // load_shared read by a wgmma dot
  std::unordered_set<int> wgmma_roots;                  // shared allocations wgmma reads
  // Shared allocations TMA copies (ops/tma.cc): laid out for the TMA unit's swizzle and
  // aligned to 1024 bytes, as its swizzle patterns follow address bits.
  std::unordered_set<int> tma_roots;

  // Register tensors made inside a thread group of fewer threads than the block, by id ->
  // that group's thread count: their layouts spread over those threads.
  std::unordered_map<int, int64_t> group_threads;

  const RegisterLayout& layout_of(const Tensor& t) const;
  int64_t threads_of(const Tensor& t, int64_t block_threads) const {
    auto it = group_threads.find(t->id);
    return it == group_threads.end() ? block_threads : it->second;
  }
  int root_of(const Tensor& shared) const;
};

// allow_wgmma (an sm_90a target): a dot C += load_shared(sa) @ load_shared(sb) with
// fp16/bf16 operands and an fp32 accumulator, whose two loads come right before it (only
// slices between) and feed nothing else, becomes a wgmma dot when wgmma_tiling tiles it;
// sa's and sb's allocations then take shared_wgmma_operand's layouts. B may also be
// load_shared(sb.transpose()) of a trailing [n, k] matrix sb (DotPlan::b_kmajor).
// scalar (the unaligned build, or the views a partly aligned build cannot vectorise;
// transforms/vector_extents.h): register tiles loaded from or stored to those views move
// one element per access, so their default layouts give consecutive elements to
// consecutive lanes (a warp's load is one contiguous run) instead of a 16-byte run to
// each thread (lanes 16 bytes apart: four times the L1 wavefronts for the same bytes).
// Groups holding packed sub-byte tensors keep their whole words.
LayoutPlan infer_layouts(const Program& program, bool allow_wgmma = false,
                         const ScalarGlobals& scalar = ScalarGlobals{});

// The A and B layouts a SIMT dot needs for a given accumulator layout: every thread
// holds, for all k, the rows of A and the columns of B of its accumulator elements.
BlockLayouts simt_operands_for(const RegisterLayout& c, int64_t k);

}  // namespace tilus
