// Shape changes of register tiles: reshape (also squeeze, unsqueeze, flatten), permute
// (transpose), view (bit reinterpretation), repeat and repeat_interleave.
//
// Layout rule (LayoutRule::Derived): the output's layout is derived from the input's
// (layout/register_views.h), so that every thread keeps the registers it has and the
// instruction is a register copy the compiler removes. Where no layout can be derived
// (a reshape cutting a mode it does not divide) the output takes the default layout and
// the data moves through shared memory. Where the output's layout was fixed by someone
// else (a dot operand, a user layout), the derived registers are converted to it through
// shared memory (CudaEmitter::write_back), as for any other derived layout.
//
// view is the exception: it reinterprets each thread's registers bit by bit, so the
// result depends on the physical layouts. Without layout= it keeps the input's layout
// and the dtype must have the same size (an elementwise bit cast); with layout= the
// output has that layout and each thread's bits must fill it exactly.
#include <cstring>
#include <functional>
#include <optional>

#include "ir/packed.h"
#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ir/inst_text.h"
#include "ir/operand_check.h"
#include "layout/register_views.h"
#include "ops/op_handler.h"
#include "transforms/layout_inference.h"

namespace tilus::ops {

namespace {

const Tensor& register_operand(const Instruction& inst, const char* what) {
  TILUS_CHECK(inst.inputs.size() == 1, "ValueError", op_name(inst.op), " takes one tensor, got ",
              inst.inputs.size());
  const Tensor& x = inst.inputs[0];
  TILUS_CHECK(x->scope == Scope::Register, "TypeError", op_name(inst.op), ": ", what,
              " must be a register tensor, got a ", scope_name(x->scope), " tensor (", x->type_str(), ")");
  return x;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t s : v) p *= s;
  return p;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  return out + "]";
}

RegisterLayout default_layout(const Tensor& t, int64_t threads) {
  return default_tile_layout(t->shape, threads, std::max<int64_t>(1, 128 / t->dtype.bits()));
}

// A layout padded past its tile (default_tile_layout of odd extents) holds elements
// outside the tile; the register derivations assume the layout covers exactly the tile.
bool padded(const RegisterLayout& layout, const Tensor& t) { return layout.shape != t->shape; }

// Row-major linear index of `coords` in `shape` (constants fold).
Expr row_major(const std::vector<Expr>& coords, const std::vector<int64_t>& shape) {
  Expr off = make_int(0);
  int64_t stride = 1;
  for (int d = static_cast<int>(coords.size()) - 1; d >= 0; --d) {
    off = make_binary(BinaryOp::Add, off, make_binary(BinaryOp::Mul, coords[d], make_int(stride)));
    stride *= shape[d];
  }
  return off;
}

// Emits y = x when y's registers are x's read in layout `have` (converted to y's layout
// if that differs).
void emit_same_registers(CudaEmitter& e, const Instruction& inst, const RegisterLayout& have) {
  const Tensor &x = inst.inputs[0], &y = inst.output;
  e.declare_reg(y, e.plan_.layout_of(y));
  e.write_back(y, e.reg_name(x), have);
}

// ---------------------------------------------------------------- reshape

OutputType reshape_check(Instruction& inst) {
  const Tensor& x = register_operand(inst, "x");
  TILUS_CHECK(!inst.shape.empty(), "ValueError", "reshape: the shape must have at least one dimension");
  for (int64_t s : inst.shape)
    TILUS_CHECK(s >= 1, "ValueError", "reshape: shape ", shape_str(inst.shape), " has a size below 1");
  TILUS_CHECK(product(inst.shape) == x->numel(), "ValueError", "reshape: ", x->type_str(), " has ",
              x->numel(), " elements, shape ", shape_str(inst.shape), " holds ", product(inst.shape));
  return {x->dtype, inst.shape};
}

void reshape_layout_rule(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  const Tensor y = inst.output;
  const Tensor x = inst.inputs[0];
  rules.derive(
      x, y,
      [x, y](const RegisterLayout& in) {
        auto out = padded(in, x) ? std::nullopt : reshape_layout(in, y->shape);
        return out ? *out : default_layout(y, in.num_threads());
      },
      [x, y](const RegisterLayout& out) {
        return padded(out, y) ? std::nullopt : reshape_layout(out, x->shape);
      });
}

void reshape_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), inst.output->dtype);
  std::memcpy(y.data, x.data, static_cast<size_t>(x.numel) * interp::element_bytes(x.dtype));
}

// y = x gathered through shared memory: x is stored row-major, then each element of y
// reads the element `source(y's coordinates)` (a row-major index into x). Elements outside
// either tile (padded layouts) are neither written nor read.
void gather_through_shared(CudaEmitter& e, const Instruction& inst, const std::string& why,
                           const std::function<Expr(const std::vector<Expr>&)>& source) {
  const Tensor &x = inst.inputs[0], &y = inst.output;
  const RegisterLayout& in = e.plan_.layout_of(x);
  const RegisterLayout& want = e.plan_.layout_of(y);
  const std::string src = e.reg_name(x);
  const std::string dst = e.declare_reg(y, want);
  const std::string ctype = CudaEmitter::ctype(x->dtype);
  const int64_t offset = e.smem_.allocate(storage_bytes(x->numel() * x->dtype.bits()));
  e.open("{  // " + std::string(op_name(inst.op)) + " " + shape_str(x->shape) + " -> " +
         shape_str(y->shape) + ": " + why + ", exchange through shared memory");
  const std::string buf = e.fresh("tl_buf");
  e.line(ctype + "* " + buf + " = reinterpret_cast<" + ctype + "*>(tl_smem + " + std::to_string(offset) + ");");
  e.line(e.block_sync());
  const std::string leader = e.replica_leader(in);
  if (!leader.empty()) e.open("if (" + leader + ")");
  e.for_each_local(in, 1, [&](const CudaEmitter::Element& el) {
    const std::string mask = e.tile_mask(in, x->shape, el);
    e.line((mask.empty() ? "" : "if (" + mask + ") ") + buf + "[" + e.expr(row_major(el.coords, x->shape)) +
           "] = " + src + "[" + e.expr(el.local) + "];");
  });
  if (!leader.empty()) e.close();
  e.line(e.block_sync());
  e.for_each_local(want, 1, [&](const CudaEmitter::Element& el) {
    const std::string mask = e.tile_mask(want, y->shape, el);
    e.line((mask.empty() ? "" : "if (" + mask + ") ") + dst + "[" + e.expr(el.local) + "] = " + buf + "[" +
           e.expr(source(el.coords)) + "];");
  });
  e.line(e.block_sync());
  e.close();
  e.smem_.release(offset);
}

void reshape_emit(CudaEmitter& e, const Instruction& inst) {
  const Tensor &x = inst.inputs[0], &y = inst.output;
  const RegisterLayout& in = e.plan_.layout_of(x);
  if (!padded(in, x)) {
    if (auto have = reshape_layout(in, y->shape)) {
      emit_same_registers(e, inst, *have);
      return;
    }
  }
  // The data moves: each element goes to its row-major index, which a reshape keeps.
  gather_through_shared(e, inst, "no register layout keeps the data in place",
                        [&](const std::vector<Expr>& c) { return row_major(c, y->shape); });
}

// ---------------------------------------------------------------- permute

OutputType permute_check(Instruction& inst) {
  const Tensor& x = register_operand(inst, "x");
  const int rank = x->rank();
  TILUS_CHECK(static_cast<int>(inst.dims.size()) == rank, "ValueError", "permute: dims has ",
              inst.dims.size(), " entries for ", x->type_str(), " of rank ", rank);
  std::vector<int> seen(rank, 0);
  std::vector<int64_t> shape;
  for (int& d : inst.dims) {
    TILUS_CHECK(d >= -rank && d < rank, "ValueError", "permute: dim ", d, " is not a dimension of ",
                x->type_str());
    if (d < 0) d += rank;
    TILUS_CHECK(!seen[d]++, "ValueError", "permute: dims lists dimension ", d, " twice");
    shape.push_back(x->shape[d]);
  }
  return {x->dtype, shape};
}

void permute_layout_rule(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  const std::vector<int> dims = inst.dims;
  std::vector<int> inverse(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) inverse[dims[k]] = static_cast<int>(k);
  rules.derive(
      inst.inputs[0], inst.output, [dims](const RegisterLayout& in) { return permute_layout(in, dims); },
      [inverse](const RegisterLayout& out) -> std::optional<RegisterLayout> { return permute_layout(out, inverse); });
}

// For every element of y (row-major), the row-major index in x of the element it takes.
template <typename F>
void gather(interp::BlockState& st, const Instruction& inst, F source_index) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), inst.output->dtype);
  const std::vector<int64_t>& shape = inst.output->shape;
  const int b = interp::element_bytes(x.dtype);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t i = 0; i < y.numel; ++i) {
    std::memcpy(y.data + i * b, x.data + source_index(c) * b, b);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0 && ++c[d] == shape[d]; --d) c[d] = 0;
  }
}

void permute_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const std::vector<int64_t>& xs = inst.inputs[0]->shape;
  gather(st, inst, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> xc(xs.size());
    for (size_t k = 0; k < c.size(); ++k) xc[inst.dims[k]] = c[k];
    int64_t idx = 0;
    for (size_t d = 0; d < xs.size(); ++d) idx = idx * xs[d] + xc[d];
    return idx;
  });
}

void permute_emit(CudaEmitter& e, const Instruction& inst) {
  emit_same_registers(e, inst, permute_layout(e.plan_.layout_of(inst.inputs[0]), inst.dims));
}

// ---------------------------------------------------------------- repeat, repeat_interleave
// inst.shape holds the repeat count of every dimension (x has as many dimensions: the
// Python surface unsqueezes x first when more counts are given).

OutputType repeat_check(Instruction& inst) {
  const Tensor& x = register_operand(inst, "x");
  const char* name = op_name(inst.op);
  TILUS_CHECK(inst.shape.size() == x->shape.size(), "ValueError", name, ": ", inst.shape.size(),
              " repeat counts for ", x->type_str(), " of rank ", x->rank());
  std::vector<int64_t> shape = x->shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    TILUS_CHECK(inst.shape[d] >= 1, "ValueError", name, ": repeats ", shape_str(inst.shape),
                " has a count below 1");
    shape[d] *= inst.shape[d];
  }
  return {x->dtype, shape};
}

RegisterLayout repeated(const Instruction& inst, const RegisterLayout& in) {
  return inst.op == Op::Repeat ? repeat_layout(in, inst.shape) : repeat_interleave_layout(in, inst.shape);
}

void repeat_layout_rule(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  const Instruction* i = &inst;  // instructions outlive layout inference
  rules.derive(inst.inputs[0], inst.output, [i](const RegisterLayout& in) {
    return padded(in, i->inputs[0]) ? default_layout(i->output, in.num_threads()) : repeated(*i, in);
  });
}

void repeat_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const std::vector<int64_t>& xs = inst.inputs[0]->shape;
  const bool interleave = inst.op == Op::RepeatInterleave;
  gather(st, inst, [&](const std::vector<int64_t>& c) {
    int64_t idx = 0;
    for (size_t d = 0; d < xs.size(); ++d)
      idx = idx * xs[d] + (interleave ? c[d] / inst.shape[d] : c[d] % xs[d]);
    return idx;
  });
}

void repeat_emit(CudaEmitter& e, const Instruction& inst) {
  const Tensor &x = inst.inputs[0], &y = inst.output;
  const RegisterLayout& in = e.plan_.layout_of(x);
  if (padded(in, x)) {
    const bool interleave = inst.op == Op::RepeatInterleave;
    gather_through_shared(e, inst, "the input's layout is padded", [&](const std::vector<Expr>& c) {
      std::vector<Expr> xc;
      for (size_t d = 0; d < c.size(); ++d)
        xc.push_back(make_binary(interleave ? BinaryOp::Div : BinaryOp::Mod, c[d],
                                 make_int(interleave ? inst.shape[d] : x->shape[d])));
      return row_major(xc, x->shape);
    });
    return;
  }
  const RegisterLayout have = repeated(inst, in);
  const std::string src = e.reg_name(x);
  const RegisterLayout& want = e.plan_.layout_of(y);
  const std::string dst = e.declare_reg(y, want);
  std::string values = dst;
  if (have != want) {
    values = e.fresh(dst + "_rep");
    e.line("__align__(16) " + CudaEmitter::ctype(y->dtype) + " " + values + "[" +
           std::to_string(have.local_size()) + "];");
  }
  // The copies of an element are the result's local indices with the same remainder
  // (repeat) or quotient (repeat_interleave) by the input's register count.
  const int64_t lx = in.local_size(), copies = have.local_size() / lx;
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(have.local_size()) + "; ++i)");
  e.line(values + "[i] = " + src + "[i " + (inst.op == Op::Repeat ? "% " + std::to_string(lx) : "/ " + std::to_string(copies)) + "];");
  e.close();
  if (have != want) e.write_back(y, values, have);
}

// ---------------------------------------------------------------- view
// int_attr = 1 when the script gave layout= (the output tensor carries it).

OutputType view_check(Instruction& inst) {
  const Tensor& x = register_operand(inst, "x");
  const DataType to = inst.dtype;
  TILUS_CHECK(!to.is_pointer, "TypeError", "view: dtype must be a scalar type, got ", to.name());
  if (inst.int_attr == 0) {
    TILUS_CHECK(to.bits() == x->dtype.bits(), "ValueError", "view: ", x->dtype.name(), " (",
                x->dtype.bits(), " bits) cannot be viewed as ", to.name(), " (", to.bits(),
                " bits) element by element; give layout= so that each thread's bits fill the new layout");
    TILUS_CHECK(inst.shape.empty() || inst.shape == x->shape, "ValueError",
                "view: without layout= the shape stays ", shape_str(x->shape));
    return {to, x->shape};
  }
  TILUS_CHECK(!inst.shape.empty(), "ValueError", "view: the layout has no shape");
  return {to, inst.shape};
}

void view_layout_rule(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  // With layout= the output's layout is the user's (derivations never override one).
  rules.derive(inst.inputs[0], inst.output, [](const RegisterLayout& in) { return in; });
}

// Each thread's bits: x's registers in its layout, read back as y's in its layout.
void check_view_bits(const Instruction& inst, const RegisterLayout& lx, const RegisterLayout& ly) {
  const Tensor &x = inst.inputs[0], &y = inst.output;
  TILUS_CHECK(lx.num_threads() == ly.num_threads(), "ValueError", "view: ", x->name, " is spread over ",
              lx.num_threads(), " threads but the layout over ", ly.num_threads());
  TILUS_CHECK(lx.local_size() * x->dtype.bits() == ly.local_size() * y->dtype.bits(), "ValueError",
              "view: each thread holds ", lx.local_size(), " x ", x->dtype.bits(), " bits of ", x->name,
              " but the new layout holds ", ly.local_size(), " x ", y->dtype.bits(),
              " bits; x's layout is ", lx.str(), ", the new one ", ly.str());
}

void view_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), inst.output->dtype);
  if (inst.int_attr == 0) {
    std::memcpy(y.data, x.data, static_cast<size_t>(x.numel) * interp::element_bytes(x.dtype));
    return;
  }
  const LayoutPlan& plan = interp::layout_plan(*st.launch);
  const RegisterLayout &lx = plan.layout_of(inst.inputs[0]), &ly = plan.layout_of(inst.output);
  check_view_bits(inst, lx, ly);
  const int bx = interp::element_bytes(x.dtype), by = interp::element_bytes(y.dtype);
  auto row_major_index = [](const std::vector<int64_t>& c, const std::vector<int64_t>& shape) {
    int64_t idx = 0;
    for (size_t d = 0; d < shape.size(); ++d) idx = idx * shape[d] + c[d];
    return idx;
  };
  std::vector<uint8_t> regs(static_cast<size_t>(lx.local_size() * bx));
  if (is_packed(x.dtype) || is_packed(y.dtype)) {
    // A sub-byte type's registers hold one code per byte; the view sees the thread's
    // elements as one packed bit stream (ir/packed.h), as they lie in memory.
    const int sx = x.dtype.bits(), sy = y.dtype.bits();
    std::vector<uint8_t> stream(static_cast<size_t>(storage_bytes(lx.local_size() * sx)) + 8);
    auto put = [&](const uint8_t* p, int64_t l) {
      if (is_packed(x.dtype)) packed_set(stream.data(), l * sx, sx, *p);
      else std::memcpy(stream.data() + l * bx, p, bx);
    };
    auto get = [&](uint8_t* p, int64_t l) {
      if (is_packed(y.dtype)) *p = packed_get(stream.data(), l * sy, sy);
      else std::memcpy(p, stream.data() + l * by, by);
    };
    for (int64_t t = lx.num_threads(); t-- > 0;) {
      for (int64_t l = 0; l < lx.local_size(); ++l)
        put(x.data + row_major_index(lx.coords(t, l), inst.inputs[0]->shape) * bx, l);
      for (int64_t l = 0; l < ly.local_size(); ++l)
        get(y.data + row_major_index(ly.coords(t, l), inst.output->shape) * by, l);
    }
    return;
  }
  // Threads in order: a replicated output element takes its first holder's bits, as a
  // store of it would (the replica leader).
  for (int64_t t = lx.num_threads(); t-- > 0;) {
    for (int64_t l = 0; l < lx.local_size(); ++l)
      std::memcpy(regs.data() + l * bx, x.data + row_major_index(lx.coords(t, l), inst.inputs[0]->shape) * bx, bx);
    for (int64_t l = 0; l < ly.local_size(); ++l)
      std::memcpy(y.data + row_major_index(ly.coords(t, l), inst.output->shape) * by, regs.data() + l * by, by);
  }
}

void view_emit(CudaEmitter& e, const Instruction& inst) {
  const Tensor &x = inst.inputs[0], &y = inst.output;
  const RegisterLayout& lx = e.plan_.layout_of(x);
  if (inst.int_attr == 0) {
    // An elementwise bit cast keeps x's layout; y's may differ when something else
    // fixed it: cast in x's layout, then convert.
    const std::string src = e.reg_name(x);
    const std::string dst = e.declare_reg(y, e.plan_.layout_of(y));
    std::string values = dst;
    if (lx != e.plan_.layout_of(y)) {
      values = e.fresh(dst + "_view");
      e.line("__align__(16) " + CudaEmitter::ctype(y->dtype) + " " + values + "[" +
             std::to_string(lx.local_size()) + "];");
    }
    e.line("memcpy(" + values + ", " + src + ", sizeof(" + values + "));");
    if (values != dst) e.write_back(y, values, lx);
    return;
  }
  const RegisterLayout& ly = e.plan_.layout_of(y);
  check_view_bits(inst, lx, ly);
  const std::string src = e.reg_name(x);
  const std::string dst = e.declare_reg(y, ly);
  if (is_packed(x->dtype) || is_packed(y->dtype)) {
    // Sub-byte registers hold one code per byte: the thread's bits as one packed stream.
    const int64_t bits = lx.local_size() * x->dtype.bits();
    const std::string w = e.fresh(dst + "_bits");
    e.line("tilus::uint32_t " + w + "[" + std::to_string((bits + 31) / 32) + "];  // view: the same bits, packed");
    if (is_packed(x->dtype))
      e.line("tilus::pack_bits<" + std::to_string(x->dtype.bits()) + ", " + std::to_string(lx.local_size()) +
             ">(" + w + ", " + src + ");");
    else
      e.line("memcpy(" + w + ", " + src + ", sizeof(" + src + "));");
    if (is_packed(y->dtype)) {
      e.line("tilus::unpack_bits<" + std::to_string(y->dtype.bits()) + ", " + std::to_string(ly.local_size()) +
             ">(" + dst + ", " + w + ");");
      e.packed_words_[y->id] = {w, e.scopes_.back()};  // a cast may read the words instead
    } else
      e.line("memcpy(" + dst + ", " + w + ", sizeof(" + dst + "));");
    return;
  }
  e.line("memcpy(" + dst + ", " + src + ", sizeof(" + dst + "));  // view: the same bits");
}

// ---- IR text, the verifier's operand checks, and a running wgmma dot
using inst_text::call;
using inst_text::ref;

std::string reshape_print(const Instruction& i) { return call(i, ref(i.inputs[0]) + ", shape=" + inst_text::ints(i.shape)); }
std::string permute_print(const Instruction& i) { return call(i, ref(i.inputs[0]) + ", dims=" + inst_text::ints(i.dims)); }
std::string view_print(const Instruction& i) {
  return call(i, ref(i.inputs[0]) + ", dtype=" + i.dtype.name() +
                     (i.int_attr ? ", layout=" + (i.output->layout ? i.output->layout->str() : std::string("?"))
                                 : std::string()));
}
std::string repeat_print(const Instruction& i) { return call(i, ref(i.inputs[0]) + ", repeats=" + inst_text::ints(i.shape)); }

void shape_change_verify(OperandCheck& c, const Instruction& i) {
  c.arity(i, 1, 0, 0);
  c.scope(i, i.inputs[0], Scope::Register, "the operand");
  c.scope(i, i.output, Scope::Register, "the output");
  if (i.op != Op::View) c.same_dtype(i, i.inputs[0], i.output);
  int64_t n = 1;
  for (int64_t s : i.output->shape) n *= s;
  int64_t m = i.inputs[0]->numel();
  if (i.op == Op::Repeat || i.op == Op::RepeatInterleave)
    for (int64_t r : i.shape) m *= r;
  if (i.op != Op::View && n != m) c.fail(op_name(i.op), ": ", c.str(i.inputs[0]), " does not give ", c.str(i.output));
}

// One whose registers cannot stay (or are converted to a layout fixed elsewhere)
// exchanges through shared memory and meets the other warpgroups at a barrier. The
// layout its lowering gives the result from the input's, against the planned one.
template <bool (*moves)(const RegisterLayout& in, const Instruction& i, const RegisterLayout& out)>
WgmmaHazard shape_change_hazard(const Instruction& i, const LayoutPlan& plan, int warps) {
  if (warps > 4 && moves(plan.layout_of(i.inputs[0]), i, plan.layout_of(i.output)))
    return {WgmmaHazard::Waits, -1, "a register shape change synchronises the warpgroups"};
  return {};
}
bool reshape_moves(const RegisterLayout& in, const Instruction& i, const RegisterLayout& out) {
  return moves_data(reshape_layout(in, i.output->shape), out);
}
bool permute_moves(const RegisterLayout& in, const Instruction& i, const RegisterLayout& out) {
  return moves_data(permute_layout(in, i.dims), out);
}
bool repeat_moves(const RegisterLayout& in, const Instruction& i, const RegisterLayout& out) {
  return moves_data(repeat_layout(in, i.shape), out);
}
bool repeat_interleave_moves(const RegisterLayout& in, const Instruction& i, const RegisterLayout& out) {
  return moves_data(repeat_interleave_layout(in, i.shape), out);
}
// a bit cast converted to another layout
bool view_moves(const RegisterLayout& in, const Instruction& i, const RegisterLayout& out) {
  return i.int_attr == 0 && in != out;
}

}  // namespace

const OpHandler kReshape = {reshape_check, reshape_layout_rule, reshape_interpret, reshape_emit,
                            reshape_print, shape_change_verify, shape_change_hazard<reshape_moves>};
const OpHandler kPermute = {permute_check, permute_layout_rule, permute_interpret, permute_emit,
                            permute_print, shape_change_verify, shape_change_hazard<permute_moves>};
const OpHandler kView = {view_check, view_layout_rule, view_interpret, view_emit,
                         view_print, shape_change_verify, shape_change_hazard<view_moves>};
const OpHandler kRepeat = {repeat_check, repeat_layout_rule, repeat_interpret, repeat_emit,
                           repeat_print, shape_change_verify, shape_change_hazard<repeat_moves>};
const OpHandler kRepeatInterleave = {repeat_check, repeat_layout_rule, repeat_interpret, repeat_emit,
                                     repeat_print, shape_change_verify,
                                     shape_change_hazard<repeat_interleave_moves>};

}  // namespace tilus::ops
