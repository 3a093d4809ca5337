// Evaluates a Program's launch shape (grid, workspace sizes) from argument values on
// the host, cheaply enough for every launch: the expressions involved are analysed
// once, then each evaluation is a walk over a few nodes.
#pragma once
#include <unordered_map>
#include <vector>

#include "interp/interpreter.h"

namespace tilus {

class HostEvaluator {
 public:
  explicit HostEvaluator(const Program& program);
  // Fills shape from args (one per Program::params). False if an expression needs
  // something only the device knows; the caller then uses evaluate_launch_shape.
  bool launch_shape(const std::vector<HostArg>& args, LaunchShape& shape) const;
  // An integer expression over parameters, constants and the top-level declarations
  // above; false when it needs anything else (a block index, a float, memory).
  bool eval(const Expr& e, const std::vector<HostArg>& args, int64_t& out) const;
  // Whether eval can compute `e` for some arguments: it uses only integer parameters,
  // constants and the top-level declarations above (TMA tensor maps are encoded this way).
  bool evaluable(const Expr& e) const;
  // The pointer parameter `e` is (directly or through a top-level declaration), or -1.
  int pointer_param(const Expr& e) const;

 private:
  const Program& program_;
  std::unordered_map<int, int> param_index_;   // var id -> parameter position
  std::unordered_map<int, Expr> top_declares_;  // var id -> value, assigned once at top level
  std::vector<int64_t> workspace_elem_bytes_;
};

}  // namespace tilus
