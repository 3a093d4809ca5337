// One init function per area; main.cc calls them all. Bindings only translate.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "interp/interpreter.h"

namespace tilus::bindings {
void init_ir(pybind11::module_& m);       // ir.cc
void init_interp(pybind11::module_& m);   // interp.cc
void init_layout(pybind11::module_& m);   // layout.cc
void init_runtime(pybind11::module_& m);  // runtime.cc
void init_codegen(pybind11::module_& m);  // codegen.cc
void init_launch(pybind11::module_& m);   // launch.cc
void init_autotune(pybind11::module_& m);  // autotune.cc
void init_script_base(pybind11::module_& m);  // script_base.cc

// interp.cc: one HostArg per parameter of `program` from Python values (pointers as
// ints); a TypeError naming the parameter otherwise.
std::vector<HostArg> to_host_args(const Program& program, const pybind11::list& args);

// codegen.cc: the code generator's options for `arch` from the keyword arguments of
// _C.generate_cuda, _C.build_kernel and _C.autotune.build_all, whose names are the fields
// of python/tilus/option.py CodegenChoices (wgmma, unroll_budget, bounds_check, copy_tma,
// ptxas_optimize, omit, hang_check_ns, fold_scales; each optional). An unknown name is a TypeError
// listing them. A new code generator option is one line here, not one per binding.
CodegenOptions codegen_options_from(const std::string& arch, bool pointers_aligned,
                                    const pybind11::kwargs& choices);
// Their names, for the bindings' docstrings.
extern const char* const kCodegenChoiceNames;

// launch.cc: runs a FastLauncher on a call's positional arguments; false when `launcher`
// is not one or the call needs the Python path.
bool run_fast_launcher(PyObject* launcher, PyObject* args);
}  // namespace tilus::bindings
