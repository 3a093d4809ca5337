// Which integer parameters decide whether global accesses can be 16-byte vectors.
//
// A tile row of a global tensor is one vector access only when its start and the rows
// before it are multiples of the vector: the view's last extent and its strides must
// be multiples of (16 bytes / element size). When those are runtime parameters nothing
// is known at compile time, so, like Triton's divisibility specialisation, the kernel
// built with CodegenOptions::pointers_aligned *assumes* each such parameter is a
// multiple of kVectorExtentMultiple elements, and the launchers pick that build only when
// the arguments are (and every pointer is 16-byte aligned); otherwise the unaligned
// build runs, which assumes nothing.
//
// The parameters are those a global view (or workspace) names directly as its last
// extent or as a stride, for views some instruction reads or writes (tile loads, stores,
// copies, atomics). A parameter used only elsewhere (a row count, a loop bound, the
// extent of a view read element by element, like a [batch] tensor of sequence lengths)
// is not one: its value never costs the kernel its aligned build.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/stmt.h"

namespace tilus {

// 16 elements: a 16-byte vector of every type of at least 8 bits.
constexpr int64_t kVectorExtentMultiple = 16;

// Indices into program.params, increasing.
std::vector<int> vector_extent_params(const Program& program);

}  // namespace tilus
