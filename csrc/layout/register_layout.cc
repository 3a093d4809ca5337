#include "layout/register_layout.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "support/error.h"

namespace tilus {

namespace {

// A working form of a layout whose modes keep stable ids while they are split, merged
// or dropped; RegisterLayout's positional mode indices would shift on every edit.
// A replication is a mode with dim == -1.
struct ModeTable {
  std::vector<int64_t> shape;
  std::vector<int64_t> size;                // by id
  std::vector<int> dim;                     // by id; -1: replication
  std::vector<std::vector<int>> dim_modes;  // per dim: ids, outer to inner
  std::vector<int> spatial, local;          // ids, outer to inner

  int add(int64_t s, int d) {
    size.push_back(s);
    dim.push_back(d);
    return static_cast<int>(size.size()) - 1;
  }
};

std::vector<int> assign_dims(const std::vector<int64_t>& shape,
                             const std::vector<int64_t>& mode_shape) {
  std::vector<int> dims(mode_shape.size(), -1);
  size_t m = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t prod = 1;
    while (prod < shape[d]) {
      TILUS_CHECK(m < mode_shape.size(), "ValueError", "layout modes ", "cover less than dim ",
                  d, " of size ", shape[d]);
      prod *= mode_shape[m];
      dims[m++] = static_cast<int>(d);
    }
    TILUS_CHECK(prod == shape[d], "ValueError", "layout modes do not multiply to dim ", d,
                " of size ", shape[d]);
  }
  for (; m < mode_shape.size(); ++m)
    TILUS_CHECK(mode_shape[m] == 1, "ValueError", "layout has more modes than its shape needs");
  return dims;  // trailing size-1 modes keep dim -1 and are dropped by the caller
}

// Checked conversion from fields; size-1 modes may still be present.
ModeTable table_from_fields(const std::vector<int64_t>& shape,
                            const std::vector<int64_t>& mode_shape,
                            const std::vector<int>& spatial_modes,
                            const std::vector<int>& local_modes) {
  for (auto s : shape) TILUS_CHECK(s >= 1, "ValueError", "layout shape entries must be >= 1");
  for (auto s : mode_shape) TILUS_CHECK(s >= 1, "ValueError", "layout modes must be >= 1");
  std::vector<int> dims = assign_dims(shape, mode_shape);
  const int n = static_cast<int>(mode_shape.size());
  std::vector<int> seen(n, 0);
  ModeTable t;
  t.shape = shape;
  t.dim_modes.resize(shape.size());
  for (int m = 0; m < n; ++m) {
    t.add(mode_shape[m], dims[m]);
    if (dims[m] >= 0) t.dim_modes[dims[m]].push_back(m);
  }
  auto take = [&](int m, std::vector<int>& list) {
    TILUS_CHECK(m < n && !seen[m], "ValueError", "layout mode ", m,
                m < n ? " is listed twice" : " does not exist");
    seen[m] = 1;
    if (dims[m] >= 0) list.push_back(m);
  };
  for (int e : spatial_modes) {
    if (e < 0) {
      t.spatial.push_back(t.add(-static_cast<int64_t>(e), -1));
    } else {
      take(e, t.spatial);
    }
  }
  for (int e : local_modes) {
    TILUS_CHECK(e >= 0, "ValueError", "a local mode cannot be a replication");
    take(e, t.local);
  }
  for (int m = 0; m < n; ++m)
    TILUS_CHECK(seen[m], "ValueError", "layout mode ", m, " is neither spatial nor local");
  return t;
}

ModeTable table_of(const RegisterLayout& l) {
  return table_from_fields(l.shape, l.mode_shape, l.spatial_modes, l.local_modes);
}

// Drops size-1 modes and merges neighbours that act as one mode: two modes of one
// dimension, adjacent there (outer then inner) and adjacent in the same list, index that
// dimension exactly like a single mode of their product; two adjacent replications are
// one replication.
void canonicalize(ModeTable& t) {
  auto drop_ones = [&](std::vector<int>& list) {
    list.erase(std::remove_if(list.begin(), list.end(), [&](int m) { return t.size[m] == 1; }),
               list.end());
  };
  drop_ones(t.spatial);
  drop_ones(t.local);
  for (auto& dm : t.dim_modes) drop_ones(dm);
  for (auto* list : {&t.spatial, &t.local}) {
    for (size_t i = 0; i + 1 < list->size();) {
      int a = (*list)[i], b = (*list)[i + 1];
      bool merge = false;
      if (t.dim[a] == -1 && t.dim[b] == -1) {
        merge = true;
      } else if (t.dim[a] >= 0 && t.dim[a] == t.dim[b]) {
        auto& dm = t.dim_modes[t.dim[a]];
        auto pos = std::find(dm.begin(), dm.end(), a);
        merge = pos + 1 != dm.end() && *(pos + 1) == b;
        if (merge) dm.erase(pos + 1);
      }
      if (merge) {
        t.size[a] *= t.size[b];
        list->erase(list->begin() + i + 1);
      } else {
        ++i;
      }
    }
  }
}

RegisterLayout layout_of(ModeTable t) {
  canonicalize(t);
  RegisterLayout l;
  l.shape = t.shape;
  std::vector<int> index(t.size.size(), -1);
  for (auto& dm : t.dim_modes) {
    for (int m : dm) {
      index[m] = static_cast<int>(l.mode_shape.size());
      l.mode_shape.push_back(t.size[m]);
    }
  }
  for (int m : t.spatial)
    l.spatial_modes.push_back(t.dim[m] == -1 ? -static_cast<int>(t.size[m]) : index[m]);
  for (int m : t.local) l.local_modes.push_back(index[m]);
  return l;
}

// Splits mode `m` into (outer: size / inner_size, inner: inner_size), adjacent in its
// list and its dimension; returns the id of the inner part. The layout is unchanged.
int split_mode(ModeTable& t, int m, int64_t inner_size) {
  int lo = t.add(inner_size, t.dim[m]);
  t.size[m] /= inner_size;
  for (auto* list : {&t.spatial, &t.local}) {
    auto pos = std::find(list->begin(), list->end(), m);
    if (pos != list->end()) list->insert(pos + 1, lo);
  }
  if (t.dim[m] >= 0) {
    auto& dm = t.dim_modes[t.dim[m]];
    dm.insert(std::find(dm.begin(), dm.end(), m) + 1, lo);
  }
  return lo;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (auto x : v) p *= x;
  return p;
}

}  // namespace

// ---- RegisterLayout -----------------------------------------------------------------

int64_t RegisterLayout::numel() const { return product(shape); }

int64_t RegisterLayout::num_threads() const {
  int64_t t = 1;
  for (int e : spatial_modes) t *= e < 0 ? -static_cast<int64_t>(e) : mode_shape[e];
  return t;
}

int64_t RegisterLayout::local_size() const {
  int64_t l = 1;
  for (int e : local_modes) l *= mode_shape[e];
  return l;
}

int64_t RegisterLayout::replication() const {
  int64_t r = 1;
  for (int e : spatial_modes)
    if (e < 0) r *= -static_cast<int64_t>(e);
  return r;
}

std::vector<int> RegisterLayout::mode_dims() const { return assign_dims(shape, mode_shape); }

std::vector<int64_t> RegisterLayout::coords(int64_t thread, int64_t local) const {
  TILUS_CHECK(thread >= 0 && thread < num_threads(), "ValueError", "thread ", thread,
              " is out of range for a layout of ", num_threads(), " threads");
  TILUS_CHECK(local >= 0 && local < local_size(), "ValueError", "local index ", local,
              " is out of range for a layout of ", local_size(), " elements per thread");
  std::vector<int64_t> digit(mode_shape.size(), 0);
  for (size_t i = spatial_modes.size(); i-- > 0;) {
    int e = spatial_modes[i];
    int64_t s = e < 0 ? -static_cast<int64_t>(e) : mode_shape[e];
    if (e >= 0) digit[e] = thread % s;
    thread /= s;
  }
  for (size_t i = local_modes.size(); i-- > 0;) {
    int e = local_modes[i];
    digit[e] = local % mode_shape[e];
    local /= mode_shape[e];
  }
  std::vector<int64_t> c(shape.size(), 0);
  std::vector<int> dims = mode_dims();
  for (size_t m = 0; m < mode_shape.size(); ++m) c[dims[m]] = c[dims[m]] * mode_shape[m] + digit[m];
  return c;
}

std::vector<int64_t> RegisterLayout::local_coords(int64_t local) const { return coords(0, local); }

std::vector<Expr> RegisterLayout::thread_coord_exprs(const Expr& thread) const {
  std::vector<int> dims = mode_dims();
  // stride of each mode within its dimension
  std::vector<int64_t> dim_stride(mode_shape.size(), 1);
  for (size_t m = mode_shape.size(); m-- > 0;)
    if (m + 1 < mode_shape.size() && dims[m + 1] == dims[m])
      dim_stride[m] = dim_stride[m + 1] * mode_shape[m + 1];
  DataType t = thread->dtype;
  std::vector<Expr> c(shape.size());
  int64_t inner = 1;  // threads spanned by the entries inside the current one
  for (size_t i = spatial_modes.size(); i-- > 0;) {
    int e = spatial_modes[i];
    int64_t s = e < 0 ? -static_cast<int64_t>(e) : mode_shape[e];
    if (e >= 0) {
      Expr digit = make_binary(BinaryOp::Div, thread, make_int(inner, t));
      if (i > 0) digit = make_binary(BinaryOp::Mod, digit, make_int(s, t));
      Expr term = make_binary(BinaryOp::Mul, digit, make_int(dim_stride[e], t));
      int d = dims[e];
      c[d] = c[d] ? make_binary(BinaryOp::Add, term, c[d]) : term;
    }
    inner *= s;
  }
  for (auto& x : c)
    if (!x) x = make_int(0, t);
  return c;
}

std::vector<Expr> RegisterLayout::coord_exprs(const Expr& thread, int64_t local) const {
  std::vector<Expr> c = thread_coord_exprs(thread);
  std::vector<int64_t> lc = local_coords(local);
  for (size_t d = 0; d < c.size(); ++d)
    c[d] = make_binary(BinaryOp::Add, c[d], make_int(lc[d], thread->dtype));
  return c;
}

std::pair<int64_t, int64_t> RegisterLayout::owner(const std::vector<int64_t>& coords) const {
  TILUS_CHECK(coords.size() == shape.size(), "ValueError", "owner: ", coords.size(),
              " coordinates given for a layout of rank ", shape.size());
  std::vector<int64_t> c = coords;
  for (size_t d = 0; d < c.size(); ++d)
    TILUS_CHECK(c[d] >= 0 && c[d] < shape[d], "ValueError", "owner: coordinate ", c[d],
                " is out of range for dim ", d, " of size ", shape[d]);
  std::vector<int> dims = mode_dims();
  std::vector<int64_t> digit(mode_shape.size(), 0);
  for (size_t m = mode_shape.size(); m-- > 0;) {
    digit[m] = c[dims[m]] % mode_shape[m];
    c[dims[m]] /= mode_shape[m];
  }
  int64_t local = 0, thread = 0;
  for (int e : local_modes) local = local * mode_shape[e] + digit[e];
  for (int e : spatial_modes)
    thread = e < 0 ? thread * -static_cast<int64_t>(e) : thread * mode_shape[e] + digit[e];
  return {local, thread};
}

RegisterLayout RegisterLayout::simplify() const { return layout_of(table_of(*this)); }

namespace {
template <typename T>
void print_list(std::ostringstream& os, const std::vector<T>& v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
}
}  // namespace

std::string RegisterLayout::str() const {
  std::ostringstream os;
  os << "RegisterLayout(shape=";
  print_list(os, shape);
  os << ", mode_shape=";
  print_list(os, mode_shape);
  os << ", spatial_modes=";
  print_list(os, spatial_modes);
  os << ", local_modes=";
  print_list(os, local_modes);
  os << ")";
  return os.str();
}

bool RegisterLayout::operator==(const RegisterLayout& o) const {
  return shape == o.shape && mode_shape == o.mode_shape && spatial_modes == o.spatial_modes &&
         local_modes == o.local_modes;
}

RegisterLayout make_register_layout(std::vector<int64_t> shape, std::vector<int64_t> mode_shape,
                                    std::vector<int> spatial_modes, std::vector<int> local_modes) {
  return layout_of(table_from_fields(shape, mode_shape, spatial_modes, local_modes));
}

// ---- primitives -----------------------------------------------------------------------

namespace {
// One mode per dimension; `in_threads` picks the list, `column` lists dim 0 innermost.
RegisterLayout primitive(const std::vector<int64_t>& shape, bool in_threads, bool column,
                         const char* name) {
  for (auto s : shape)
    TILUS_CHECK(s >= 1, "ValueError", name, "() needs positive sizes, got ", s);
  std::vector<int> order(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) order[d] = static_cast<int>(d);
  if (column) std::reverse(order.begin(), order.end());
  std::vector<int> empty;
  return make_register_layout(shape, shape, in_threads ? order : empty, in_threads ? empty : order);
}
}  // namespace

RegisterLayout spatial(const std::vector<int64_t>& shape) {
  return primitive(shape, true, false, "spatial");
}
RegisterLayout column_spatial(const std::vector<int64_t>& shape) {
  return primitive(shape, true, true, "column_spatial");
}
RegisterLayout local(const std::vector<int64_t>& shape) {
  return primitive(shape, false, false, "local");
}
RegisterLayout column_local(const std::vector<int64_t>& shape) {
  return primitive(shape, false, true, "column_local");
}

RegisterLayout replicate(int64_t k, int rank) {
  TILUS_CHECK(rank >= 0, "ValueError", "replicate() needs a rank >= 0");
  TILUS_CHECK(k >= 1, "ValueError", "replicate() needs a count >= 1, got ", k);
  return make_register_layout(std::vector<int64_t>(rank, 1), {}, {-static_cast<int>(k)}, {});
}

// ---- derived operations -------------------------------------------------------------

RegisterLayout compose(const RegisterLayout& outer, const RegisterLayout& inner) {
  TILUS_CHECK(outer.rank() == inner.rank(), "ValueError", "cannot compose layouts of rank ",
              outer.rank(), " and ", inner.rank(), ": ", outer.str(), " * ", inner.str());
  // Outer modes come first in every dimension and every list: they are the more
  // significant digits of the coordinate, the thread and the local index.
  ModeTable a = table_of(outer), b = table_of(inner);
  const int shift = static_cast<int>(a.size.size());
  for (size_t m = 0; m < b.size.size(); ++m) a.add(b.size[m], b.dim[m]);
  for (size_t d = 0; d < a.shape.size(); ++d) {
    a.shape[d] *= b.shape[d];
    for (int m : b.dim_modes[d]) a.dim_modes[d].push_back(m + shift);
  }
  for (int m : b.spatial) a.spatial.push_back(m + shift);
  for (int m : b.local) a.local.push_back(m + shift);
  return layout_of(a);
}

RegisterLayout operator*(const RegisterLayout& outer, const RegisterLayout& inner) {
  return compose(outer, inner);
}

std::optional<RegisterLayout> divide(const RegisterLayout& layout, const RegisterLayout& inner) {
  if (layout.rank() != inner.rank()) return std::nullopt;
  for (int d = 0; d < layout.rank(); ++d)
    if (layout.shape[d] % inner.shape[d] != 0) return std::nullopt;
  ModeTable a = table_of(layout), b = table_of(inner);
  canonicalize(a);
  canonicalize(b);
  std::vector<int> partner(b.size.size(), -1);  // b id -> a id
  // Inner's lists must be suffixes of layout's lists, splitting a layout mode when inner
  // only takes its lower part. Both are canonical, so one inner mode never spans two.
  auto match = [&](std::vector<int>& al, const std::vector<int>& bl) -> std::optional<size_t> {
    size_t i = al.size();
    for (size_t j = bl.size(); j-- > 0;) {
      if (i == 0) return std::nullopt;
      int x = al[i - 1], y = bl[j];
      if ((a.dim[x] == -1) != (b.dim[y] == -1) || a.size[x] % b.size[y] != 0) return std::nullopt;
      if (a.size[x] != b.size[y]) {
        x = split_mode(a, x, b.size[y]);
        ++i;  // the split inserted the inner part right after the outer one
      }
      partner[y] = x;
      --i;
    }
    return i;  // entries [0, i) stay with the outer layout
  };
  auto keep_s = match(a.spatial, b.spatial);
  if (!keep_s) return std::nullopt;
  auto keep_l = match(a.local, b.local);
  if (!keep_l) return std::nullopt;
  // Per dimension, inner's modes must be layout's innermost modes, in the same order.
  for (size_t d = 0; d < a.shape.size(); ++d) {
    auto& adm = a.dim_modes[d];
    const auto& bdm = b.dim_modes[d];
    if (bdm.size() > adm.size()) return std::nullopt;
    size_t base = adm.size() - bdm.size();
    for (size_t j = 0; j < bdm.size(); ++j)
      if (adm[base + j] != partner[bdm[j]]) return std::nullopt;
    adm.resize(base);
    a.shape[d] /= b.shape[d];
  }
  a.spatial.resize(*keep_s);
  a.local.resize(*keep_l);
  RegisterLayout outer = layout_of(a);
  if (compose(outer, inner) != layout.simplify()) return std::nullopt;  // belt and braces
  return outer;
}

std::optional<std::vector<int64_t>> in_thread_sources(const RegisterLayout& from, const RegisterLayout& to) {
  if (from.shape != to.shape || from.num_threads() != to.num_threads()) return std::nullopt;
  // coords(t, l) = coords(t, 0) + coords(0, l) in both: thread t's elements in `to` are
  // its elements in `from` for every t exactly when the thread parts agree (they do at
  // t = 0, both 0) and each of to's local parts is one of from's.
  for (int64_t t = 1; t < to.num_threads(); ++t)
    if (to.coords(t, 0) != from.coords(t, 0)) return std::nullopt;
  std::map<std::vector<int64_t>, int64_t> local_of;
  for (int64_t l = from.local_size(); l-- > 0;) local_of[from.local_coords(l)] = l;
  std::vector<int64_t> src(to.local_size());
  for (int64_t l = 0; l < to.local_size(); ++l) {
    auto it = local_of.find(to.local_coords(l));
    if (it == local_of.end()) return std::nullopt;
    src[l] = it->second;
  }
  return src;
}

}  // namespace tilus
