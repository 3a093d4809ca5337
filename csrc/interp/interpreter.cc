// The interpreter's driver: launch setup, statement execution and the block scheduler.
//
// Blocks run in order, x fastest, then y, then z. A program without lock_semaphore runs
// every block straight through on the caller's stack. With lock_semaphore, each block
// is a coroutine: a lock whose value does not match yet suspends the block, the
// scheduler starts later blocks and resumes waiting ones once their semaphore holds the
// awaited value, and a state where nothing can move is reported as a deadlock.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <new>

#include "interp/buffer.h"
#include "interp/coroutine.h"
#include "interp/state.h"
#include "ir/functor.h"
#include "support/error.h"
#include "transforms/layout_inference.h"

namespace tilus::interp {

namespace {

// At most this many blocks may be suspended at once; beyond it the scheduler stops
// starting new blocks (each one holds a stack and its tensors).
constexpr size_t kMaxSuspendedBlocks = 4096;

// Gives every variable and tensor the program uses a slot, and counts the (re)definitions
// of each variable.
struct Preparer : StmtExprVisitor {
  explicit Preparer(Prepared& prepared) : p(prepared) {}
  Prepared& p;
  std::unordered_map<int, int> assigned;  // var_id -> times it is (re)defined

  void var(const ExprNode* v, bool is_param) {
    auto [it, inserted] = p.var_slot.emplace(v->var_id, static_cast<int>(p.var_dtype.size()));
    if (inserted) {
      p.var_dtype.push_back(v->dtype);
      p.var_is_param.push_back(is_param);
    } else if (is_param) {
      p.var_is_param[it->second] = true;
    }
  }
  void tensor(const TensorNode* t) {
    if (!t) return;
    if (p.tensor_slot.emplace(t->id, p.num_tensors).second) {
      ++p.num_tensors;
      for (const Expr& e : t->global_shape) visit_expr(e);
      for (const Expr& e : t->global_strides) visit_expr(e);
    }
  }

  std::unordered_map<int, std::vector<const ExprNode*>> pointer_defs;  // var_id -> values
  std::vector<std::pair<int, const ExprNode*>> views;  // global_view tensor id -> pointer
  void pointer_def(const Stmt& s) {
    if (s->var->dtype.is_pointer)
      pointer_defs[s->var->var_id].push_back(s->value.get());  // null: declared uninitialised
  }
  void visit_var(const Expr& e) override { var(e.get(), false); }
  void visit_element_addr(const Expr& e) override {
    tensor(e->tensor.get());
    StmtExprVisitor::visit_element_addr(e);
  }
  void visit_element_load(const Expr& e) override {
    tensor(e->tensor.get());
    StmtExprVisitor::visit_element_load(e);
  }

  void visit_declare(const Stmt& s) override {
    ++assigned[s->var->var_id];
    pointer_def(s);
    StmtExprVisitor::visit_declare(s);
  }
  void visit_assign(const Stmt& s) override {
    ++assigned[s->var->var_id];
    pointer_def(s);
    StmtExprVisitor::visit_assign(s);
  }
  void visit_for(const Stmt& s) override {
    ++assigned[s->var->var_id];
    StmtExprVisitor::visit_for(s);
  }
  void visit_inst(const Stmt& s) override {
    const Instruction& inst = *s->inst;
    if (inst.op == Op::LockSemaphore) p.uses_semaphores = true;
    if (inst.op == Op::MbarrierArriveCluster || (inst.op == Op::TmaGlobalToShared && inst.int_attr == 1))
      p.orders_blocks_by_mbarriers = true;
    if (inst.op == Op::GlobalView) views.emplace_back(inst.output->id, inst.args[0].get());
    tensor(inst.output.get());
    for (const Tensor& t : inst.inputs) tensor(t.get());
    StmtExprVisitor::visit_inst(s);  // the arguments
  }
};

// Which pointer parameter an address expression derives from. kUnknown: from several,
// from an integer, or from something we cannot see; kNone: contributes no origin of
// its own (a pointer variable's assignment from itself, `p = p`).
constexpr int kUnknown = -1, kNone = -2;

int merge_origins(int a, int b) {
  if (a == kNone) return b;
  if (b == kNone || a == b) return a;
  return kUnknown;
}

struct OriginFinder {
  const std::unordered_map<int, int>& param_pos;  // var_id -> parameter position
  const std::unordered_map<int, std::vector<const ExprNode*>>& defs;
  std::unordered_map<int, int> visiting_or_done;  // var_id -> origin (kNone while visiting)

  int origin(const ExprNode* e) {
    if (!e || !e->dtype.is_pointer) return kUnknown;
    switch (e->kind) {
      case ExprKind::Var: {
        auto p = param_pos.find(e->var_id);
        if (p != param_pos.end()) return p->second;
        auto [it, fresh] = visiting_or_done.emplace(e->var_id, kNone);
        if (!fresh) return it->second;
        auto d = defs.find(e->var_id);
        int o = d == defs.end() ? kUnknown : kNone;
        if (d != defs.end())
          for (const ExprNode* v : d->second) o = merge_origins(o, origin(v));
        if (o == kNone) o = kUnknown;
        visiting_or_done[e->var_id] = o;
        return o;
      }
      case ExprKind::Select: return merge_origins(origin(e->a.get()), origin(e->b.get()));
      case ExprKind::Cast: return origin(e->a.get());
      case ExprKind::Const:
      case ExprKind::BlockIdx:
      case ExprKind::Unary:
      case ExprKind::Binary:
      case ExprKind::ElementAddr:
      case ExprKind::ElementLoad:
      case ExprKind::Math: return kUnknown;
    }
    return kUnknown;
  }
};

enum class Flow { Normal, Break, Continue };

Flow exec(BlockState& st, const StmtNode* s);

Flow exec_body(BlockState& st, const StmtNode* s) { return s ? exec(st, s) : Flow::Normal; }

void assign_var(BlockState& st, const Expr& var, const Expr& value) {
  Value v = eval(st, value);
  st.var(var.get()) = convert(v, value->dtype, var->dtype);
}

Flow exec_for(BlockState& st, const StmtNode* s) {
  const int64_t start = eval_int(st, s->start);
  const int64_t end = eval_int(st, s->end);
  const int64_t step = s->step ? eval_int(st, s->step) : 1;
  TILUS_CHECK(step > 0, "ValueError", "the step of a for loop must be positive, but ",
              expr_str(s->step), " evaluates to ", step,
              " (a loop that counts down takes a compile-time step: range(n, 0, -1))");
  const DataType t = s->var->dtype;
  // The loop counter is ours: assigning the loop variable in the body does not change
  // the iteration sequence, as with Python's range().
  for (int64_t i = start; i < end;) {
    maybe_poll(*st.launch);
    st.var(s->var.get()) = convert(Value::of_int(i), dtypes::int64, t);
    if (exec_body(st, s->body.get()) == Flow::Break) break;
    if (i > INT64_MAX - step) break;
    i += step;
  }
  return Flow::Normal;
}

Flow exec(BlockState& st, const StmtNode* s) {
  if (s->kind != StmtKind::Seq) st.current = s;
  try {
    switch (s->kind) {
      case StmtKind::Seq:
        for (size_t k = 0; k < s->seq.size();) {
          const StmtNode* c = s->seq[k].get();
          if (c && c->kind == StmtKind::ThreadGroup) {  // maybe several side by side
            k += exec_thread_groups(st, s->seq, k);
            st.current = s;
            continue;
          }
          Flow f = exec(st, c);
          if (f != Flow::Normal) return f;
          ++k;
        }
        return Flow::Normal;
      case StmtKind::Declare: {
        Value& v = st.var(s->var.get());
        if (s->value) {
          v = convert(eval(st, s->value), s->value->dtype, s->var->dtype);
        } else {  // uninitialised: poison, so a read shows
          v = s->var->dtype.is_float() ? Value::of_float(std::nan(""))
                                       : Value::of_int(wrap_int(0x5a5a5a5a5a5a5a5a, s->var->dtype.kind));
        }
        return Flow::Normal;
      }
      case StmtKind::Assign: assign_var(st, s->var, s->value); return Flow::Normal;
      case StmtKind::For: return exec_for(st, s);
      case StmtKind::If:
        if (truthy(eval(st, s->cond), s->cond->dtype)) return exec_body(st, s->then_body.get());
        return exec_body(st, s->else_body.get());
      case StmtKind::While:
        while (truthy(eval(st, s->cond), s->cond->dtype)) {
          maybe_poll(*st.launch);
          if (exec_body(st, s->body.get()) == Flow::Break) break;
          st.current = s;
        }
        return Flow::Normal;
      case StmtKind::Break: return Flow::Break;
      case StmtKind::Continue: return Flow::Continue;
      case StmtKind::Inst: exec_inst(st, *s, *s->inst); return Flow::Normal;
      case StmtKind::ThreadGroup: exec_group_inline(st, s); return Flow::Normal;
    }
  } catch (ScriptError& e) {
    e.set_loc_if_unknown(s->loc);
    throw;
  }
  return Flow::Normal;
}

}  // namespace

// The builder refuses break/continue that would leave a group, so its body ends normally.
void exec_group_inline(BlockState& st, const StmtNode* group) {
  const int64_t begin = st.group_begin, threads = st.group_threads;
  st.group_begin = begin + std::max<int64_t>(group->group_begin, 0);
  st.group_threads = group->group_threads;
  try {
    exec_body(st, group->body.get());
  } catch (...) {
    st.group_begin = begin;
    st.group_threads = threads;
    throw;
  }
  st.group_begin = begin;
  st.group_threads = threads;
}

int64_t BlockState::threads() const {
  return group_threads ? group_threads : int64_t{launch->program->warps} * 32;
}

void run_block(BlockState& st) {
  if (st.launch->program->body) exec(st, st.launch->program->body.get());
  complete_all_copies(st, nullptr);  // copies still in flight land before the block exits
  if (st.hopper) complete_hopper_copies(st);
}

namespace {

std::string block_str(const std::array<int64_t, 3>& b) {
  return cat("(", b[0], ", ", b[1], ", ", b[2], ")");
}

int32_t semaphore_value(const uint8_t* p) { return load_raw<int32_t>(p); }

[[noreturn]] void throw_deadlock(const BlockState& st, const char* why) {
  ScriptError e("RuntimeError",
                cat("deadlock: block ", block_str(st.block_idx), " waits in lock_semaphore for value ",
                    st.wait_value, " but the semaphore holds ", semaphore_value(st.wait_ptr),
                    ", and no other block can release it", why));
  if (st.wait_stmt) e.set_loc_if_unknown(st.wait_stmt->loc);
  throw e;
}

// ---- the scheduler for programs that use lock_semaphore

// A block, or with clusters a whole cluster (its blocks side by side, run_cluster); its
// state is the block's frame, or the cluster's: the semaphore its blocks wait on.
struct Task {
  BlockState state;
  Coroutine coroutine;
  bool cluster = false;
  std::array<int64_t, 3> origin{0, 0, 0};  // the cluster's first block
};

void task_body(void* arg) {
  auto* t = static_cast<Task*>(arg);
  if (t->cluster) {
    run_cluster(*t->state.launch, t->origin, &t->state);
  } else {
    run_block(t->state);
  }
}

class Scheduler {
 public:
  explicit Scheduler(const Launch& l) : launch_(l) {}

  void run() {
    // the units it schedules: blocks, or whole clusters (the grid divided by the cluster shape)
    const auto& c = launch_.program->cluster;
    const bool clusters = c != std::array<int64_t, 3>{1, 1, 1};
    const std::array<int64_t, 3> g = {launch_.grid[0] / c[0], launch_.grid[1] / c[1], launch_.grid[2] / c[2]};
    const int64_t total = g[0] * g[1] * g[2];
    int64_t next = 0;
    std::exception_ptr error;
    try {
      while (next < total || !waiting_.empty()) {
        bool progress = false;
        // Resume, in block order, every waiting block whose semaphore is ready.
        for (size_t i = 0; i < waiting_.size();) {
          Task* t = waiting_[i].get();
          if (semaphore_value(t->state.wait_ptr) != t->state.wait_value) {
            ++i;
            continue;
          }
          progress = true;
          if (step(*t)) {
            recycle(std::move(waiting_[i]));
            waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
          } else {
            ++i;
          }
        }
        if (next < total && waiting_.size() < kMaxSuspendedBlocks) {
          maybe_poll(launch_);
          std::unique_ptr<Task> t = acquire();
          int64_t b = next++;
          const std::array<int64_t, 3> unit = {b % g[0], (b / g[0]) % g[1], b / (g[0] * g[1])};
          t->cluster = clusters;
          t->origin = {unit[0] * c[0], unit[1] * c[1], unit[2] * c[2]};
          t->state.reset(launch_, t->origin);
          t->coroutine.start(pool_, &task_body, t.get());
          progress = true;
          if (step(*t)) recycle(std::move(t));
          else waiting_.push_back(std::move(t));
        }
        if (!progress) {
          const BlockState& first = waiting_.front()->state;
          if (next < total)
            throw_deadlock(first, cat(" (", kMaxSuspendedBlocks, " blocks are suspended, the "
                                      "interpreter's limit, so no further block could start)").c_str());
          throw_deadlock(first, "");
        }
      }
    } catch (...) {
      error = std::current_exception();
    }
    // Outside the handler: cancelling resumes coroutines, which throw on their stacks.
    if (error) {
      cancel_waiting();
      std::rethrow_exception(error);
    }
  }

 private:
  // Runs a task until it waits or ends; returns true when it ended. Errors thrown in
  // the block come out here, on the scheduler's stack.
  bool step(Task& t) {
    t.state.coroutine = &t.coroutine;
    bool done = t.coroutine.resume();
    if (done && t.coroutine.error()) std::rethrow_exception(t.coroutine.error());
    return done;
  }

  std::unique_ptr<Task> acquire() {
    if (free_.empty()) return std::make_unique<Task>();
    std::unique_ptr<Task> t = std::move(free_.back());
    free_.pop_back();
    return t;
  }

  void recycle(std::unique_ptr<Task> t) {
    if (free_.size() < 64) free_.push_back(std::move(t));
  }

  // Unwind every suspended block so its frames release what they own.
  void cancel_waiting() {
    for (auto& t : waiting_) {
      t->state.cancelled = true;
      if (!t->coroutine.finished()) t->coroutine.resume();
    }
    waiting_.clear();
  }

  const Launch& launch_;
  StackPool pool_;
  std::vector<std::unique_ptr<Task>> waiting_;
  std::vector<std::unique_ptr<Task>> free_;
};

}  // namespace

Prepared prepare(const Program& program) {
  Prepared p;
  Preparer w(p);
  for (const Expr& e : program.params) w.var(e.get(), true);
  for (const Expr& e : program.grid) w.visit_expr(e);
  for (const Workspace& ws : program.workspaces) w.tensor(ws.tensor.get());
  w.visit_stmt(program.body);
  std::unordered_map<int, int> param_pos;
  for (size_t i = 0; i < program.params.size(); ++i)
    param_pos[program.params[i]->var_id] = static_cast<int>(i);
  OriginFinder origins{param_pos, w.pointer_defs, {}};
  for (const auto& [tensor_id, ptr] : w.views) {
    int o = origins.origin(ptr);
    if (o >= 0) p.view_param[tensor_id] = o;
  }
  // Top-level declarations, looking through nested Seqs and exit guards but not into loops
  // or branches.
  for_each_top_level(program.body, [&](const StmtNode& s) {
    if (s.kind == StmtKind::Declare && s.value && w.assigned[s.var->var_id] == 1) {
      p.launch_defs[s.var->var_id] = s.value.get();
    }
  });
  return p;
}

void BlockState::reset(const Launch& l, std::array<int64_t, 3> idx) {
  launch = &l;
  block_idx = idx;
  const Prepared& p = l.prep;
  vars.resize(p.var_dtype.size());
  for (size_t i = 0; i < l.params.size(); ++i)
    vars[p.var_slot.at(l.program->params[i]->var_id)] = l.params[i];
  // Tensors keep their buffers from the previous block for reuse; only their values
  // are forgotten.
  tensors.resize(static_cast<size_t>(p.num_tensors));
  for (auto& t : tensors) t.defined = false;
  open_copies.clear();
  committed_copies.clear();
  hopper.reset();
  wgmma.reset();
  group_begin = group_threads = 0;
  agent = nullptr;
  cluster = nullptr;
  cluster_rank = 0;
  coroutine = nullptr;
  wait_ptr = nullptr;
  wait_stmt = nullptr;
  cancelled = false;
  current = nullptr;
  debug_block_start(*this);
}

Value& BlockState::var(const ExprNode* v) {
  auto it = launch->prep.var_slot.find(v->var_id);
  TILUS_ASSERT(it != launch->prep.var_slot.end(), "variable ", v->name, " has no slot");
  return vars[it->second];
}

TensorValue& BlockState::tensor(const TensorNode* t) {
  auto it = launch->prep.tensor_slot.find(t->id);
  TILUS_ASSERT(it != launch->prep.tensor_slot.end(), "tensor ", t->name, " has no slot");
  return tensors[it->second];
}

const LayoutPlan& layout_plan(const Launch& l) {
  if (!l.layouts) l.layouts = std::make_shared<const LayoutPlan>(infer_layouts(*l.program, false));
  return *l.layouts;
}

void init_launch(Launch& l, const Program& program, const std::vector<HostArg>& args) {
  TILUS_CHECK(args.size() == program.params.size(), "TypeError", program.name, " takes ",
              program.params.size(), " arguments but ", args.size(), " were given");
  l.program = &program;
  l.prep = prepare(program);
  l.params.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    DataType t = program.params[i]->dtype;
    if (t.is_pointer) l.params[i] = Value::of_int(static_cast<int64_t>(args[i].ptr));
    else if (t.is_float()) l.params[i] = convert(Value::of_float(args[i].f), dtypes::float64, t);
    else l.params[i] = convert(Value::of_int(args[i].i), dtypes::int64, t);
  }
}

void wait_semaphore(BlockState& st, const uint8_t* ptr, int32_t value, const StmtNode& stmt) {
  while (semaphore_value(ptr) != value) {
    st.wait_ptr = ptr;
    st.wait_value = value;
    st.wait_stmt = &stmt;
    if (st.coroutine) {
      st.coroutine->yield();
      if (st.cancelled) throw BlockCancelled{};
      continue;
    }
    // Inside a thread group: the other groups run first; when they all wait too, the
    // group scheduler suspends the block on this semaphore (thread_groups.cc).
    if (!yield_to_groups(st, cat("waits in lock_semaphore for value ", value, " but the semaphore holds ",
                                 semaphore_value(ptr))))
      throw_deadlock(st, " (the block cannot wait here)");
  }
  st.wait_ptr = nullptr;
  st.wait_stmt = nullptr;
}

}  // namespace tilus::interp

namespace tilus {

LaunchShape evaluate_launch_shape(const Program& program, const std::vector<HostArg>& args) {
  interp::Launch l;
  interp::init_launch(l, program, args);
  return interp::launch_shape(l);
}

namespace {
std::atomic<uint64_t> g_instructions{0};
struct CountInstructions {
  const interp::Launch& l;
  ~CountInstructions() { g_instructions += l.instructions; }
};
}  // namespace

uint64_t interp_instruction_count() { return g_instructions.load(); }

void interpret(const Program& program, const std::vector<HostArg>& args,
               const std::vector<HostRegion>& regions, const std::function<void()>& poll) {
  interp::Launch l;
  CountInstructions count{l};
  interp::init_launch(l, program, args);
  l.poll = poll;
  LaunchShape shape = interp::launch_shape(l);
  l.grid = shape.grid;
  l.regions = regions;
  for (size_t w = 0; w < program.workspaces.size(); ++w) {
    const Workspace& ws = program.workspaces[w];
    try {
      l.workspace_storage.emplace_back(static_cast<size_t>(shape.workspace_bytes[w]));
    } catch (const std::bad_alloc&) {
      ScriptError e("MemoryError", cat("the interpreter cannot allocate ", shape.workspace_bytes[w],
                                       " bytes for global_tensor ", ws.tensor->name));
      e.set_loc_if_unknown(ws.loc);
      throw e;
    }
    auto& buf = l.workspace_storage.back();
    if (!ws.requires_clean)
      interp::poison(buf.data(), ws.tensor->dtype.kind,
                     shape.workspace_bytes[w] / interp::element_bytes(ws.tensor->dtype));
    l.workspace_base.push_back(reinterpret_cast<uintptr_t>(buf.data()));
    l.workspace_region.push_back(static_cast<int>(l.regions.size()));
    l.regions.push_back({l.workspace_base.back(), buf.size(), ws.tensor->name});
  }
  // The caller names each argument's region after its parameter.
  l.param_region.assign(program.params.size(), -1);
  for (size_t i = 0; i < program.params.size(); ++i) {
    if (!program.params[i]->dtype.is_pointer) continue;
    for (size_t r = 0; r < regions.size(); ++r)
      if (regions[r].name == program.params[i]->name) {
        l.param_region[i] = static_cast<int>(r);
        break;
      }
  }
  const int64_t total = l.grid[0] * l.grid[1] * l.grid[2];
  if (total == 0) return;
  interp::init_debug_checks(l);
  const bool clusters = program.cluster != std::array<int64_t, 3>{1, 1, 1};
  if (clusters) interp::check_cluster_grid(l);
  if (clusters && !l.prep.uses_semaphores) {
    interp::run_clusters(l);
    return;
  }
  if (l.prep.uses_semaphores) {  // blocks (or clusters) that may wait for one another
    interp::Scheduler(l).run();
    return;
  }
  interp::BlockState st;
  for (int64_t z = 0; z < l.grid[2]; ++z)
    for (int64_t y = 0; y < l.grid[1]; ++y)
      for (int64_t x = 0; x < l.grid[0]; ++x) {
        interp::maybe_poll(l);
        st.reset(l, {x, y, z});
        interp::run_block(st);
      }
}

}  // namespace tilus
