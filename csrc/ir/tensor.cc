#include "ir/tensor.h"

#include <atomic>
#include <sstream>

namespace tilus {

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::Register: return "register";
    case Scope::Shared: return "shared";
    case Scope::Global: return "global";
  }
  return "?";
}

int64_t TensorNode::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

std::string TensorNode::type_str() const {
  std::ostringstream os;
  os << scope_name(scope) << "[" << dtype.name() << ", ";
  if (scope == Scope::Global) {
    for (size_t i = 0; i < global_shape.size(); ++i) os << (i ? " x " : "") << expr_str(global_shape[i]);
  } else {
    for (size_t i = 0; i < shape.size(); ++i) os << (i ? "x" : "") << shape[i];
  }
  os << "]";
  return os.str();
}

static int next_tensor_id() {
  static std::atomic<int> next{0};
  return next++;
}

Tensor make_tensor(Scope scope, DataType dtype, std::vector<int64_t> shape,
                   const std::string& name_hint) {
  auto t = std::make_shared<TensorNode>();
  t->id = next_tensor_id();
  t->name = name_hint;
  t->scope = scope;
  t->dtype = dtype;
  t->shape = std::move(shape);
  return t;
}

Tensor make_global_tensor(DataType dtype, std::vector<Expr> shape, std::vector<Expr> strides,
                          const std::string& name_hint) {
  auto t = std::make_shared<TensorNode>();
  t->id = next_tensor_id();
  t->name = name_hint;
  t->scope = Scope::Global;
  t->dtype = dtype;
  t->global_shape = std::move(shape);
  t->global_strides = std::move(strides);
  return t;
}

}  // namespace tilus
