#include "bindings/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "tilus native core";
  m.attr("__version__") = TILUS_VERSION;
  tilus::bindings::init_ir(m);
  tilus::bindings::init_interp(m);
  tilus::bindings::init_layout(m);
  tilus::bindings::init_runtime(m);
  tilus::bindings::init_codegen(m);
  tilus::bindings::init_launch(m);
  tilus::bindings::init_script_base(m);
  tilus::bindings::init_autotune(m);
}
