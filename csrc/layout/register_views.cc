#include "layout/register_views.h"

#include "support/error.h"

namespace tilus {

std::optional<RegisterLayout> reshape_layout(const RegisterLayout& in, const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel != in.numel()) return std::nullopt;
  const size_t n = in.mode_shape.size();
  // parts[m]: the sizes mode m is cut into, outer to inner, each in one new dimension.
  std::vector<std::vector<int64_t>> parts(n);
  std::vector<int64_t> new_modes;
  std::vector<std::vector<int>> part_index(n);
  size_t m = 0;
  int64_t rem = n ? in.mode_shape[0] : 1;  // what is left of mode m
  for (int64_t s : shape) {
    int64_t need = s;
    while (need > 1) {
      if (rem == 1) {
        if (++m >= n) return std::nullopt;
        rem = in.mode_shape[m];
        continue;
      }
      const int64_t take = rem <= need ? rem : need;
      if (rem <= need ? need % rem != 0 : rem % need != 0) return std::nullopt;
      part_index[m].push_back(static_cast<int>(new_modes.size()));
      new_modes.push_back(take);
      need /= take;
      rem /= take;
    }
  }
  std::vector<int> spatial, local;
  for (int e : in.spatial_modes) {
    if (e < 0) spatial.push_back(e);
    else spatial.insert(spatial.end(), part_index[e].begin(), part_index[e].end());
  }
  for (int e : in.local_modes) local.insert(local.end(), part_index[e].begin(), part_index[e].end());
  return make_register_layout(shape, new_modes, spatial, local);
}

RegisterLayout permute_layout(const RegisterLayout& in, const std::vector<int>& dims) {
  const int rank = in.rank();
  TILUS_CHECK(static_cast<int>(dims.size()) == rank, "ValueError", "permute: ", dims.size(),
              " dims for a layout of rank ", rank);
  const std::vector<int> mode_dim = in.mode_dims();
  std::vector<int> index(in.mode_shape.size(), -1);
  std::vector<int64_t> modes, shape;
  for (int d : dims) {
    TILUS_CHECK(d >= 0 && d < rank, "ValueError", "permute: dim ", d, " out of range");
    shape.push_back(in.shape[d]);
    for (size_t k = 0; k < in.mode_shape.size(); ++k) {
      if (mode_dim[k] != d) continue;
      index[k] = static_cast<int>(modes.size());
      modes.push_back(in.mode_shape[k]);
    }
  }
  std::vector<int> spatial, local;
  for (int e : in.spatial_modes) spatial.push_back(e < 0 ? e : index[e]);
  for (int e : in.local_modes) local.push_back(index[e]);
  return make_register_layout(shape, modes, spatial, local);
}

RegisterLayout repeat_layout(const RegisterLayout& in, const std::vector<int64_t>& repeats) {
  return compose(local(repeats), in);
}

RegisterLayout repeat_interleave_layout(const RegisterLayout& in, const std::vector<int64_t>& repeats) {
  return compose(in, local(repeats));
}

}  // namespace tilus
