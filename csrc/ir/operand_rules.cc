#include "ir/operand_rules.h"
#include "support/error.h"

namespace tilus {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void expect_inputs(const Instruction& inst, size_t n) {
  TILUS_CHECK(inst.inputs.size() == n, "ValueError", op_name(inst.op), " takes ", n, " tensor operands, got ",
              inst.inputs.size());
}

void require_register(const Tensor& t, const char* what, const char* operand) {
  TILUS_CHECK(t, "TypeError", what, ": ", operand, " is missing");
  TILUS_CHECK(t->scope == Scope::Register, "TypeError", what, ": ", operand,
              " must be a register tensor, got a ", scope_name(t->scope), " tensor (", t->type_str(), ")");
}

void require_shared(const Tensor& t, const char* what) {
  TILUS_CHECK(t && t->scope == Scope::Shared, "TypeError", what, " needs a shared tensor, got ",
              t ? t->type_str() : std::string("nothing"));
}

Expr int_operand(Expr e, const char* what) {
  TILUS_CHECK(e, "TypeError", what, " is missing");
  TILUS_CHECK(e->dtype.is_integer() || e->dtype.is_bool(), "TypeError", what, " must be an integer, got ",
              e->dtype.name(), " (", expr_str(e), ")");
  if (e->dtype == dtypes::int64) return e;
  return make_cast(std::move(e), dtypes::int32);
}

void check_tile_window(const Tensor& global, std::vector<Expr>& offsets, const std::vector<int64_t>& tile_shape,
                       std::vector<int>& dims, const char* what) {
  TILUS_CHECK(global && global->scope == Scope::Global, "TypeError", what,
              " needs a global tensor (from global_view or global_tensor), got ",
              global ? global->type_str() : std::string("nothing"));
  int rank = global->rank();
  int tile_rank = static_cast<int>(tile_shape.size());
  TILUS_CHECK(static_cast<int>(offsets.size()) == rank, "ValueError", what, ": the global tensor ", global->name,
              " has rank ", rank, " but ", offsets.size(), " offsets were given");
  TILUS_CHECK(tile_rank <= rank, "ValueError", what, ": a tile of rank ", tile_rank,
              " does not fit a global tensor of rank ", rank);
  if (dims.empty()) {
    for (int d = rank - tile_rank; d < rank; ++d) dims.push_back(d);
  }
  TILUS_CHECK(static_cast<int>(dims.size()) == tile_rank, "ValueError", what, ": dims has ", dims.size(),
              " entries but the tile has rank ", tile_rank);
  for (size_t i = 0; i < dims.size(); ++i) {
    TILUS_CHECK(dims[i] >= 0 && dims[i] < rank, "ValueError", what, ": dims[", i, "] = ", dims[i],
                " is not a dimension of a rank-", rank, " tensor");
    TILUS_CHECK(i == 0 || dims[i] > dims[i - 1], "ValueError", what, ": dims must be strictly increasing");
  }
  for (auto s : tile_shape)
    TILUS_CHECK(s > 0, "ValueError", what, ": tile shape ", shape_str(tile_shape), " must be positive");
  const std::string offset = std::string(what) + ": an offset";
  for (auto& o : offsets) o = int_operand(o, offset.c_str());
}

}  // namespace tilus
