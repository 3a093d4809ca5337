// Register layouts of shape changes that move no data: the layout a reshaped, permuted
// or repeated tile has when every thread keeps exactly the registers it had (repeat:
// and copies of them). Used by layout inference to derive an output's layout from its
// input's (ops/reshape.cc) and by the emitters to tell whether the registers can be
// reused as they are.
#pragma once
#include <optional>
#include <vector>

#include "layout/register_layout.h"

namespace tilus {

// The layout of the same registers read as a tile of `shape` (same number of elements,
// row-major order kept, as torch.reshape). The modes of all dimensions, listed dim by
// dim, are the mixed-radix digits of the row-major index; the new dimensions regroup
// them, splitting a mode where a new dimension ends inside it (its outer part goes to
// the earlier dimension). nullopt when a new dimension boundary falls inside a mode
// whose size it does not divide (a mode of 6 cut after 4): the data must move.
// Squeeze, unsqueeze and flatten are reshapes and always derivable.
std::optional<RegisterLayout> reshape_layout(const RegisterLayout& in, const std::vector<int64_t>& shape);

// Dimension i of the result is dimension dims[i] of `in` (torch.permute); dims must be
// a permutation of [0, rank). Always derivable: each mode keeps its place in the thread
// and local lists and only changes the dimension it indexes.
RegisterLayout permute_layout(const RegisterLayout& in, const std::vector<int>& dims);

// torch.Tensor.repeat(*repeats) (rank equal to in's): each thread holds the repeats
// copies of its elements, the copy index outermost in its local index:
// local(repeats) * in. Element l of the result is element l % in.local_size() of in.
RegisterLayout repeat_layout(const RegisterLayout& in, const std::vector<int64_t>& repeats);

// torch.repeat_interleave per dimension (rank equal to in's): in * local(repeats).
// Element l of the result is element l / prod(repeats) of in.
RegisterLayout repeat_interleave_layout(const RegisterLayout& in, const std::vector<int64_t>& repeats);

// Whether the lowering of a register shape change (ops/reshape.cc) moves data through
// shared memory (and so meets the block at a barrier): when the layout derived from
// the input's is not `out` (the result's planned layout), or none can be derived
// (`derived` is nullopt).
inline bool moves_data(const std::optional<RegisterLayout>& derived, const RegisterLayout& out) {
  return !derived || *derived != out;
}

}  // namespace tilus
