#include "ir/builder.h"

#include <algorithm>

#include "ir/group_runs.h"
#include "ir/operand_rules.h"
#include "ir/shape_rules.h"
#include "ir/thread_groups.h"
#include "ir/verifier.h"
#include "ops/op_handler.h"

namespace tilus {

// An open block of statements and, for compound statements, the node it completes.
struct IRBuilder::Frame {
  enum Kind { Body, ForBody, IfThen, IfElse, WhileBody, GroupBody } kind = Body;
  std::vector<Stmt> stmts;
  std::shared_ptr<StmtNode> owner;  // the For/If/While being built
  Stmt then_body;                   // IfElse: the finished then-branch
};

namespace {
Stmt seq_of(std::vector<Stmt> stmts) {
  if (stmts.size() == 1) return stmts[0];
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Seq;
  s->seq = std::move(stmts);
  return s;
}

}  // namespace

IRBuilder::IRBuilder(std::string kernel_name, std::string source_file)
    : program_(std::make_shared<Program>()) {
  program_->name = std::move(kernel_name);
  program_->source_file = std::move(source_file);
  loc_.file = program_->source_file;
  frames_.push_back(std::make_unique<Frame>());
}

IRBuilder::~IRBuilder() = default;

void IRBuilder::set_loc(int line, int column, std::string text) {
  loc_.line = line;
  loc_.column = column;
  loc_.text = std::move(text);
}

std::string IRBuilder::unique_name(const std::string& hint) {
  std::string base = hint.empty() ? "t" : hint;
  std::string name = base;
  for (int n = 1; used_names_.count(name); ++n) name = base + "_" + std::to_string(n);
  used_names_.insert(name);
  return name;
}

void IRBuilder::emit(Stmt s) { frames_.back()->stmts.push_back(std::move(s)); }

std::shared_ptr<Instruction> IRBuilder::new_inst(Op op) {
  auto inst = std::make_shared<Instruction>();
  inst->op = op;
  return inst;
}

void IRBuilder::emit_inst(std::shared_ptr<Instruction> inst) { emit(make_inst_stmt(std::move(inst), loc_)); }

// A tile lives in one thread block's registers or shared memory, a few hundred KiB on
// any GPU; far beyond that a size is a mistake (and would exhaust the interpreter's
// memory), so it is refused where it is written.
constexpr int64_t kMaxTileBits = int64_t{1} << 34;  // 2 GiB

Tensor IRBuilder::define(Scope scope, DataType dtype, std::vector<int64_t> shape,
                         const std::string& hint) {
  int64_t bits = dtype.bits();
  bool too_big = false;
  for (int64_t s : shape) {
    if (s > 0 && bits > kMaxTileBits / s) too_big = true;
    else bits *= s;
  }
  TILUS_CHECK(!too_big && bits <= kMaxTileBits, "MemoryError", "a ", scope_name(scope),
              " tile of shape ", shape_str(shape), " and dtype ", dtype.name(),
              " is larger than 2 GiB; a tile must fit in one thread block's ",
              scope == Scope::Shared ? "shared memory" : "registers");
  return make_tensor(scope, dtype, std::move(shape), unique_name(hint));
}

Expr IRBuilder::as_int(Expr e, const char* what) { return int_operand(std::move(e), what); }

void IRBuilder::check_shared_live(const Tensor& t, const char* what) {
  require_shared(t, what);
  auto it = shared_root_.find(t->id);
  int root = it == shared_root_.end() ? t->id : it->second;
  TILUS_CHECK(!freed_shared_.count(root), "ValueError", what, ": shared tensor ", t->name,
              " is used after free_shared");
}

// ---------------------------------------------------------------- signature

Expr IRBuilder::add_param(const std::string& name, DataType dtype) {
  auto v = make_var(unique_name(name), dtype);
  program_->params.push_back(v);
  return v;
}

void IRBuilder::set_grid(std::vector<Expr> blocks) {
  TILUS_CHECK(!blocks.empty() && blocks.size() <= 3, "ValueError",
              "self.attrs.blocks takes 1 to 3 values, got ", blocks.size());
  TILUS_CHECK(frames_.size() == 1, "ValueError",
              "self.attrs.blocks must be set at the top level of __call__, not inside a loop or branch");
  for (size_t i = 0; i < 3; ++i) {
    if (i < blocks.size()) {
      program_->grid[i] = as_int(blocks[i], "a self.attrs.blocks entry");
      int64_t c;
      if (is_const_int(program_->grid[i], &c))
        TILUS_CHECK(c >= 0, "ValueError", "self.attrs.blocks entry ", i, " is negative (", c, ")");
    } else {
      program_->grid[i] = make_int(1);
    }
  }
  program_->grid_loc = loc_;
  grid_set_ = true;
}

void IRBuilder::set_warps(int64_t warps) {
  TILUS_CHECK(warps >= 1 && warps <= 32, "ValueError",
              "self.attrs.warps must be in [1, 32], got ", warps);
  program_->warps = static_cast<int>(warps);
  warps_set_ = true;
}

void IRBuilder::set_cluster(std::vector<int64_t> blocks) {
  TILUS_CHECK(!blocks.empty() && blocks.size() <= 3, "ValueError",
              "self.attrs.cluster_blocks takes 1 to 3 values, got ", blocks.size());
  int64_t total = 1;
  for (int64_t b : blocks) {
    TILUS_CHECK(b >= 1, "ValueError", "self.attrs.cluster_blocks entries must be positive, got ", b);
    total *= b;
  }
  // 8 is the portable limit; 16 needs cudaFuncAttributeNonPortableClusterSizeAllowed.
  TILUS_CHECK(total <= 8, "ValueError", "self.attrs.cluster_blocks: a cluster of ", total,
              " blocks; at most 8 blocks per cluster");
  blocks.resize(3, 1);
  program_->cluster = {blocks[0], blocks[1], blocks[2]};
}

// ---------------------------------------------------------------- scalars and control flow

std::shared_ptr<StmtNode> IRBuilder::new_declare(const std::string& name, DataType dtype, Expr init) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Declare;
  s->loc = loc_;
  s->var = make_var(unique_name(name), dtype);
  if (init) {
    TILUS_CHECK(!(init->dtype.is_pointer && !dtype.is_pointer) &&
                    !(dtype.is_pointer && init->dtype != dtype),
                "TypeError", "cannot initialise '", name, "' of type ", dtype.name(),
                " with a value of type ", init->dtype.name());
    s->value = make_cast(init, dtype);
  }
  return s;
}

Expr IRBuilder::declare(const std::string& name, DataType dtype, Expr init) {
  auto s = new_declare(name, dtype, std::move(init));
  emit(s);
  return s->var;
}

Expr IRBuilder::declare_at_top(const std::string& name, DataType dtype, Expr init) {
  TILUS_ASSERT(!init || init->is_const());
  auto s = new_declare(name, dtype, std::move(init));
  auto& top = frames_.front()->stmts;
  top.insert(top.begin(), s);
  return s->var;
}

void IRBuilder::assign(const Expr& var, Expr value) {
  TILUS_ASSERT(var && var->is_var());
  TILUS_CHECK(!(var->dtype.is_pointer && value->dtype != var->dtype) &&
                  !(!var->dtype.is_pointer && value->dtype.is_pointer),
              "TypeError", "cannot assign a value of type ", value->dtype.name(), " to '",
              var->name, "' of type ", var->dtype.name());
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Assign;
  s->loc = loc_;
  s->var = var;
  s->value = make_cast(std::move(value), var->dtype);
  emit(s);
}

Expr IRBuilder::begin_for(const std::string& var_name, Expr start, Expr end, Expr step,
                          int unroll) {
  start = as_int(std::move(start), "the loop start");
  end = as_int(std::move(end), "the loop end");
  step = as_int(std::move(step), "the loop step");
  int64_t c;
  if (is_const_int(step, &c))
    TILUS_CHECK(c > 0, "ValueError", "the loop step must be positive, got ", c);
  DataType t = (start->dtype == dtypes::int64 || end->dtype == dtypes::int64) ? dtypes::int64
                                                                                : dtypes::int32;
  auto node = std::make_shared<StmtNode>();
  node->kind = StmtKind::For;
  node->loc = loc_;
  node->var = make_var(unique_name(var_name), t);
  node->start = make_cast(start, t);
  node->end = make_cast(end, t);
  node->step = make_cast(step, t);
  node->unroll = unroll;
  auto f = std::make_unique<Frame>();
  f->kind = Frame::ForBody;
  f->owner = node;
  frames_.push_back(std::move(f));
  ++loop_depth_;
  return node->var;
}

void IRBuilder::end_for() {
  TILUS_ASSERT(frames_.size() > 1 && frames_.back()->kind == Frame::ForBody);
  auto f = std::move(frames_.back());
  frames_.pop_back();
  f->owner->body = seq_of(std::move(f->stmts));
  --loop_depth_;
  emit(f->owner);
}

void IRBuilder::begin_if(Expr cond) {
  TILUS_CHECK(!cond->dtype.is_pointer, "TypeError", "an if condition cannot be a pointer");
  auto node = std::make_shared<StmtNode>();
  node->kind = StmtKind::If;
  node->loc = loc_;
  node->cond = make_cast(std::move(cond), dtypes::boolean);
  auto f = std::make_unique<Frame>();
  f->kind = Frame::IfThen;
  f->owner = node;
  frames_.push_back(std::move(f));
}

void IRBuilder::begin_exit_guard(Expr not_exited) {
  begin_if(std::move(not_exited));
  frames_.back()->owner->exit_guard = true;
}

void IRBuilder::begin_else() {
  TILUS_ASSERT(frames_.back()->kind == Frame::IfThen);
  auto& f = *frames_.back();
  f.then_body = seq_of(std::move(f.stmts));
  f.stmts.clear();
  f.kind = Frame::IfElse;
}

void IRBuilder::end_if() {
  auto kind = frames_.back()->kind;
  TILUS_ASSERT(kind == Frame::IfThen || kind == Frame::IfElse);
  auto f = std::move(frames_.back());
  frames_.pop_back();
  if (kind == Frame::IfThen) {
    f->owner->then_body = seq_of(std::move(f->stmts));
  } else {
    f->owner->then_body = f->then_body;
    f->owner->else_body = seq_of(std::move(f->stmts));
  }
  emit(f->owner);
}

void IRBuilder::begin_while(Expr cond) {
  auto node = std::make_shared<StmtNode>();
  node->kind = StmtKind::While;
  node->loc = loc_;
  node->cond = make_cast(std::move(cond), dtypes::boolean);
  auto f = std::make_unique<Frame>();
  f->kind = Frame::WhileBody;
  f->owner = node;
  frames_.push_back(std::move(f));
  ++loop_depth_;
}

void IRBuilder::end_while() {
  TILUS_ASSERT(frames_.back()->kind == Frame::WhileBody);
  auto f = std::move(frames_.back());
  frames_.pop_back();
  f->owner->body = seq_of(std::move(f->stmts));
  --loop_depth_;
  emit(f->owner);
}

std::pair<int64_t, int64_t> IRBuilder::current_thread_group() const {
  TILUS_CHECK(warps_set_, "ValueError", "thread groups need self.attrs.warps set first");
  if (groups_.empty()) return {0, int64_t{program_->warps} * 32};
  return groups_.back();
}

void IRBuilder::begin_thread_group(int64_t begin, int64_t num_threads) {
  const auto [outer_begin, outer_threads] = current_thread_group();
  TILUS_CHECK(num_threads >= 1, "ValueError", "thread_group: num_threads must be positive, got ", num_threads);
  if (begin == -1) {
    TILUS_CHECK(num_threads == 1, "ValueError",
                "thread_group: thread_begin=-1 (any thread) takes num_threads=1, got ", num_threads);
  } else {
    TILUS_CHECK(begin >= 0 && begin + num_threads <= outer_threads, "ValueError", "thread_group: threads [",
                begin, ", ", begin + num_threads, ") are not inside the enclosing group of ", outer_threads,
                " threads");
  }
  auto node = std::make_shared<StmtNode>();
  node->kind = StmtKind::ThreadGroup;
  node->loc = loc_;
  node->group_begin = begin;
  node->group_threads = num_threads;
  auto f = std::make_unique<Frame>();
  f->kind = Frame::GroupBody;
  f->owner = node;
  frames_.push_back(std::move(f));
  groups_.push_back({outer_begin + std::max<int64_t>(begin, 0), num_threads});
  // break/continue may not leave a group: its threads rejoin the others at its end.
  group_loop_depth_.push_back(loop_depth_);
  loop_depth_ = 0;
}

void IRBuilder::end_thread_group() {
  TILUS_ASSERT(frames_.back()->kind == Frame::GroupBody);
  auto f = std::move(frames_.back());
  frames_.pop_back();
  groups_.pop_back();
  loop_depth_ = group_loop_depth_.back();
  group_loop_depth_.pop_back();
  f->owner->body = seq_of(std::move(f->stmts));
  emit(f->owner);
}

void IRBuilder::emit_break() {
  TILUS_CHECK(loop_depth_ > 0, "SyntaxError", "'break' outside a loop");
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Break;
  s->loc = loc_;
  emit(s);
}

void IRBuilder::emit_continue() {
  TILUS_CHECK(loop_depth_ > 0, "SyntaxError", "'continue' outside a loop");
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Continue;
  s->loc = loc_;
  emit(s);
}

// ---------------------------------------------------------------- tensors


Tensor IRBuilder::global_view(Expr ptr, DataType dtype, std::vector<Expr> shape,
                              std::vector<Expr> strides, const std::string& name) {
  TILUS_CHECK(ptr && ptr->dtype.is_pointer, "TypeError",
              "global_view: the first argument must be a pointer (a parameter annotated ~",
              dtype.name(), "), got ", ptr ? ptr->dtype.name() : std::string("nothing"));
  TILUS_CHECK(!dtype.is_pointer, "TypeError", "global_view: dtype must be a scalar type");
  // An untyped parameter (void_p) is viewed as any dtype: the view's pointer is the
  // parameter reinterpreted as a pointer to `dtype`.
  if (ptr->dtype.is_void) ptr = make_cast(ptr, dtype.pointer_to());
  TILUS_CHECK(ptr->dtype.pointee() == dtype, "TypeError", "global_view: the pointer ",
              expr_str(ptr), " points to ", ptr->dtype.pointee().name(), " but dtype=",
              dtype.name(), " was given");
  TILUS_CHECK(!shape.empty(), "ValueError", "global_view: shape must have at least one dimension");
  for (auto& s : shape) s = as_int(s, "global_view: a shape entry");
  if (strides.empty()) {
    strides.resize(shape.size());
    Expr acc = make_int(1);
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
      strides[i] = acc;
      acc = make_binary(BinaryOp::Mul, acc, shape[i]);
    }
  } else {
    TILUS_CHECK(strides.size() == shape.size(), "ValueError", "global_view: ", shape.size(),
                " shape entries but ", strides.size(), " strides");
    for (auto& s : strides) s = as_int(s, "global_view: a stride");
  }
  auto t = make_global_tensor(dtype, std::move(shape), std::move(strides), unique_name(name.empty() ? "g" : name));
  auto inst = new_inst(Op::GlobalView);
  inst->output = t;
  inst->defines_output = true;
  inst->args = {std::move(ptr)};
  inst->dtype = dtype;
  emit_inst(inst);
  return t;
}

Tensor IRBuilder::global_tensor(DataType dtype, std::vector<Expr> shape, bool requires_clean,
                                const std::string& name) {
  TILUS_CHECK(!dtype.is_pointer, "TypeError", "global_tensor: dtype must be a scalar type");
  TILUS_CHECK(!shape.empty(), "ValueError", "global_tensor: shape must have at least one dimension");
  for (auto& s : shape) s = as_int(s, "global_tensor: a shape entry");
  std::vector<Expr> strides(shape.size());
  Expr acc = make_int(1);
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = acc;
    acc = make_binary(BinaryOp::Mul, acc, shape[i]);
  }
  // The workspace is sized on the host before launch: its shape may only use
  // parameters and constants.
  auto t = make_global_tensor(dtype, std::move(shape), std::move(strides), unique_name(name.empty() ? "workspace" : name));
  auto inst = new_inst(Op::GlobalTensor);
  inst->output = t;
  inst->defines_output = true;
  inst->dtype = dtype;
  inst->requires_clean = requires_clean;
  inst->workspace = static_cast<int>(program_->workspaces.size());
  program_->workspaces.push_back({t, requires_clean, loc_});
  emit_inst(inst);
  return t;
}

Tensor IRBuilder::shared_tensor(DataType dtype, std::vector<int64_t> shape, const std::string& name) {
  TileOpOperands operands{{}, {}, 0, {}, dtype, std::move(shape)};
  operands.name = name.empty() ? "s" : name;
  return tile_op(Op::SharedTensor, std::move(operands));
}

Tensor IRBuilder::register_tensor(DataType dtype, std::vector<int64_t> shape, Expr init,
                                  std::shared_ptr<const RegisterLayout> layout,
                                  const std::string& name) {
  TileOpOperands operands{{}, {}, 0, {}, dtype, std::move(shape)};
  if (init) operands.args = {std::move(init)};
  operands.name = name.empty() ? "r" : name;
  operands.layout = std::move(layout);
  return tile_op(Op::RegisterTensor, std::move(operands));
}

Tensor IRBuilder::slice_shared(const Tensor& shared, std::vector<Expr> indices) {
  check_shared_live(shared, "indexing a shared tensor");  // the builder's scope state
  TileOpOperands operands{{shared}, {}, 0, std::move(indices)};
  operands.name = shared->name;
  return tile_op(Op::SliceShared, std::move(operands));
}

Tensor IRBuilder::load_global(const Tensor& global, std::vector<Expr> offsets,
                              std::vector<int64_t> shape, std::vector<int> dims) {
  return tile_op(Op::LoadGlobal, {{global}, std::move(dims), 0, std::move(offsets), {}, std::move(shape)});
}

void IRBuilder::store_global(const Tensor& global, const Tensor& value, std::vector<Expr> offsets,
                             std::vector<int> dims) {
  tile_op(Op::StoreGlobal, {{global, value}, std::move(dims), 0, std::move(offsets)});
}

Tensor IRBuilder::load_shared(const Tensor& shared) { return tile_op(Op::LoadShared, {{shared}}); }

void IRBuilder::store_shared(const Tensor& shared, const Tensor& value) {
  tile_op(Op::StoreShared, {{shared, value}});
}

void IRBuilder::free_shared(const Tensor& shared) { tile_op(Op::FreeShared, {{shared}}); }

void IRBuilder::sync() { tile_op(Op::Sync, {}); }

void IRBuilder::copy_async(const Tensor& src, const Tensor& dst, std::vector<Expr> offsets,
                           std::vector<int> dims) {
  check_shared_live(dst, "copy_async (dst)");  // the builder's scope state; the rest is the handler's
  tile_op(Op::CopyAsync, {{src, dst}, std::move(dims), 0, std::move(offsets)});
}

void IRBuilder::copy_async_commit_group() { tile_op(Op::CopyAsyncCommitGroup, {}); }

void IRBuilder::copy_async_wait_all() { tile_op(Op::CopyAsyncWaitAll, {}); }

void IRBuilder::copy_async_wait_group(int64_t n) { tile_op(Op::CopyAsyncWaitGroup, {{}, {}, n}); }

Tensor IRBuilder::dot(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& out) {
  TileOpOperands operands{{a, b, c}};
  operands.out = out;
  return tile_op(Op::Dot, std::move(operands));
}

Tensor IRBuilder::cast(const Tensor& x, DataType dtype) { return tile_op(Op::Cast, {{x}, {}, 0, {}, dtype}); }

Tensor IRBuilder::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  TileOpOperands operands{{a, b}};
  operands.binary_op = op;
  operands.out = out;
  return tile_op(Op::Elementwise, std::move(operands));
}

Tensor IRBuilder::binary_scalar(BinaryOp op, const Tensor& x, Expr scalar, bool scalar_lhs,
                                const Tensor& out) {
  TileOpOperands operands{{x}, {}, 0, {std::move(scalar)}};
  operands.binary_op = op;
  operands.scalar_lhs = scalar_lhs;
  operands.out = out;
  return tile_op(Op::Elementwise, std::move(operands));
}

Tensor IRBuilder::unary(UnaryOp op, const Tensor& x) {
  TileOpOperands operands{{x}};
  operands.unary_op = op;
  return tile_op(Op::UnaryElementwise, std::move(operands));
}

Tensor IRBuilder::where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return tile_op(Op::Where, {{cond, a, b}});
}

void IRBuilder::assign_tensor(const Tensor& dst, const Tensor& src) {
  TileOpOperands operands{{src}};
  operands.out = dst;
  tile_op(Op::Assign, std::move(operands));
}

void IRBuilder::lock_semaphore(Expr semaphore, Expr value) {
  tile_op(Op::LockSemaphore, {{}, {}, 0, {std::move(semaphore), std::move(value)}});
}

void IRBuilder::release_semaphore(Expr semaphore, Expr value) {
  tile_op(Op::ReleaseSemaphore, {{}, {}, 0, {std::move(semaphore), std::move(value)}});
}

void IRBuilder::print_tensor(const Tensor& x, const std::string& label) {
  TILUS_CHECK(x, "TypeError", "print_tensor: only register and shared tensors can be printed");
  tile_op(Op::PrintTensor, {{x}, {}, 0, {}, {}, {}, label});
}

Tensor IRBuilder::tile_op(Op op, TileOpOperands operands) {
  const OpHandler& handler = op_handler(op);
  TILUS_CHECK(handler.check, "ValueError", op_name(op),
              " is built by its own builder method, not tile_op");
  for (size_t k = 0; k < operands.inputs.size(); ++k)
    TILUS_CHECK(operands.inputs[k], "TypeError", op_name(op), ": operand ", k, " is missing");
  for (size_t k = 0; k < operands.args.size(); ++k)
    TILUS_CHECK(operands.args[k], "TypeError", op_name(op), ": scalar operand ", k, " is missing");
  auto inst = new_inst(op);
  inst->inputs = std::move(operands.inputs);
  inst->dims = std::move(operands.dims);
  inst->int_attr = operands.int_attr;
  inst->args = std::move(operands.args);
  inst->dtype = operands.dtype;
  inst->shape = std::move(operands.shape);
  inst->text = std::move(operands.text);
  inst->unary_op = operands.unary_op;
  inst->binary_op = operands.binary_op;
  inst->scalar_lhs = operands.scalar_lhs;
  for (const Tensor& x : inst->inputs)
    if (x->scope == Scope::Shared) check_shared_live(x, op_name(op));
  if (operands.out) inst->output = operands.out;  // the check validates it
  OutputType type = handler.check(*inst);
  if (handler.threads == ThreadsRule::Block) {
    // a barrier of every thread of the block (of the cluster): threads outside the group
    // would never arrive, and the GPU would hang there
    TILUS_CHECK(groups_.empty(), "ValueError", op_name(op),
                " is reached by every thread of the block; it cannot run inside a thread group (threads [",
                groups_.back().first, ", ", groups_.back().first + groups_.back().second, ") here)");
  } else if (handler.threads != ThreadsRule::Any) {
    const auto [begin, threads] = current_thread_group();
    const int64_t unit = handler.threads == ThreadsRule::Warps ? 32 : 128;
    const char* what = handler.threads == ThreadsRule::Warps ? "whole warps" : "whole warpgroups";
    TILUS_CHECK(begin % unit == 0 && threads % unit == 0, "ValueError", op_name(op), " must be issued by ", what,
                " (a thread group starting at a multiple of ", unit, " threads with a multiple of ", unit,
                " threads), but the current thread group is threads [", begin, ", ", begin + threads, ")");
  }
  if (op_has_effect(op, eff::EndsShared)) {  // free_shared: the allocation, not a view of it
    const Tensor& freed = inst->inputs.at(0);
    TILUS_CHECK(!shared_root_.count(freed->id), "ValueError", op_name(op), ": ", freed->name,
                " is a slice of another shared tensor; free the tensor itself");
    freed_shared_[freed->id] = 1;
  }
  Tensor t = operands.out;
  if (!t && op_defines_output(op)) {
    t = define(type.scope, type.dtype, type.shape, operands.name);
    if (operands.layout) t->layout = std::move(operands.layout);
    inst->output = t;
    inst->defines_output = true;
    if (type.scope == Scope::Shared && !inst->inputs.empty() && inst->inputs[0]->scope == Scope::Shared) {
      // a view of inputs[0] (slice_shared, reshape_shared, ...): freed with it, never freed itself
      auto it = shared_root_.find(inst->inputs[0]->id);
      shared_root_[t->id] = it == shared_root_.end() ? inst->inputs[0]->id : it->second;
    }
  }
  emit_inst(inst);
  return t;
}

void IRBuilder::name_tensor(const Tensor& t, const std::string& name) {
  if (!t || user_named_.count(t->id)) return;
  user_named_[t->id] = 1;
  used_names_.erase(t->name);  // the temporary name is free again
  t->name = unique_name(name);
}

std::shared_ptr<Program> IRBuilder::finish() {
  TILUS_ASSERT(frames_.size() == 1, "unclosed block");
  TILUS_CHECK(grid_set_, "ValueError", "the kernel never sets self.attrs.blocks");
  TILUS_CHECK(warps_set_, "ValueError", "the kernel never sets self.attrs.warps");
  program_->body = seq_of(std::move(frames_.back()->stmts));
  if (!program_->body) program_->body = seq_of({});
  frames_.back()->stmts.clear();
  group_thread_counts(*program_);  // register tiles stay in the thread group that made them
  check_group_run_waits(*program_);  // no group waits on work that starts after it
  if (verify_enabled()) verify(*program_, "the builder");
  return program_;
}

}  // namespace tilus
