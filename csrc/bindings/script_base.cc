// tilus._C.ScriptBase: the C base class of tilus.Script. Its only job is `__call__`:
// a call with positional arguments whose compile-time values already have a native
// launcher (launch.cc) goes straight to it, with no Python frame in between; any other
// call goes to the Python method `_call(args, kwargs)`, which compiles, checks, raises
// the proper errors and registers launchers.
//
// Script.__init_subclass__ removes the user's `__call__` (the kernel source) from each
// subclass, so the type slot stays this C function for every script class.
//
// State, set from Python (python/tilus/script.py):
//   _tilus_fast     dict: tuple of compile-time argument values -> FastLauncher
//   _tilus_jit      tuple of the positions of the compile-time parameters
//   _tilus_nparams  number of parameters of the kernel
#include <Python.h>
#include <structmember.h>

#include <exception>

#include "bindings/bindings.h"

namespace tilus::bindings {

namespace {

struct ScriptBaseObject {
  PyObject_HEAD
  PyObject* fast;        // dict or NULL
  PyObject* jit;         // tuple of ints or NULL
  Py_ssize_t nparams;    // -1 until known
};

PyObject* slow_call_name = nullptr;  // interned "_call"

// The key `fast` is indexed by: the compile-time arguments, in order.
PyObject* jit_key(ScriptBaseObject* self, PyObject* args) {
  const Py_ssize_t n = PyTuple_GET_SIZE(self->jit);
  PyObject* key = PyTuple_New(n);
  if (!key) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(self->jit, i));
    if (at < 0 || at >= PyTuple_GET_SIZE(args)) {
      Py_DECREF(key);
      PyErr_Clear();
      return nullptr;
    }
    PyObject* value = PyTuple_GET_ITEM(args, at);
    Py_INCREF(value);
    PyTuple_SET_ITEM(key, i, value);
  }
  return key;
}

// 1: launched; 0: take the Python path; -1: error set.
int try_fast(ScriptBaseObject* self, PyObject* args, PyObject* kwargs) {
  if (kwargs && PyDict_GET_SIZE(kwargs) > 0) return 0;
  if (!self->fast || !self->jit || !PyDict_Check(self->fast) || !PyTuple_Check(self->jit)) return 0;
  if (PyTuple_GET_SIZE(args) != self->nparams) return 0;
  PyObject* key = jit_key(self, args);
  if (!key) return 0;
  PyObject* launcher = PyDict_GetItemWithError(self->fast, key);  // borrowed
  Py_DECREF(key);
  if (!launcher) {
    PyErr_Clear();  // unhashable values: the Python path reports them
    return 0;
  }
  try {
    return run_fast_launcher(launcher, args) ? 1 : 0;
  } catch (pybind11::error_already_set& e) {
    e.restore();
    return -1;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return -1;
  }
}

PyObject* script_call(PyObject* obj, PyObject* args, PyObject* kwargs) {
  auto* self = reinterpret_cast<ScriptBaseObject*>(obj);
  int fast = try_fast(self, args, kwargs);
  if (fast < 0) return nullptr;
  if (fast > 0) Py_RETURN_NONE;
  PyObject* kw = kwargs ? kwargs : PyDict_New();
  if (!kw) return nullptr;
  PyObject* result = PyObject_CallMethodObjArgs(obj, slow_call_name, args, kw, nullptr);
  if (!kwargs) Py_DECREF(kw);
  return result;
}

PyObject* script_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* obj = type->tp_alloc(type, 0);
  if (obj) reinterpret_cast<ScriptBaseObject*>(obj)->nparams = -1;
  return obj;
}

int script_traverse(PyObject* obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<ScriptBaseObject*>(obj);
  Py_VISIT(self->fast);
  Py_VISIT(self->jit);
  Py_VISIT(Py_TYPE(obj));  // heap type
  return 0;
}

int script_clear(PyObject* obj) {
  auto* self = reinterpret_cast<ScriptBaseObject*>(obj);
  Py_CLEAR(self->fast);
  Py_CLEAR(self->jit);
  return 0;
}

void script_dealloc(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  PyObject_GC_UnTrack(obj);
  script_clear(obj);
  type->tp_free(obj);
  Py_DECREF(type);
}

PyMemberDef script_members[] = {
    {"_tilus_fast", T_OBJECT, offsetof(ScriptBaseObject, fast), 0,
     "compile-time argument values -> native launcher"},
    {"_tilus_jit", T_OBJECT, offsetof(ScriptBaseObject, jit), 0,
     "positions of the compile-time parameters"},
    {"_tilus_nparams", T_PYSSIZET, offsetof(ScriptBaseObject, nparams), 0, "number of kernel parameters"},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot script_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(script_new)},
    {Py_tp_call, reinterpret_cast<void*>(script_call)},
    {Py_tp_traverse, reinterpret_cast<void*>(script_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(script_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(script_dealloc)},
    {Py_tp_members, script_members},
    {Py_tp_doc, const_cast<char*>("C base of tilus.Script: the native call path.")},
    {0, nullptr},
};

PyType_Spec script_spec = {
    "tilus._C.ScriptBase", sizeof(ScriptBaseObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, script_slots,
};

}  // namespace

void init_script_base(pybind11::module_& m) {
  slow_call_name = PyUnicode_InternFromString("_call");
  PyObject* type = PyType_FromSpec(&script_spec);
  if (!type) throw pybind11::error_already_set();
  m.add_object("ScriptBase", pybind11::reinterpret_steal<pybind11::object>(type));
}

}  // namespace tilus::bindings
