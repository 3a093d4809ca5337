#include "codegen/emitter.h"
#include "codegen/unroll_budget.h"
#include "transforms/async_waits.h"
#include "transforms/copy_waits.h"
#include "transforms/transaction_bytes.h"
#include "transforms/vector_extents.h"
#include "ir/functor.h"
#include "ops/op_handler.h"
#include "ir/packed.h"
#include "ir/verifier.h"
#include "transforms/verify_layouts.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cmath>
#include <iomanip>

namespace tilus {

// ------------------------------------------------------------------ shared allocator

int64_t SharedAllocator::allocate(int64_t bytes, int64_t align) {
  bytes = (bytes + 127) / 128 * 128;
  auto aligned = [&](int64_t x) { return (x + align - 1) / align * align; };
  int64_t offset = 0;
  for (auto& [o, b] : used_) {
    if (aligned(offset) + bytes <= o) break;
    offset = std::max(offset, o + b);
  }
  offset = aligned(offset);
  used_.push_back({offset, bytes});
  std::sort(used_.begin(), used_.end());
  peak_ = std::max(peak_, offset + bytes);
  return offset;
}

void SharedAllocator::release(int64_t offset) {
  if (holds_ > 0) return;
  used_.erase(std::remove_if(used_.begin(), used_.end(),
                             [&](const auto& u) { return u.first == offset; }),
              used_.end());
}

// ------------------------------------------------------------------ text helpers

namespace {
const std::unordered_set<std::string>& cpp_reserved() {
  static const std::unordered_set<std::string> words = {
      "auto", "bool", "break", "case", "catch", "char", "class", "const", "continue",
      "default", "delete", "do", "double", "else", "enum", "explicit", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long", "namespace", "new",
      "operator", "private", "protected", "public", "register", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try",
      "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "while", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "min", "max",
      "half", "half2", "float2", "float4", "int2", "int4", "uint4", "printf", "tilus", "asm",
      // C++'s alternative operator spellings and later keywords that are Python names
      // (a parameter named xor broke the kernel signature)
      "xor", "xor_eq", "bitand", "bitor", "compl", "and_eq", "or_eq", "not_eq", "nullptr",
      "constexpr", "decltype", "mutable", "noexcept", "static_assert", "thread_local",
      "alignas", "alignof", "typeid", "export", "concept", "requires", "wchar_t"};
  return words;
}

// The emitters' own loop counters (for (int i ...) around a tile's elements, whose bodies
// print the script's expressions): a script's name must not be one of them, or the
// counter would shadow it (a float16 parameter named i read as the loop index).
const std::unordered_set<std::string>& loop_counters() {
  static const std::unordered_set<std::string> names = {"i", "j", "k", "d", "n", "r", "z"};
  return names;
}

std::string sanitize(const std::string& name) {
  if (cpp_reserved().count(name) || loop_counters().count(name) || name.rfind("tl_", 0) == 0)
    return name + "_";
  return name;
}
}  // namespace

std::string CudaEmitter::param_cname(int k) const {
  return sanitize(program_.params[static_cast<size_t>(k)]->name);
}

void CudaEmitter::line(const std::string& s) { out_ << std::string(indent_ * 2, ' ') << s << "\n"; }

void CudaEmitter::open(const std::string& head) {
  line(head + " {");
  ++indent_;
}

void CudaEmitter::close(const std::string& tail) {
  --indent_;
  line(tail);
}

std::string CudaEmitter::fresh(const std::string& hint) {
  std::string base = cpp_reserved().count(hint) ? hint + "_" : hint;
  std::string name = base;
  for (int n = 1; used_names_.count(name); ++n) name = base + "_" + std::to_string(n);
  used_names_.insert(name);
  return name;
}

Expr CudaEmitter::internal_var(const std::string& name, DataType dtype) {
  Expr v = make_var(name, dtype);
  internal_vars_.insert(v->var_id);
  return v;
}

std::string CudaEmitter::ctype(DataType t) { return t.c_name(); }

std::string CudaEmitter::zero(DataType t) {
  if (t == dtypes::float32 || t == dtypes::float64 || t.is_integer() || t.is_bool())
    return "(" + ctype(t) + ")0";
  return "tilus::cast<" + ctype(t) + ">(0.0f)";
}

namespace {
// A constant of float type `t`: a float64 / float32 literal, converted for narrower types
// (NaN and the infinities, which have no literal, through their bits).
std::string float_literal(double v, DataType t) {
  std::string s;
  if (std::isnan(v)) {
    s = t == dtypes::float64 ? "__longlong_as_double(0x7ff8000000000000ll)" : "__int_as_float(0x7fc00000)";
  } else if (std::isinf(v)) {
    s = t == dtypes::float64 ? "__longlong_as_double(0x7ff0000000000000ll)" : "__int_as_float(0x7f800000)";
    if (v < 0) s = "(-" + s + ")";
  } else {
    std::ostringstream os;
    os << std::setprecision(17) << v;
    s = os.str();
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    if (t != dtypes::float64) s += "f";
  }
  if (t == dtypes::float64 || t == dtypes::float32) return s;
  return "tilus::cast<" + CudaEmitter::ctype(t) + ">(" + s + ")";
}
}  // namespace

std::string CudaEmitter::expr(const Expr& e) {
  switch (e->kind) {
    case ExprKind::Const:
      if (e->dtype.is_bool()) return e->int_value ? "true" : "false";
      if (e->dtype.is_float()) return float_literal(e->float_value, e->dtype);
      if (e->dtype == dtypes::int64) return std::to_string(e->int_value) + "ll";
      if (e->dtype == dtypes::uint64) return std::to_string(static_cast<uint64_t>(e->int_value)) + "ull";
      if (e->dtype == dtypes::uint32) return std::to_string(e->int_value) + "u";
      if (e->dtype == dtypes::int32) {
        if (e->int_value == INT32_MIN) return "(-2147483647 - 1)";
        return std::to_string(e->int_value);
      }
      return "(" + ctype(e->dtype) + ")" + std::to_string(e->int_value);
    case ExprKind::Var: return internal_vars_.count(e->var_id) ? e->name : sanitize(e->name);
    case ExprKind::BlockIdx:
      if (banded_launch_ && e->axis < 2) return e->axis == 0 ? "tl_block_x" : "tl_block_y";
      return std::string("(int)blockIdx.") + "xyz"[e->axis];
    case ExprKind::Unary:
      if (e->unary_op == UnaryOp::Not) return "(!" + expr(e->a) + ")";
      return "(-" + expr(e->a) + ")";
    case ExprKind::Binary: {
      std::string a = expr(e->a), b = expr(e->b);
      if (e->binary_op == BinaryOp::Min) return "tilus::min_(" + a + ", " + b + ")";
      if (e->binary_op == BinaryOp::Max) return "tilus::max_(" + a + ", " + b + ")";
      if (e->binary_op == BinaryOp::Mod && e->a->dtype.is_float()) return "fmod(" + a + ", " + b + ")";
      if (e->binary_op == BinaryOp::Shl || e->binary_op == BinaryOp::Shr)  // shift_int's semantics
        return std::string(e->binary_op == BinaryOp::Shl ? "tilus::shl<" : "tilus::shr<") + ctype(e->dtype) +
               ">(" + a + ", " + b + ")";
      return "(" + a + " " + binary_op_symbol(e->binary_op) + " " + b + ")";
    }
    case ExprKind::Select: return "(" + expr(e->c) + " ? " + expr(e->a) + " : " + expr(e->b) + ")";
    case ExprKind::Cast: {
      if (e->dtype.is_float() && !(e->dtype == dtypes::float32 || e->dtype == dtypes::float64))
        return "tilus::cast<" + ctype(e->dtype) + ">(" + expr(e->a) + ")";
      if (!(e->a->dtype == dtypes::float32 || e->a->dtype == dtypes::float64) && e->a->dtype.is_float())
        return "tilus::cast<" + ctype(e->dtype) + ">(" + expr(e->a) + ")";
      return "((" + ctype(e->dtype) + ")" + expr(e->a) + ")";
    }
    case ExprKind::ElementAddr:
    case ExprKind::ElementLoad: {
      auto it = globals_.find(e->tensor->id);
      TILUS_ASSERT(it != globals_.end(), "global tensor ", e->tensor->name, " is not in scope");
      const GlobalInfo& g = it->second;
      std::string offset;
      for (size_t d = 0; d < e->indices.size(); ++d) {
        std::string term = expr(e->indices[d]) + " * " + g.stride_c[d];
        offset += (d ? " + " : "") + term;
      }
      if (e->kind == ExprKind::ElementAddr) return "(" + g.ptr + " + (" + offset + "))";
      const std::string checked = bounds_item(e, g, offset);
      if (!checked.empty()) return checked;
      return g.ptr + "[" + offset + "]";
    }
    case ExprKind::Math: {
      // CUDA's functions: expf ... on float32, exp ... on float64; float16 and bfloat16
      // go through float32. Qualified with :: so that a script variable named expf or
      // isnan (a local of the kernel) does not hide them.
      const DataType t = e->a->dtype;
      const bool is_double = t == dtypes::float64;
      std::string x = expr(e->a);
      if (!is_double && t != dtypes::float32) x = "tilus::cast<float>(" + x + ")";
      const std::string name = math_fn_name(e->math_fn);
      if (e->math_fn == MathFn::IsNan || e->math_fn == MathFn::IsInf)
        return "::" + name + "(" + x + ")";  // float and double overloads, bool
      const std::string call = "::" + name + (is_double ? "" : "f") + "(" + x + ")";
      if (e->dtype == dtypes::float32 || is_double) return call;
      return "tilus::cast<" + ctype(e->dtype) + ">(" + call + ")";
    }
  }
  return "?";
}

// ------------------------------------------------------------------ layouts -> loops

int64_t CudaEmitter::innermost_run(const RegisterLayout& layout) {
  if (layout.local_modes.empty()) return 1;
  int m = layout.local_modes.back();
  auto dims = layout.mode_dims();
  if (dims[m] != layout.rank() - 1) return 1;
  // the innermost mode of the last dimension has stride 1
  for (size_t j = m + 1; j < layout.mode_shape.size(); ++j)
    if (dims[j] == dims[m]) return 1;
  return layout.mode_shape[m];
}

void CudaEmitter::for_each_local(const RegisterLayout& layout, int64_t vec,
                                 const std::function<void(const Element&)>& body, int outer_unroll) {
  auto dims = layout.mode_dims();
  std::vector<int64_t> inner_stride(layout.mode_shape.size(), 1);
  for (size_t m = 0; m < layout.mode_shape.size(); ++m)
    for (size_t j = m + 1; j < layout.mode_shape.size(); ++j)
      if (dims[j] == dims[m]) inner_stride[m] *= layout.mode_shape[j];
  Element el;
  el.coords = layout.thread_coord_exprs(tid_);
  el.thread_coords = el.coords;
  el.local = make_int(0);
  const size_t n = layout.local_modes.size();
  // local index strides: mixed radix over the local modes, innermost fastest
  std::vector<int64_t> lstride(n, 1);
  for (int j = static_cast<int>(n) - 2; j >= 0; --j)
    lstride[j] = lstride[j + 1] * layout.mode_shape[layout.local_modes[j + 1]];
  int opened = 0;
  for (size_t j = 0; j < n; ++j) {
    int m = layout.local_modes[j];
    int64_t trips = layout.mode_shape[m], step = 1;
    if (j + 1 == n) {
      TILUS_ASSERT(trips % vec == 0, "vector width ", vec, " does not divide ", trips);
      trips /= vec;
      step = vec;
    }
    if (trips == 1) continue;
    std::string name = fresh("i");
    Expr v = internal_var(name);
    line(outer_unroll > 0 && opened == 0 ? "#pragma unroll " + std::to_string(outer_unroll) : "#pragma unroll");
    open("for (int " + name + " = 0; " + name + " < " + std::to_string(trips) + "; ++" + name + ")");
    ++opened;
    el.coords[dims[m]] = make_binary(BinaryOp::Add, el.coords[dims[m]],
                                     make_binary(BinaryOp::Mul, v, make_int(inner_stride[m] * step)));
    Element::Loop loop{v, trips, std::vector<int64_t>(layout.rank(), 0)};
    loop.step[dims[m]] = inner_stride[m] * step;
    el.loops.push_back(loop);
    el.local = make_binary(BinaryOp::Add, el.local,
                           make_binary(BinaryOp::Mul, v, make_int(lstride[j] * step)));
  }
  body(el);
  for (int k = 0; k < opened; ++k) close();
}

std::string CudaEmitter::tile_mask(const RegisterLayout& layout, const std::vector<int64_t>& extent,
                                   const Element& el) {
  std::string cond;
  for (int d = 0; d < layout.rank(); ++d) {
    if (layout.shape[d] <= extent[d]) continue;
    cond += (cond.empty() ? "" : " && ") + std::string("(") + expr(el.coords[d]) + ") < " +
            std::to_string(extent[d]);
  }
  return cond;
}

std::string CudaEmitter::replica_leader(const RegisterLayout& layout) {
  std::string cond;
  int64_t inner = 1;
  for (int j = static_cast<int>(layout.spatial_modes.size()) - 1; j >= 0; --j) {
    int m = layout.spatial_modes[j];
    int64_t size = m < 0 ? -m : layout.mode_shape[m];
    if (m < 0) {
      std::string digit = "(tl_tid / " + std::to_string(inner) + ") % " + std::to_string(size);
      if (j == 0) digit = "tl_tid / " + std::to_string(inner);
      cond += (cond.empty() ? "" : " && ") + std::string("(") + digit + ") == 0";
    }
    inner *= size;
  }
  return cond;
}

// ------------------------------------------------------------------ registers

std::string CudaEmitter::reg_name(const Tensor& t) {
  auto it = reg_names_.find(t->id);
  TILUS_ASSERT(it != reg_names_.end(), "register tensor ", t->name, " used before definition");
  return it->second;
}

std::string CudaEmitter::declare_reg(const Tensor& t, const RegisterLayout& layout) {
  std::string name = fresh(sanitize(t->name));
  reg_names_[t->id] = name;
  reg_scopes_[t->id] = scopes_.back();
  line("__align__(16) " + ctype(t->dtype) + " " + name + "[" + std::to_string(layout.local_size()) +
       "];  // " + t->type_str());
  return name;
}

// ------------------------------------------------------------------ statements

void CudaEmitter::block(const Stmt& body) {
  scopes_.push_back(next_scope_++);
  stmt(body);
  scopes_.pop_back();
}

std::string CudaEmitter::block_sync() const {
  if (groups_.empty()) return "__syncthreads();";
  const GroupScope& g = groups_.back();
  if (g.begin % 32 == 0 && g.threads % 32 == 0)
    return "asm volatile(\"bar.sync %0, %1;\" :: \"r\"(" + std::to_string(g.barrier) + "), \"r\"(" +
           std::to_string(g.threads) + ") : \"memory\");";
  TILUS_CHECK(g.begin / 32 == (g.begin + g.threads - 1) / 32, "NotImplementedError",
              "a barrier inside a thread group of threads [", g.begin, ", ", g.begin + g.threads,
              "): a group that is not whole warps must lie inside one warp");
  const uint64_t mask = (g.threads == 32 ? ~0ull : ((1ull << g.threads) - 1)) << (g.begin % 32);
  return "__syncwarp(" + std::to_string(static_cast<uint32_t>(mask)) + "u);";
}

std::string CudaEmitter::uniform_warpgroup() const {
  const int64_t threads = groups_.empty() ? threads_ : groups_.back().threads;
  if (threads <= 128) return "0";
  // a shuffle from lane 0: the compiler treats its result as uniform across the warp
  return "__shfl_sync(0xffffffffu, tl_tid / 128, 0)";
}

// `with self.thread_group(begin, n)`: the group's threads run the body, in which tl_tid
// (every layout's thread index) counts from the group's first thread, so register tiles
// made inside are spread over the group's threads.
void CudaEmitter::emit_thread_group(const Stmt& s) {
  const int64_t outer = group_begin();
  const int64_t begin = outer + std::max<int64_t>(s->group_begin, 0);
  const int64_t n = s->group_threads;
  const std::string lo = std::to_string(begin), hi = std::to_string(begin + n);
  if (s->group_begin < 0) {
    line("// thread_group: one thread of the enclosing group");
    open("if ((int)threadIdx.x == " + lo + ")");
  } else {
    line("// thread_group(" + std::to_string(s->group_begin) + ", " + std::to_string(n) + ")");
    open(n == 1 ? "if ((int)threadIdx.x == " + lo + ")"
                : "if ((int)threadIdx.x >= " + lo + " && (int)threadIdx.x < " + hi + ")");
  }
  line("const int tl_tid = (int)threadIdx.x - " + lo + ";");
  line("(void)tl_tid;");
  // Named barrier 0 is __syncthreads'; groups cycle through the other 15.
  groups_.push_back({begin, n, next_barrier_});
  next_barrier_ = next_barrier_ % 15 + 1;
  const int outer_threads = threads_;
  threads_ = static_cast<int>(n);
  smem_.hold();  // shared memory the group releases is not reused by a sibling group
  try {
    block(s->body);
  } catch (...) {
    threads_ = outer_threads;
    groups_.pop_back();
    smem_.unhold();
    throw;
  }
  threads_ = outer_threads;
  groups_.pop_back();
  smem_.unhold();
  close();
}

// A loop whose wgmma dots (automatic or explicit) may still run when the next iteration
// starts, with compile-time bounds: unrolled, ptxas schedules reads of the accumulators
// after the loop above the final wgmma.wait_group (SASS: F2FP of the first accumulator
// registers before WARPGROUP.DEPBAR.LE gsb0, 0x0), so some elements miss the last k-step
// (MatmulV3 at 4096^3 on an H100: ~0.5% of C wrong; rolled, it was right). CUTLASS does
// not unroll these loops either.
bool CudaEmitter::wgmma_loop_of_known_trips(const StmtNode& loop) const {
  if (!loop.start->is_const() || !loop.end->is_const() || !loop.step->is_const()) return false;
  bool found = false;
  for_each_inst(loop.body, [&](const StmtNode& st) {
    found = found || st.inst->op == Op::WgmmaMma ||
            (st.inst->op == Op::Dot && dot_lowering(*st.inst) == DotLowering::WgmmaAsync);
  });
  return found;
}

void CudaEmitter::stmt(const Stmt& s) {
  if (!s) return;
  if (s->loc.known()) loc_ = s->loc;
  try {
    switch (s->kind) {
      case StmtKind::Seq:
        for (const Stmt& c : s->seq) stmt(c);
        return;
      case StmtKind::Declare:
        if (s->value) line(sanitize(s->var->name) + " = " + expr(s->value) + ";");
        return;
      case StmtKind::Assign: line(sanitize(s->var->name) + " = " + expr(s->value) + ";"); return;
      case StmtKind::For: {
        std::string v = sanitize(s->var->name);
        std::string end = fresh(v + "_end");
        if (s->unroll > 0) {
          const int64_t ops = estimate_body_ops(s->body, plan_, threads_);
          int unroll = budget_unroll(s->unroll, ops, unroll_budget_);
          // A loop of wgmma dots: two copies measured 3-4% faster than one (the seed's
          // tiles on one H200); more only add compile time.
          if (unroll > 2 && unroll_budget_ > 0 && contains_wgmma_dot(s->body)) unroll = 2;
          if (unroll > 1 && wgmma_loop_of_known_trips(*s)) {
            line("// unroll=" + std::to_string(s->unroll) + " not applied: wgmma in flight across iterations of a loop of known trip count");
            unroll = 1;
          } else if (unroll < s->unroll) {
            line("// unroll=" + std::to_string(s->unroll) + " reduced: ~" + std::to_string(ops) +
                 " operations per iteration (budget " + std::to_string(unroll_budget_) + ")");
          }
          line("#pragma unroll " + std::to_string(unroll));
        }
        if (s->unroll < 0) line(wgmma_loop_of_known_trips(*s) ? "#pragma unroll 1  // wgmma in flight across iterations" : "#pragma unroll");
        open("for (" + ctype(s->var->dtype) + " " + v + " = " + expr(s->start) + ", " + end +
             " = " + expr(s->end) + "; " + v + " < " + end + "; " + v + " += " + expr(s->step) + ")");
        block(s->body);
        close();
        return;
      }
      case StmtKind::If: {
        open("if (" + expr(s->cond) + ")");
        block(s->then_body);
        if (s->else_body) {
          --indent_;
          line("} else {");
          ++indent_;
          block(s->else_body);
        }
        close();
        return;
      }
      case StmtKind::While:
        open("while (" + expr(s->cond) + ")");
        block(s->body);
        close();
        return;
      case StmtKind::Break: line("break;"); return;
      case StmtKind::Continue: line("continue;"); return;
      case StmtKind::ThreadGroup: emit_thread_group(s); return;
      case StmtKind::Inst: inst(*s->inst); return;
    }
  } catch (ScriptError& e) {
    e.set_loc_if_unknown(s->loc);
    throw;
  }
}

std::string CudaEmitter::hang_clock() {
  if (options_.hang_check_ns <= 0) return "";
  const std::string start = fresh("tl_wait_start");
  line("const unsigned long long " + start + " = tilus::global_timer_ns();");
  return start;
}

std::string CudaEmitter::hang_give_up(const std::string& done, const std::string& bar, const std::string& parity,
                                      const std::string& start) const {
  if (start.empty()) return "";
  return "tilus::hang_check(" + done + ", " + start + ", " + std::to_string(options_.hang_check_ns) + "ull, " +
         hang_site() + ", (unsigned)(" + bar + "), (unsigned)(" + parity + "));";
}

std::string CudaEmitter::hang_site() const {
  const size_t slash = loc_.file.find_last_of("/\\");
  const std::string where =
      (slash == std::string::npos ? loc_.file : loc_.file.substr(slash + 1)) + ":" + std::to_string(loc_.line);
  std::string out = "\"";
  for (char c : where) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// What each op emits is its family's handler (csrc/ops/<family>.cc).
void CudaEmitter::inst(const Instruction& i) {
  if (i.output) {  // written again: the words are stale, the cast's value gone
    packed_words_.erase(i.output->id);
    paired_casts_.erase(i.output->id);
    float_packed_casts_.erase(i.output->id);
    integer_casts_.erase(i.output->id);
  }
  auto alias = i.output ? streamed_aliases_.find(i.output->id) : streamed_aliases_.end();
  if (alias != streamed_aliases_.end()) {  // B^T's registers are the streamed load's
    reg_names_[i.output->id] = reg_names_.at(alias->second);
    reg_scopes_[i.output->id] = reg_scopes_.at(alias->second);
    line("// " + i.output->name + ": the registers of " + i.inputs[0]->name + " (permute keeps their order)");
    return;
  }
  op_handler(i.op).emit(*this, i);
  // copy_async runs as TMA (the async proxy): shared-memory writes of the generic proxy are
  // fenced before a later TMA copy may overwrite them (the barrier a cp.async program needs
  // between them anyway follows); wgmma reads them through the same proxy.
  auto writes_a_tile = [&] {
    return op_has_effect(i.op, eff::WritesShared) && !op_has_effect(i.op, eff::Async | eff::EndsShared) &&
           std::any_of(i.inputs.begin(), i.inputs.end(), [](const Tensor& t) { return t->scope == Scope::Shared; });
  };
  if (copy_tma_ && writes_a_tile()) line("tilus::fence_proxy_async_shared();  // generic shared writes -> before TMA copies");
}

const CudaEmitter::PackedWords* CudaEmitter::packed_words_of(const Tensor& t) const {
  auto it = packed_words_.find(t->id);
  if (it == packed_words_.end() || std::find(scopes_.begin(), scopes_.end(), it->second.scope) == scopes_.end())
    return nullptr;
  return &it->second;
}

// ------------------------------------------------------------------ kernel

namespace {
// The vector extent parameters a build assumes multiples of 16: all of them in the aligned
// build, none in the unaligned one, those its call met in a partly aligned one.
std::vector<int> assumed_vector_extents(const Program& program, const CodegenOptions& options) {
  std::vector<int> out;
  for (int k : vector_extent_params(program))
    if (options.assumes_aligned(k)) out.push_back(k);
  return out;
}
}  // namespace

CudaEmitter::CudaEmitter(const Program& program, const CodegenOptions& options)
    : program_(program), options_(options),
      scalar_globals_(scalar_globals(program, options.pointers_aligned, options.unaligned_params)),
      plan_(infer_layouts(program, options.wgmma, scalar_globals_)),
      div_(program, assumed_vector_extents(program, options)),
      threads_(program.warps * 32) {
  if (verify_enabled()) verify_layouts(program, plan_, "layout inference");
  tid_ = internal_var("tl_tid");
  // Banded launch order (run()) when the grid is two-dimensional.
  auto is_one = [](const Expr& e) { return !e || (e->is_const() && e->int_value == 1); };
  banded_launch_ = !is_one(program.grid[0]) && !is_one(program.grid[1]);
  unroll_budget_ = options.unroll_budget;
  used_names_ = {"tl_tid", "tl_smem", "tl_linear", "tl_band", "tl_band_x", "tl_band_w", "tl_block_x", "tl_block_y"};
  for (auto& p : program.params) used_names_.insert(sanitize(p->name));
  find_written_globals();
  find_read_tensors();
  // Tensors read by an mma dot straight from load_shared are loaded with ldmatrix; so is
  // a tile whose register transpose is the dot's B (Tilus 0.2's Q @ K^T,
  // `self.dot(q, self.load_shared(sk).transpose())`: K [n, k] is loaded untransposed).
  std::unordered_map<int, const Instruction*> defined_by;
  for_each_inst(program_.body, [&](const StmtNode& s) {
    if (s.inst->output && s.inst->defines_output) defined_by[s.inst->output->id] = s.inst.get();
  });
  for (auto& [inst, dp] : plan_.dots) {
    if (!dp.mma || inst->inputs[0]->dtype.bits() != 16) continue;
    mma_operands_[inst->inputs[0]->id] = {&dp, 0};
    mma_operands_[inst->inputs[1]->id] = {&dp, 1};
    auto b = defined_by.find(inst->inputs[1]->id);
    if (b != defined_by.end() && b->second->op == Op::Permute && b->second->dims == std::vector<int>{1, 0})
      mma_operands_.emplace(b->second->inputs[0]->id, std::make_pair(&dp, 2));
  }
  find_streamed_operands();
}

namespace {
// A statement between an operand's load and its dot that keeps the tile in shared memory
// as loaded: no shared-memory write (a store, a copy landing, an atomic), no end of a
// shared allocation, no control flow. Barriers and register work are fine.
bool keeps_shared_tiles(const StmtNode& s) {
  if (s.kind == StmtKind::Declare || s.kind == StmtKind::Assign) return true;
  if (s.kind != StmtKind::Inst) return false;
  return !op_has_effect(s.inst->op, eff::WritesShared | eff::EndsShared | eff::Async | eff::CpAsyncIssue |
                                        eff::CpAsyncCommit | eff::CpAsyncWait);
}
}  // namespace

// A tile of 64+ registers a thread that an mma dot alone reads (A, B, or B's [n, k]
// transpose) is loaded inside the dot's k loop, one step at a time, when its load_shared
// stands before the dot in the same sequence with only statements that keep shared
// memory as it was between them: the same values reach the mma, and ptxas no longer has
// the whole tile live at once (it issues a whole-tile load before the first mma).
void CudaEmitter::find_streamed_operands() {
  constexpr int64_t kMinRegisters = 64;
  constexpr size_t kMaxDistance = 64;  // statements between the load and the dot
  std::unordered_map<int, int> reads = count_tensor_reads(program_.body);
  auto read_once = [&](const Tensor& t) { return reads[t->id] == 1; };
  for (const StmtNode* seq : statement_sequences(program_.body)) {
    for (size_t p = 0; p < seq->seq.size(); ++p) {
      const StmtNode& ls = *seq->seq[p];
      if (ls.kind != StmtKind::Inst || ls.inst->op != Op::LoadShared) continue;
      const Instruction& load = *ls.inst;
      if (!ldmatrix_layout_fits(load) || is_packed(load.output->dtype) || !read_once(load.output)) continue;
      if (plan_.layout_of(load.output).local_size() * load.output->dtype.bits() / 32 < kMinRegisters) continue;
      const auto& [dot_plan, which] = mma_operands_.at(load.output->id);
      const DotPlan& dp = *dot_plan;
      const BlockLayouts& bl = dp.layouts;
      const Instruction* permute = nullptr;
      for (size_t q = p + 1; q < seq->seq.size() && q <= p + kMaxDistance; ++q) {
        const StmtNode& s = *seq->seq[q];
        if (s.kind == StmtKind::Inst && which == 2 && !permute && s.inst->op == Op::Permute &&
            s.inst->inputs[0] == load.output) {
          permute = s.inst.get();
          if (!read_once(permute->output) || plan_.layout_of(permute->output) != bl.b) break;
          continue;
        }
        const Tensor& operand_tensor = which == 2 ? (permute ? permute->output : Tensor()) : load.output;
        if (s.kind == StmtKind::Inst && plan_.dots.count(s.inst.get()) && operand_tensor &&
            &plan_.dots.at(s.inst.get()) == &dp && s.inst->inputs[which == 0 ? 0 : 1] == operand_tensor) {
          streamed_loads_[&load] = s.inst.get();
          streamed_by_dot_[s.inst.get()].push_back(&load);
          if (permute) streamed_aliases_[permute->output->id] = load.output->id;
          break;
        }
        if (!keeps_shared_tiles(s)) break;
      }
    }
  }
}

void CudaEmitter::emit_streamed_operands(const Instruction& dot, const std::string& ik) {
  auto it = streamed_by_dot_.find(&dot);
  if (it == streamed_by_dot_.end()) return;
  for (const Instruction* load : it->second) emit_ldmatrix_loads(*load, streamed_regs_.at(load), ik);
}

void CudaEmitter::find_written_globals() {
  std::unordered_map<int, int> pointer_of;  // global tensor id -> pointer var id (-1: workspace)
  std::unordered_set<int> written;
  std::vector<std::pair<int, int>> views;
  for_each_inst(program_.body, [&](const StmtNode& s) {
    const Instruction& i = *s.inst;
    if (i.op == Op::GlobalView) pointer_of[i.output->id] = i.args[0]->is_var() ? i.args[0]->var_id : -2 - i.output->id;
    if (i.op == Op::GlobalTensor) pointer_of[i.output->id] = -1000000 - i.workspace;
    if (i.op == Op::StoreGlobal) written.insert(pointer_of[i.inputs[0]->id]);
  });
  for (auto& [tensor, ptr] : pointer_of)
    if (written.count(ptr)) written_globals_.insert(tensor);
}

void CudaEmitter::find_read_tensors() {
  for (const auto& [id, count] : count_tensor_reads(program_.body)) read_tensors_.insert(id);
}

namespace {
struct Declares : StmtVisitor {
  std::vector<Expr> vars;
  void visit_declare(const Stmt& s) override { vars.push_back(s->var); }
};

// C library and CUDA device functions that runtime.cuh's headers declare, and C's own
// names; generated names are lower case, so only lower-case ones can clash.
const std::unordered_set<std::string>& library_functions() {
  static const std::unordered_set<std::string> names = {
      "main", "printf", "sprintf", "snprintf", "puts", "malloc", "calloc", "realloc", "free",
      "memcpy", "memset", "memmove", "memcmp", "strlen", "strcmp", "assert", "abort", "exit",
      "clock", "clock64", "abs", "labs", "llabs", "fabs", "fabsf", "min", "max", "fmin", "fminf",
      "fmax", "fmaxf", "exp", "expf", "exp2", "exp2f", "exp10", "exp10f", "expm1", "expm1f",
      "log", "logf", "log2", "log2f", "log10", "log10f", "log1p", "log1pf", "pow", "powf", "sqrt",
      "sqrtf", "rsqrt", "rsqrtf", "cbrt", "cbrtf", "sin", "sinf", "cos", "cosf", "tan", "tanf",
      "asin", "asinf", "acos", "acosf", "atan", "atanf", "atan2", "atan2f", "sinh", "sinhf",
      "cosh", "coshf", "tanh", "tanhf", "erf", "erff", "erfc", "erfcf", "floor", "floorf",
      "ceil", "ceilf", "round", "roundf", "rint", "rintf", "trunc", "truncf", "fmod", "fmodf",
      "fma", "fmaf", "hypot", "hypotf", "ldexp", "ldexpf", "frexp", "frexpf", "modf", "modff",
      "isnan", "isinf", "isfinite", "signbit", "copysign", "copysignf", "lgamma", "tgamma",
      "sincos", "sincosf", "norm", "div", "rand", "srand", "time", "signal", "raise"};
  return names;
}

// The kernel is an extern "C" symbol next to everything the runtime header declares: a
// script class named Printf, Main or Float would otherwise define `printf`, `main` or
// `float`. Only such names get the suffix, so every other kernel keeps its name.
std::string kernel_symbol(const std::string& name) {
  const bool reserved_prefix = name.rfind("tl_", 0) == 0 || name.rfind("__", 0) == 0 ||
                               (name.size() > 1 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1])));
  if (cpp_reserved().count(name) || library_functions().count(name) || reserved_prefix) return name + "_kernel";
  return name;
}

}  // namespace

GeneratedKernel CudaEmitter::run() {
  GeneratedKernel k;
  k.name = kernel_symbol(program_.name);
  k.threads = threads_;
  // Scalars are declared up front: a variable first assigned inside a branch or loop
  // stays visible after it, as in Python.
  Declares declares;
  declares.visit_stmt(program_.body);
  for (auto& v : declares.vars) {
    used_names_.insert(sanitize(v->name));
    line(ctype(v->dtype) + " " + sanitize(v->name) + ";");
  }
  ops::prepare_copy_lowering(*this);
  stmt(program_.body);
  ops::finish_copy_lowering(*this);
  // A TMA store reads its shared tile after its instruction; the block's shared memory
  // must outlive that read (the interpreter completes every copy at exit).
  if (tma_stores_) line("if (tl_tid == 0) asm volatile(\"cp.async.bulk.wait_group.read 0;\" ::: \"memory\");");
  std::string body = out_.str();
  int64_t dynamic_smem = smem_.peak();
  ops::place_copy_ring(*this, body, dynamic_smem);

  std::ostringstream src;
  src << "// generated by tilus from " << program_.source_file << "\n";
  src << "#include \"tilus/runtime.cuh\"\n";
  if (options_.bounds_check) src << "#include \"tilus/bounds.cuh\"\n";
  src << "\n";
  for (auto& h : helpers_) src << h << "\n";
  if (reallocates_registers_) {
    // ptxas ignores setmaxnreg (warning C7508) unless the entry register count is fixed;
    // one block per SM gives every warp its share of the register file at entry.
    src << "extern \"C\" __global__ void __launch_bounds__(" << threads_ << ", 1) ";
  } else {
    src << "extern \"C\" __global__ void TILUS_LAUNCH_BOUNDS(" << threads_ << ") ";
  }
  if (program_.cluster != std::array<int64_t, 3>{1, 1, 1}) {
    // An ordinary launch of a kernel declared with cluster dimensions runs it in clusters.
    TILUS_CHECK(options_.sm90, "NotImplementedError",
                "self.attrs.cluster_blocks needs sm_90a (thread-block clusters); build for sm_90a");
    src << "__cluster_dims__(" << program_.cluster[0] << ", " << program_.cluster[1] << ", " << program_.cluster[2]
        << ") ";
  }
  src << k.name << "(";
  bool first = true;
  for (auto& p : program_.params) {
    src << (first ? "" : ", ") << ctype(p->dtype) << " " << sanitize(p->name);
    first = false;
    k.params.push_back({p->name, p->dtype, -1});
  }
  for (size_t w = 0; w < program_.workspaces.size(); ++w) {
    const Tensor& t = program_.workspaces[w].tensor;
    src << (first ? "" : ", ") << ctype(t->dtype.pointer_to()) << " tl_workspace" << w;
    first = false;
    k.params.push_back({"tl_workspace" + std::to_string(w), t->dtype.pointer_to(), static_cast<int>(w)});
  }
  // TMA tensor maps (ops/tma.cc), by value: the TMA unit reads them from parameter space.
  for (size_t m = 0; m < tma_maps_.size(); ++m) {
    src << (first ? "" : ", ") << "const __grid_constant__ tilus::TmaDescriptor tl_tma" << m;
    first = false;
  }
  if (options_.bounds_check) {
    // After every other parameter, so the unchecked parameter list is a prefix.
    for (size_t p = 0; p < program_.params.size(); ++p) {
      if (!program_.params[p]->dtype.is_pointer) continue;
      const std::string name = "tl_bc_size" + std::to_string(p);
      src << (first ? "" : ", ") << "long long " << name;
      first = false;
      KernelParam kp{name, dtypes::int64, -1};
      kp.bounds_of = static_cast<int>(p);
      k.params.push_back(kp);
    }
    src << (first ? "" : ", ") << "tilus::BoundsRecord* tl_bounds";
    KernelParam record{"tl_bounds", dtypes::uint64, -1};
    record.bounds_record = true;
    k.params.push_back(record);
    k.bounds_sites = bounds_sites_;
  }
  src << ") {\n";
  // wgmma's and TMA's swizzled tiles must start at multiples of 1024 bytes
  // (codegen/device/wgmma.cuh, ops/tma.cc)
  const bool align_1024 = !plan_.wgmma_roots.empty() || !plan_.tma_roots.empty();
  src << "  extern __shared__ __align__(" << (align_1024 ? 1024 : 128)
      << ") unsigned char tl_smem[];\n";
  src << "  const int tl_tid = threadIdx.x;\n";
  if (banded_launch_) {
    // Blocks that run at the same time cover a band of 8 blocks along x and sweep y, so
    // they share their x and y tiles in L2. Every (x, y) is still run once, and z (the
    // slowest launch dimension) keeps its order; only the order within a z plane changes.
    src << "  const int tl_linear = (int)blockIdx.y * (int)gridDim.x + (int)blockIdx.x;\n"
           "  const int tl_band = 8 * (int)gridDim.y;  // blocks per band of 8 along x\n"
           "  const int tl_band_x = tl_linear / tl_band * 8;\n"
           "  const int tl_band_w = min((int)gridDim.x - tl_band_x, 8);\n"
           "  const int tl_block_x = tl_band_x + tl_linear % tl_band % tl_band_w;\n"
           "  const int tl_block_y = tl_linear % tl_band / tl_band_w;\n";
  }
  src << body << "}\n";
  k.source = src.str();
  k.dynamic_smem = dynamic_smem;
  k.copy_tma = copy_tma_;
  k.tma_maps = tma_maps_;
  return k;
}

void CudaEmitter::fence_for_wgmma() {
  if (!plan_.wgmma_roots.empty())
    line("tilus::fence_proxy_async_shared();  // shared writes -> visible to wgmma");
}

GeneratedKernel generate_cuda(const Program& program, const CodegenOptions& options) {
  check_transaction_bytes(program);  // a wait that could never complete hangs the GPU
  // The emitter prints the commits and waits of asynchronous dots as the pass placed them.
  std::shared_ptr<const Program> waited = place_copy_waits(program);
  if (verify_enabled()) verify(*waited, "the copy-wait pass");
  std::shared_ptr<const Program> lowered = lower_async(*waited, options.wgmma);
  if (verify_enabled()) verify(*lowered, "the async pass");
  GeneratedKernel kernel = CudaEmitter(*lowered, options).run();
  // The lowering's barriers take 64 bytes of shared memory more than cp.async: a kernel
  // that fits an sm_90 block (227 KB) only without them keeps cp.async.
  constexpr int64_t kSm90SharedPerBlock = 227 * 1024;
  if (kernel.copy_tma && kernel.dynamic_smem > kSm90SharedPerBlock) {
    CodegenOptions without = options;
    without.copy_tma = false;
    kernel = CudaEmitter(*lowered, without).run();
  }
  if (!options.ptxas_optimize) kernel.nvrtc_options.push_back("--ptxas-options=-O0");
  return kernel;
}

}  // namespace tilus
