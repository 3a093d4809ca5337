// Tile arithmetic: dot, elementwise binary operators with broadcasting, unary
// operators and where. Values are computed in double / int64, rounded or wrapped to
// the operands' promoted type, then stored in the output's dtype.
#include "interp/tile_math.h"

#include <string>

#include "interp/buffer.h"
#include "support/error.h"

namespace tilus::interp {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// One operand of an elementwise op: a tensor (broadcast to the output shape through
// `map`) or a scalar.
struct Operand {
  DataType dtype;
  const uint8_t* data = nullptr;
  std::vector<int64_t> map;  // output element -> operand element; empty: the same index
  bool scalar = false;
  Value value;
};

std::vector<int64_t> broadcast_map(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                                   const Instruction& inst) {
  if (in == out) return {};
  const int R = static_cast<int>(out.size()), r = static_cast<int>(in.size());
  TILUS_CHECK(r <= R, "ValueError", op_name(inst.op), ": cannot broadcast shape ", shape_str(in),
              " to ", shape_str(out));
  std::vector<int64_t> stride(R, 0);
  int64_t s = 1;
  for (int d = r - 1; d >= 0; --d) {
    int od = R - r + d;
    TILUS_CHECK(in[d] == out[od] || in[d] == 1, "ValueError", op_name(inst.op),
                ": cannot broadcast shape ", shape_str(in), " to ", shape_str(out));
    stride[od] = in[d] == 1 ? 0 : s;
    s *= in[d];
  }
  int64_t n = 1;
  for (int64_t x : out) n *= x;
  std::vector<int64_t> map(static_cast<size_t>(n));
  std::vector<int64_t> idx(R, 0);
  int64_t cur = 0;
  for (int64_t i = 0; i < n; ++i) {
    map[i] = cur;
    for (int d = R - 1; d >= 0; --d) {
      cur += stride[d];
      if (++idx[d] < out[d]) break;
      cur -= stride[d] * out[d];
      idx[d] = 0;
    }
  }
  return map;
}

Operand tensor_operand(BlockState& st, const Tensor& t, const Instruction& inst) {
  const TensorValue& tv = input(st, t, inst);
  TILUS_CHECK(tv.data != nullptr || tv.numel == 0, "TypeError", op_name(inst.op),
              ": global tensor ", t->name, " is not a tile; load it first");
  Operand o;
  o.dtype = tv.dtype;
  o.data = tv.data;
  o.map = broadcast_map(*tv.shape, inst.output->shape, inst);
  return o;
}

Operand scalar_operand(BlockState& st, const Expr& e) {
  Operand o;
  o.dtype = e->dtype;
  o.scalar = true;
  o.value = eval(st, e);
  return o;
}

// The operand's elements, one per output element, converted to float type `t`.
std::vector<double> gather_f(const Operand& o, int64_t n, DataType t) {
  std::vector<double> r(static_cast<size_t>(n));
  if (o.scalar) {
    double v = convert(o.value, o.dtype, t).f;
    for (auto& x : r) x = v;
    return r;
  }
  const ScalarKind k = o.dtype.kind;
  const int b = element_bytes(o.dtype);
  const bool round = o.dtype != t;
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = o.map.empty() ? i : o.map[i];
    double v = load_f(o.data + j * b, k);
    r[i] = round ? round_float(v, t.kind) : v;
  }
  return r;
}

// The operand's elements converted to integer (or bool) type `t`.
std::vector<int64_t> gather_i(const Operand& o, int64_t n, DataType t) {
  std::vector<int64_t> r(static_cast<size_t>(n));
  if (o.scalar) {
    int64_t v = convert(o.value, o.dtype, t).i;
    for (auto& x : r) x = v;
    return r;
  }
  const ScalarKind k = o.dtype.kind;
  const int b = element_bytes(o.dtype);
  const bool from_float = o.dtype.is_float();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = o.data + (o.map.empty() ? i : o.map[i]) * b;
    r[i] = from_float ? float_to_int(load_f(p, k), t.kind) : wrap_int(load_i(p, k), t.kind);
  }
  return r;
}

// Stores integer results of type `t` into the output.
void store_ints(TensorValue& d, const std::vector<int64_t>& v, DataType t) {
  const int b = element_bytes(d.dtype);
  for (size_t i = 0; i < v.size(); ++i) {
    if (d.dtype.is_float()) store_f(d.data + i * b, d.dtype.kind, convert(Value::of_int(v[i]), t, dtypes::float64).f);
    else store_i(d.data + i * b, d.dtype.kind, v[i]);
  }
}

void store_floats(TensorValue& d, const std::vector<double>& v) {
  const int b = element_bytes(d.dtype);
  for (size_t i = 0; i < v.size(); ++i) store_f(d.data + i * b, d.dtype.kind, v[i]);
}

template <typename T>
std::vector<T> to_vector(const TensorValue& x) {
  std::vector<T> r(static_cast<size_t>(x.numel));
  const int b = element_bytes(x.dtype);
  const ScalarKind k = x.dtype.kind;
  if constexpr (std::is_same_v<T, float>) {
    if (k == ScalarKind::Float16) {
      for (int64_t i = 0; i < x.numel; ++i) r[i] = half_to_float(load_raw<uint16_t>(x.data + 2 * i));
      return r;
    }
    if (k == ScalarKind::BFloat16) {
      for (int64_t i = 0; i < x.numel; ++i) r[i] = bfloat16_to_float(load_raw<uint16_t>(x.data + 2 * i));
      return r;
    }
    if (k == ScalarKind::Float32) {
      std::memcpy(r.data(), x.data, r.size() * sizeof(float));
      return r;
    }
  }
  for (int64_t i = 0; i < x.numel; ++i) {
    if constexpr (std::is_same_v<T, int64_t>) r[i] = load_i(x.data + i * b, k);
    else r[i] = static_cast<T>(load_f(x.data + i * b, k));
  }
  return r;
}

// acc[m, n] += a[m, k] @ b[k, n], i-k-j order so the inner loop streams rows.
template <typename T>
void matmul_acc(const T* __restrict a, const T* __restrict b, T* __restrict acc, int64_t m,
                int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    T* __restrict row = acc + i * n;
    for (int64_t kk = 0; kk < k; ++kk) {
      const T av = a[i * k + kk];
      const T* __restrict brow = b + kk * n;
      for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
    }
  }
}

template <typename T>
void dot_float(const TensorValue& a, const TensorValue& b, const TensorValue* c, TensorValue& d,
               int64_t m, int64_t n, int64_t k) {
  std::vector<T> av = to_vector<T>(a), bv = to_vector<T>(b);
  std::vector<T> acc = c ? to_vector<T>(*c) : std::vector<T>(static_cast<size_t>(m * n), T(0));
  matmul_acc(av.data(), bv.data(), acc.data(), m, n, k);
  if (std::is_same_v<T, float> && d.dtype == dtypes::float32) {
    std::memcpy(d.data, acc.data(), acc.size() * sizeof(T));
    return;
  }
  const int db = element_bytes(d.dtype);
  const ScalarKind dk = d.dtype.kind;
  for (size_t i = 0; i < acc.size(); ++i) store_f(d.data + i * db, dk, static_cast<double>(acc[i]));
}

}  // namespace

void exec_dot(BlockState& st, const Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() >= 2, "ValueError", "dot needs two operands");
  const TensorValue& a = input(st, inst.inputs[0], inst);
  const TensorValue& b = input(st, inst.inputs[1], inst);
  const TensorValue* c =
      inst.inputs.size() > 2 && inst.inputs[2] ? &input(st, inst.inputs[2], inst) : nullptr;
  const auto &as = *a.shape, &bs = *b.shape;
  TILUS_CHECK(as.size() == 2 && bs.size() == 2 && as[1] == bs[0], "ValueError",
              "dot: shapes ", shape_str(as), " and ", shape_str(bs), " do not multiply");
  const int64_t m = as[0], k = as[1], n = bs[1];
  TILUS_CHECK(!c || (c->numel == m * n), "ValueError", "dot: accumulator shape ",
              shape_str(*c->shape), " is not [", m, ", ", n, "]");
  // Read everything before touching the output: out= may be c itself.
  const bool is_float = a.dtype.is_float() || b.dtype.is_float() || inst.output->dtype.is_float();
  if (!is_float) {
    std::vector<int64_t> av = to_vector<int64_t>(a), bv = to_vector<int64_t>(b);
    std::vector<uint64_t> acc(static_cast<size_t>(m * n), 0);  // uint64: wraps, never UB
    if (c)
      for (int64_t i = 0; i < m * n; ++i)
        acc[i] = static_cast<uint64_t>(load_i(c->data + i * element_bytes(c->dtype), c->dtype.kind));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) {
        const auto x = static_cast<uint64_t>(av[i * k + kk]);
        for (int64_t j = 0; j < n; ++j)
          acc[i * n + j] += x * static_cast<uint64_t>(bv[kk * n + j]);
      }
    TensorValue& d = existing_output(st, inst);
    const int db = element_bytes(d.dtype);
    for (int64_t i = 0; i < m * n; ++i)
      store_i(d.data + i * db, d.dtype.kind, static_cast<int64_t>(acc[i]));
    return;
  }
  const bool wide = a.dtype == dtypes::float64 || b.dtype == dtypes::float64 ||
                    (c && c->dtype == dtypes::float64) || inst.output->dtype == dtypes::float64;
  // Copy the operand views: existing_output may reallocate the output's storage.
  TensorValue av = a, bv = b, cv = c ? *c : TensorValue{};
  TensorValue& d = existing_output(st, inst);
  if (wide) dot_float<double>(av, bv, c ? &cv : nullptr, d, m, n, k);
  else dot_float<float>(av, bv, c ? &cv : nullptr, d, m, n, k);
}

void exec_elementwise(BlockState& st, const Instruction& inst) {
  Operand l, r;
  if (inst.inputs.size() >= 2) {
    l = tensor_operand(st, inst.inputs[0], inst);
    r = tensor_operand(st, inst.inputs[1], inst);
  } else {
    TILUS_CHECK(inst.inputs.size() == 1 && !inst.args.empty(), "ValueError",
                "elementwise needs two operands");
    l = tensor_operand(st, inst.inputs[0], inst);
    r = scalar_operand(st, inst.args[0]);
    if (inst.scalar_lhs) std::swap(l, r);
  }
  const BinaryOp op = inst.binary_op;
  const DataType t = l.dtype == r.dtype ? l.dtype : promote(l.dtype, r.dtype);
  const bool boolean = is_comparison(op) || is_logical(op);
  const int64_t n = inst.output->numel();
  if (t.is_float()) {
    std::vector<double> a = gather_f(l, n, t), b = gather_f(r, n, t);
    for (int64_t i = 0; i < n; ++i) {
      double x = float_binary(op, a[i], b[i]);
      a[i] = boolean ? x : round_float(x, t.kind);
    }
    TensorValue& d = existing_output(st, inst);
    store_floats(d, a);
  } else {
    std::vector<int64_t> a = gather_i(l, n, t), b = gather_i(r, n, t);
    for (int64_t i = 0; i < n; ++i) a[i] = int_binary(op, a[i], b[i], t.kind);
    TensorValue& d = existing_output(st, inst);
    store_ints(d, a, boolean ? dtypes::boolean : t);
  }
}

void exec_unary(BlockState& st, const Instruction& inst) {
  Operand x = tensor_operand(st, inst.inputs[0], inst);
  const int64_t n = inst.output->numel();
  const DataType t = x.dtype;
  if (inst.unary_op == UnaryOp::Not) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    if (t.is_float()) {
      std::vector<double> a = gather_f(x, n, t);
      for (int64_t i = 0; i < n; ++i) v[i] = a[i] == 0.0;
    } else {
      std::vector<int64_t> a = gather_i(x, n, t);
      for (int64_t i = 0; i < n; ++i) v[i] = a[i] == 0;
    }
    store_ints(existing_output(st, inst), v, dtypes::boolean);
  } else if (t.is_float()) {
    std::vector<double> a = gather_f(x, n, t);
    for (auto& v : a) v = -v;
    store_floats(existing_output(st, inst), a);
  } else {
    std::vector<int64_t> a = gather_i(x, n, t);
    for (auto& v : a) v = wrap_int(static_cast<int64_t>(0 - static_cast<uint64_t>(v)), t.kind);
    store_ints(existing_output(st, inst), a, t);
  }
}

void exec_where(BlockState& st, const Instruction& inst) {
  TILUS_CHECK(inst.inputs.size() == 3, "ValueError", "where needs cond, a and b");
  Operand c = tensor_operand(st, inst.inputs[0], inst);
  Operand a = tensor_operand(st, inst.inputs[1], inst);
  Operand b = tensor_operand(st, inst.inputs[2], inst);
  const int64_t n = inst.output->numel();
  const DataType t = a.dtype == b.dtype ? a.dtype : promote(a.dtype, b.dtype);
  std::vector<int64_t> cond = gather_i(c, n, dtypes::boolean);
  if (t.is_float()) {
    std::vector<double> x = gather_f(a, n, t), y = gather_f(b, n, t);
    for (int64_t i = 0; i < n; ++i) x[i] = cond[i] ? x[i] : y[i];
    store_floats(existing_output(st, inst), x);
  } else {
    std::vector<int64_t> x = gather_i(a, n, t), y = gather_i(b, n, t);
    for (int64_t i = 0; i < n; ++i) x[i] = cond[i] ? x[i] : y[i];
    store_ints(existing_output(st, inst), x, t);
  }
}

}  // namespace tilus::interp
