// TensorQuery: one query the native launcher makes of each torch tensor (an attribute
// such as `dtype`, or a method without arguments such as `data_ptr()`), resolved once
// on the exact torch.Tensor type. When the type implements it in C (a getset getter or a
// C method, as torch does), a query on an object of exactly that type calls the C
// function directly, skipping the attribute lookup and the call protocol; for anything
// else (a subclass that may override it, a Python-level definition) it makes the
// ordinary C-API call. Either way the result is what `getattr(obj, name)` or
// `obj.name()` returns.
#pragma once
#include <Python.h>

namespace tilus::bindings {

class TensorQuery {
 public:
  // `method`: call obj.name() (else read obj.name). Holds a reference to the name.
  TensorQuery(PyTypeObject* type, const char* name, bool method);
  ~TensorQuery();
  TensorQuery(const TensorQuery&) = delete;
  TensorQuery& operator=(const TensorQuery&) = delete;

  // A new reference, or nullptr with a Python error set.
  PyObject* operator()(PyObject* obj) const;
  // True when queries on `type` objects go straight to a C function.
  bool direct() const { return how_ != How::Generic; }

 private:
  enum class How { Generic, Getter, NoArgs, VarArgs, VarArgsKeywords, FastCall, FastCallKeywords };
  PyTypeObject* type_;
  PyObject* name_;
  bool method_;
  How how_ = How::Generic;
  void* function_ = nullptr;  // the getter or the method's C function
  void* closure_ = nullptr;   // a getter's closure
};

}  // namespace tilus::bindings
