#include "transforms/vector_extents.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <vector>

#include "ir/expr_compare.h"
#include "ir/functor.h"
#include "ir/packed.h"
#include "transforms/divisibility.h"
#include "transforms/pointer_alignment.h"

namespace tilus {

namespace {

// One walk: the global views the program defines, and the global tensors some
// instruction reads or writes (an input, or the tensor an out= instruction writes into):
// the ones tile accesses may touch with vectors. A view read only element by element
// (`glen[b]`, `~g[i]`: expressions, not instruction operands) is not among them: its
// extents never cost the kernel its aligned build.
class GlobalViews : public StmtVisitor {
 public:
  std::vector<Tensor> defined;
  std::set<int> operand_ids;

  // The variables that are the last extent or a stride of a view some instruction uses.
  std::set<int> extent_var_ids() const {
    std::set<int> out;
    auto note = [&](const Expr& e) {
      if (e && e->kind == ExprKind::Var) out.insert(e->var_id);
    };
    for (const Tensor& t : defined) {
      if (!operand_ids.count(t->id)) continue;
      if (!t->global_shape.empty()) note(t->global_shape.back());
      for (const Expr& stride : t->global_strides) note(stride);
    }
    return out;
  }

 protected:
  void visit_inst(const Stmt& s) override {
    const Instruction& i = *s->inst;
    for (const Tensor& t : i.inputs)
      if (t && t->scope == Scope::Global) operand_ids.insert(t->id);
    if (!i.output || i.output->scope != Scope::Global) return;
    if (i.defines_output) defined.push_back(i.output);
    else operand_ids.insert(i.output->id);
  }
};

// The widest power-of-two vector (at most `cap` elements) that every value of `e` is a
// multiple of.
int64_t widest_multiple(const Divisibility& div, const Expr& e, int64_t cap) {
  int64_t v = 1;
  while (v * 2 <= cap && div.is_multiple(e, v * 2)) v *= 2;
  return v;
}

}  // namespace

ScalarGlobals scalar_globals(const Program& program, bool pointers_aligned, const std::vector<int>& unaligned_params) {
  ScalarGlobals out;
  out.all = !pointers_aligned;
  if (out.all || unaligned_params.empty()) return out;
  std::unordered_set<int> unaligned;
  for (int k : unaligned_params) {
    TILUS_CHECK(k >= 0 && size_t(k) < program.params.size(), "ValueError", "unaligned_params: ", k,
                " is not a parameter index of ", program.name, " (", program.params.size(), " parameters)");
    unaligned.insert(k);
  }
  // A view loses its vectors when this build knows less of its pointer or of a stride
  // than the aligned build does: the facts of both builds side by side.
  struct Build {
    Divisibility div;
    std::unordered_map<int, int64_t> align;  // view id -> pointer alignment in bytes
    PointerFacts facts;
    Build(const Program& p, std::vector<int> assumed, std::function<bool(int)> assumes)
        : div(p, assumed), facts{p, std::move(assumes), div, [this](int view) { return align.at(view); }} {}
  };
  const std::vector<int> assumed_all = vector_extent_params(program);
  std::vector<int> assumed_here;
  for (int k : assumed_all)
    if (!unaligned.count(k)) assumed_here.push_back(k);
  Build aligned(program, assumed_all, [](int) { return true; });
  Build here(program, assumed_here, [&](int k) { return !unaligned.count(k); });
  // The last extent does not count: a row of any length moves in vectors up to its last
  // partial one (codegen/emit_memory.cc, partial vectors). Views are defined before they
  // are used, so one walk in program order sees a view's source view first.
  for_each_inst(program.body, [&](const StmtNode& s) {
    const Instruction& i = *s.inst;
    if (i.op == Op::GlobalTensor) {  // a workspace: 256-byte blocks (runtime/workspace)
      aligned.align[i.output->id] = here.align[i.output->id] = 16;
      return;
    }
    if (i.op != Op::GlobalView) return;
    const Tensor& t = i.output;
    const int64_t a = std::min<int64_t>(16, pointer_alignment(i.args[0], aligned.facts));
    const int64_t h = std::min<int64_t>(16, pointer_alignment(i.args[0], here.facts));
    aligned.align[t->id] = a;
    here.align[t->id] = h;
    bool scalar = h < a;
    const int64_t vector = std::max<int64_t>(1, 128 / t->dtype.bits());
    for (const Expr& stride : t->global_strides)
      scalar = scalar || widest_multiple(here.div, stride, vector) < widest_multiple(aligned.div, stride, vector);
    if (scalar) out.views.insert(t->id);
  });
  return out;
}

int64_t realignable_run(const Tensor& view, const std::vector<int>& dims, DataType dtype) {
  const int last = static_cast<int>(view->global_strides.size()) - 1;
  int64_t stride = 0;
  if (last < 0 || dims.empty() || dims.back() != last) return 0;
  if (!is_const_int(view->global_strides.back(), &stride) || stride != 1) return 0;
  if (is_packed(dtype) || dtype.is_pointer || dtype.bits() % 8 != 0 || dtype.bits() > 64) return 0;
  return 128 / dtype.bits();
}

std::vector<int> vector_extent_params(const Program& program) {
  GlobalViews views;
  views.visit_stmt(program.body);
  const std::set<int> var_ids = views.extent_var_ids();
  std::vector<int> out;
  for (size_t k = 0; k < program.params.size(); ++k) {
    const Expr& p = program.params[k];
    if (p->dtype.is_integer() && var_ids.count(p->var_id)) out.push_back(static_cast<int>(k));
  }
  return out;
}

}  // namespace tilus
