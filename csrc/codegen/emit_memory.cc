// Global and shared memory: views, allocations, loads and stores, cp.async, ldmatrix,
// and layout conversions through shared memory.
#include <algorithm>
#include <numeric>

#include "codegen/emitter.h"
#include "ir/packed.h"
#include "layout/register_views.h"
#include "transforms/pointer_alignment.h"

namespace tilus {

namespace {
Expr add(Expr a, Expr b) { return make_binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return make_binary(BinaryOp::Mul, std::move(a), std::move(b)); }
}  // namespace

namespace memory_index {
int64_t pow2_divisor(int64_t n, int64_t cap) {
  int64_t v = 1;
  while (v * 2 <= cap && n % (v * 2) == 0) v *= 2;
  return v;
}

std::vector<Expr> global_index(const std::vector<Expr>& offsets, const std::vector<int>& dims,
                               const std::vector<Expr>& coords) {
  std::vector<Expr> gi = offsets;
  for (size_t d = 0; d < dims.size(); ++d) gi[dims[d]] = add(gi[dims[d]], coords[d]);
  return gi;
}
}  // namespace memory_index
using memory_index::global_index;
using memory_index::pow2_divisor;

// ------------------------------------------------------------------ global tensors

void CudaEmitter::emit_global_view(const Instruction& i) {
  bind_global(i.output, expr(i.args[0]), "", pointer_alignment(i.args[0]));
  if (!options_.bounds_check) return;
  const int k = pointer_origin(i.args[0]);
  if (k < 0) return;  // no single parameter's tensor holds it: left unchecked
  GlobalInfo& g = globals_.at(i.output->id);
  g.bounds_param = k;
  g.bounds_base = fresh(g.ptr + "_bc");
  line("const long long " + g.bounds_base + " = (long long)((const char*)" + g.ptr +
       " - (const char*)" + param_cname(k) + ");  // bytes from the start of '" +
       program_.params[static_cast<size_t>(k)]->name + "'");
}

void CudaEmitter::emit_global_tensor(const Instruction& i) {
  bind_global(i.output, "tl_workspace" + std::to_string(i.workspace),
              i.requires_clean ? ", kept zeroed between launches" : "", 16);  // runtime/workspace: 256-byte blocks
}

void CudaEmitter::bind_global(const Tensor& t, const std::string& pointer, const std::string& note,
                              int64_t align_bytes) {
  GlobalInfo g;
  g.ptr = fresh(t->name);
  g.align_bytes = align_bytes;
  g.shape = t->global_shape;
  g.strides = t->global_strides;
  line(ctype(t->dtype.pointer_to()) + " " + g.ptr + " = " + pointer + ";  // " + t->type_str() + note);
  // Shapes and strides are frozen at the view: later assignments to the variables they
  // use do not change the view (as in the interpreter).
  auto freeze = [&](const Expr& e, const std::string& what, std::vector<std::string>& names,
                    std::vector<Expr>& values) {
    if (e->is_const() || e->is_var()) {
      names.push_back(expr(e));
      values.push_back(e);
      return;
    }
    std::string n = fresh(g.ptr + "_" + what);
    line("const " + ctype(e->dtype) + " " + n + " = " + expr(e) + ";");
    names.push_back(n);
    values.push_back(internal_var(n, e->dtype));
  };
  for (size_t d = 0; d < g.shape.size(); ++d) freeze(g.shape[d], "shape" + std::to_string(d), g.shape_c, g.shape_v);
  for (size_t d = 0; d < g.strides.size(); ++d) freeze(g.strides[d], "stride" + std::to_string(d), g.stride_c, g.stride_v);
  globals_[t->id] = g;
}

int64_t CudaEmitter::pointer_alignment(const Expr& e) const {
  const PointerFacts facts{program_, [&](int k) { return options_.assumes_aligned(k); }, div_,
                           [&](int view) { return globals_.at(view).align_bytes; }};
  return tilus::pointer_alignment(e, facts);
}

int64_t CudaEmitter::global_vector(const GlobalInfo& g, const std::vector<Expr>& offsets,
                                   const std::vector<int>& dims, int64_t tile_last,
                                   int64_t dtype_bits, bool need_full_vectors, bool* partial_last) const {
  int last = static_cast<int>(g.shape.size()) - 1;
  int64_t c;
  if (partial_last) *partial_last = false;
  if (!options_.pointers_aligned || dims.empty() || dims.back() != last) return 1;  // empty: one element
  if (!is_const_int(g.strides[last], &c) || c != 1) return 1;
  // Bounds-checked builds check every access for exactly its bytes: no partial vectors.
  if (options_.bounds_check) partial_last = nullptr;
  int64_t v = pow2_divisor(tile_last, std::max<int64_t>(1, 128 / dtype_bits));
  for (; v > 1; v /= 2) {
    // a run's bytes (6 for 16 3-bit codes) start at multiples of their power-of-two part
    const int64_t run_bytes = std::max<int64_t>(1, v * dtype_bits / 8);
    bool ok = g.align_bytes % (run_bytes & -run_bytes) == 0 && div_.is_multiple(offsets[last], v);
    for (int d = 0; d < last && ok; ++d) ok = div_.is_multiple(g.strides[d], v);
    const bool cut = need_full_vectors && !div_.is_multiple(g.shape[last], v);  // a row's end may cut one
    if (ok && cut && !partial_last) ok = false;
    if (ok) {
      if (partial_last) *partial_last = cut;
      break;
    }
  }
  return v;
}

namespace memory_index {
std::string in_bounds(CudaEmitter& e, const std::vector<Expr>& gi,
                      const CudaEmitter::GlobalInfo& g, int skip_dim) {
  std::string cond;
  for (size_t d = 0; d < gi.size(); ++d) {
    if (static_cast<int>(d) == skip_dim) continue;
    // one unsigned compare for 0 <= index < size; 64 bits when either is (int64 sizes)
    const bool wide = gi[d]->dtype.bits() > 32 || g.shape_v[d]->dtype.bits() > 32;
    const std::string u = wide ? "(unsigned long long)(" : "(unsigned)(";
    cond += std::string(cond.empty() ? "" : " && ") + u + e.expr(gi[d]) + ") < " + u + g.shape_c[d] + ")";
  }
  return cond.empty() ? "true" : cond;
}

// The elements of a vector of `vec` at index gi that lie inside view g (all of them, or
// the first few of the vector a row's end cuts, or 0), for a row whose last extent is not
// known to be a multiple of the vector (global_vector's partial_last). The index is a
// multiple of vec, so a vector never starts before column 0 and ends after it.
std::string partial_count(CudaEmitter& e, const std::vector<Expr>& gi, const CudaEmitter::GlobalInfo& g,
                          int64_t vec, const std::string& valid) {
  const int last = static_cast<int>(gi.size()) - 1;
  const bool wide = gi[last]->dtype.bits() > 32 || g.shape_v[last]->dtype.bits() > 32;
  const std::string type = wide ? "(long long)" : "(int)";
  std::string cond = in_bounds(e, gi, g);
  if (!valid.empty()) cond = valid + " && " + cond;
  return "(" + cond + ") ? (int)tilus::min_(" + type + std::to_string(vec) + ", " + type + "(" + g.shape_c[last] +
         ") - " + type + "(" + e.expr(gi[last]) + ")) : 0";
}

Expr global_offset(const std::vector<Expr>& gi, const CudaEmitter::GlobalInfo& g) {
  Expr off = make_int(0);
  for (size_t d = 0; d < gi.size(); ++d) off = add(off, mul(gi[d], g.stride_v[d]));
  return off;
}

Expr thread_part_offset(const std::vector<Expr>& offsets, const std::vector<int>& dims,
                        const RegisterLayout& layout, const Expr& tid, const CudaEmitter::GlobalInfo& g) {
  return global_offset(global_index(offsets, dims, layout.thread_coord_exprs(tid)), g);
}

Expr loop_part_offset(const CudaEmitter::Element& el, const std::vector<int>& dims, size_t view_rank,
                      const CudaEmitter::GlobalInfo& g) {
  std::vector<Expr> coords(el.coords.size(), make_int(0));  // el.coords - el.thread_coords
  for (const CudaEmitter::Element::Loop& loop : el.loops)
    for (size_t d = 0; d < coords.size(); ++d)
      if (loop.step[d]) coords[d] = add(coords[d], mul(loop.var, make_int(loop.step[d])));
  return global_offset(global_index(std::vector<Expr>(view_rank, make_int(0)), dims, coords), g);
}
}  // namespace memory_index
using memory_index::global_offset;
using memory_index::in_bounds;
using memory_index::loop_part_offset;
using memory_index::thread_part_offset;
using memory_index::partial_count;

int64_t CudaEmitter::realigned_run(const Tensor& view, const std::vector<int>& dims, DataType dtype) const {
  // Bounds-checked builds keep element accesses: each is checked for exactly its bytes.
  return options_.bounds_check ? 0 : realignable_run(view, dims, dtype);
}

std::string CudaEmitter::realigned_load(const GlobalInfo& g, const std::vector<Expr>& gi, int64_t run,
                                        DataType dtype, const std::string& valid, bool bypass_l1) {
  const int last = static_cast<int>(gi.size()) - 1;
  const std::string bytes = std::to_string(dtype.bits() / 8);
  // 64-bit arithmetic only where an index or the extent is 64 bits wide
  const bool wide = gi[last]->dtype.bits() > 32 || g.shape_v[last]->dtype.bits() > 32;
  const std::string type = wide ? "(long long)" : "(int)", zero = wide ? "0LL" : "0";
  const std::string idx = type + "(" + expr(gi[last]) + ")";
  const std::string n = std::to_string(run) + (wide ? "LL" : "");
  // Bytes [lo, hi) of the run lie inside the view: a run may start before column 0 (a
  // negative offset) or end past the row.
  std::string cond = in_bounds(*this, gi, g, last);
  if (!valid.empty()) cond = valid + " && " + cond;
  const std::string lo = fresh("tl_lo"), hi = fresh("tl_hi");
  line("const int " + lo + " = (int)tilus::min_(" + n + ", tilus::max_(" + zero + ", -" + idx + ")) * " + bytes + ";");
  line("const int " + hi + " = (" + cond + ") ? (int)tilus::max_(" + zero + ", tilus::min_(" + n + ", " + type + "(" +
       g.shape_c[last] + ") - " + idx + ")) * " + bytes + " : 0;");
  const std::string at = g.ptr + " + " + expr(global_offset(gi, g));
  return std::string("tilus::load_realigned_16<") + (bypass_l1 ? "true" : "false") + ">(" + at + ", " + lo +
         ", " + hi + ")";
}

void CudaEmitter::emit_load_global(const Instruction& i) {
  if (is_packed(i.inputs[0]->dtype)) return emit_load_global_packed(i);
  const Tensor& t = i.output;
  const RegisterLayout& layout = plan_.layout_of(t);
  const GlobalInfo& g = globals_.at(i.inputs[0]->id);
  std::string r = declare_reg(t, layout);
  bool partial = false;
  int64_t vec = global_vector(g, i.args, i.dims, t->shape.empty() ? 1 : t->shape.back(), t->dtype.bits(), true, &partial);
  vec = pow2_divisor(innermost_run(layout), vec);
  partial = partial && vec > 1 && !div_.is_multiple(g.shape.back(), vec);
  int64_t bytes = whole_bytes(t->dtype, vec, "load_global: one access");
  // Memory this kernel also writes (split-K partials) is read around L1, which is not
  // coherent with the other SMs' writes.
  bool bypass_l1 = written_globals_.count(i.inputs[0]->id) > 0;
  std::string load = bypass_l1 ? "tilus::load_global_cg<" : "tilus::load_global_vec<";
  // Runs of 16 bytes in registers that global memory gives at most 4 bytes at a time (a
  // row of unknown alignment): realigned loads, two 16-byte loads a run.
  const int64_t realign = realigned_run(i.inputs[0], i.dims, t->dtype);
  const bool realigned = realign > 0 && vec * t->dtype.bits() <= 32 && innermost_run(layout) % realign == 0 &&
                         !t->shape.empty() && t->shape.back() % realign == 0;
  if (realigned) {
    line("// load_global as realigned 16-byte loads (row alignment unknown)");
    for_each_local(layout, realign, [&](const Element& el) {
      auto gi = global_index(i.args, i.dims, el.coords);
      const std::string value = realigned_load(g, gi, realign, t->dtype, tile_mask(layout, t->shape, el), bypass_l1);
      line("{ const uint4 tl_run = " + value + "; memcpy(" + r + " + " + expr(el.local) + ", &tl_run, 16); }");
    });
    return;
  }
  if (partial) line("// load_global: 16-byte vectors, the one a row's end cuts read whole and zeroed past the end");
  for_each_local(layout, vec, [&](const Element& el) {
    auto gi = global_index(i.args, i.dims, el.coords);
    std::string src = g.ptr + " + " + expr(global_offset(gi, g));
    std::string dst = "(" + r + " + " + expr(el.local) + ")";
    if (partial) {
      const std::string n = fresh("tl_n");
      line("const int " + n + " = " + partial_count(*this, gi, g, vec, tile_mask(layout, t->shape, el)) + ";");
      // The whole vector tested first: its load's result is not used (masked) where it is
      // issued, so a load issued ahead (the next row's) stays in flight.
      open("if (" + n + " == " + std::to_string(vec) + ")");
      line(load + std::to_string(bytes) + ">(" + dst + ", " + src + ");");
      close("} else if (" + n + " > 0) {");
      ++indent_;
      line("tilus::load_global_vec_part<" + std::to_string(bytes) + ", " + (bypass_l1 ? "true" : "false") + ">(" +
           dst + ", " + src + ", " + n + " * " + std::to_string(bytes / vec) + ");");
      close("} else {");
      ++indent_;
      line("#pragma unroll");
      line("for (int z = 0; z < " + std::to_string(vec) + "; ++z) " + dst + "[z] = " + zero(t->dtype) + ";");
      close();
      return;
    }
    std::string cond = in_bounds(*this, gi, g);
    const std::string mask = tile_mask(layout, t->shape, el);
    if (!mask.empty()) cond = mask + " && " + cond;
    const std::string ok = bounds_guard("load_global", i.inputs[0], g, cond, global_offset(gi, g),
                                        std::to_string(bytes), gi);
    if (!ok.empty()) cond = cond + " && " + ok;
    if (vec == 1 && !bypass_l1) {
      line(r + "[" + expr(el.local) + "] = (" + cond + ") ? *(" + src + ") : " + zero(t->dtype) + ";");
      return;
    }
    open("if (" + cond + ")");
    line(load + std::to_string(bytes) + ">(" + dst + ", " + src + ");");
    close("} else {");
    ++indent_;
    line("#pragma unroll");
    line("for (int z = 0; z < " + std::to_string(vec) + "; ++z) " + dst + "[z] = " + zero(t->dtype) + ";");
    close();
  });
}

// A store of a tile lying wholly inside its tensor needs no per-element test: one test of
// the tile's first and last corners (the index is the offset plus the element's
// coordinate, so both corners in bounds means every element is) picks a branch-free copy.
// Besides the compares it saves, this keeps ptxas from serialising a wgmma k-loop whose
// accumulators are stored straight after it: with only per-element tests after the loop,
// ptxas serialised MatmulV3's wgmmas and, unrolled, scheduled accumulator reads above the
// final wgmma wait. Empty when there is nothing to split: a padded tile (its mask stays),
// bounds-checked builds (every access keeps its check), or no runtime bound at all.
std::string CudaEmitter::whole_tile_in_bounds(const Instruction& i, const RegisterLayout& layout,
                                              const std::vector<int64_t>& extent, const GlobalInfo& g) {
  if (options_.bounds_check || i.args.empty()) return "";
  for (int d = 0; d < layout.rank(); ++d)
    if (layout.shape[d] > extent[d]) return "";
  std::vector<Expr> first, last;
  for (int64_t e : extent) {
    first.push_back(make_int(0));
    last.push_back(make_int(e - 1));
  }
  return "(" + in_bounds(*this, global_index(i.args, i.dims, first), g) + ") && (" +
         in_bounds(*this, global_index(i.args, i.dims, last), g) + ")";
}

void CudaEmitter::split_on_whole_tile(const std::string& whole, const std::string& untested,
                                      const std::function<void(bool tested)>& emit) {
  if (whole.empty()) return emit(true);
  line("// the whole tile inside its tensor: " + untested);
  open("if (" + whole + ")");
  emit(false);
  close("} else {");
  ++indent_;
  emit(true);
  close();
}

void CudaEmitter::emit_store_global(const Instruction& i) {
  if (is_packed(i.inputs[0]->dtype)) return emit_store_global_packed(i);
  const Tensor& x = i.inputs[1];
  const RegisterLayout& layout = plan_.layout_of(x);
  const GlobalInfo& g = globals_.at(i.inputs[0]->id);
  std::string r = reg_name(x);
  bool partial = false;
  int64_t vec = global_vector(g, i.args, i.dims, x->shape.empty() ? 1 : x->shape.back(), x->dtype.bits(), true, &partial);
  vec = pow2_divisor(innermost_run(layout), vec);
  partial = partial && vec > 1 && !div_.is_multiple(g.shape.back(), vec);
  int64_t bytes = whole_bytes(x->dtype, vec, "store_global: one access");
  auto store_each = [&](bool tested) {
    if (tested && partial) line("// 16-byte vectors, the one a row's end cuts element by element");
    for_each_local(layout, vec, [&](const Element& el) {
      auto gi = global_index(i.args, i.dims, el.coords);
      if (tested && partial) {
        const std::string n = fresh("tl_n"), dst = g.ptr + " + " + expr(global_offset(gi, g));
        const std::string src = r + " + " + expr(el.local);
        line("const int " + n + " = " + partial_count(*this, gi, g, vec, tile_mask(layout, x->shape, el)) + ";");
        line("if (" + n + " == " + std::to_string(vec) + ") tilus::store_global_vec<" + std::to_string(bytes) + ">(" +
             dst + ", " + src + ");");
        // a constant trip count: unrolled, the registers are not indexed at run time
        line("else {");
        line("  #pragma unroll");
        line("  for (int z = 0; z < " + std::to_string(vec) + "; ++z) if (z < " + n + ") (" + dst + ")[z] = (" + src +
             ")[z];");
        line("}");
        return;
      }
      std::string cond;
      if (tested) {
        cond = in_bounds(*this, gi, g);
        const std::string mask = tile_mask(layout, x->shape, el);
        if (!mask.empty()) cond = mask + " && " + cond;
        const std::string ok = bounds_guard("store_global", i.inputs[0], g, cond, global_offset(gi, g),
                                            std::to_string(bytes), gi);
        if (!ok.empty()) cond = cond + " && " + ok;
      }
      const std::string guard = tested ? "if (" + cond + ") " : "";
      std::string dst = g.ptr + " + " + expr(global_offset(gi, g));
      if (vec == 1) {
        line(guard + "*(" + dst + ") = " + r + "[" + expr(el.local) + "];");
      } else {
        line(guard + "tilus::store_global_vec<" + std::to_string(bytes) + ">(" + dst + ", &" + r + "[" +
             expr(el.local) + "]);");
      }
    });
  };
  std::string leader = replica_leader(layout);
  if (!leader.empty()) open("if (" + leader + ")");
  split_on_whole_tile(whole_tile_in_bounds(i, layout, x->shape, g), "no per-element test", store_each);
  if (!leader.empty()) close();
}

// ------------------------------------------------------------------ shared tensors

void CudaEmitter::emit_shared_tensor(const Instruction& i) {
  const Tensor& t = i.output;
  const SharedLayout& layout = plan_.shared.at(t->id);
  int64_t offset = smem_.allocate(storage_bytes(layout.size() * t->dtype.bits()), plan_.wgmma_roots.count(t->id) || plan_.tma_roots.count(t->id) ? 1024 : 128);
  smem_offset_[t->id] = offset;
  SharedInfo s;
  s.root = t->id;
  s.ptr = fresh(t->name);
  s.shape = t->shape;
  line(ctype(t->dtype) + "* " + s.ptr + " = reinterpret_cast<" + ctype(t->dtype) + "*>(tl_smem + " +
       std::to_string(offset) + ");  // " + t->type_str() + ", " + layout.str());
  shared_[t->id] = s;
}

void CudaEmitter::emit_slice_shared(const Instruction& i) {
  SharedInfo s = shared_.at(i.inputs[0]->id);
  // The indices are frozen: `sa[stage]` keeps meaning the stage it was taken at.
  for (size_t d = 0; d < i.args.size(); ++d) {
    const Expr& e = i.args[d];
    if (e->is_const()) {
      s.lead.push_back(e);
      continue;
    }
    std::string n = fresh(i.output->name + "_index" + (i.args.size() > 1 ? std::to_string(d) : ""));
    line("const int " + n + " = " + expr(e) + ";  // " + i.output->name + " = " +
         i.inputs[0]->name + "[...]");
    s.lead.push_back(internal_var(n));
  }
  if (!s.steps.empty()) {  // a slice of a transformed view: its indices are the view's
    const size_t own = i.args.size();
    ViewStep step;
    step.lead.assign(s.lead.end() - own, s.lead.end());
    s.lead.resize(s.lead.size() - own);
    s.steps.push_back(std::move(step));
  }
  s.shape = i.output->shape;
  shared_[i.output->id] = s;
}

std::vector<Expr> CudaEmitter::unview(const SharedInfo& s, std::vector<Expr> coords) {
  for (size_t k = s.steps.size(); k-- > 0;) {
    const ViewStep& step = s.steps[k];
    switch (step.kind) {
      case ViewStep::Kind::Slice:
        coords.insert(coords.begin(), step.lead.begin(), step.lead.end());
        break;
      case ViewStep::Kind::Permute: {
        std::vector<Expr> parent(coords.size());
        for (size_t d = 0; d < coords.size(); ++d) parent[step.dims[d]] = coords[d];
        coords = std::move(parent);
        break;
      }
      case ViewStep::Kind::Reshape: {
        // Trailing dimensions both shapes share map one to one; the rest goes through
        // the row-major index of the leading part.
        size_t a = step.from.size(), b = step.to.size();
        while (a > 1 && b > 1 && step.from[a - 1] == step.to[b - 1]) --a, --b;
        Expr linear = make_int(0);
        int64_t stride = 1;
        for (size_t d = b; d-- > 0;) {
          linear = add(linear, mul(coords[d], make_int(stride)));
          stride *= step.to[d];
        }
        std::vector<Expr> parent(step.from.size());
        stride = 1;
        for (size_t d = a; d-- > 0;) {
          Expr c = make_binary(BinaryOp::Div, linear, make_int(stride));
          if (d > 0) c = make_binary(BinaryOp::Mod, c, make_int(step.from[d]));
          parent[d] = c;
          stride *= step.from[d];
        }
        for (size_t d = 0; a + d < step.from.size(); ++d) parent[a + d] = coords[b + d];
        coords = std::move(parent);
        break;
      }
    }
  }
  return coords;
}

bool CudaEmitter::keeps_rows(const SharedInfo& s) {
  for (const ViewStep& step : s.steps) {
    if (step.kind == ViewStep::Kind::Permute && step.dims.back() != static_cast<int>(step.dims.size()) - 1)
      return false;
    if (step.kind == ViewStep::Kind::Reshape && step.from.back() != step.to.back()) return false;
  }
  return true;
}

// A view made only by reshapes of a dense row-major allocation (no swizzle, no padding)
// walks memory in order along its last dimension whatever its rows: a reshape of
// [rows, 32] bytes into [256, 16] (each thread's 16 bytes, the packed weights of
// examples/matmul_a16wx_hopper.py) reads with one 16-byte access a row. A vector never
// starts misaligned: the view begins at a multiple of its own size.
bool CudaEmitter::reshapes_dense_rows(const SharedInfo& s, const SharedLayout& l) {
  if (l.is_swizzled() || l.col_block || !l.has_dense_strides()) return false;
  for (const ViewStep& step : s.steps)
    if (step.kind != ViewStep::Kind::Reshape) return false;
  return true;
}

Expr CudaEmitter::shared_offset(const SharedInfo& s, const std::vector<Expr>& given) {
  const SharedLayout& layout = plan_.shared.at(s.root);
  const std::vector<Expr> coords = s.steps.empty() ? given : unview(s, given);
  // When a view's leading indices only move whole swizzle periods (a pipeline stage of
  // 128 rows, say), offset(lead, coords) = lead . strides + offset(0, coords). Keeping the
  // runtime stage out of the swizzle lets the compiler hoist each lane's address out of
  // the main loop: one add per access instead of a dozen integer ops.
  bool linear_lead = true;
  if (layout.is_swizzled()) {
    int64_t period = layout.rows_per_phase * layout.swizzle_chunks;
    for (size_t d = 0; d < s.lead.size(); ++d) {
      int64_t rows = layout.strides[d] / layout.shape.back();
      if (rows % period != 0) linear_lead = false;
    }
  }
  std::vector<Expr> full = s.lead;
  if (!linear_lead || s.lead.empty()) {
    full.insert(full.end(), coords.begin(), coords.end());
    return layout.offset_expr(full);
  }
  Expr lead_offset = make_int(0);
  for (size_t d = 0; d < s.lead.size(); ++d) {
    lead_offset = make_binary(BinaryOp::Add, lead_offset,
                              make_binary(BinaryOp::Mul, s.lead[d], make_int(layout.strides[d])));
    full[d] = make_int(0);
  }
  full.insert(full.end(), coords.begin(), coords.end());
  return make_binary(BinaryOp::Add, lead_offset, layout.offset_expr(full));
}

Expr CudaEmitter::element_offset(const SharedInfo& s, const RegisterLayout& layout, int64_t vec,
                                 const Element& el) {
  if (!s.steps.empty()) return shared_offset(s, el.coords);  // the walk below assumes a trailing view
  const SharedLayout& sl = plan_.shared.at(s.root);
  const int view_rank = static_cast<int>(s.shape.size());
  const int lead = sl.rank() - view_rank;
  // A padded register layout walks coordinates outside the view (masked by the caller).
  if (layout.shape != s.shape) return shared_offset(s, el.coords);
  // Per loop, the offset change of one step, when it is the same for every thread and
  // every position of the other loops (else nullopt): checked exhaustively, once.
  std::string key = sl.str() + "|" + layout.str() + "|" + std::to_string(vec) + "|" + std::to_string(lead);
  auto it = linear_walks_.find(key);
  if (it == linear_walks_.end()) {
    std::optional<std::vector<int64_t>> deltas;
    // The view is a slice at runtime leading indices (a pipeline stage, say), and a swizzle
    // can mix them into the offset: the walk must be linear at every leading position.
    constexpr int64_t kMaxLeadPositions = 64;  // beyond it, the general address (always right)
    int64_t lead_positions = 1;
    for (int r = 0; r < lead; ++r) lead_positions *= sl.shape[r];
    bool linear = lead_positions <= kMaxLeadPositions;
    std::vector<std::vector<int64_t>> leads{{}};
    for (int r = 0; r < lead && linear; ++r) {
      std::vector<std::vector<int64_t>> next;
      for (auto& prefix : leads)
        for (int64_t v = 0; v < sl.shape[r]; ++v) {
          next.push_back(prefix);
          next.back().push_back(v);
        }
      leads = std::move(next);
    }
    const std::vector<int64_t>* lead_at = &leads.front();
    auto at = [&](std::vector<int64_t> c) {
      c.insert(c.begin(), lead_at->begin(), lead_at->end());
      return sl.offset(c);
    };
    std::vector<int64_t> origin(view_rank, 0), d;
    for (auto& loop : el.loops) d.push_back(at(loop.step) - at(origin));
    const int64_t threads = layout.num_threads();
    for (size_t li = 0; li < leads.size() && linear; ++li) {
      lead_at = &leads[li];
      for (int64_t t = 0; t < threads && linear; ++t) {
        std::vector<int64_t> base = layout.coords(t, 0);
        const int64_t base_offset = at(base);
        std::vector<int64_t> digit(el.loops.size(), 0);
        while (linear) {  // every combination of loop positions
          std::vector<int64_t> c = base;
          int64_t expect = base_offset;
          for (size_t j = 0; j < el.loops.size(); ++j) {
            for (int r = 0; r < view_rank; ++r) c[r] += digit[j] * el.loops[j].step[r];
            expect += digit[j] * d[j];
          }
          linear = at(c) == expect;
          size_t j = 0;
          while (j < digit.size() && ++digit[j] == el.loops[j].trips) digit[j++] = 0;
          if (j == digit.size()) break;
        }
      }
    }
    if (linear) deltas = d;
    it = linear_walks_.emplace(key, deltas).first;
  }
  if (!it->second) return shared_offset(s, el.coords);
  Expr off = shared_offset(s, el.thread_coords);
  for (size_t j = 0; j < el.loops.size(); ++j)
    off = make_binary(BinaryOp::Add, off, make_binary(BinaryOp::Mul, el.loops[j].var, make_int((*it->second)[j])));
  return off;
}

int64_t CudaEmitter::shared_vector(const RegisterLayout& layout, const Tensor& t, const SharedInfo& s) const {
  int64_t vec = pow2_divisor(innermost_run(layout), std::max<int64_t>(1, 128 / t->dtype.bits()));
  vec = pow2_divisor(t->shape.empty() ? 1 : t->shape.back(), vec);  // a padded layout: no vector across the tile's end
  while (vec > 1 && !shared_contiguous(s, vec)) vec /= 2;
  return vec;
}

bool CudaEmitter::shared_contiguous(const SharedInfo& s, int64_t vec) const {
  const SharedLayout& l = plan_.shared.at(s.root);
  if (!keeps_rows(s)) return vec == 1 || reshapes_dense_rows(s, l);
  if (l.is_swizzled()) return vec <= l.chunk_elems;
  return l.strides.back() == 1;
}

void CudaEmitter::emit_load_shared(const Instruction& i) {
  if (plan_.folded_loads.count(&i)) {
    line("// " + i.output->name + " = load_shared(" + i.inputs[0]->name + "): read by wgmma in place");
    return;
  }
  if (emit_ldmatrix(i)) return;
  if (is_packed(i.inputs[0]->dtype)) return emit_load_shared_packed(i);
  const Tensor& t = i.output;
  const RegisterLayout& layout = plan_.layout_of(t);
  const SharedInfo& s = shared_.at(i.inputs[0]->id);
  std::string r = declare_reg(t, layout);
  const int64_t vec = shared_vector(layout, t, s);
  const int64_t bytes = whole_bytes(t->dtype, vec, "load_shared: one access");
  for_each_local(layout, vec, [&](const Element& el) {
    const std::string mask = tile_mask(layout, t->shape, el);
    if (!mask.empty()) open("if (" + mask + ")");
    std::string src = s.ptr + " + " + expr(element_offset(s, layout, vec, el));
    if (vec == 1)
      line(r + "[" + expr(el.local) + "] = *(" + src + ");");
    else
      line("tilus::load_shared_vec<" + std::to_string(bytes) + ">(&" + r + "[" +
           expr(el.local) + "], " + src + ");");
    if (!mask.empty()) close();
  });
}

void CudaEmitter::emit_store_shared(const Instruction& i) {
  if (is_packed(i.inputs[0]->dtype)) return emit_store_shared_packed(i);
  const Tensor& x = i.inputs[1];
  const RegisterLayout& layout = plan_.layout_of(x);
  const SharedInfo& s = shared_.at(i.inputs[0]->id);
  std::string r = reg_name(x);
  const int64_t vec = shared_vector(layout, x, s);
  const int64_t bytes = whole_bytes(x->dtype, vec, "store_shared: one access");
  std::string leader = replica_leader(layout);
  if (!leader.empty()) open("if (" + leader + ")");
  for_each_local(layout, vec, [&](const Element& el) {
    const std::string mask = tile_mask(layout, x->shape, el);
    if (!mask.empty()) open("if (" + mask + ")");
    std::string dst = s.ptr + " + " + expr(element_offset(s, layout, vec, el));
    if (vec == 1)
      line("*(" + dst + ") = " + r + "[" + expr(el.local) + "];");
    else
      line("tilus::store_shared_vec<" + std::to_string(bytes) + ">(" + dst + ", &" +
           r + "[" + expr(el.local) + "]);");
    if (!mask.empty()) close();
  });
  if (!leader.empty()) close();
  if (plan_.wgmma_roots.count(s.root) && !copy_tma_) fence_for_wgmma();  // else inst() fences
}

// ldmatrix for the operands of an mma dot read straight from shared memory.
bool CudaEmitter::ldmatrix_layout_fits(const Instruction& i) const {
  auto it = mma_operands_.find(i.output->id);
  if (it == mma_operands_.end()) return false;
  const DotPlan& dp = *it->second.first;
  int operand = it->second.second;
  const BlockLayouts& bl = dp.layouts;
  // operand 2: the [n, k] tile whose register transpose is B; permute_layout keeps each
  // thread's register order, so its array is B's.
  const RegisterLayout want = operand == 0 ? bl.a : operand == 1 ? bl.b : permute_layout(bl.b, {1, 0});
  return plan_.layout_of(i.output) == want && dp.kind == MmaKind::M16N8K16;
}

bool CudaEmitter::ldmatrix_applies(const Instruction& i) const {
  if (!ldmatrix_layout_fits(i)) return false;
  const SharedInfo& s = shared_.at(i.inputs[0]->id);
  if (!s.steps.empty()) return false;  // ldmatrix reads rows of a plain tile
  const SharedLayout& sl = plan_.shared.at(s.root);
  return sl.is_swizzled() ? sl.chunk_elems == 8 : (sl.strides.back() == 1 && s.shape.back() % 8 == 0);
}

bool CudaEmitter::emit_ldmatrix(const Instruction& i) {
  if (!ldmatrix_applies(i)) {
    // not ldmatrix after all (the shared tile's layout): loaded whole, where it stands
    auto streamed = streamed_loads_.find(&i);
    if (streamed != streamed_loads_.end()) {
      auto& loads = streamed_by_dot_[streamed->second];
      loads.erase(std::remove(loads.begin(), loads.end(), &i), loads.end());
      for (auto a = streamed_aliases_.begin(); a != streamed_aliases_.end();)
        a = a->second == i.output->id ? streamed_aliases_.erase(a) : std::next(a);
      streamed_loads_.erase(streamed);
    }
    return false;
  }
  const Tensor& t = i.output;
  std::string r = declare_reg(t, plan_.layout_of(t));
  std::string regs = fresh(r + "_u32");
  line("unsigned int* " + regs + " = reinterpret_cast<unsigned int*>(" + r + ");");
  if (streamed_loads_.count(&i)) {
    streamed_regs_[&i] = regs;
    line("// ldmatrix of " + t->name + ": one k step at a time inside its dot");
    return true;
  }
  emit_ldmatrix_loads(i, regs, "");
  return true;
}

void CudaEmitter::emit_ldmatrix_loads(const Instruction& i, const std::string& regs, const std::string& ik_given) {
  const auto& [dot_plan, operand] = mma_operands_.at(i.output->id);
  const BlockLayouts& bl = dot_plan->layouts;
  const SharedInfo& s = shared_.at(i.inputs[0]->id);
  std::string lane = "(tl_tid % 32)", warp = "(tl_tid / 32)";
  // opaque C++ expressions, printed verbatim inside the shared-offset arithmetic
  auto var = [&](const std::string& n) { return internal_var(n); };
  auto loop = [&](const std::string& v, int64_t n) {
    line("#pragma unroll");
    open("for (int " + v + " = 0; " + v + " < " + std::to_string(n) + "; ++" + v + ")");
  };
  // the k loop, unless the dot's own loop gives the step
  auto k_step = [&] { return ik_given.empty() ? fresh("ik") : ik_given; };
  if (operand == 0) {
    // A [m, k]: lanes 0-15 address rows 0-15 at k, lanes 16-31 the same rows at k + 8;
    // the four 8x8 matrices come back as a0a1, a2a3, a4a5, a6a7.
    std::string im = fresh("im"), ik = k_step();
    loop(im, bl.rep_m);
    if (ik_given.empty()) loop(ik, bl.rep_k);
    Expr row = var("(" + warp + " / " + std::to_string(bl.warps_n) + " * " +
                   std::to_string(bl.rep_m * 16) + " + " + im + " * 16 + " + lane + " % 16)");
    Expr col = var("(" + ik + " * 16 + " + lane + " / 16 * 8)");
    line("tilus::ldmatrix_x4(" + regs + " + (" + im + " * " + std::to_string(bl.rep_k) + " + " + ik +
         ") * 4, tilus::smem_u32(" + s.ptr + " + " + expr(shared_offset(s, {row, col})) + "));");
    if (ik_given.empty()) close();
    close();
    return;
  }
  std::string ik = k_step(), in = fresh("in");
  const int64_t pairs = bl.rep_n / 2;
  if (ik_given.empty()) loop(ik, bl.rep_k);
  if (operand == 2) {
    // B^T [n, k] (k contiguous), untransposed: lanes 0-7 / 8-15 address n rows 0-7 of an
    // 8-row block at k 0-7 / 8-15, lanes 16-31 the same for the next block. Each 8x8
    // matrix comes back as (row lane / 4, columns 2 (lane % 4) + {0, 1}) = (n, k), which
    // is B's fragment: the same registers b0b1, b2b3 as the transposing load below.
    std::string kcol = "(" + ik + " * 16 + " + lane + " / 8 % 2 * 8)";
    std::string wrow = warp + " % " + std::to_string(bl.warps_n) + " * " + std::to_string(bl.rep_n * 8);
    if (pairs > 0) {
      line("#pragma unroll");
      open("for (int " + in + " = 0; " + in + " < " + std::to_string(bl.rep_n) + " - 1; " + in + " += 2)");
      Expr row = var("(" + wrow + " + " + in + " * 8 + " + lane + " / 16 * 8 + " + lane + " % 8)");
      line("tilus::ldmatrix_x4(" + regs + " + (" + ik + " * " + std::to_string(bl.rep_n) + " + " + in +
           ") * 2, tilus::smem_u32(" + s.ptr + " + " + expr(shared_offset(s, {row, var(kcol)})) + "));");
      close();
    }
    if (bl.rep_n % 2 == 1) {
      Expr row = var("(" + wrow + " + " + std::to_string((bl.rep_n - 1) * 8) + " + " + lane + " % 8)");
      line("tilus::ldmatrix_x2(" + regs + " + (" + ik + " * " + std::to_string(bl.rep_n) + " + " +
           std::to_string(bl.rep_n - 1) + ") * 2, tilus::smem_u32(" + s.ptr + " + " +
           expr(shared_offset(s, {row, var(kcol)})) + "));");
    }
  } else {
    // B [k, n], transposed on load: lanes 0-7 / 8-15 address k rows 0-7 / 8-15 of an
    // 8-column block, lanes 16-31 the same for the next block; registers b0b1, b2b3 of
    // two neighbouring n atoms.
    std::string krow = "(" + ik + " * 16 + " + lane + " % 8 + " + lane + " / 8 % 2 * 8)";
    std::string wcol = warp + " % " + std::to_string(bl.warps_n) + " * " + std::to_string(bl.rep_n * 8);
    if (pairs > 0) {
      line("#pragma unroll");
      open("for (int " + in + " = 0; " + in + " < " + std::to_string(bl.rep_n) + " - 1; " + in + " += 2)");
      Expr col = var("(" + wcol + " + " + in + " * 8 + " + lane + " / 16 * 8)");
      line("tilus::ldmatrix_x4_trans(" + regs + " + (" + ik + " * " + std::to_string(bl.rep_n) +
           " + " + in + ") * 2, tilus::smem_u32(" + s.ptr + " + " +
           expr(shared_offset(s, {var(krow), col})) + "));");
      close();
    }
    if (bl.rep_n % 2 == 1) {
      Expr col = var("(" + wcol + " + " + std::to_string((bl.rep_n - 1) * 8) + ")");
      line("tilus::ldmatrix_x2_trans(" + regs + " + (" + ik + " * " + std::to_string(bl.rep_n) +
           " + " + std::to_string(bl.rep_n - 1) + ") * 2, tilus::smem_u32(" + s.ptr + " + " +
           expr(shared_offset(s, {var(krow), col})) + "));");
    }
  }
  if (ik_given.empty()) close();
}

// ------------------------------------------------------------------ cp.async

void CudaEmitter::emit_copy_async(const Instruction& i) {
  if (is_packed(i.inputs[1]->dtype)) return emit_copy_async_packed(i);
  const Tensor& src = i.inputs[0];
  const Tensor& dst = i.inputs[1];
  const GlobalInfo& g = globals_.at(src->id);
  const SharedInfo& s = shared_.at(dst->id);
  const int64_t bits = dst->dtype.bits();
  // The access width first (what the global view's alignment and the shared layout
  // allow), then the spread over the threads. Vector copies: runs of that width, lanes
  // consecutive. Element copies (no cp.async: 1- and 2-byte elements of rows that are not
  // vectors): runs of 8 bytes, lanes consecutive, so that the accesses of a run cover
  // whole 128-byte lines warp-wide while each lane's elements stay adjacent. Measured on
  // an H100 (2026-12-06, fp16, benchmarks/README.md): 16-byte runs put the lanes 16 bytes apart
  // (the seed matmul at 4096 x 4097 x 4103: 2785 us against 2014), single elements
  // leave each warp access half a line (a staged softmax over 8191-wide rows: 912 us
  // against 271).
  int64_t vec = global_vector(g, i.args, i.dims, dst->shape.back(), bits, false);
  while (vec > 1 && !shared_contiguous(s, vec)) vec /= 2;
  int64_t bytes = whole_bytes(dst->dtype, vec, "copy_async: one access");
  bool async = bytes == 4 || bytes == 8 || bytes == 16;
  // Rows of 1- or 2-byte elements not known to be aligned: 16-byte runs read by two
  // aligned loads each and shifted into place (realigned_load), one 16-byte store to
  // shared memory. Synchronous like the element copies they replace, with an eighth of
  // their memory instructions.
  const int64_t realign = async ? 0 : realigned_run(src, i.dims, dst->dtype);
  const bool realigned = realign > 0 && dst->shape.back() % realign == 0 && shared_contiguous(s, realign);
  if (!async) vec = realigned ? realign : 1;
  const int64_t spread = async || realigned ? vec : std::max<int64_t>(1, 64 / bits);
  RegisterLayout layout = auto_global_layout(dst->shape, threads_, spread);
  TILUS_ASSERT(innermost_run(layout) % vec == 0);  // vec divides the tile's rows (global_vector)
  // element copies: about 8 loads in flight a thread (a full unroll spills beside a
  // matmul's accumulators); realigned runs: two loads each
  const int outer_unroll = async ? 0 : realigned ? 4 : static_cast<int>(std::max<int64_t>(1, 8 / spread));
  std::string leader = replica_leader(layout);
  line(std::string("// copy_async ") + (async       ? "with cp.async of " + std::to_string(bytes) + " bytes"
                                        : realigned ? "as realigned 16-byte loads and 16-byte stores"
                                                    : "as plain loads and stores (alignment unknown)"));
  if (!leader.empty()) open("if (" + leader + ")");
  int last = static_cast<int>(g.shape.size()) - 1;
  bool full_chunks = div_.is_multiple(g.shape[last], vec);
  // cp.async sources: a thread's first chunk address once (64-bit), then each chunk at a
  // distance that unrolling turns into a constant, which ptxas folds into the copy's
  // immediate offset. An address from one 32-bit offset a chunk costs a 32-bit add and a
  // widening add pair each (ptxas cannot split a signed offset that may wrap).
  std::string src_base;
  if (async && !realigned) {
    src_base = fresh("tl_src");
    line("const auto " + src_base + " = " + g.ptr + " + " + expr(thread_part_offset(i.args, i.dims, layout, tid_, g)) +
         ";");
  }
  auto copy_each = [&](bool tested) {
    for_each_local(layout, vec, [&](const Element& el) {
      auto gi = global_index(i.args, i.dims, el.coords);
      std::string soff = expr(element_offset(s, layout, vec, el));
      std::string goff = expr(global_offset(gi, g));
      if (realigned) {
        const std::string value = realigned_load(g, gi, vec, dst->dtype, "", written_globals_.count(src->id) > 0);
        line("*reinterpret_cast<uint4*>(" + s.ptr + " + " + soff + ") = " + value + ";");
        return;
      }
      if (!async) {
        std::string cond = in_bounds(*this, gi, g);
        const std::string ok = bounds_guard("copy_async", src, g, cond, global_offset(gi, g),
                                            std::to_string(whole_bytes(dst->dtype, 1, "copy_async")), gi);
        if (!ok.empty()) cond = cond + " && " + ok;
        line(s.ptr + "[" + soff + "] = (" + cond + ") ? " + g.ptr + "[" + goff + "] : " + zero(dst->dtype) + ";");
        return;
      }
      const std::string src_at = src_base + " + " + expr(loop_part_offset(el, i.dims, i.args.size(), g));
      if (!tested) {
        line("tilus::cp_async_" + std::to_string(bytes) + "(tilus::smem_u32(" + s.ptr + " + " + soff + "), " +
             src_at + ", " + std::to_string(bytes) + ");");
        return;
      }
      // src-size < cp-size zero-fills the rest; with 0 nothing is read, so the address may
      // point past the tensor. When the last dimension is a multiple of the vector, a
      // chunk is entirely in or out and a predicate suffices.
      std::string n = fresh("tl_bytes");
      if (full_chunks) {
        line("const int " + n + " = (" + in_bounds(*this, gi, g) + ") ? " + std::to_string(bytes) + " : 0;");
      } else {
        line("const int " + n + " = (" + in_bounds(*this, gi, g, last) + ") ? tilus::max_(0, tilus::min_(" +
             std::to_string(bytes) + ", (" + g.shape_c[last] + " - (" + expr(gi[last]) + ")) * " +
             std::to_string(whole_bytes(dst->dtype, 1, "copy_async: a partial chunk")) + ")) : 0;");
      }
      // Checked: the bytes the chunk reads (a partial chunk at the tensor's end reads less).
      const std::string ok = bounds_guard("copy_async", src, g, n + " > 0", global_offset(gi, g), n, gi);
      const std::string size = ok.empty() ? n : "(" + ok + " ? " + n + " : 0)";
      line("tilus::cp_async_" + std::to_string(bytes) + "(tilus::smem_u32(" + s.ptr + " + " + soff + "), " +
           src_at + ", " + size + ");");
    }, outer_unroll);
  };
  // cp.async copies of a tile wholly inside the tensor copy whole chunks untested (the
  // per-chunk test is two compares and a select a 16-byte copy: a tenth of the A16Wx
  // decode loop's instructions); synchronous copies keep their per-element form.
  split_on_whole_tile(async ? whole_tile_in_bounds(i, layout, dst->shape, g) : std::string(),
                      "whole chunks, no per-chunk test", copy_each);
  if (!leader.empty()) close();
}

// ------------------------------------------------------------------ conversions

std::string CudaEmitter::convert(const std::string& array, DataType dtype, const RegisterLayout& from,
                                 const RegisterLayout& to) {
  // Either layout may be padded (default_tile_layout): the tile is at most their common
  // part; elements outside it are neither written nor read.
  TILUS_ASSERT(from.rank() == to.rank());
  if (auto src = in_thread_sources(from, to)) {
    // each thread already holds what it needs, in another register order: moves
    std::string out = fresh(array + "_cvt");
    std::string init;
    for (size_t l = 0; l < src->size(); ++l) init += (l ? ", " : "") + std::to_string((*src)[l]);
    const std::string table = fresh("tl_order");
    line("__align__(16) " + ctype(dtype) + " " + out + "[" + std::to_string(to.local_size()) + "];");
    line("const int " + table + "[" + std::to_string(src->size()) + "] = {" + init + "};");
    line("// layout conversion within each thread");
    line("#pragma unroll");
    open("for (int i = 0; i < " + std::to_string(to.local_size()) + "; ++i)");
    line(out + "[i] = " + array + "[" + table + "[i]];");
    close();
    return out;
  }
  std::vector<int64_t> extent(from.shape);
  for (int d = 0; d < from.rank(); ++d) extent[d] = std::min(from.shape[d], to.shape[d]);
  int64_t numel = 1;
  for (int64_t e : extent) numel *= e;
  int64_t offset = smem_.allocate(storage_bytes(numel * dtype.bits()));
  std::string out = fresh(array + "_cvt");
  line("__align__(16) " + ctype(dtype) + " " + out + "[" + std::to_string(to.local_size()) + "];");
  open("{  // layout conversion through shared memory");
  std::string buf = fresh("tl_buf");
  line(ctype(dtype) + "* " + buf + " = reinterpret_cast<" + ctype(dtype) + "*>(tl_smem + " +
       std::to_string(offset) + ");");
  line(block_sync());
  auto row_major = [&](const std::vector<Expr>& coords) {
    Expr off = make_int(0);
    int64_t stride = 1;
    for (int d = static_cast<int>(coords.size()) - 1; d >= 0; --d) {
      off = add(off, mul(coords[d], make_int(stride)));
      stride *= extent[d];
    }
    return off;
  };
  std::string leader = replica_leader(from);
  if (!leader.empty()) open("if (" + leader + ")");
  for_each_local(from, 1, [&](const Element& el) {
    const std::string mask = tile_mask(from, extent, el);
    line((mask.empty() ? "" : "if (" + mask + ") ") + buf + "[" + expr(row_major(el.coords)) + "] = " + array +
         "[" + expr(el.local) + "];");
  });
  if (!leader.empty()) close();
  line(block_sync());
  for_each_local(to, 1, [&](const Element& el) {
    const std::string mask = tile_mask(to, extent, el);
    line((mask.empty() ? "" : "if (" + mask + ") ") + out + "[" + expr(el.local) + "] = " + buf + "[" +
         expr(row_major(el.coords)) + "];");
  });
  line(block_sync());
  close();
  smem_.release(offset);
  return out;
}

std::string CudaEmitter::reg_operand(const Tensor& t, const RegisterLayout& need) {
  const RegisterLayout& have = plan_.layout_of(t);
  if (have == need) return reg_name(t);
  return convert(reg_name(t), t->dtype, have, need);
}

void CudaEmitter::write_back(const Tensor& t, const std::string& value, const RegisterLayout& have) {
  const RegisterLayout& want = plan_.layout_of(t);
  std::string src = have == want ? value : convert(value, t->dtype, have, want);
  std::string dst = reg_name(t);
  if (src == dst) return;
  line("#pragma unroll");
  open("for (int i = 0; i < " + std::to_string(want.local_size()) + "; ++i)");
  line(dst + "[i] = " + src + "[i];");
  close();
}

}  // namespace tilus
