// The memory a launch's global views will span, checked against the tensors passed in,
// before the launch runs.
//
// A kernel that declares `global_view(y_ptr, shape=[n])` and is given a tensor of n - 1
// elements would otherwise fail (or, on the GPU, corrupt memory) only at the first
// access past the end, after other blocks have already written. Most views' extents
// are computable on the host from the arguments, the same way the launch shape is
// (HostEvaluator): the view's pointer is a parameter, its shape and strides are
// expressions over parameters and top-level declarations, and any `if` around it has a
// condition of the same kind. Those views are checked; views inside loops, or whose
// extent needs a block index or memory, are not (the interpreter still reports their
// out-of-bounds accesses at the faulting line).
#pragma once
#include <string>
#include <vector>

#include "transforms/host_launch_shape.h"

namespace tilus {

class ViewExtents {
 public:
  ViewExtents(const Program& program, const HostEvaluator& evaluator);
  // Whether every checkable view fits the bytes behind its pointer parameter.
  // `param_bytes`: one entry per Program::params (ignored for non-pointers).
  bool fit(const std::vector<HostArg>& args, const std::vector<int64_t>& param_bytes) const {
    return first_misfit(args, param_bytes, nullptr) < 0;
  }
  // "" when every view fits, else what does not, naming the parameter, the view (its
  // shape as evaluated and its line) and the tensor's size.
  std::string misfit_message(const std::vector<HostArg>& args,
                             const std::vector<int64_t>& param_bytes) const;
  size_t size() const { return views_.size(); }
  // Whether every checkable view addressed with 32-bit element offsets (the generated code
  // computes them in its strides' type: int32 from int32 sizes) stays within them; a view
  // that spans more would wrap around on the GPU. Views used only by TMA copies are not
  // addressed that way and may span more. offset_overflow_message says which, and
  // the way out (sizes declared int64 make the offsets 64-bit).
  bool offsets_fit(const std::vector<HostArg>& args) const { return first_overflow(args, nullptr) < 0; }
  std::string offset_overflow_message(const std::vector<HostArg>& args) const;

 private:
  struct Guard {
    Expr cond;
    bool holds;  // the view is reached when cond evaluates to this
  };
  struct View {
    int param;
    DataType dtype;
    std::vector<Expr> shape, strides;
    std::vector<Guard> guards;
    std::string name;
    SourceLoc loc;
    bool offsets32;  // every stride is a 32-bit integer: so are the element offsets
    // Every use is a TMA copy (the hardware addresses through the tensor map the host
    // encodes in 64 bits): the generated code computes no element offset into it.
    bool tma_only = false;
    const TensorNode* tensor = nullptr;
  };
  void mark_tma_only(const Program& program);
  struct Reach {
    std::vector<int64_t> shape;
    int64_t first_byte = 0, end_byte = 0;  // [first, end) relative to the pointer
  };
  void collect(const Stmt& s, std::vector<Guard>& guards);
  // False when the view is not reached or its reach cannot be evaluated.
  bool reach(const View& v, const std::vector<HostArg>& args, Reach& out) const;
  int first_misfit(const std::vector<HostArg>& args, const std::vector<int64_t>& param_bytes,
                   Reach* reach_out) const;
  int first_overflow(const std::vector<HostArg>& args, Reach* reach_out) const;

  const Program& program_;
  const HostEvaluator& evaluator_;
  std::vector<View> views_;
};

}  // namespace tilus
