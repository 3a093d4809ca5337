#include "transforms/written_params.h"

#include <set>
#include <unordered_map>

#include "ir/functor.h"

namespace tilus {
namespace {

// Where a pointer value may come from: parameter indices (>= 0) and two markers.
constexpr int kWorkspace = -1;  // runtime-provided global_tensor memory: not the user's
constexpr int kUnknown = -2;    // untraceable (loaded from memory, cast from an integer)
using Origins = std::set<int>;

class WrittenParams : public StmtVisitor {
 public:
  explicit WrittenParams(const Program& program) : program_(program) {
    for (size_t i = 0; i < program.params.size(); ++i) {
      const Expr& p = program.params[i];
      param_index_[p->var_id] = int(i);
    }
  }

  std::vector<bool> run() {
    // Origins only grow, over a finite set, so this settles; loops and assignments
    // after first use are why one pass is not enough.
    do {
      changed_ = false;
      visit_stmt(program_.body);
    } while (changed_);
    collecting_writes_ = true;
    visit_stmt(program_.body);

    std::vector<bool> written(program_.params.size(), false);
    for (int origin : writes_) {
      if (origin == kUnknown) {
        for (size_t i = 0; i < written.size(); ++i) {
          written[i] = program_.params[i]->dtype.is_pointer;
        }
        break;
      }
      if (origin >= 0) written[origin] = true;
    }
    return written;
  }

 private:
  Origins of(const Expr& e) {
    if (!e) return {};
    switch (e->kind) {
      case ExprKind::Const:
      case ExprKind::BlockIdx:
      case ExprKind::Math: return {};  // a float or a boolean, never a pointer
      case ExprKind::Var: {
        if (auto p = param_index_.find(e->var_id); p != param_index_.end()) {
          if (e->dtype.is_pointer) return {p->second};
          return {};
        }
        auto v = var_origins_.find(e->var_id);
        return v == var_origins_.end() ? Origins{} : v->second;
      }
      case ExprKind::Unary:
      case ExprKind::Cast: return of(e->a);
      case ExprKind::Binary: return merged(of(e->a), of(e->b));
      case ExprKind::Select: return merged(of(e->a), of(e->b));  // c is the condition
      case ExprKind::ElementAddr: return tensor_origins(e->tensor);
      case ExprKind::ElementLoad:
        return e->dtype.is_pointer ? Origins{kUnknown} : Origins{};
    }
    return {kUnknown};
  }

  static Origins merged(Origins a, const Origins& b) {
    a.insert(b.begin(), b.end());
    return a;
  }

  Origins tensor_origins(const Tensor& t) {
    if (!t) return {};
    auto found = tensor_origins_.find(t->id);
    return found == tensor_origins_.end() ? Origins{} : found->second;
  }

  void add(Origins& into, const Origins& more) {
    for (int origin : more) changed_ |= into.insert(origin).second;
  }

  // A store through a pointer of these origins; untraceable when there are none.
  void write(const Origins& origins) {
    if (!collecting_writes_) return;
    if (origins.empty()) writes_.insert(kUnknown);
    writes_.insert(origins.begin(), origins.end());
  }

  // Read from the effects column of ir/ops.def: a global tensor an instruction defines
  // points where its pointer operands and global inputs point (a global_view's pointer;
  // a workspace for global_tensor), and an instruction that writes global memory
  // writes through every global tensor and pointer operand it has.
  void visit_inst(const Stmt& s) override {
    const Instruction& i = *s->inst;
    if (i.output && i.output->scope == Scope::Global) {
      Origins& out = tensor_origins_[i.output->id];
      if (i.workspace >= 0) add(out, {kWorkspace});
      for (const Tensor& t : i.inputs)
        if (t && t->scope == Scope::Global) add(out, tensor_origins(t));
      for (const Expr& a : i.args)
        if (a && a->dtype.is_pointer) add(out, of(a));
    }
    if (!op_has_effect(i.op, eff::WritesGlobal)) return;
    for (const Tensor& t : i.inputs)
      if (t && t->scope == Scope::Global) write(tensor_origins(t));
    for (const Expr& a : i.args)
      if (a && a->dtype.is_pointer) write(of(a));
  }

  void visit_declare(const Stmt& s) override {
    if (s->value) add(var_origins_[s->var->var_id], of(s->value));
  }
  void visit_assign(const Stmt& s) override { add(var_origins_[s->var->var_id], of(s->value)); }
  void visit_for(const Stmt& s) override {
    add(var_origins_[s->var->var_id], merged(of(s->start), of(s->step)));
    visit_stmt(s->body);
  }

  const Program& program_;
  std::unordered_map<int, int> param_index_;  // var id -> parameter index
  std::unordered_map<int, Origins> var_origins_;
  std::unordered_map<int, Origins> tensor_origins_;
  Origins writes_;
  bool changed_ = false;
  bool collecting_writes_ = false;
};

}  // namespace

std::vector<bool> written_params(const Program& program) { return WrittenParams(program).run(); }

}  // namespace tilus
