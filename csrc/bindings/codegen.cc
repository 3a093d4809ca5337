#include "bindings/bindings.h"

namespace tilus::bindings {
void init_codegen(pybind11::module_& m) {}
}  // namespace tilus::bindings
