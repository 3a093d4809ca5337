#include "ir/builder.h"

#include <algorithm>

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

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
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

Expr IRBuilder::as_int(Expr e, const char* what) {
  TILUS_CHECK(e, "TypeError", what, " is missing");
  TILUS_CHECK(e->dtype.is_integer() || e->dtype.is_bool(), "TypeError", what,
              " must be an integer, got ", e->dtype.name(), " (", expr_str(e), ")");
  if (e->dtype == dtypes::int64) return e;
  return make_cast(std::move(e), dtypes::int32);
}

void IRBuilder::check_register(const Tensor& t, const char* what, const char* operand) {
  TILUS_CHECK(t, "TypeError", what, ": ", operand, " is missing");
  TILUS_CHECK(t->scope == Scope::Register, "TypeError", what, ": ", operand,
              " must be a register tensor, got a ", scope_name(t->scope), " tensor (",
              t->type_str(), ")");
}

void IRBuilder::check_shared_live(const Tensor& t, const char* what) {
  TILUS_CHECK(t && t->scope == Scope::Shared, "TypeError", what,
              " needs a shared tensor, got ", t ? t->type_str() : std::string("nothing"));
  auto it = shared_root_.find(t->id);
  int root = it == shared_root_.end() ? t->id : it->second;
  TILUS_CHECK(!freed_shared_.count(root), "ValueError", what, ": shared tensor ", t->name,
              " is used after free_shared");
}

// Checks a tile window of a global tensor: offsets cover every global dim; the tile's
// dims map to `dims` of the global tensor (default: the last tile-rank dims).
void IRBuilder::check_tile_window(const Tensor& global, const std::vector<Expr>& offsets,
                                  const std::vector<int64_t>& tile_shape, std::vector<int>& dims,
                                  const char* what) {
  TILUS_CHECK(global && global->scope == Scope::Global, "TypeError", what,
              " needs a global tensor (from global_view or global_tensor), got ",
              global ? global->type_str() : std::string("nothing"));
  int rank = global->rank();
  int tile_rank = static_cast<int>(tile_shape.size());
  TILUS_CHECK(static_cast<int>(offsets.size()) == rank, "ValueError", what, ": the global tensor ",
              global->name, " has rank ", rank, " but ", offsets.size(), " offsets were given");
  TILUS_CHECK(tile_rank <= rank, "ValueError", what, ": a tile of rank ",
              tile_rank, " does not fit a global tensor of rank ", rank);
  if (dims.empty()) {
    for (int d = rank - tile_rank; d < rank; ++d) dims.push_back(d);
  }
  TILUS_CHECK(static_cast<int>(dims.size()) == tile_rank, "ValueError", what, ": dims has ",
              dims.size(), " entries but the tile has rank ", tile_rank);
  for (size_t i = 0; i < dims.size(); ++i) {
    TILUS_CHECK(dims[i] >= 0 && dims[i] < rank, "ValueError", what, ": dims[", i, "] = ",
                dims[i], " is not a dimension of a rank-", rank, " tensor");
    TILUS_CHECK(i == 0 || dims[i] > dims[i - 1], "ValueError", what,
                ": dims must be strictly increasing");
  }
  for (auto s : tile_shape)
    TILUS_CHECK(s > 0, "ValueError", what, ": tile shape ", shape_str(tile_shape),
                " must be positive");
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

Expr IRBuilder::declare(const std::string& name, DataType dtype, Expr init) {
  auto v = make_var(unique_name(name), dtype);
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Declare;
  s->loc = loc_;
  s->var = v;
  if (init) {
    TILUS_CHECK(!(init->dtype.is_pointer && !dtype.is_pointer) &&
                    !(dtype.is_pointer && init->dtype != dtype),
                "TypeError", "cannot initialise '", name, "' of type ", dtype.name(),
                " with a value of type ", init->dtype.name());
    s->value = make_cast(init, dtype);
  }
  emit(s);
  return v;
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
  TILUS_CHECK(!dtype.is_pointer, "TypeError", "shared_tensor: dtype must be a scalar type");
  TILUS_CHECK(!shape.empty(), "ValueError", "shared_tensor: shape must have at least one dimension");
  for (auto s : shape)
    TILUS_CHECK(s > 0, "ValueError", "shared_tensor: shape ", shape_str(shape), " must be positive");
  auto t = define(Scope::Shared, dtype, std::move(shape), name.empty() ? "s" : name);
  auto inst = new_inst(Op::SharedTensor);
  inst->output = t;
  inst->defines_output = true;
  inst->dtype = dtype;
  emit_inst(inst);
  return t;
}

Tensor IRBuilder::register_tensor(DataType dtype, std::vector<int64_t> shape, Expr init,
                                  std::shared_ptr<const RegisterLayout> layout,
                                  const std::string& name) {
  TILUS_CHECK(!dtype.is_pointer, "TypeError", "register_tensor: dtype must be a scalar type");
  TILUS_CHECK(!shape.empty(), "ValueError", "register_tensor: shape must have at least one dimension");
  for (auto s : shape)
    TILUS_CHECK(s > 0, "ValueError", "register_tensor: shape ", shape_str(shape), " must be positive");
  auto t = define(Scope::Register, dtype, std::move(shape), name.empty() ? "r" : name);
  t->layout = std::move(layout);
  auto inst = new_inst(Op::RegisterTensor);
  inst->output = t;
  inst->defines_output = true;
  inst->dtype = dtype;
  if (init) {
    TILUS_CHECK(!init->dtype.is_pointer, "TypeError", "register_tensor: init must be a scalar");
    inst->args = {make_cast(init, dtype)};
  }
  emit_inst(inst);
  return t;
}

Tensor IRBuilder::slice_shared(const Tensor& shared, std::vector<Expr> indices) {
  check_shared_live(shared, "indexing a shared tensor");
  // As many indices as the rank give a rank-0 view of one element (what a full reduction
  // is stored into, or read with .item()).
  TILUS_CHECK(!indices.empty() && indices.size() <= shared->shape.size(), "ValueError",
              "indexing shared tensor ", shared->name, " of shape ", shape_str(shared->shape),
              " with ", indices.size(), " indices: give at most one index per dimension");
  for (size_t i = 0; i < indices.size(); ++i) {
    indices[i] = as_int(indices[i], "a shared tensor index");
    int64_t c;
    if (is_const_int(indices[i], &c))
      TILUS_CHECK(c >= 0 && c < shared->shape[i], "IndexError", "index ", c,
                  " is out of range for dimension ", i, " of ", shared->name, " (size ",
                  shared->shape[i], ")");
  }
  std::vector<int64_t> shape(shared->shape.begin() + indices.size(), shared->shape.end());
  auto t = define(Scope::Shared, shared->dtype, shape, shared->name);
  auto it = shared_root_.find(shared->id);
  shared_root_[t->id] = it == shared_root_.end() ? shared->id : it->second;
  auto inst = new_inst(Op::SliceShared);
  inst->output = t;
  inst->defines_output = true;
  inst->inputs = {shared};
  inst->args = std::move(indices);
  emit_inst(inst);
  return t;
}

Tensor IRBuilder::load_global(const Tensor& global, std::vector<Expr> offsets,
                              std::vector<int64_t> shape, std::vector<int> dims) {
  check_tile_window(global, offsets, shape, dims, "load_global");
  for (auto& o : offsets) o = as_int(o, "load_global: an offset");
  auto t = define(Scope::Register, global->dtype, shape, "r");
  auto inst = new_inst(Op::LoadGlobal);
  inst->output = t;
  inst->defines_output = true;
  inst->inputs = {global};
  inst->args = std::move(offsets);
  inst->shape = std::move(shape);
  inst->dims = std::move(dims);
  emit_inst(inst);
  return t;
}

void IRBuilder::store_global(const Tensor& global, const Tensor& value, std::vector<Expr> offsets,
                             std::vector<int> dims) {
  check_register(value, "store_global", "the value");
  check_tile_window(global, offsets, value->shape, dims, "store_global");
  TILUS_CHECK(value->dtype == global->dtype, "TypeError", "store_global: cannot store a ",
              value->dtype.name(), " tile into global tensor ", global->name, " of ",
              global->dtype.name(), "; cast it first with self.cast(x, dtype=",
              global->dtype.name(), ")");
  for (auto& o : offsets) o = as_int(o, "store_global: an offset");
  auto inst = new_inst(Op::StoreGlobal);
  inst->inputs = {global, value};
  inst->args = std::move(offsets);
  inst->dims = std::move(dims);
  emit_inst(inst);
}

Tensor IRBuilder::load_shared(const Tensor& shared) {
  check_shared_live(shared, "load_shared");
  auto t = define(Scope::Register, shared->dtype, shared->shape, "r");
  auto inst = new_inst(Op::LoadShared);
  inst->output = t;
  inst->defines_output = true;
  inst->inputs = {shared};
  emit_inst(inst);
  return t;
}

void IRBuilder::store_shared(const Tensor& shared, const Tensor& value) {
  check_shared_live(shared, "store_shared");
  check_register(value, "store_shared", "the value");
  TILUS_CHECK(value->shape == shared->shape, "ValueError", "store_shared: the value has shape ",
              shape_str(value->shape), " but shared tensor ", shared->name, " has shape ",
              shape_str(shared->shape));
  TILUS_CHECK(value->dtype == shared->dtype, "TypeError", "store_shared: cannot store a ",
              value->dtype.name(), " tile into shared tensor ", shared->name, " of ",
              shared->dtype.name(), "; cast it first");
  auto inst = new_inst(Op::StoreShared);
  inst->inputs = {shared, value};
  emit_inst(inst);
}

void IRBuilder::free_shared(const Tensor& shared) {
  check_shared_live(shared, "free_shared");
  TILUS_CHECK(!shared_root_.count(shared->id), "ValueError", "free_shared: ", shared->name,
              " is a slice of another shared tensor; free the tensor itself");
  freed_shared_[shared->id] = 1;
  auto inst = new_inst(Op::FreeShared);
  inst->inputs = {shared};
  emit_inst(inst);
}

void IRBuilder::sync() { emit_inst(new_inst(Op::Sync)); }

void IRBuilder::copy_async(const Tensor& src, const Tensor& dst, std::vector<Expr> offsets,
                           std::vector<int> dims) {
  check_shared_live(dst, "copy_async (dst)");
  check_tile_window(src, offsets, dst->shape, dims, "copy_async");
  TILUS_CHECK(src->dtype == dst->dtype, "TypeError", "copy_async: src is ", src->dtype.name(),
              " but dst is ", dst->dtype.name());
  const int64_t row_bits = dst->shape.back() * dst->dtype.bits();
  TILUS_CHECK(dst->dtype.bits() <= 128 && row_bits >= 32, "ValueError",
              "copy_async: the innermost dimension of dst must span at least 4 bytes (32 bits), got ",
              row_bits, " bits");
  for (auto& o : offsets) o = as_int(o, "copy_async: an offset");
  auto inst = new_inst(Op::CopyAsync);
  inst->inputs = {src, dst};
  inst->args = std::move(offsets);
  inst->dims = std::move(dims);
  emit_inst(inst);
}

void IRBuilder::copy_async_commit_group() { emit_inst(new_inst(Op::CopyAsyncCommitGroup)); }

void IRBuilder::copy_async_wait_all() { emit_inst(new_inst(Op::CopyAsyncWaitAll)); }

void IRBuilder::copy_async_wait_group(int64_t n) {
  TILUS_CHECK(n >= 0, "ValueError", "copy_async_wait_group: n must be >= 0, got ", n);
  auto inst = new_inst(Op::CopyAsyncWaitGroup);
  inst->int_attr = n;
  emit_inst(inst);
}

Tensor IRBuilder::dot(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& out) {
  check_register(a, "dot", "a");
  check_register(b, "dot", "b");
  check_register(c, "dot", "c (the accumulator)");
  TILUS_CHECK(a->shape.size() == 2 && b->shape.size() == 2 && c->shape.size() == 2, "ValueError",
              "dot: operands must be 2-D, got a ", shape_str(a->shape), ", b ", shape_str(b->shape),
              ", c ", shape_str(c->shape));
  TILUS_CHECK(a->shape[1] == b->shape[0], "ValueError", "dot: a is ", shape_str(a->shape),
              " and b is ", shape_str(b->shape), ": the inner dimensions differ (", a->shape[1],
              " vs ", b->shape[0], ")");
  TILUS_CHECK(c->shape[0] == a->shape[0] && c->shape[1] == b->shape[1], "ValueError",
              "dot: the accumulator is ", shape_str(c->shape), " but a @ b is [", a->shape[0],
              ", ", b->shape[1], "]");
  TILUS_CHECK(a->dtype == b->dtype, "TypeError", "dot: a is ", a->dtype.name(), " but b is ",
              b->dtype.name(), "; cast one of them");
  DataType in = a->dtype, acc = c->dtype;
  bool ok = (in == dtypes::float16 && (acc == dtypes::float32 || acc == dtypes::float16)) ||
            (in == dtypes::bfloat16 && acc == dtypes::float32) ||
            (in == dtypes::int8 && acc == dtypes::int32) ||
            (in == dtypes::float32 && acc == dtypes::float32) ||
            // tf32 operands: mma.sync m16n8k8 where the tile allows, CUDA cores otherwise
            (in == dtypes::tfloat32 && acc == dtypes::float32) ||
            (in == dtypes::float64 && acc == dtypes::float64);
  TILUS_CHECK(ok, "TypeError", "dot: ", in.name(), " x ", in.name(), " -> ", acc.name(),
              " is not supported (supported: float16 -> float16/float32, bfloat16 -> float32, "
              "int8 -> int32, tfloat32 -> float32, float32 -> float32, float64 -> float64)");
  Tensor d = out;
  if (out) {
    check_register(out, "dot", "out");
    TILUS_CHECK(out->shape == c->shape && out->dtype == acc, "ValueError", "dot: out is ",
                out->type_str(), " but the result is ", c->type_str());
  } else {
    d = define(Scope::Register, acc, c->shape, "r");
  }
  auto inst = new_inst(Op::Dot);
  inst->output = d;
  inst->defines_output = !out;
  inst->inputs = {a, b, c};
  emit_inst(inst);
  return d;
}

Tensor IRBuilder::cast(const Tensor& x, DataType dtype) {
  check_register(x, "cast", "x");
  TILUS_CHECK(!dtype.is_pointer, "TypeError", "cast: cannot cast to a pointer type");
  auto t = define(Scope::Register, dtype, x->shape, "r");
  auto inst = new_inst(Op::Cast);
  inst->output = t;
  inst->defines_output = true;
  inst->inputs = {x};
  inst->dtype = dtype;
  emit_inst(inst);
  return t;
}

Tensor IRBuilder::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_register(a, binary_op_symbol(op), "the left operand");
  check_register(b, binary_op_symbol(op), "the right operand");
  auto shape = broadcast_shapes(a->shape, b->shape);
  TILUS_CHECK(!shape.empty(), "ValueError", "operator ", binary_op_symbol(op),
              ": shapes ", shape_str(a->shape), " and ", shape_str(b->shape),
              " cannot be broadcast together");
  DataType t = binary_result_dtype(op, promote(a->dtype, b->dtype));
  Tensor d = out;
  if (out) {
    check_register(out, binary_op_symbol(op), "out");
    TILUS_CHECK(out->shape == shape, "ValueError", "out has shape ", shape_str(out->shape),
                " but the result has shape ", shape_str(shape));
  } else {
    d = define(Scope::Register, t, shape, "r");
  }
  auto inst = new_inst(Op::Elementwise);
  inst->output = d;
  inst->defines_output = !out;
  inst->inputs = {a, b};
  inst->binary_op = op;
  emit_inst(inst);
  return d;
}

Tensor IRBuilder::binary_scalar(BinaryOp op, const Tensor& x, Expr scalar, bool scalar_lhs,
                                const Tensor& out) {
  check_register(x, binary_op_symbol(op), "the tensor operand");
  TILUS_CHECK(!scalar->dtype.is_pointer, "TypeError", "operator ", binary_op_symbol(op),
              ": a pointer cannot be combined with a tensor");
  // A Python constant takes the tensor's type (a float32 tile + 1.0 stays float32); a
  // runtime scalar promotes with it. A boolean tile is hidet's integer of one bit: a
  // number makes it int32 (an int constant) or float32 (a float one), so bool_tile * 3
  // is 0 or 3, as bool_tile * int32_tile is int32.
  const bool numeric_const = scalar->is_const() && !scalar->dtype.is_bool();
  DataType operand_type = scalar->is_const() && !(scalar->dtype.is_float() && x->dtype.is_integer())
                              ? x->dtype
                              : promote(x->dtype, scalar->dtype);
  if (scalar->is_const() && scalar->dtype.is_float() && (x->dtype.is_integer() || x->dtype.is_bool()))
    operand_type = dtypes::float32;
  else if (numeric_const && x->dtype.is_bool())
    operand_type = scalar->dtype.is_integer() ? scalar->dtype : dtypes::int32;
  Tensor d = out;
  if (out) {
    check_register(out, binary_op_symbol(op), "out");
    TILUS_CHECK(out->shape == x->shape, "ValueError", "out has shape ", shape_str(out->shape),
                " but the result has shape ", shape_str(x->shape));
  } else {
    d = define(Scope::Register, binary_result_dtype(op, operand_type), x->shape, "r");
  }
  auto inst = new_inst(Op::Elementwise);
  inst->output = d;
  inst->defines_output = !out;
  inst->inputs = {x};
  inst->args = {make_cast(scalar, operand_type)};
  inst->binary_op = op;
  inst->scalar_lhs = scalar_lhs;
  emit_inst(inst);
  return d;
}

Tensor IRBuilder::unary(UnaryOp op, const Tensor& x) {
  check_register(x, op == UnaryOp::Neg ? "negation" : "not", "the operand");
  auto t = define(Scope::Register, op == UnaryOp::Not ? dtypes::boolean : x->dtype, x->shape, "r");
  auto inst = new_inst(Op::UnaryElementwise);
  inst->output = t;
  inst->defines_output = true;
  inst->inputs = {x};
  inst->unary_op = op;
  emit_inst(inst);
  return t;
}

Tensor IRBuilder::where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_register(cond, "where", "cond");
  check_register(a, "where", "x");
  check_register(b, "where", "y");
  TILUS_CHECK(cond->dtype.is_bool(), "TypeError", "where: cond must be a boolean tensor, got ",
              cond->dtype.name());
  auto shape = broadcast_shapes(broadcast_shapes(cond->shape, a->shape), b->shape);
  TILUS_CHECK(!shape.empty(), "ValueError", "where: shapes ", shape_str(cond->shape), ", ",
              shape_str(a->shape), " and ", shape_str(b->shape), " cannot be broadcast together");
  auto t = define(Scope::Register, promote(a->dtype, b->dtype), shape, "r");
  auto inst = new_inst(Op::Where);
  inst->output = t;
  inst->defines_output = true;
  inst->inputs = {cond, a, b};
  emit_inst(inst);
  return t;
}

void IRBuilder::assign_tensor(const Tensor& dst, const Tensor& src) {
  check_register(dst, "assignment", "the target");
  check_register(src, "assignment", "the value");
  TILUS_CHECK(dst->shape == src->shape && dst->dtype == src->dtype, "TypeError", "cannot assign a ",
              src->type_str(), " to '", dst->name, "', a ", dst->type_str(),
              ": a register tensor keeps its dtype and shape; use a new name");
  auto inst = new_inst(Op::Assign);
  inst->output = dst;
  inst->inputs = {src};
  emit_inst(inst);
}

void IRBuilder::lock_semaphore(Expr semaphore, Expr value) {
  TILUS_CHECK(semaphore->dtype == dtypes::int32.pointer_to(), "TypeError",
              "lock_semaphore: the semaphore must be a ~int32 pointer, got ", semaphore->dtype.name());
  auto inst = new_inst(Op::LockSemaphore);
  inst->args = {std::move(semaphore), make_cast(as_int(value, "lock_semaphore: value"), dtypes::int32)};
  emit_inst(inst);
}

void IRBuilder::release_semaphore(Expr semaphore, Expr value) {
  TILUS_CHECK(semaphore->dtype == dtypes::int32.pointer_to(), "TypeError",
              "release_semaphore: the semaphore must be a ~int32 pointer, got ",
              semaphore->dtype.name());
  auto inst = new_inst(Op::ReleaseSemaphore);
  inst->args = {std::move(semaphore),
                make_cast(as_int(value, "release_semaphore: value"), dtypes::int32)};
  emit_inst(inst);
}

void IRBuilder::print_tensor(const Tensor& x, const std::string& label) {
  TILUS_CHECK(x && x->scope != Scope::Global, "TypeError",
              "print_tensor: only register and shared tensors can be printed");
  auto inst = new_inst(Op::PrintTensor);
  inst->inputs = {x};
  inst->text = label;
  emit_inst(inst);
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
  for (const Tensor& x : inst->inputs)
    if (x->scope == Scope::Shared) check_shared_live(x, op_name(op));
  OutputType type = handler.check(*inst);
  if (handler.threads != ThreadsRule::Any) {
    const auto [begin, threads] = current_thread_group();
    const int64_t unit = handler.threads == ThreadsRule::Warps ? 32 : 128;
    const char* what = handler.threads == ThreadsRule::Warps ? "whole warps" : "whole warpgroups";
    TILUS_CHECK(begin % unit == 0 && threads % unit == 0, "ValueError", op_name(op), " must be issued by ", what,
                " (a thread group starting at a multiple of ", unit, " threads with a multiple of ", unit,
                " threads), but the current thread group is threads [", begin, ", ", begin + threads, ")");
  }
  Tensor t;
  if (op_defines_output(op)) {
    t = define(type.scope, type.dtype, type.shape, "r");
    inst->output = t;
    inst->defines_output = true;
    if (type.scope == Scope::Shared && !inst->inputs.empty() && inst->inputs[0]->scope == Scope::Shared) {
      // a view of inputs[0] (reshape_shared, ...): freed with it, never freed itself
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
  if (verify_enabled()) verify(*program_, "the builder");
  return program_;
}

}  // namespace tilus
