// Reductions of a register tile over one dimension: sum.
//
// Layout rule (LayoutRule::Derived): the result's layout is the operand's with the
// reduced dimension taken out (reduced_layout): its local modes are dropped and its
// spatial modes become replication, so each thread ends up holding the results of
// exactly the rows it held operands of, and the threads that shared a row all hold it.
//
// CUDA lowering, read off the operand's layout: each thread adds its own elements of a
// row; then threads that hold parts of the same row combine across lanes with
// __shfl_xor_sync (a butterfly: every lane ends with the same total, in the same
// order, so replicas agree bit for bit); only spatial modes that span warps go through
// shared memory.
#include <cstring>

#include "codegen/emitter.h"
#include "interp/buffer.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"

namespace tilus::ops {

namespace {

// `in` with dimension d reduced to size 1 (keepdim) or removed.
RegisterLayout reduced_layout(const RegisterLayout& in, int d, bool keepdim) {
  const std::vector<int> dims = in.mode_dims();
  std::vector<int> index(in.mode_shape.size(), -1);
  std::vector<int64_t> modes;
  for (size_t m = 0; m < in.mode_shape.size(); ++m) {
    if (dims[m] == d) continue;
    index[m] = static_cast<int>(modes.size());
    modes.push_back(in.mode_shape[m]);
  }
  std::vector<int> spatial, local;
  for (int m : in.spatial_modes) {
    if (m < 0) spatial.push_back(m);
    else if (dims[m] == d) spatial.push_back(-static_cast<int>(in.mode_shape[m]));
    else spatial.push_back(index[m]);
  }
  for (int m : in.local_modes)
    if (dims[m] != d) local.push_back(index[m]);
  std::vector<int64_t> shape = in.shape;
  shape[d] = 1;
  if (!keepdim) shape.erase(shape.begin() + d);
  return make_register_layout(shape, modes, spatial, local);
}

OutputType sum_check(Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() == 1, "ValueError", "sum takes one tensor, got ", inst.inputs.size());
  const Tensor& x = inst.inputs[0];
  TILUS_CHECK(x->scope == Scope::Register, "TypeError", "sum: x must be a register tensor, got a ",
              scope_name(x->scope), " tensor (", x->type_str(), ")");
  TILUS_CHECK(x->dtype.is_float() || x->dtype.is_integer(), "TypeError",
              "sum: x must be a float or integer tensor, got ", x->dtype.name());
  TILUS_CHECK(inst.dims.size() == 1, "ValueError", "sum: dim must be one integer");
  const int rank = x->rank();
  int d = inst.dims[0];
  TILUS_CHECK(d >= -rank && d < rank, "ValueError", "sum: dim=", d, " is not a dimension of ",
              x->type_str(), " (rank ", rank, ")");
  if (d < 0) d += rank;
  inst.dims[0] = d;
  const bool keepdim = inst.int_attr != 0;
  TILUS_CHECK(keepdim || rank > 1, "ValueError", "sum: reducing the only dimension of ",
              x->type_str(), " leaves no dimension; pass keepdim=True for a [1] tile");
  std::vector<int64_t> shape = x->shape;
  shape[d] = 1;
  if (!keepdim) shape.erase(shape.begin() + d);
  return {x->dtype, shape};
}

void sum_layout(LayoutRules& rules, const Instruction& inst, const SourceLoc&) {
  const int d = inst.dims[0];
  const bool keepdim = inst.int_attr != 0;
  rules.derive(inst.inputs[0], inst.output,
               [d, keepdim](const RegisterLayout& in) { return reduced_layout(in, d, keepdim); });
}

// Floats add in double and round once; integers wrap to the dtype.
void sum_interpret(interp::BlockState& st, const StmtNode&, const Instruction& inst) {
  const interp::TensorValue& x = interp::input(st, inst.inputs[0], inst);
  interp::TensorValue& y = interp::define_output(st, inst.output.get(), inst.output->dtype);
  const std::vector<int64_t>& shape = *x.shape;
  const int d = inst.dims[0];
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < d; ++k) outer *= shape[k];
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  const int64_t n = shape[d];
  const ScalarKind kind = x.dtype.kind;
  const int b = interp::element_bytes(x.dtype);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      uint8_t* out = y.data + (o * inner + i) * b;
      if (x.dtype.is_float()) {
        double acc = 0;
        for (int64_t k = 0; k < n; ++k) acc += interp::load_f(x.data + ((o * n + k) * inner + i) * b, kind);
        interp::store_f(out, kind, acc);
      } else {
        uint64_t acc = 0;
        for (int64_t k = 0; k < n; ++k)
          acc += static_cast<uint64_t>(interp::load_i(x.data + ((o * n + k) * inner + i) * b, kind));
        interp::store_i(out, kind, interp::wrap_int(static_cast<int64_t>(acc), kind));
      }
    }
  }
}

// What the partial sums are kept in: float for floats up to 32 bits, double for
// float64; unsigned integers (wrapping addition) for integer types.
std::string accumulator_type(DataType t) {
  if (t == dtypes::float64) return "double";
  if (t.is_float()) return "float";
  return t.bits() > 32 ? "unsigned long long" : "unsigned int";
}

void sum_emit(CudaEmitter& e, const Instruction& inst) {
  const Tensor& x = inst.inputs[0];
  const Tensor& y = inst.output;
  const int d = inst.dims[0];
  const bool keepdim = inst.int_attr != 0;
  const RegisterLayout& in = e.plan_.layout_of(x);
  const RegisterLayout have = reduced_layout(in, d, keepdim);
  const RegisterLayout kept = keepdim ? have : reduced_layout(in, d, true);
  const std::string acc_t = accumulator_type(x->dtype);
  const int64_t n_out = have.local_size();
  const std::string src = e.reg_name(x);
  const std::string dst = e.declare_reg(y, e.plan_.layout_of(y));
  const std::string acc = e.fresh("tl_sum");

  // 1. This thread's own elements: local element l of x adds into the result element
  // holding its row (same local part of the coordinate, dimension d at 0).
  e.line(acc_t + " " + acc + "[" + std::to_string(n_out) + "];");
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
  e.line(acc + "[i] = (" + acc_t + ")0;");
  e.close();
  for (int64_t l = 0; l < in.local_size(); ++l) {
    std::vector<int64_t> c = in.local_coords(l);
    c[d] = 0;
    const int64_t j = kept.owner(c).first;
    e.line(acc + "[" + std::to_string(j) + "] += tilus::cast<" + acc_t + ">(" + src + "[" +
           std::to_string(l) + "]);");
  }

  // 2. Threads holding parts of the same row: the spatial modes of dimension d. A mode
  // of size s with thread stride t covers thread-index bits [log t, log t*s); the bits
  // below 32 are lanes (shuffles), the rest warps (shared memory).
  const std::vector<int> dims = in.mode_dims();
  std::vector<int64_t> lane_offsets;
  std::vector<std::pair<int64_t, int64_t>> warp_digits;  // (thread stride, size)
  int64_t stride = 1;
  for (int k = static_cast<int>(in.spatial_modes.size()) - 1; k >= 0; --k) {
    const int m = in.spatial_modes[k];
    const int64_t size = m < 0 ? -m : in.mode_shape[m];
    if (m >= 0 && dims[m] == d) {
      int64_t s = stride;
      for (; s < stride * size && s < 32; s *= 2) lane_offsets.push_back(s);
      if (s < stride * size) warp_digits.push_back({s, stride * size / s});
    }
    stride *= size;
  }
  for (int64_t off : lane_offsets) {
    e.line("#pragma unroll");
    e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
    e.line(acc + "[i] += __shfl_xor_sync(0xffffffffu, " + acc + "[i], " + std::to_string(off) + ");");
    e.close();
  }
  if (!warp_digits.empty()) {
    const int64_t threads = e.threads_;
    const int64_t bytes = threads * n_out * (acc_t == "double" || acc_t == "unsigned long long" ? 8 : 4);
    const int64_t offset = e.smem_.allocate(bytes);
    e.open("{  // sum across warps through shared memory");
    const std::string buf = e.fresh("tl_red");
    e.line(acc_t + "* " + buf + " = reinterpret_cast<" + acc_t + "*>(tl_smem + " + std::to_string(offset) + ");");
    e.line("__syncthreads();");
    e.line("#pragma unroll");
    e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
    e.line(buf + "[i * " + std::to_string(threads) + " + tl_tid] = " + acc + "[i];");
    e.close();
    e.line("__syncthreads();");
    // The first thread of this thread's group (its warp digits of dimension d at 0),
    // then every member in a fixed order so all of them compute the same total.
    std::string base = "tl_tid";
    int64_t members = 1;
    for (auto& [t, s] : warp_digits) {
      base += " - (tl_tid / " + std::to_string(t) + " % " + std::to_string(s) + ") * " + std::to_string(t);
      members *= s;
    }
    const std::string first = e.fresh("tl_first");
    e.line("const int " + first + " = " + base + ";");
    e.line("#pragma unroll");
    e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
    e.line(acc + "[i] = (" + acc_t + ")0;");
    for (int64_t r = 0; r < members; ++r) {
      int64_t rest = r, member = 0;
      for (auto it = warp_digits.rbegin(); it != warp_digits.rend(); ++it) {
        member += rest % it->second * it->first;
        rest /= it->second;
      }
      e.line(acc + "[i] += " + buf + "[i * " + std::to_string(threads) + " + " + first + " + " +
             std::to_string(member) + "];");
    }
    e.close();
    e.line("__syncthreads();");
    e.close();
    e.smem_.release(offset);
  }

  // 3. The result, in the derived layout; converted if the output's layout differs.
  const RegisterLayout& want = e.plan_.layout_of(y);
  const std::string ctype = CudaEmitter::ctype(y->dtype);
  std::string values = dst;
  if (have != want) {
    values = e.fresh(dst + "_sum");
    e.line("__align__(16) " + ctype + " " + values + "[" + std::to_string(n_out) + "];");
  }
  e.line("#pragma unroll");
  e.open("for (int i = 0; i < " + std::to_string(n_out) + "; ++i)");
  e.line(values + "[i] = tilus::cast<" + ctype + ">(" + acc + "[i]);");
  e.close();
  if (have != want) e.write_back(y, values, have);
}

}  // namespace

const OpHandler kSum = {sum_check, sum_layout, sum_interpret, sum_emit};

}  // namespace tilus::ops
