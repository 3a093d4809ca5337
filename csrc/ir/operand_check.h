// The verifier's per-instruction operand checks (ir/verifier.cc), handed to each op's
// verify stage (ops/op_handler.h). A failure is the verifier's InternalError, located at
// the instruction ("IR verifier (after <pass>): ...").
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/stmt.h"

namespace tilus {

class OperandCheck {
 public:
  OperandCheck(const Program& program, const char* after, const SourceLoc& loc,
               std::function<int(const Tensor&)> root_of)
      : program_(program), after_(after), loc_(loc), root_of_(std::move(root_of)) {}

  [[noreturn]] void fail_message(const std::string& message) const;
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    fail_message(cat(args...));
  }

  const Program& program() const { return program_; }
  // The shared allocation a shared tensor or view belongs to (its id).
  int root_of(const Tensor& t) const { return root_of_(t); }

  // "name (type)", or "nothing".
  static std::string str(const Tensor& t);
  static std::string shape_str(const std::vector<int64_t>& shape);

  // Exactly `inputs` tensor operands and args_min..args_max scalar ones, none missing.
  void arity(const Instruction& i, size_t inputs, size_t args_min, size_t args_max) const;
  void no_output(const Instruction& i) const;
  void scope(const Instruction& i, const Tensor& t, Scope s, const char* operand) const;
  void same_dtype(const Instruction& i, const Tensor& a, const Tensor& b) const;
  void same_shape(const Instruction& i, const Tensor& a, const Tensor& b) const;
  void positive_shape(const Instruction& i, const Tensor& t) const;
  // args[from, to) are integers.
  void int_args(const Instruction& i, size_t from, size_t to) const;
  // A tile window of `global` (load_global, store_global, copy_async): one offset per
  // global dim, the tile's dims strictly increasing global dims. A rank-0 tile (a full
  // reduction) is the one element at the offsets.
  void window(const Instruction& i, const Tensor& global, const std::vector<int64_t>& tile) const;
  // The output global tensor's extents and strides (global_view, global_tensor).
  void global_shape(const Instruction& i) const;

 private:
  const Program& program_;
  const char* after_;
  const SourceLoc& loc_;
  std::function<int(const Tensor&)> root_of_;
};

}  // namespace tilus
