#include "transforms/vector_extents.h"

#include <set>
#include <vector>

#include "ir/expr_compare.h"
#include "ir/functor.h"
#include "ir/packed.h"

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

// Whether pointer expression `e` reads an unaligned parameter (`vars`) or takes an
// element address in a view already known scalar.
bool reaches_scalar(const Expr& e, const std::unordered_set<int>& vars, const ScalarGlobals& scalar) {
  if (!e) return false;
  if (e->kind == ExprKind::ElementAddr && scalar.has(e->tensor)) return true;
  if (e->kind == ExprKind::Var) return vars.count(e->var_id) > 0;
  for (const Expr& x : {e->a, e->b, e->c})
    if (reaches_scalar(x, vars, scalar)) return true;
  for (const Expr& x : e->indices)
    if (reaches_scalar(x, vars, scalar)) return true;
  return false;
}

}  // namespace

ScalarGlobals scalar_globals(const Program& program, bool pointers_aligned, const std::vector<int>& unaligned_params) {
  ScalarGlobals out;
  out.all = !pointers_aligned;
  if (out.all || unaligned_params.empty()) return out;
  std::unordered_set<int> vars;
  for (int k : unaligned_params) {
    TILUS_CHECK(k >= 0 && size_t(k) < program.params.size(), "ValueError", "unaligned_params: ", k,
                " is not a parameter index of ", program.name, " (", program.params.size(), " parameters)");
    vars.insert(program.params[static_cast<size_t>(k)]->var_id);
  }
  // Views are defined before they are used, so one walk in program order sees a view's
  // source view first.
  for_each_inst(program.body, [&](const StmtNode& s) {
    const Instruction& i = *s.inst;
    if (i.op != Op::GlobalView) return;
    const Tensor& t = i.output;
    bool scalar = reaches_scalar(i.args[0], vars, out);
    if (!t->global_shape.empty()) scalar = scalar || mentions(t->global_shape.back(), vars);
    for (const Expr& stride : t->global_strides) scalar = scalar || mentions(stride, vars);
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
