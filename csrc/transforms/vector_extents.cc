#include "transforms/vector_extents.h"

#include <set>
#include <vector>

#include "ir/functor.h"

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

}  // namespace

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
