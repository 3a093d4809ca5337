#include "ir/inst.h"

namespace tilus {

const char* op_name(Op op) {
  switch (op) {
#define TILUS_OP(e, name, defines) \
  case Op::e:                      \
    return name;
#include "ir/ops.def"
#undef TILUS_OP
  }
  return "?";
}

bool op_defines_output(Op op) {
  switch (op) {
#define TILUS_OP(e, name, defines) \
  case Op::e:                      \
    return defines;
#include "ir/ops.def"
#undef TILUS_OP
  }
  return false;
}

}  // namespace tilus
