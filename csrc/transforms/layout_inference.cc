#include "transforms/layout_inference.h"

#include <numeric>

#include "ir/functor.h"
#include "ir/packed.h"
#include "ir/thread_groups.h"
#include "ops/op_handler.h"

namespace tilus {

const RegisterLayout& LayoutPlan::layout_of(const Tensor& t) const {
  auto it = reg.find(t->id);
  TILUS_ASSERT(it != reg.end(), "no layout for tensor ", t->name);
  return it->second;
}

int LayoutPlan::root_of(const Tensor& shared) const {
  auto it = shared_root.find(shared->id);
  return it == shared_root.end() ? shared->id : it->second;
}

namespace {

// Union-find over register tensor ids.
class Groups {
 public:
  int find(int x) {
    auto it = parent_.find(x);
    if (it == parent_.end()) return parent_[x] = x;
    if (it->second == x) return x;
    return it->second = find(it->second);
  }
  void unite(int a, int b) { parent_[find(a)] = find(b); }

 private:
  std::unordered_map<int, int> parent_;
};

bool is_reg(const Tensor& t) { return t && t->scope == Scope::Register; }

// For every dot, the load_shared instructions among the statements right before it in
// its sequence (only load_shared / slice_shared / permute_shared, and register_tensor,
// the zeros of `dot(a, b)` without an accumulator, may stand between them and the dot, so
// nothing writes shared memory or synchronises in between).
class LoadsBeforeDots : public StmtVisitor {
 public:
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> out;

 protected:
  void visit_seq(const Stmt& st) override {
    StmtVisitor::visit_seq(st);
    for (size_t j = 0; j < st->seq.size(); ++j) {
      const Stmt& c = st->seq[j];
      if (c->kind != StmtKind::Inst || c->inst->op != Op::Dot) continue;
      auto& loads = out[c->inst.get()];
      for (size_t k = j; k-- > 0;) {
        const Stmt& p = st->seq[k];
        if (p->kind != StmtKind::Inst) break;
        if (p->inst->op == Op::LoadShared) loads.push_back(p->inst.get());
        // A wait the async pass put before the dot (for an earlier dot's accumulator)
        // writes no shared memory.
        else if (p->inst->op != Op::SliceShared && p->inst->op != Op::PermuteShared &&
                 p->inst->op != Op::RegisterTensor && p->inst->op != Op::WgmmaWaitGroup)
          break;
      }
    }
  }
};

std::unordered_map<const Instruction*, std::vector<const Instruction*>> loads_before_dots(const Stmt& s) {
  LoadsBeforeDots walk;
  walk.visit_stmt(s);
  return std::move(walk.out);
}

bool is_16bit_float(DataType t) {
  return !t.is_pointer && (t.kind == ScalarKind::Float16 || t.kind == ScalarKind::BFloat16);
}

}  // namespace

BlockLayouts simt_operands_for(const RegisterLayout& c, int64_t k) {
  TILUS_ASSERT(c.rank() == 2);
  std::vector<int> dims = c.mode_dims();
  int num_modes = static_cast<int>(c.mode_shape.size());
  // A [m, k]: C's dim-0 modes, then one k mode. B [k, n]: one k mode, then C's dim-1 modes.
  std::vector<int64_t> a_modes, b_modes = {k};
  std::vector<int> a_index(num_modes, -1), b_index(num_modes, -1);
  for (int i = 0; i < num_modes; ++i) {
    if (dims[i] == 0) {
      a_index[i] = static_cast<int>(a_modes.size());
      a_modes.push_back(c.mode_shape[i]);
    } else {
      b_index[i] = static_cast<int>(b_modes.size());
      b_modes.push_back(c.mode_shape[i]);
    }
  }
  int a_k = static_cast<int>(a_modes.size());
  a_modes.push_back(k);
  std::vector<int> a_spatial, b_spatial, a_local, b_local = {0};
  for (int m : c.spatial_modes) {
    if (m < 0) {
      a_spatial.push_back(m);
      b_spatial.push_back(m);
    } else if (dims[m] == 0) {
      a_spatial.push_back(a_index[m]);
      b_spatial.push_back(-static_cast<int>(c.mode_shape[m]));
    } else {
      a_spatial.push_back(-static_cast<int>(c.mode_shape[m]));
      b_spatial.push_back(b_index[m]);
    }
  }
  for (int m : c.local_modes) {
    if (dims[m] == 0) a_local.push_back(a_index[m]);
    else b_local.push_back(b_index[m]);
  }
  a_local.push_back(a_k);
  // replication entries of size 1 are meaningless; drop them
  auto clean = [](std::vector<int>& v) {
    std::vector<int> out;
    for (int x : v)
      if (x != -1) out.push_back(x);
    v = out;
  };
  clean(a_spatial);
  clean(b_spatial);
  BlockLayouts out;
  out.c = c;
  out.a = make_register_layout({c.shape[0], k}, a_modes, a_spatial, a_local);
  out.b = make_register_layout({k, c.shape[1]}, b_modes, b_spatial, b_local);
  return out;
}

// A tile load from rows of unknown alignment that the emitter reads as realigned 16-byte
// runs (vector_extents.h realignable_run, the tile's rows whole runs): it keeps 16-byte
// runs in registers, so it does not make its group lay out for single elements. A norm
// whose weight alone is misaligned keeps the 16-byte rows of its activations. (Stores have
// no realigned form: rows moved as realigned loads and stores realigned through shuffles
// between lanes ran 1.2-1.7x slower than single elements on an H100, benchmarks/README.md.)
// Each realigned run holds two chunks in registers until it is shifted, so a tile of more
// than kMaxRealignedRuns runs a thread keeps single elements: a float32 softmax row of
// 32768 at 16 warps (16 runs a thread) spilled at 128 registers.
namespace {
constexpr int64_t kMaxRealignedRuns = 8;
bool realigned_load(const Instruction& i, int64_t threads) {
  if (i.op != Op::LoadGlobal || !i.output || i.output->shape.empty()) return false;
  const int64_t run = realignable_run(i.inputs[0], i.dims, i.output->dtype);
  if (run <= 0 || i.output->shape.back() % run != 0) return false;
  int64_t elements = 1;
  for (int64_t e : i.output->shape) elements *= e;
  return elements <= kMaxRealignedRuns * run * threads;
}
}  // namespace

LayoutPlan infer_layouts(const Program& program, bool allow_wgmma, const ScalarGlobals& scalar) {
  LayoutPlan plan;
  const int64_t threads = program.warps * 32;
  GroupThreadCounts group_threads = group_thread_counts(program);
  plan.group_threads = group_threads.tensor_threads;
  auto threads_of = [&](const Tensor& t) { return plan.threads_of(t, threads); };
  auto warps_of = [&](const Instruction& inst) {
    auto it = group_threads.inst_threads.find(&inst);
    return static_cast<int>(it == group_threads.inst_threads.end() ? threads / 32 : std::max<int64_t>(1, it->second / 32));
  };
  Groups groups;
  std::unordered_map<int, Tensor> tensors;
  std::vector<std::pair<const Instruction*, SourceLoc>> dots;

  // 1. Each instruction's layout rule (its family's handler, csrc/ops/): groups of
  // register tensors that must share a layout, the dots to plan, layouts derived from
  // others; shared views -> roots.
  struct Derivation {
    Tensor from, to;
    std::function<RegisterLayout(const RegisterLayout&)> derive;
    std::function<std::optional<RegisterLayout>(const RegisterLayout&)> inverse;
  };
  std::vector<Derivation> derivations;
  struct Rules : LayoutRules {
    LayoutPlan& plan_;
    Groups& groups_;
    std::vector<std::pair<const Instruction*, SourceLoc>>& dots_;
    std::vector<Derivation>& derivations_;
    Rules(LayoutPlan& p, Groups& g, std::vector<std::pair<const Instruction*, SourceLoc>>& d,
          std::vector<Derivation>& v)
        : plan_(p), groups_(g), dots_(d), derivations_(v) {}
    void same(const Tensor& a, const Tensor& b) override { groups_.unite(a->id, b->id); }
    void anchor(const Instruction& inst, const SourceLoc& loc) override { dots_.push_back({&inst, loc}); }
    void derive(const Tensor& from, const Tensor& to, std::function<RegisterLayout(const RegisterLayout&)> f,
                std::function<std::optional<RegisterLayout>(const RegisterLayout&)> inverse) override {
      derivations_.push_back({from, to, std::move(f), std::move(inverse)});
    }
    LayoutPlan& plan() override { return plan_; }
    void fix(const Tensor& t, const RegisterLayout& layout, const SourceLoc& loc) override {
      fixed_.push_back({t, layout, loc});
    }
    int64_t warps(const Instruction& inst) const override { return warps_of_(inst); }
    struct Fixed {
      Tensor t;
      RegisterLayout layout;
      SourceLoc loc;
    };
    std::vector<Fixed> fixed_;
    std::function<int(const Instruction&)> warps_of_;
  } rules(plan, groups, dots, derivations);
  rules.warps_of_ = warps_of;
  std::unordered_map<int, const Instruction*> transposes;  // view id -> its permute_shared [1, 0]
  for_each_inst(program.body, [&](const StmtNode& s) {
    const Instruction& inst = *s.inst;
    if (inst.op == Op::PermuteShared && inst.dims == std::vector<int>{1, 0})
      transposes[inst.output->id] = &inst;
    auto note = [&](const Tensor& t) {
      if (is_reg(t)) {
        tensors[t->id] = t;
        groups.find(t->id);
      }
    };
    note(inst.output);
    for (auto& t : inst.inputs) note(t);
    if (auto rule = op_handler(inst.op).layout) rule(rules, inst, s.loc);
  });

  std::unordered_map<int, RegisterLayout> group_layout;
  std::unordered_map<int, SharedLayout> wgmma_layouts;  // allocation id -> wgmma's layout
  auto assign_group = [&](const Tensor& t, const RegisterLayout& layout) {
    int g = groups.find(t->id);
    if (!group_layout.count(g)) group_layout.emplace(g, layout);
  };

  // 2. User layouts first.
  for (auto& [id, t] : tensors)
    if (t->layout) {
      TILUS_CHECK(t->layout->num_threads() == threads_of(t), "ValueError", "the layout of ", t->name,
                  " spreads over ", t->layout->num_threads(), " threads but ", t->name, " is held by ",
                  threads_of(t), " threads (", program.warps, " warps",
                  threads_of(t) == threads ? ")" : ", a thread group of them)");
      assign_group(t, *t->layout);
    }
  // Layouts an instruction's hardware fixes (explicit wgmma's accumulator), with the
  // user layouts: a group holding two different ones cannot be laid out.
  for (const auto& f : rules.fixed_) {
    int g = groups.find(f.t->id);
    auto it = group_layout.find(g);
    if (it != group_layout.end() && it->second != f.layout) {
      ScriptError e("ValueError", cat(f.t->name, " must have the layout ", f.layout.str(),
                                      " here, but it is tied to a tensor laid out as ", it->second.str()));
      e.set_loc_if_unknown(f.loc);
      throw e;
    }
    group_layout.emplace(g, f.layout);
  }

  // Register tensors read by more than one instruction (a wgmma dot must be the only
  // reader of its operand tiles, whose loads it folds away).
  std::unordered_map<int, int> reads;
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> before;
  if (allow_wgmma) {
    for_each_inst(program.body, [&](const StmtNode& s) {
      for (auto& t : s.inst->inputs)
        if (is_reg(t)) ++reads[t->id];
    });
    before = loads_before_dots(program.body);
  }

  // The wgmma plan of a dot, or nullopt when it does not qualify.
  auto try_wgmma = [&](const Instruction& inst) -> std::optional<DotPlan> {
    const Tensor &a = inst.inputs[0], &b = inst.inputs[1], &c = inst.inputs[2], &d = inst.output;
    if (!allow_wgmma || !is_16bit_float(a->dtype) || a->dtype != b->dtype) return std::nullopt;
    if (c->dtype != dtypes::float32 || d->dtype != dtypes::float32) return std::nullopt;
    if (a->layout || b->layout || reads[a->id] != 1 || reads[b->id] != 1) return std::nullopt;
    const int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    auto tiling = wgmma_tiling(m, n, k, warps_of(inst));
    if (!tiling) return std::nullopt;
    int cg = groups.find(c->id);
    if (group_layout.count(cg) && group_layout.at(cg) != tiling->c) return std::nullopt;
    auto loads = before.find(&inst);
    if (loads == before.end()) return std::nullopt;
    DotPlan dp;
    for (const Instruction* load : loads->second) {
      if (load->output == a && !dp.load_a) dp.load_a = load;
      if (load->output == b && !dp.load_b) dp.load_b = load;
    }
    if (!dp.load_a || !dp.load_b) return std::nullopt;
    // Each operand is a whole trailing matrix of its allocation (sa[stage]), in a layout
    // wgmma reads: A K-major (64-byte or 128-byte-blocked rows), B N-major in 128-byte
    // column blocks.
    auto operand_layout = [&](const Tensor& view, int64_t rows, int64_t cols,
                              bool needs_128) -> std::optional<std::pair<int, SharedLayout>> {
      if (plan.transformed_views.count(view->id)) return std::nullopt;  // wgmma reads whole tiles
      int root = plan.root_of(view);
      auto it = plan.shared.find(root);
      if (it == plan.shared.end()) return std::nullopt;
      const auto& shape = it->second.shape;
      if (view->shape != std::vector<int64_t>{rows, cols} || shape.size() < 2 ||
          shape[shape.size() - 2] != rows || shape.back() != cols)
        return std::nullopt;
      auto layout = shared_wgmma_operand(shape, view->dtype.bits());
      if (!layout || (needs_128 && cols * view->dtype.bits() % 1024)) return std::nullopt;  // 128 bytes
      return std::make_pair(root, *layout);
    };
    // B K-major: the load reads a transpose of an untransformed [n, k] view, stored as A
    // is (k contiguous), which wgmma reads with imm-trans-b = 0.
    auto t = transposes.find(dp.load_b->inputs[0]->id);
    if (t != transposes.end() && !plan.transformed_views.count(t->second->inputs[0]->id))
      dp.b_kmajor = t->second->inputs[0];
    auto la = operand_layout(dp.load_a->inputs[0], m, k, false);
    auto lb = dp.b_kmajor ? operand_layout(dp.b_kmajor, n, k, false)
                          : operand_layout(dp.load_b->inputs[0], k, n, true);
    if (!la || !lb || la->first == lb->first) return std::nullopt;
    for (auto* l : {&*la, &*lb}) {
      auto w = wgmma_layouts.find(l->first);
      if (w != wgmma_layouts.end() && w->second != l->second) return std::nullopt;
      // an allocation an explicit self.wgmma.mma reads keeps the layout it chose
      if (plan.wgmma_roots.count(l->first) && plan.shared.at(l->first) != l->second) return std::nullopt;
    }
    wgmma_layouts[la->first] = la->second;
    wgmma_layouts[lb->first] = lb->second;
    dp.wgmma = true;
    dp.tiling = *tiling;
    dp.layouts.c = tiling->c;
    return dp;
  };

  // 3. Dots: accumulator, then operands.
  for (auto& [inst, loc] : dots) try {
    const Tensor &a = inst->inputs[0], &b = inst->inputs[1], &c = inst->inputs[2];
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    if (auto wg = try_wgmma(*inst)) {
      assign_group(c, wg->layouts.c);
      plan.folded_loads.insert(wg->load_a);
      plan.folded_loads.insert(wg->load_b);
      plan.dots.emplace(inst, *wg);
      continue;
    }
    DotPlan dp;
    int cg = groups.find(c->id);
    auto kind = mma_kind_for(a->dtype);
    std::string why;
    std::optional<BlockLayouts> bl;
    bool c_fixed = group_layout.count(cg) > 0;
    if (kind && !c_fixed) bl = mma_block_layouts(*kind, m, n, k, warps_of(*inst), &why);
    if (kind && c_fixed) {
      // an accumulator the user laid out as mma fragments on any warp grid (Tilus 0.2's
      // self.cuda.resolve_dot_config picks its own) keeps the tensor cores
      const int64_t warps = warps_of(*inst);
      for (int64_t wm = 1; wm <= warps && !bl; ++wm) {
        if (warps % wm) continue;
        auto candidate = mma_block_layouts_on(*kind, m, n, k, wm, warps / wm);
        if (candidate && candidate->c == group_layout.at(cg)) bl = candidate;
      }
    }
    if (bl) {
      dp.mma = true;
      dp.kind = *kind;
      dp.layouts = *bl;
    } else if (c_fixed) {
      // a layout the user chose for the accumulator: SIMT over that layout
      dp.layouts = simt_operands_for(group_layout.at(cg), k);
    } else {
      // no mma tiling (or no mma for this type): fused multiply-adds on CUDA cores
      TILUS_CHECK(threads_of(c) % 32 == 0, "ValueError", "a dot needs whole warps; its thread group has ",
                  threads_of(c), " threads");
      auto simt = simt_block_layouts(m, n, k, warps_of(*inst), &why);
      TILUS_CHECK(simt.has_value(), "ValueError", "no thread arrangement computes a [", m, ", ",
                  n, "] dot with ", warps_of(*inst), " warps: ", why);
      dp.layouts = *simt;
    }
    assign_group(c, dp.layouts.c);
    assign_group(a, dp.layouts.a);
    assign_group(b, dp.layouts.b);
    plan.dots.emplace(inst, dp);
  } catch (ScriptError& e) {
    e.set_loc_if_unknown(loc);
    throw;
  }

  for (auto& [root, layout] : wgmma_layouts) {
    plan.shared[root] = layout;
    plan.wgmma_roots.insert(root);
  }

  // 3b. Derivations run backwards, latest first (so a chain transpose -> reshape -> dot
  // reaches its start): a source without a layout whose derived tensor a dot or a user
  // fixed takes the layout that derives exactly that one, so the data stays in place.
  // Only an exact round trip counts; anything else is left to step 4 and converted.
  for (auto d = derivations.rbegin(); d != derivations.rend(); ++d) {
    if (!d->inverse) continue;
    auto fixed = group_layout.find(groups.find(d->to->id));
    const int gf = groups.find(d->from->id);
    if (fixed == group_layout.end() || group_layout.count(gf)) continue;
    std::optional<RegisterLayout> source = d->inverse(fixed->second);
    if (!source || source->num_threads() != threads_of(d->from) || d->derive(*source) != fixed->second) continue;
    group_layout.emplace(gf, *source);
  }

  // 4. Derived layouts, in program order: a derivation's source has its layout by now
  // (a user's, a dot's, an earlier derivation's) or takes the default one here.
  // A group takes its vectors from the narrowest tile of it that global memory sees (a
  // load_global's result, a stored tile, an atomic's operands) or that is packed (sub-byte, ir/packed.h),
  // so that each thread's run along the last dimension is 16 bytes of memory where the
  // tile allows, whichever tile of the group comes first: a float16 row loaded, computed
  // in float32 and stored as float16 moves 8 elements per access, not 4.
  std::unordered_map<int, int> memory_bits;
  std::unordered_set<int> packed_groups;
  std::unordered_set<int> scalar_groups;  // groups some access of a scalar view moves
  bool scalar_access = false;
  auto narrowest = [&](const Tensor& t) {
    if (!is_reg(t) || t->dtype.is_pointer) return;
    auto [it, fresh] = memory_bits.emplace(groups.find(t->id), t->dtype.bits());
    if (!fresh) it->second = std::min(it->second, t->dtype.bits());
    if (scalar_access) scalar_groups.insert(groups.find(t->id));
  };
  for (auto& [id, t] : tensors)
    if (is_packed(t->dtype)) {
      narrowest(t);
      packed_groups.insert(groups.find(id));
    }
  for_each_inst(program.body, [&](const StmtNode& s) {
    if (!op_has_effect(s.inst->op, eff::ReadsGlobal | eff::WritesGlobal)) return;
    scalar_access = (scalar.all || scalar.has(s.inst->output) ||
                     std::any_of(s.inst->inputs.begin(), s.inst->inputs.end(), [&](const Tensor& t) { return scalar.has(t); })) &&
                    !(s.inst->output && realigned_load(*s.inst, threads_of(s.inst->output)));
    if (s.inst->output) narrowest(s.inst->output);
    for (const Tensor& t : s.inst->inputs) narrowest(t);
  });
  // A tile derived from another (a row of weights broadcast beside the rows it scales)
  // takes its layout from it: where the derived tile meets a view without vectors, its
  // source lays out for single elements too, or that view's loads would run 16-byte
  // spreads of 2-byte loads (lanes 16 bytes apart: 7.8 us more on RMS norm 8192^2 with a
  // misaligned weight, H100, against ~116 us all element by element; benchmarks/README.md).
  // Not the other way: a tile derived from a single-element source is laid out from it
  // anyway, and marking it would carry the mark on to its other sources -- a softmax's
  // row max, derived from the tile it reduces and broadcast against the tile it scales,
  // made a load from aligned rows single-element because the result's store was.
  for (bool grew = !scalar_groups.empty(); grew;) {
    grew = false;
    for (const Derivation& d : derivations) {
      const int from = groups.find(d.from->id), to = groups.find(d.to->id);
      if (!scalar_groups.count(to) || scalar_groups.count(from)) continue;
      scalar_groups.insert(from);
      grew = true;
    }
  }
  auto default_layout = [&](const Tensor& t) {
    const int g = groups.find(t->id);
    int bits = t->dtype.bits();
    if (auto mb = memory_bits.find(g); mb != memory_bits.end()) bits = mb->second;
    int64_t vec = std::max<int64_t>(1, 128 / bits);
    if (scalar_groups.count(g) && !packed_groups.count(g)) vec = 1;
    return default_tile_layout(t->shape, threads_of(t), vec);
  };
  for (const Derivation& d : derivations) {
    int g = groups.find(d.from->id);
    auto it = group_layout.find(g);
    if (it == group_layout.end()) it = group_layout.emplace(g, default_layout(d.from)).first;
    assign_group(d.to, d.derive(it->second));
  }

  // 5. Everything else: coalesced, 16-byte vectors where the element type allows.
  for (auto& [id, t] : tensors) {
    int g = groups.find(id);
    auto it = group_layout.find(g);
    if (it == group_layout.end()) it = group_layout.emplace(g, default_layout(t)).first;
    plan.reg.emplace(id, it->second);
  }
  return plan;
}

}  // namespace tilus
