#include "ir/verifier.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "ir/functor.h"
#include "ir/shape_rules.h"

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


bool is_int_index(const Expr& e) { return e && (e->dtype.is_integer() || e->dtype.is_bool()); }

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
    const std::vector<Stmt> single = {p_.body};
    for (const Stmt& s : p_.body->kind == StmtKind::Seq ? p_.body->seq : single)
      if (s && s->kind == StmtKind::Declare && s->var) host_vars_.insert(s->var->var_id);
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

  // ---- per-op operand checks (ir/inst.h lists what each op reads)
  void arity(const Instruction& i, size_t inputs, size_t args_min, size_t args_max) {
    if (i.inputs.size() != inputs)
      fail(op_name(i.op), " takes ", inputs, " tensor operands, got ", i.inputs.size());
    if (i.args.size() < args_min || i.args.size() > args_max)
      fail(op_name(i.op), " takes ", args_min, args_min == args_max ? "" : "+", " scalar arguments, got ",
           i.args.size());
    for (const Expr& a : i.args)
      if (!a) fail(op_name(i.op), ": a scalar argument is missing");
  }
  void no_output(const Instruction& i) {
    if (i.output) fail(op_name(i.op), " writes no tensor, but has output ", tensor_str(i.output));
  }
  void scope(const Instruction& i, const Tensor& t, Scope s, const char* operand) {
    if (!t || t->scope != s)
      fail(op_name(i.op), ": ", operand, " must be a ", scope_name(s), " tensor, got ", tensor_str(t));
  }
  void same_dtype(const Instruction& i, const Tensor& a, const Tensor& b) {
    if (a->dtype != b->dtype)
      fail(op_name(i.op), ": ", tensor_str(a), " and ", tensor_str(b), " differ in dtype");
  }
  void same_shape(const Instruction& i, const Tensor& a, const Tensor& b) {
    if (a->shape != b->shape)
      fail(op_name(i.op), ": ", tensor_str(a), " and ", tensor_str(b), " differ in shape");
  }
  void positive_shape(const Instruction& i, const Tensor& t) {
    if (t->shape.empty()) fail(op_name(i.op), ": ", tensor_str(t), " has no dimensions");
    for (int64_t s : t->shape)
      if (s <= 0) fail(op_name(i.op), ": ", tensor_str(t), " has a non-positive extent");
  }
  void int_args(const Instruction& i, size_t from, size_t to) {
    for (size_t k = from; k < to && k < i.args.size(); ++k)
      if (!is_int_index(i.args[k]))
        fail(op_name(i.op), ": argument ", k, " (", expr_str(i.args[k]), ") must be an integer");
  }
  // A tile window of `global` (load_global, store_global, copy_async): one offset per
  // global dim, the tile's dims strictly increasing global dims. A rank-0 tile (a full
  // reduction) is the one element at the offsets.
  void window(const Instruction& i, const Tensor& global, const std::vector<int64_t>& tile) {
    const int rank = global->rank();
    if (static_cast<int>(i.args.size()) != rank)
      fail(op_name(i.op), ": ", rank, " offsets expected for ", tensor_str(global), ", got ", i.args.size());
    int_args(i, 0, i.args.size());
    if (i.dims.size() != tile.size())
      fail(op_name(i.op), ": dims has ", i.dims.size(), " entries for a tile of shape ", shape_str(tile));
    for (size_t k = 0; k < i.dims.size(); ++k)
      if (i.dims[k] < 0 || i.dims[k] >= rank || (k && i.dims[k] <= i.dims[k - 1]))
        fail(op_name(i.op), ": dims must be increasing dimensions of a rank-", rank, " tensor");
    for (int64_t s : tile)
      if (s <= 0) fail(op_name(i.op), ": tile shape ", shape_str(tile), " must be positive");
  }

  void check_operands(const Instruction& i) {
    const char* what = op_name(i.op);
    switch (i.op) {
      case Op::GlobalView: {
        arity(i, 0, 1, 1);
        scope(i, i.output, Scope::Global, "the output");
        const Expr& ptr = i.args[0];
        // The pointer is typed as the view's dtype: a typed parameter of that dtype, or an
        // untyped one (void_p) cast to it; a void_p itself, or a cast of anything but a
        // void_p, is refused.
        if (!ptr->dtype.is_pointer || ptr->dtype.is_void || ptr->dtype.pointee() != i.output->dtype ||
            i.dtype != i.output->dtype)
          fail(what, ": pointer ", expr_str(ptr), " of type ", ptr->dtype.name(), " for a view of ",
               i.output->dtype.name());
        if (ptr->kind == ExprKind::Cast && !ptr->a->dtype.is_void)
          fail(what, ": pointer cast from ", ptr->a->dtype.name(), " to ", ptr->dtype.name(),
               " (only void_p is reinterpreted)");
        global_shape(i);
        return;
      }
      case Op::GlobalTensor: {
        arity(i, 0, 0, 0);
        scope(i, i.output, Scope::Global, "the output");
        if (i.workspace < 0 || i.workspace >= static_cast<int>(p_.workspaces.size()) ||
            p_.workspaces[i.workspace].tensor != i.output)
          fail(what, ": ", i.output->name, " is not workspace ", i.workspace, " of the program");
        global_shape(i);
        return;
      }
      case Op::SharedTensor:
        arity(i, 0, 0, 0);
        scope(i, i.output, Scope::Shared, "the output");
        positive_shape(i, i.output);
        if (i.dtype != i.output->dtype) fail(what, ": dtype ", i.dtype.name(), " but ", tensor_str(i.output));
        return;
      case Op::RegisterTensor:
        arity(i, 0, 0, 1);
        scope(i, i.output, Scope::Register, "the output");
        positive_shape(i, i.output);
        if (i.dtype != i.output->dtype) fail(what, ": dtype ", i.dtype.name(), " but ", tensor_str(i.output));
        if (!i.args.empty() && i.args[0]->dtype != i.dtype)
          fail(what, ": init ", expr_str(i.args[0]), " is ", i.args[0]->dtype.name(), ", not ", i.dtype.name());
        return;
      case Op::SliceShared: {
        const size_t n = i.args.size();
        arity(i, 1, 1, n ? n : 1);
        scope(i, i.inputs[0], Scope::Shared, "the sliced tensor");
        scope(i, i.output, Scope::Shared, "the output");
        const auto& in = i.inputs[0]->shape;
        int_args(i, 0, n);
        if (n > in.size() ||
            std::vector<int64_t>(in.begin() + n, in.end()) != i.output->shape)
          fail(what, ": ", n, " indices into ", tensor_str(i.inputs[0]), " cannot give ", tensor_str(i.output));
        same_dtype(i, i.inputs[0], i.output);
        for (size_t k = 0; k < n; ++k) {
          int64_t c;
          if (is_const_int(i.args[k], &c) && (c < 0 || c >= in[k]))
            fail(what, ": index ", c, " is out of range for dimension ", k, " of ", tensor_str(i.inputs[0]));
        }
        return;
      }
      case Op::LoadGlobal:
        arity(i, 1, 0, i.args.size());
        scope(i, i.inputs[0], Scope::Global, "the source");
        scope(i, i.output, Scope::Register, "the output");
        window(i, i.inputs[0], i.output->shape);
        if (i.shape != i.output->shape) fail(what, ": shape ", shape_str(i.shape), " but ", tensor_str(i.output));
        same_dtype(i, i.inputs[0], i.output);
        return;
      case Op::StoreGlobal:
        arity(i, 2, 0, i.args.size());
        no_output(i);
        scope(i, i.inputs[0], Scope::Global, "the destination");
        scope(i, i.inputs[1], Scope::Register, "the value");
        window(i, i.inputs[0], i.inputs[1]->shape);
        same_dtype(i, i.inputs[0], i.inputs[1]);
        return;
      case Op::LoadShared:
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Shared, "the source");
        scope(i, i.output, Scope::Register, "the output");
        same_shape(i, i.inputs[0], i.output);
        same_dtype(i, i.inputs[0], i.output);
        return;
      case Op::StoreShared:
        arity(i, 2, 0, 0);
        no_output(i);
        scope(i, i.inputs[0], Scope::Shared, "the destination");
        scope(i, i.inputs[1], Scope::Register, "the value");
        same_shape(i, i.inputs[0], i.inputs[1]);
        same_dtype(i, i.inputs[0], i.inputs[1]);
        return;
      case Op::FreeShared:
        arity(i, 1, 0, 0);
        no_output(i);
        scope(i, i.inputs[0], Scope::Shared, "the freed tensor");
        if (root_of(i.inputs[0]) != i.inputs[0]->id)
          fail(what, ": ", i.inputs[0]->name, " is a slice; only an allocation can be freed");
        return;
      case Op::Sync:
      case Op::CopyAsyncCommitGroup:
      case Op::CopyAsyncWaitAll:
        arity(i, 0, 0, 0);
        no_output(i);
        return;
      case Op::CopyAsyncWaitGroup:
        arity(i, 0, 0, 0);
        no_output(i);
        if (i.int_attr < 0) fail(what, ": ", i.int_attr, " groups (must be >= 0)");
        return;
      case Op::CopyAsync:
        arity(i, 2, 0, i.args.size());
        no_output(i);
        scope(i, i.inputs[0], Scope::Global, "the source");
        scope(i, i.inputs[1], Scope::Shared, "the destination");
        window(i, i.inputs[0], i.inputs[1]->shape);
        same_dtype(i, i.inputs[0], i.inputs[1]);
        return;
      case Op::Dot: {
        arity(i, 3, 0, 0);
        for (const Tensor& t : i.inputs) scope(i, t, Scope::Register, "an operand");
        scope(i, i.output, Scope::Register, "the output");
        const Tensor &a = i.inputs[0], &b = i.inputs[1], &c = i.inputs[2];
        if (a->shape.size() != 2 || b->shape.size() != 2 || c->shape.size() != 2 ||
            a->shape[1] != b->shape[0] || c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1])
          fail(what, ": ", tensor_str(a), " @ ", tensor_str(b), " does not give ", tensor_str(c));
        same_dtype(i, a, b);
        same_shape(i, c, i.output);
        same_dtype(i, c, i.output);
        return;
      }
      // Placed by the async pass after it marked the dots (transforms/async_waits.cc); their
      // pairing with the dots is that pass's invariant (see verify_async.cc, classify).
      case Op::WgmmaCommitGroup:
      case Op::WgmmaWaitGroup:
        no_output(i);
        return;
      case Op::Exp:
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Register, "the operand");
        scope(i, i.output, Scope::Register, "the output");
        same_shape(i, i.inputs[0], i.output);
        return;
      // math family (ops/math.cc)
      case Op::Abs:
      case Op::Exp2:
      case Op::Log:
      case Op::Sin:
      case Op::Cos:
      case Op::Round:
      case Op::Square:
      case Op::Sqrt:
      case Op::Rsqrt:
      case Op::Clip:
        arity(i, 1, i.op == Op::Clip ? 2 : 0, i.op == Op::Clip ? 2 : 0);
        scope(i, i.inputs[0], Scope::Register, "the operand");
        scope(i, i.output, Scope::Register, "the output");
        same_shape(i, i.inputs[0], i.output);
        same_dtype(i, i.inputs[0], i.output);
        return;
      case Op::TensorItem:  // one variable per element: x.item(), x.tolist()
        arity(i, 1, 1, static_cast<size_t>(std::max<int64_t>(1, i.inputs.empty() ? 1 : i.inputs[0]->numel())));
        no_output(i);
        scope(i, i.inputs[0], Scope::Register, "the operand");
        return;
      case Op::Scan:  // reductions and scans
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Register, "the operand");
        scope(i, i.output, Scope::Register, "the output");
        same_shape(i, i.inputs[0], i.output);
        return;
      case Op::Sum:
      // reductions and scans
      case Op::Max:
      case Op::Min:
      case Op::Any:
      case Op::All: {
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Register, "the operand");
        scope(i, i.output, Scope::Register, "the output");
        const auto &in = i.inputs[0]->shape, &out = i.output->shape;
        if (out.size() != in.size() && out.size() + 1 != in.size())
          fail(what, ": ", tensor_str(i.output), " is not a reduction of ", tensor_str(i.inputs[0]));
        return;
      }
      // ---- views (ops/reshape.cc, ops/views.cc)
      case Op::Reshape:
      case Op::Permute:
      case Op::Repeat:
      case Op::RepeatInterleave:
      case Op::View: {
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Register, "the operand");
        scope(i, i.output, Scope::Register, "the output");
        if (i.op != Op::View) same_dtype(i, i.inputs[0], i.output);
        int64_t n = 1;
        for (int64_t s : i.output->shape) n *= s;
        int64_t m = i.inputs[0]->numel();
        if (i.op == Op::Repeat || i.op == Op::RepeatInterleave)
          for (int64_t r : i.shape) m *= r;
        if (i.op != Op::View && n != m)
          fail(what, ": ", tensor_str(i.inputs[0]), " does not give ", tensor_str(i.output));
        return;
      }
      case Op::ReshapeShared:
      case Op::PermuteShared:
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Shared, "the viewed tensor");
        scope(i, i.output, Scope::Shared, "the output");
        same_dtype(i, i.inputs[0], i.output);
        if (i.inputs[0]->numel() != i.output->numel())
          fail(what, ": ", tensor_str(i.inputs[0]), " does not give ", tensor_str(i.output));
        return;
      case Op::Cast:
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Register, "the operand");
        scope(i, i.output, Scope::Register, "the output");
        same_shape(i, i.inputs[0], i.output);
        if (i.dtype != i.output->dtype || i.dtype.is_pointer)
          fail(what, ": to ", i.dtype.name(), " but the output is ", tensor_str(i.output));
        return;
      case Op::Elementwise: {
        const bool with_scalar = i.inputs.size() == 1;
        arity(i, with_scalar ? 1 : 2, with_scalar ? 1 : 0, with_scalar ? 1 : 0);
        for (const Tensor& t : i.inputs) scope(i, t, Scope::Register, "an operand");
        scope(i, i.output, Scope::Register, "the output");
        std::vector<int64_t> shape =
            with_scalar ? i.inputs[0]->shape : broadcast_shapes(i.inputs[0]->shape, i.inputs[1]->shape);
        if (shape.empty() || shape != i.output->shape)
          fail("operator ", binary_op_symbol(i.binary_op), ": operands ", tensor_str(i.inputs[0]),
               with_scalar ? std::string() : " and " + tensor_str(i.inputs[1]), " do not give ",
               tensor_str(i.output));
        if (with_scalar && i.args[0]->dtype.is_pointer)
          fail("operator ", binary_op_symbol(i.binary_op), ": a pointer operand");
        DataType operands = with_scalar ? i.args[0]->dtype : promote(i.inputs[0]->dtype, i.inputs[1]->dtype);
        // Writing into an existing tensor (out=) converts; a new one has the result type.
        if (i.defines_output && binary_result_dtype(i.binary_op, operands) != i.output->dtype)
          fail("operator ", binary_op_symbol(i.binary_op), " gives ",
               binary_result_dtype(i.binary_op, operands).name(), ", not ", tensor_str(i.output));
        return;
      }
      case Op::UnaryElementwise:
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Register, "the operand");
        scope(i, i.output, Scope::Register, "the output");
        same_shape(i, i.inputs[0], i.output);
        if (i.output->dtype != (i.unary_op == UnaryOp::Not ? dtypes::boolean : i.inputs[0]->dtype))
          fail(what, ": ", tensor_str(i.inputs[0]), " does not give ", tensor_str(i.output));
        return;
      case Op::Where: {
        arity(i, 3, 0, 0);
        for (const Tensor& t : i.inputs) scope(i, t, Scope::Register, "an operand");
        scope(i, i.output, Scope::Register, "the output");
        if (!i.inputs[0]->dtype.is_bool()) fail(what, ": the condition ", tensor_str(i.inputs[0]), " is not boolean");
        auto shape = broadcast_shapes(broadcast_shapes(i.inputs[0]->shape, i.inputs[1]->shape), i.inputs[2]->shape);
        if (shape.empty() || shape != i.output->shape ||
            promote(i.inputs[1]->dtype, i.inputs[2]->dtype) != i.output->dtype)
          fail(what, ": its operands do not give ", tensor_str(i.output));
        return;
      }
      case Op::Assign:
        arity(i, 1, 0, 0);
        scope(i, i.inputs[0], Scope::Register, "the value");
        scope(i, i.output, Scope::Register, "the target");
        same_shape(i, i.inputs[0], i.output);
        same_dtype(i, i.inputs[0], i.output);
        return;
      case Op::LockSemaphore:
      case Op::ReleaseSemaphore:
        arity(i, 0, 2, 2);
        no_output(i);
        if (i.args[0]->dtype != dtypes::int32.pointer_to() || i.args[1]->dtype != dtypes::int32)
          fail(what, ": needs a ~int32 pointer and an int32 value, got ", i.args[0]->dtype.name(),
               " and ", i.args[1]->dtype.name());
        return;
      // atomics and scatter stores (ops/atomics.cc), random numbers (ops/random.cc)
      case Op::AtomicShared:
      case Op::AtomicGlobal:
      case Op::AtomicSharedScatter:
      case Op::AtomicGlobalScatter:
      case Op::StoreSharedScatter:
      case Op::StoreGlobalScatter: {
        const bool scatter = i.op == Op::AtomicSharedScatter || i.op == Op::AtomicGlobalScatter ||
                             i.op == Op::StoreSharedScatter || i.op == Op::StoreGlobalScatter;
        const bool global = i.op == Op::AtomicGlobal || i.op == Op::AtomicGlobalScatter ||
                            i.op == Op::StoreGlobalScatter;
        const size_t n = scatter || i.text != "cas" ? (scatter ? 3 : 2) : 3;
        const size_t nargs = i.op == Op::AtomicGlobal ? static_cast<size_t>(i.inputs[0]->rank()) : 0;
        arity(i, n, nargs, nargs);
        scope(i, i.inputs[0], global ? Scope::Global : Scope::Shared, "dst");
        for (size_t k = 1; k < n; ++k) scope(i, i.inputs[k], Scope::Register, "an operand");
        const Tensor& values = i.inputs[scatter ? 2 : 1];
        if (i.op == Op::StoreSharedScatter || i.op == Op::StoreGlobalScatter) {
          no_output(i);
        } else {
          scope(i, i.output, Scope::Register, "the output");
          same_shape(i, values, i.output);
          same_dtype(i, values, i.output);
        }
        if (scatter && (i.dims.size() != 1 || i.dims[0] < 0 || i.dims[0] >= static_cast<int>(i.inputs[0]->rank())))
          fail(what, ": dim out of range for ", tensor_str(i.inputs[0]));
        return;
      }
      case Op::Randint:
      case Op::Rand:
      case Op::Randn:
        arity(i, 1, 1, 1);
        scope(i, i.inputs[0], Scope::Register, "the offsets");
        scope(i, i.output, Scope::Register, "the output");
        same_shape(i, i.inputs[0], i.output);
        return;
      case Op::PrintTensor:
        arity(i, 1, 0, 0);
        no_output(i);
        if (i.inputs[0]->scope == Scope::Global) fail(what, ": cannot print global tensor ", i.inputs[0]->name);
        return;
      // kernel utilities
      case Op::Printf:
        arity(i, 0, 0, i.args.size());
        no_output(i);
        return;
      case Op::Assume:
        arity(i, 0, 1, 1);
        no_output(i);
        if (i.args[0]->dtype != dtypes::boolean) fail(what, ": the condition is not a bool");
        return;
      // hopper family (ops/mbarrier.cc, ops/tma.cc)
      case Op::MbarrierAlloc:
        arity(i, 0, 2, i.args.size());
        no_output(i);
        return;
      case Op::MbarrierArrive:
      case Op::MbarrierArriveExpectTx:
      case Op::MbarrierWait:
        arity(i, 0, 2, 2);
        no_output(i);
        return;
      case Op::TmaGlobalToShared:
      case Op::TmaSharedToGlobal: {
        const bool load = i.op == Op::TmaGlobalToShared;
        const Tensor& g = i.inputs.size() == 2 ? i.inputs[load ? 0 : 1] : nullptr;
        const size_t n = (load ? 1 : 0) + (g ? static_cast<size_t>(g->rank()) : 0);
        arity(i, 2, n, n);
        scope(i, i.inputs[load ? 0 : 1], Scope::Global, load ? "src" : "dst");
        scope(i, i.inputs[load ? 1 : 0], Scope::Shared, load ? "dst" : "src");
        no_output(i);
        return;
      }
      case Op::TmaCommitGroup:
      case Op::TmaWaitGroup:
      case Op::FenceProxyAsync:
      case Op::FenceProxyAsyncRelease:
        arity(i, 0, 0, 0);
        no_output(i);
        return;
      // wgmma family (ops/wgmma.cc): the script's explicit self.wgmma
      case Op::WgmmaFence:
      case Op::WgmmaCommit:
      case Op::WgmmaWait:
        arity(i, 0, 0, 0);
        no_output(i);
        return;
      case Op::WgmmaMma: {
        arity(i, 3, 0, 0);
        if (i.inputs[0]->scope != Scope::Register) scope(i, i.inputs[0], Scope::Shared, "a");
        scope(i, i.inputs[1], Scope::Shared, "b");
        scope(i, i.inputs[2], Scope::Register, "d");
        const Tensor &a = i.inputs[0], &b = i.inputs[1], &d = i.inputs[2];
        if (a->shape.size() != 2 || b->shape.size() != 2 || d->shape.size() != 2 ||
            a->shape[1] != b->shape[0] || d->shape[0] != a->shape[0] || d->shape[1] != b->shape[1])
          fail(what, ": ", tensor_str(a), " @ ", tensor_str(b), " does not give ", tensor_str(d));
        if (i.output != d || i.defines_output) fail(what, ": must write d in place");
        return;
      }
      // shared-tensor elements (ops/shared_item.cc)
      case Op::SharedItemPtr:
        arity(i, 1, 1, 1);
        no_output(i);
        scope(i, i.inputs[0], Scope::Shared, "the operand");
        return;
      // thread groups and clusters (ops/clusters.cc)
      case Op::SetMaxNReg:
      case Op::ClusterSync:
        arity(i, 0, 0, 0);
        no_output(i);
        return;
      case Op::ClusterQuery:
        arity(i, 0, 1, 1);
        no_output(i);
        return;
      case Op::ClusterMapSharedAddr:
      case Op::MbarrierArriveCluster:
        arity(i, 0, 3, 3);
        no_output(i);
        return;
      case Op::IndexTile:
        arity(i, 0, 0, 0);
        scope(i, i.output, Scope::Register, "the output");
        positive_shape(i, i.output);
        if (i.dims.size() != 1 || i.dims[0] < 0 || i.dims[0] >= i.output->rank())
          fail(what, ": dims must name one dimension of ", tensor_str(i.output));
        return;
    }
  }

  void global_shape(const Instruction& i) {
    const Tensor& t = i.output;
    if (t->global_shape.empty() || t->global_shape.size() != t->global_strides.size())
      fail(op_name(i.op), ": ", tensor_str(t), " has ", t->global_shape.size(), " extents and ",
           t->global_strides.size(), " strides");
    for (const Expr& e : t->global_shape)
      if (!is_int_index(e)) fail(op_name(i.op), ": extent ", expr_str(e), " is not an integer");
    for (const Expr& e : t->global_strides)
      if (!is_int_index(e)) fail(op_name(i.op), ": stride ", expr_str(e), " is not an integer");
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
