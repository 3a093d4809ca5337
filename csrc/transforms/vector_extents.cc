#include "transforms/vector_extents.h"

#include <set>

#include "ir/functor.h"

namespace tilus {

namespace {

// The global tensors some instruction reads or writes (an input, or the tensor an out=
// instruction writes into): the ones tile accesses may touch with vectors. A view read
// only element by element (`glen[b]`, `~g[i]`: expressions, not instruction operands)
// is not among them: its extents never cost the kernel its aligned build.
class GlobalOperands : public StmtVisitor {
 public:
  std::set<int> tensor_ids;

 protected:
  void visit_inst(const Stmt& s) override {
    const Instruction& i = *s->inst;
    for (const Tensor& t : i.inputs)
      if (t && t->scope == Scope::Global) tensor_ids.insert(t->id);
    if (i.output && !i.defines_output && i.output->scope == Scope::Global) tensor_ids.insert(i.output->id);
  }
};

class ExtentVars : public StmtVisitor {
 public:
  explicit ExtentVars(const std::set<int>& operands) : operands_(operands) {}
  std::set<int> var_ids;

 protected:
  void visit_inst(const Stmt& s) override {
    const Instruction& i = *s->inst;
    const Tensor& t = i.output;
    if (!t || t->scope != Scope::Global || !i.defines_output || !operands_.count(t->id)) return;
    if (!t->global_shape.empty()) note(t->global_shape.back());
    for (const Expr& stride : t->global_strides) note(stride);
  }

 private:
  const std::set<int>& operands_;
  void note(const Expr& e) {
    if (e && e->kind == ExprKind::Var) var_ids.insert(e->var_id);
  }
};

}  // namespace

std::vector<int> vector_extent_params(const Program& program) {
  GlobalOperands operands;
  operands.visit_stmt(program.body);
  ExtentVars walk(operands.tensor_ids);
  walk.visit_stmt(program.body);
  std::vector<int> out;
  for (size_t k = 0; k < program.params.size(); ++k) {
    const Expr& p = program.params[k];
    if (p->dtype.is_integer() && walk.var_ids.count(p->var_id)) out.push_back(static_cast<int>(k));
  }
  return out;
}

}  // namespace tilus
