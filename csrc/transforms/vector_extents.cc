#include "transforms/vector_extents.h"

#include <set>

#include "ir/functor.h"

namespace tilus {

namespace {

class ExtentVars : public StmtVisitor {
 public:
  std::set<int> var_ids;

 protected:
  void visit_inst(const Stmt& s) override {
    const Instruction& i = *s->inst;
    const Tensor& t = i.output;
    if (!t || t->scope != Scope::Global || !i.defines_output) return;
    if (!t->global_shape.empty()) note(t->global_shape.back());
    for (const Expr& stride : t->global_strides) note(stride);
  }

 private:
  void note(const Expr& e) {
    if (e && e->kind == ExprKind::Var) var_ids.insert(e->var_id);
  }
};

}  // namespace

std::vector<int> vector_extent_params(const Program& program) {
  ExtentVars walk;
  walk.visit_stmt(program.body);
  std::vector<int> out;
  for (size_t k = 0; k < program.params.size(); ++k) {
    const Expr& p = program.params[k];
    if (p->dtype.is_integer() && walk.var_ids.count(p->var_id)) out.push_back(static_cast<int>(k));
  }
  return out;
}

}  // namespace tilus
