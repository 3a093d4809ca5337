#include "transforms/view_extents.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/functor.h"

namespace tilus {

ViewExtents::ViewExtents(const Program& program, const HostEvaluator& evaluator)
    : program_(program), evaluator_(evaluator) {
  std::vector<Guard> guards;
  collect(program.body, guards);
  mark_tma_only(program);
}

void ViewExtents::mark_tma_only(const Program& program) {
  std::unordered_map<const TensorNode*, View*> by_tensor;
  for (View& v : views_) by_tensor[v.tensor] = &v;
  if (by_tensor.empty()) return;
  std::unordered_set<const TensorNode*> used, used_otherwise;
  auto use = [&](const Tensor& t, bool tma) {
    if (!t || !by_tensor.count(t.get())) return;
    used.insert(t.get());
    if (!tma) used_otherwise.insert(t.get());
  };
  for_each_inst(program.body, [&](const StmtNode& s) {
    const Instruction& i = *s.inst;
    const bool tma = i.op == Op::TmaGlobalToShared || i.op == Op::TmaSharedToGlobal;
    for (const Tensor& t : i.inputs) use(t, tma);
    if (!i.defines_output) use(i.output, tma);  // written through out=
  });
  for (auto& [tensor, view] : by_tensor) view->tma_only = used.count(tensor) && !used_otherwise.count(tensor);
}

void ViewExtents::collect(const Stmt& s, std::vector<Guard>& guards) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::Seq:
      for (const Stmt& c : s->seq) collect(c, guards);
      return;
    case StmtKind::If:
      guards.push_back({s->cond, true});
      collect(s->then_body, guards);
      guards.back().holds = false;
      collect(s->else_body, guards);
      guards.pop_back();
      return;
    // A loop body may run zero times, and what it declares usually depends on the
    // loop variable: its views are left to the interpreter's access checks.
    case StmtKind::For:
    case StmtKind::While:
    case StmtKind::ThreadGroup:
    case StmtKind::Declare:
    case StmtKind::Assign:
    case StmtKind::Break:
    case StmtKind::Continue: return;
    case StmtKind::Inst: {
      const Instruction& i = *s->inst;
      if (i.op != Op::GlobalView || !i.output) return;
      int param = evaluator_.pointer_param(i.args.at(0));
      if (param < 0) return;
      bool offsets32 = true;
      for (const Expr& stride : i.output->global_strides) offsets32 = offsets32 && stride->dtype.bits() <= 32;
      views_.push_back({param, i.output->dtype, i.output->global_shape, i.output->global_strides,
                        guards, i.output->name, s->loc, offsets32, false, i.output.get()});
      return;
    }
  }
}

bool ViewExtents::reach(const View& v, const std::vector<HostArg>& args, Reach& out) const {
  for (const Guard& g : v.guards) {
    int64_t c;
    if (!evaluator_.eval(g.cond, args, c) || (c != 0) != g.holds) return false;
  }
  out.shape.resize(v.shape.size());
  // Element offsets reached, relative to the pointer: [lo, hi].
  __int128 lo = 0, hi = 0;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    int64_t size, stride;
    if (!evaluator_.eval(v.shape[d], args, size) || !evaluator_.eval(v.strides[d], args, stride))
      return false;
    out.shape[d] = size;
    if (size <= 0) return false;  // an empty view touches nothing
    __int128 span = static_cast<__int128>(size - 1) * stride;
    (span < 0 ? lo : hi) += span;
  }
  const int64_t elem_bits = v.dtype.bits();
  const __int128 limit = INT64_MAX / 2;
  if (lo < -limit || hi > limit) {
    out.first_byte = lo < -limit ? -limit : 0;
    out.end_byte = limit;
    return true;
  }
  out.first_byte = static_cast<int64_t>(lo * elem_bits / 8);
  out.end_byte = static_cast<int64_t>(((hi + 1) * elem_bits + 7) / 8);
  return true;
}

int ViewExtents::first_misfit(const std::vector<HostArg>& args, const std::vector<int64_t>& param_bytes,
                              Reach* reach_out) const {
  Reach r;
  for (size_t i = 0; i < views_.size(); ++i) {
    const View& v = views_[i];
    if (static_cast<size_t>(v.param) >= param_bytes.size() || param_bytes[v.param] < 0) continue;
    if (!reach(v, args, r)) continue;
    if (r.first_byte < 0 || r.end_byte > param_bytes[v.param]) {
      if (reach_out) *reach_out = r;
      return static_cast<int>(i);
    }
  }
  return -1;
}

int ViewExtents::first_overflow(const std::vector<HostArg>& args, Reach* reach_out) const {
  Reach r;
  for (size_t i = 0; i < views_.size(); ++i) {
    const View& v = views_[i];
    if (!v.offsets32 || v.tma_only || !reach(v, args, r)) continue;
    const int64_t elem_bits = v.dtype.bits();
    const int64_t first = r.first_byte * 8 / elem_bits, last = r.end_byte * 8 / elem_bits - 1;
    if (first < INT32_MIN || last > INT32_MAX) {
      if (reach_out) *reach_out = r;
      return static_cast<int>(i);
    }
  }
  return -1;
}

namespace {
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t d = 0; d < shape.size(); ++d) out += (d ? ", " : "") + std::to_string(shape[d]);
  return out + "]";
}
}  // namespace

std::string ViewExtents::misfit_message(const std::vector<HostArg>& args,
                                        const std::vector<int64_t>& param_bytes) const {
  Reach r;
  int i = first_misfit(args, param_bytes, &r);
  if (i < 0) return "";
  const View& v = views_[i];
  const Expr& param = program_.params[v.param];
  const int64_t have = param_bytes[v.param];
  const int64_t elem_bits = v.dtype.bits();
  std::string view = "global_view " + v.name + " (shape " + shape_text(r.shape) + " of " +
                     v.dtype.name();
  if (v.loc.known()) view += ", at " + v.loc.str();
  view += ")";
  if (r.first_byte < 0) {
    return cat("argument '", param->name, "': ", view, " reaches ", -r.first_byte,
               " bytes before the start of its tensor (a negative stride)");
  }
  return cat("argument '", param->name, "' is too small for ", view, ": the view spans ",
             r.end_byte * 8 / elem_bits, " elements (", r.end_byte, " bytes), the tensor has ",
             have * 8 / elem_bits, " (", have, " bytes)");
}

std::string ViewExtents::offset_overflow_message(const std::vector<HostArg>& args) const {
  Reach r;
  int i = first_overflow(args, &r);
  if (i < 0) return "";
  const View& v = views_[i];
  const int64_t elems = r.end_byte * 8 / v.dtype.bits();
  std::string view = "global_view " + v.name + " (shape " + shape_text(r.shape) + " of " + v.dtype.name();
  if (v.loc.known()) view += ", at " + v.loc.str();
  return cat(view, ") spans ", elems, " elements, more than the 32-bit element offsets it is addressed ",
             "with reach (2147483647: its sizes are int32); declare the sizes that shape it int64 ",
             "(e.g. `m_size: int64`), which makes its offsets 64-bit");
}

}  // namespace tilus
