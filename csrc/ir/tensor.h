// Tile tensors: the values tile instructions produce and consume.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/expr.h"

namespace tilus {

struct RegisterLayout;  // layout/register_layout.h

enum class Scope : uint8_t { Register, Shared, Global };
const char* scope_name(Scope s);

// A tensor value. Register and shared tensors have compile-time shapes; global tensors
// have expression shapes and strides (elements). Views (a shared slice sa[stage]) refer
// to the tensor they view through `viewed`; they own no storage.
struct TensorNode {
  int id = -1;
  std::string name;
  Scope scope = Scope::Register;
  DataType dtype;
  std::vector<int64_t> shape;        // register / shared
  std::vector<Expr> global_shape;    // global
  std::vector<Expr> global_strides;  // global, in elements
  std::shared_ptr<const RegisterLayout> layout;  // user-given register layout, or null

  int rank() const {
    return static_cast<int>(scope == Scope::Global ? global_shape.size() : shape.size());
  }
  int64_t numel() const;  // register / shared only
  std::string type_str() const;  // "register[float32, 64x128]", "global[float16, m_size x 4096]"
};

Tensor make_tensor(Scope scope, DataType dtype, std::vector<int64_t> shape,
                   const std::string& name_hint);
Tensor make_global_tensor(DataType dtype, std::vector<Expr> shape, std::vector<Expr> strides,
                          const std::string& name_hint);

}  // namespace tilus
