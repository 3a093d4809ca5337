#include "ir/verifier.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "ir/functor.h"
#include "ir/operand_check.h"
#include "ops/op_handler.h"

namespace tilus {

namespace {

#ifdef TILUS_VERIFY_DEFAULT
constexpr bool kVerifyDefault = TILUS_VERIFY_DEFAULT;
#else
constexpr bool kVerifyDefault = false;
#endif

std::atomic<bool> g_verify{kVerifyDefault};

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string tensor_str(const Tensor& t) { return t ? t->name + " (" + t->type_str() + ")" : "nothing"; }



// Expressions the host evaluates before launch (grid, workspace sizes): constants,
// parameters and variables declared at the top level of the body (what HostEvaluator and
// the interpreter's launch_shape read), nothing a block or memory supplies.
class HostOnly : public ExprVisitor {
 public:
  explicit HostOnly(const std::unordered_set<int>& params) : params_(params) {}
  std::string bad;  // the first expression that is not, printed

 protected:
  void visit_var(const Expr& e) override {
    if (!params_.count(e->var_id) && bad.empty()) bad = e->name;
  }
  void visit_block_idx(const Expr& e) override {
    if (bad.empty()) bad = expr_str(e);
  }
  void visit_element_load(const Expr& e) override {
    if (bad.empty()) bad = expr_str(e);
  }

 private:
  const std::unordered_set<int>& params_;
};

class Verifier : public StmtExprVisitor {
 public:
  Verifier(const Program& p, const char* after) : p_(p), after_(after) {}

  void run() {
    for (const Expr& v : p_.params) {
      if (!v || !v->is_var()) fail("a kernel parameter is not a variable");
      params_.insert(v->var_id);
      visible_vars_.insert(v->var_id);
    }
    if (!p_.body) fail("the program has no body");
    host_vars_ = params_;
    for_each_top_level(p_.body, [&](const StmtNode& s) {
      if (s.kind == StmtKind::Declare && s.var) host_vars_.insert(s.var->var_id);
    });
    loc_ = p_.grid_loc;
    for (int i = 0; i < 3; ++i) {
      if (!p_.grid[i]) fail("grid dimension ", i, " is missing");
      host_only(p_.grid[i], "the grid");
    }
    if (p_.warps < 1 || p_.warps > 32) fail("the kernel has ", p_.warps, " warps (1 to 32)");
    for (size_t w = 0; w < p_.workspaces.size(); ++w) {
      loc_ = p_.workspaces[w].loc;
      const Tensor& t = p_.workspaces[w].tensor;
      if (!t || t->scope != Scope::Global) fail("workspace ", w, " is not a global tensor");
      for (const Expr& e : t->global_shape) host_only(e, "a global_tensor shape");
    }
    loc_ = SourceLoc{};
    scopes_.emplace_back();
    visit_stmt(p_.body);
  }

 protected:
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) {
    verify_fail(after_, loc_, cat(args...));
  }

  void visit_stmt(const Stmt& s) override {
    if (!s) return;
    const SourceLoc outer = loc_;
    if (s->loc.known()) loc_ = s->loc;
    StmtExprVisitor::visit_stmt(s);
    loc_ = outer;
  }

  // ---- scalars
  void visit_var(const Expr& e) override {
    if (visible_vars_.count(e->var_id)) return;
    if (loop_var_ended_.count(e->var_id))
      fail("'", e->name, "' is the variable of a loop that has ended; it is not visible here");
    fail("'", e->name, "' is used before it is declared");
  }

  void visit_element_addr(const Expr& e) override {
    use_global(e->tensor, "an element address");
    ExprVisitor::visit_element_addr(e);
  }
  void visit_element_load(const Expr& e) override {
    use_global(e->tensor, "an element load");
    ExprVisitor::visit_element_load(e);
  }

  void visit_declare(const Stmt& s) override {
    visit_expr(s->value);
    if (!s->var || !s->var->is_var()) fail("a declaration without a variable");
    if (!visible_vars_.insert(s->var->var_id).second)
      fail("'", s->var->name, "' is declared twice");
    if (s->value && s->value->dtype != s->var->dtype)
      fail("'", s->var->name, "' of type ", s->var->dtype.name(), " is initialised with a ",
           s->value->dtype.name());
  }

  void visit_assign(const Stmt& s) override {
    visit_expr(s->value);
    if (!s->var || !s->var->is_var() || !s->value) fail("an assignment needs a variable and a value");
    if (active_loop_vars_.count(s->var->var_id))
      fail("the loop variable '", s->var->name, "' is assigned inside its loop");
    visit_expr(s->var);
    if (s->value->dtype != s->var->dtype)
      fail("'", s->var->name, "' of type ", s->var->dtype.name(), " is assigned a ",
           s->value->dtype.name());
  }

  void visit_for(const Stmt& s) override {
    if (!s->var || !s->var->is_var() || !s->start || !s->end || !s->step || !s->body)
      fail("a for loop needs a variable, bounds, a step and a body");
    visit_expr(s->start);
    visit_expr(s->end);
    visit_expr(s->step);
    const DataType t = s->var->dtype;
    if (!t.is_integer() || s->start->dtype != t || s->end->dtype != t || s->step->dtype != t)
      fail("the loop over '", s->var->name, "' mixes types: variable ", t.name(), ", bounds ",
           s->start->dtype.name(), " to ", s->end->dtype.name(), " by ", s->step->dtype.name());
    int64_t step;
    if (is_const_int(s->step, &step) && step <= 0) fail("the loop step is ", step, " (must be positive)");
    const int id = s->var->var_id;
    if (visible_vars_.count(id)) fail("the loop variable '", s->var->name, "' is already in scope");
    visible_vars_.insert(id);
    active_loop_vars_.insert(id);
    ++loop_depth_;
    block(s->body);
    --loop_depth_;
    active_loop_vars_.erase(id);
    visible_vars_.erase(id);
    loop_var_ended_.insert(id);
  }

  void visit_if(const Stmt& s) override {
    visit_expr(s->cond);
    if (!s->cond || !s->cond->dtype.is_bool()) fail("an if condition must be boolean");
    if (!s->then_body) fail("an if without a then branch");
    block(s->then_body);
    block(s->else_body);
  }

  void visit_while(const Stmt& s) override {
    visit_expr(s->cond);
    if (!s->cond || !s->cond->dtype.is_bool()) fail("a while condition must be boolean");
    ++loop_depth_;
    block(s->body);
    --loop_depth_;
  }

  void visit_thread_group(const Stmt& s) override {
    if (s->group_threads < 1 || s->group_begin < -1 || (s->group_begin == -1 && s->group_threads != 1))
      fail("a thread group of ", s->group_threads, " threads starting at ", s->group_begin);
    block(s->body);
  }

  void visit_break(const Stmt&) override {
    if (!loop_depth_) fail("'break' outside a loop");
  }
  void visit_continue(const Stmt&) override {
    if (!loop_depth_) fail("'continue' outside a loop");
  }

  // ---- instructions
  void visit_inst(const Stmt& s) override {
    if (!s->inst) fail("an instruction statement without an instruction");
    const Instruction& i = *s->inst;
    const char* what = op_name(i.op);
    for (const Tensor& t : i.inputs) use(t, what);
    StmtExprVisitor::visit_inst(s);  // the arguments
    if (op_defines_output(i.op) && !i.output) fail(what, " has no output tensor");
    if (i.output && !i.defines_output) use(i.output, what);
    if (i.defines_output && !op_defines_output(i.op)) fail(what, " cannot define a tensor");
    check_operands(i);
    if (i.output && i.defines_output) define(i);
    if (i.op == Op::FreeShared) freed_[root_of(i.inputs[0])] = loc_;
  }

 private:
  // A body of an if/for/while: the tensors it defines end with it.
  void block(const Stmt& body) {
    if (!body) return;
    scopes_.emplace_back();
    visit_stmt(body);
    for (int id : scopes_.back()) live_.erase(id);
    scopes_.pop_back();
  }

  int root_of(const Tensor& t) const {
    auto it = shared_root_.find(t->id);
    return it == shared_root_.end() ? t->id : it->second;
  }

  void use(const Tensor& t, const char* what) {
    if (!t) fail(what, ": an operand is missing");
    if (!live_.count(t->id)) {
      if (defined_.count(t->id))
        fail(what, " uses ", t->name, ", defined inside a block that has ended (at ",
             defined_.at(t->id).str(), ")");
      fail(what, " uses ", t->name, " before it is defined");
    }
    if (t->scope == Scope::Shared) {
      auto f = freed_.find(root_of(t));
      if (f != freed_.end())
        fail(what, " uses shared tensor ", t->name, " after its free_shared at ", f->second.str());
    }
  }

  void use_global(const Tensor& t, const char* what) {
    if (!t || t->scope != Scope::Global) fail(what, " needs a global tensor, got ", tensor_str(t));
    use(t, what);
  }

  void define(const Instruction& i) {
    const Tensor& t = i.output;
    if (defined_.count(t->id))
      fail(op_name(i.op), " defines ", t->name, " again (first at ", defined_.at(t->id).str(), ")");
    if (t->scope == Scope::Global) {
      for (const Expr& e : t->global_shape) visit_expr(e);
      for (const Expr& e : t->global_strides) visit_expr(e);
    }
    defined_.emplace(t->id, loc_);
    live_.insert(t->id);
    scopes_.back().push_back(t->id);
    if (defines_shared_view(i)) shared_root_[t->id] = root_of(i.inputs[0]);
  }

  void host_only(const Expr& e, const char* what) {
    HostOnly h(host_vars_);
    h.visit_expr(e);
    if (!h.bad.empty())
      fail(what, " uses ", h.bad, ", which the host cannot evaluate before launch (only "
           "parameters, constants and top-level declarations)");
  }

  // ---- per-op operand checks: the op's verify stage (ops/op_handler.h), or by default
  // its builder check run again on a copy, which must give the output tensor's type.
  void check_operands(const Instruction& i) {
    OperandCheck c(p_, after_, loc_, [this](const Tensor& t) { return root_of(t); });
    const OpHandler& h = op_handler(i.op);
    if (h.verify) return h.verify(c, i);
    if (!h.check) fail(op_name(i.op), " has neither a verify nor a check stage");
    Instruction copy = i;
    OutputType type;
    try {
      type = h.check(copy);
    } catch (const std::exception& e) {
      fail(op_name(i.op), ": ", e.what());
    }
    if (!op_defines_output(i.op)) {
      if (i.output) fail(op_name(i.op), " writes no tensor, but has output ", tensor_str(i.output));
      return;
    }
    if (!i.defines_output) return;  // out=: the op converts into the given tensor
    if (i.output->scope != type.scope || i.output->dtype != type.dtype || i.output->shape != type.shape)
      fail(op_name(i.op), ": its operands give a ", scope_name(type.scope), " ", type.dtype.name(), shape_str(type.shape),
           " tensor, not ", tensor_str(i.output));
  }

  const Program& p_;
  const char* after_;
  SourceLoc loc_;
  int loop_depth_ = 0;
  std::unordered_set<int> params_, host_vars_, visible_vars_, active_loop_vars_, loop_var_ended_;
  std::unordered_map<int, SourceLoc> defined_;  // tensor id -> where it was defined
  std::unordered_set<int> live_;                // tensors visible at this point
  std::vector<std::vector<int>> scopes_;        // tensors each open block defined
  std::unordered_map<int, int> shared_root_;    // shared view id -> allocation id
  std::unordered_map<int, SourceLoc> freed_;    // allocation id -> its free_shared
};

}  // namespace

bool verify_enabled() { return g_verify.load(std::memory_order_relaxed); }
void set_verify_enabled(bool on) { g_verify.store(on, std::memory_order_relaxed); }
bool verify_build_default() { return kVerifyDefault; }

void verify_fail(const char* after, const SourceLoc& loc, const std::string& message) {
  throw ScriptError("InternalError", cat("IR verifier (after ", after, "): ", message), loc);
}

void verify(const Program& program, const char* after) {
  Verifier(program, after).run();
  verify_async(program, after);
}

}  // namespace tilus
