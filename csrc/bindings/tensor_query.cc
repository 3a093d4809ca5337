#include "bindings/tensor_query.h"

namespace tilus::bindings {

namespace {
using FastCall = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t);
using FastCallKeywords = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);
}  // namespace

TensorQuery::TensorQuery(PyTypeObject* type, const char* name, bool method)
    : type_(type), name_(PyUnicode_InternFromString(name)), method_(method) {
  // The descriptor as the type defines it (an unbound method or a getset descriptor).
  PyObject* descr = name_ ? PyObject_GetAttr(reinterpret_cast<PyObject*>(type), name_) : nullptr;
  if (!descr) {
    PyErr_Clear();
    return;
  }
  if (!method && Py_IS_TYPE(descr, &PyGetSetDescr_Type)) {
    PyGetSetDef* def = reinterpret_cast<PyGetSetDescrObject*>(descr)->d_getset;
    if (def && def->get) {
      how_ = How::Getter;
      function_ = reinterpret_cast<void*>(def->get);
      closure_ = def->closure;
    }
  } else if (method && Py_IS_TYPE(descr, &PyMethodDescr_Type)) {
    PyMethodDef* def = reinterpret_cast<PyMethodDescrObject*>(descr)->d_method;
    const int kinds = METH_VARARGS | METH_KEYWORDS | METH_NOARGS | METH_O | METH_FASTCALL | METH_METHOD;
    switch (def ? def->ml_flags & kinds : -1) {
      case METH_NOARGS: how_ = How::NoArgs; break;
      case METH_VARARGS: how_ = How::VarArgs; break;
      case METH_VARARGS | METH_KEYWORDS: how_ = How::VarArgsKeywords; break;
      case METH_FASTCALL: how_ = How::FastCall; break;
      case METH_FASTCALL | METH_KEYWORDS: how_ = How::FastCallKeywords; break;
      default: break;  // METH_O, METH_METHOD: the generic call
    }
    if (how_ != How::Generic) function_ = reinterpret_cast<void*>(def->ml_meth);
  }
  Py_DECREF(descr);  // the type keeps the descriptor (and so its PyMethodDef) alive
}

TensorQuery::~TensorQuery() { Py_XDECREF(name_); }

PyObject* TensorQuery::operator()(PyObject* obj) const {
  if (Py_TYPE(obj) != type_ || how_ == How::Generic) {
    return method_ ? PyObject_CallMethodNoArgs(obj, name_) : PyObject_GetAttr(obj, name_);
  }
  switch (how_) {
    case How::Getter: return reinterpret_cast<getter>(function_)(obj, closure_);
    case How::NoArgs: return reinterpret_cast<PyCFunction>(function_)(obj, nullptr);
    case How::VarArgs: {
      PyObject* no_args = PyTuple_New(0);  // the shared empty tuple: no allocation
      PyObject* r = no_args ? reinterpret_cast<PyCFunction>(function_)(obj, no_args) : nullptr;
      Py_XDECREF(no_args);
      return r;
    }
    case How::VarArgsKeywords: {
      PyObject* no_args = PyTuple_New(0);
      PyObject* r = no_args ? reinterpret_cast<PyCFunctionWithKeywords>(function_)(obj, no_args, nullptr) : nullptr;
      Py_XDECREF(no_args);
      return r;
    }
    case How::FastCall: return reinterpret_cast<FastCall>(function_)(obj, nullptr, 0);
    case How::FastCallKeywords: return reinterpret_cast<FastCallKeywords>(function_)(obj, nullptr, 0, nullptr);
    case How::Generic: break;
  }
  return nullptr;
}

}  // namespace tilus::bindings
