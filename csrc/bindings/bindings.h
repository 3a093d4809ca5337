// One init function per area; main.cc calls them all. Bindings only translate.
#pragma once
#include <pybind11/pybind11.h>

namespace tilus::bindings {
void init_ir(pybind11::module_& m);       // ir.cc
void init_interp(pybind11::module_& m);   // interp.cc
void init_layout(pybind11::module_& m);   // layout.cc
void init_runtime(pybind11::module_& m);  // runtime.cc
void init_codegen(pybind11::module_& m);  // codegen.cc
void init_launch(pybind11::module_& m);   // launch.cc
void init_autotune(pybind11::module_& m);  // autotune.cc
}  // namespace tilus::bindings
