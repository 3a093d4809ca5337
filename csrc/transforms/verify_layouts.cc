#include "transforms/verify_layouts.h"

#include "ir/functor.h"
#include "ir/verifier.h"

namespace tilus {

namespace {

class LayoutCheck {
 public:
  LayoutCheck(const Program& p, const LayoutPlan& plan, const char* after)
      : p_(p), plan_(plan), after_(after) {}

  void run() {
    for_each_inst(p_.body, [&](const StmtNode& s) {
      loc_ = s.loc;
      inst(*s.inst);
    });
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) {
    verify_fail(after_, loc_, cat(args...));
  }

  // The layout of a register tensor, checked legal for it.
  const RegisterLayout& reg(const Tensor& t) {
    auto it = plan_.reg.find(t->id);
    if (it == plan_.reg.end()) fail("register tensor ", t->name, " has no layout");
    const RegisterLayout& l = it->second;
    // A layout may cover more than the tile (block_layouts.h default_tile_layout).
    bool covers = l.shape.size() == t->shape.size();
    for (size_t d = 0; covers && d < l.shape.size(); ++d) covers = l.shape[d] >= t->shape[d];
    if (!covers)
      fail("the layout of ", t->name, " (", t->type_str(), ") has shape ", shape(l.shape));
    const int64_t threads = plan_.threads_of(t, int64_t{p_.warps} * 32);
    if (l.num_threads() != threads)
      fail("the layout of ", t->name, " spreads over ", l.num_threads(), " threads, the kernel has ",
           threads);
    if (!checked_.count(t->id)) {
      checked_.insert(t->id);
      RegisterLayout rebuilt;
      try {
        rebuilt = make_register_layout(l.shape, l.mode_shape, l.spatial_modes, l.local_modes);
      } catch (const ScriptError& e) {
        fail("the layout of ", t->name, " is malformed: ", e.what());
      }
      if (rebuilt.mode_shape != l.mode_shape || rebuilt.spatial_modes != l.spatial_modes ||
          rebuilt.local_modes != l.local_modes)
        fail("the layout of ", t->name, " is not in canonical form: ", l.str());
    }
    return l;
  }

  void shared(const Tensor& view) {
    const int root = plan_.root_of(view);
    auto it = plan_.shared.find(root);
    if (it == plan_.shared.end()) fail("shared tensor ", view->name, " has no layout for its allocation");
    const SharedLayout& l = it->second;
    if (root == view->id) {
      if (l.shape != view->shape)
        fail("the layout of ", view->name, " (", view->type_str(), ") has shape ", shape(l.shape));
      if (l.strides.size() != l.shape.size())
        fail("the layout of ", view->name, " has ", l.strides.size(), " strides for rank ", l.rank());
      if (l.size() < view->numel())
        fail("the layout of ", view->name, " addresses ", l.size(), " elements, fewer than its ",
             view->numel());
    } else if (plan_.transformed_views.count(view->id)) {
      if (view->numel() > l.size())
        fail("shared view ", view->name, " (", view->type_str(), ") is larger than its allocation");
    } else if (l.shape.size() < view->shape.size() ||
               !std::equal(view->shape.begin(), view->shape.end(), l.shape.end() - view->shape.size())) {
      fail("shared view ", view->name, " (", view->type_str(), ") is not a trailing part of its "
           "allocation's layout ", shape(l.shape));
    }
  }

  void tied(const Tensor& a, const Tensor& b) {
    if (reg(a) != reg(b))
      fail(a->name, " and ", b->name, " must share a layout: ", reg(a).str(), " vs ", reg(b).str());
  }

  void inst(const Instruction& i) {
    for (const Tensor& t : i.inputs) operand(t);
    if (i.output) operand(i.output);
    // What each op ties together is its layout-rule column in ir/ops.def.
    switch (op_layout_rule(i.op)) {
      case LayoutRule::SameAsInputs:
        // A broadcast operand (another shape) is converted by the emitter if need be.
        for (const Tensor& t : i.inputs)
          if (t->scope == Scope::Register && t->shape == i.output->shape) tied(t, i.output);
        return;
      case LayoutRule::Anchored: dot(i); return;
      case LayoutRule::Derived:  // the output's layout comes from the input's: checked above
      case LayoutRule::None:
      case LayoutRule::Shared: return;
    }
  }

  void operand(const Tensor& t) {
    if (t->scope == Scope::Register) reg(t);
    if (t->scope == Scope::Shared) shared(t);
  }

  void dot(const Instruction& i) {
    auto it = plan_.dots.find(&i);
    if (it == plan_.dots.end()) fail("dot has no plan");
    const DotPlan& dp = it->second;
    const Tensor &a = i.inputs[0], &b = i.inputs[1], &c = i.inputs[2];
    tied(c, i.output);
    if (dp.layouts.c != reg(c)) fail("dot: the accumulator ", c->name, " is not in the plan's layout");
    if (dp.wgmma) {
      if (!dp.load_a || !dp.load_b || dp.load_a->output != a || dp.load_b->output != b ||
          !plan_.folded_loads.count(dp.load_a) || !plan_.folded_loads.count(dp.load_b))
        fail("wgmma dot: its operands are not the folded load_shared of ", a->name, " and ", b->name);
      for (const Instruction* load : {dp.load_a, dp.load_b})
        if (!plan_.wgmma_roots.count(plan_.root_of(load->inputs[0])))
          fail("wgmma dot: ", load->inputs[0]->name, " is not laid out for wgmma");
      return;
    }
    if (dp.layouts.a.shape != a->shape || dp.layouts.b.shape != b->shape)
      fail("dot: the plan's operand layouts ", shape(dp.layouts.a.shape), " and ",
           shape(dp.layouts.b.shape), " do not fit ", a->type_str(), " and ", b->type_str());
  }

  static std::string shape(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
    return out + "]";
  }

  const Program& p_;
  const LayoutPlan& plan_;
  const char* after_;
  SourceLoc loc_;
  std::unordered_set<int> checked_;
};

}  // namespace

void verify_layouts(const Program& program, const LayoutPlan& plan, const char* after) {
  LayoutCheck(program, plan, after).run();
}

}  // namespace tilus
