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
#include <unordered_set>
#include <vector>

#include "ir/stmt.h"

namespace tilus {

// 16 elements: a 16-byte vector of every type of at least 8 bits.
constexpr int64_t kVectorExtentMultiple = 16;

// Indices into program.params, increasing.
std::vector<int> vector_extent_params(const Program& program);

// The global tensors a build moves element by element. The unaligned build (`all`)
// assumes nothing of any argument. A partly aligned build names the parameters its call
// did not meet the aligned build's assumption for (a pointer not 16-byte aligned, a
// vector extent not a multiple of 16; CodegenOptions::unaligned_params): only the views
// whose pointer or strides this build knows less of than the aligned build does
// (transforms/pointer_alignment.h, the divisibility of each stride) lose their vectors,
// so an lm head's activations keep 16-byte rows beside a 50257-wide weight, and a view
// at `~g[(i + 7) // 8 * 8]` keeps them whatever i is. A view's last extent does not
// count: a row of any length moves in vectors, the one its end cuts element by element.
// Workspaces are never among them.
struct ScalarGlobals {
  bool all = false;
  std::unordered_set<int> views;  // tensor ids
  bool has(const Tensor& t) const { return t && t->scope == Scope::Global && (all || views.count(t->id)); }
};
ScalarGlobals scalar_globals(const Program& program, bool pointers_aligned, const std::vector<int>& unaligned_params);

// Realigned loads (codegen/device/memory.cuh load_realigned_16) read a 16-byte run of a
// row of any alignment with the two aligned 16-byte chunks holding it. The elements of
// such a run for an access of `view` (a global tensor) with these tile dims and element
// type; 0 where none can be read that way: the tile's last dimension not the view's, a
// strided last dimension, packed, sub-byte, wider than 64-bit or pointer elements.
int64_t realignable_run(const Tensor& view, const std::vector<int>& dims, DataType dtype);

}  // namespace tilus
