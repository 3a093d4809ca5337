// Bounds checking of global accesses (CodegenOptions::bounds_check). Each view knows the
// user parameter whose tensor holds it and its pointer's byte offset from that tensor's
// start (bound once, at the view); each access adds that offset to its own and compares
// it with the tensor's size less the access's width (codegen/device/bounds.cuh). A
// failing access is skipped and reported; the host turns the record into an error
// naming the site (python/tilus/runtime/bounds.py).
#include "codegen/emitter.h"

namespace tilus {

int CudaEmitter::pointer_origin(const Expr& e) const {
  if (!e) return -1;
  auto join = [](int a, int b) {
    if (a == -1) return b;
    if (b == -1 || a == b) return a;
    return -2;
  };
  switch (e->kind) {
    case ExprKind::Var:
      if (e->dtype.is_pointer)
        for (size_t k = 0; k < program_.params.size(); ++k)
          if (program_.params[k]->var_id == e->var_id) return static_cast<int>(k);
      return -1;
    case ExprKind::ElementAddr: {
      auto it = globals_.find(e->tensor->id);
      return it == globals_.end() || it->second.bounds_param < 0 ? -2 : it->second.bounds_param;
    }
    case ExprKind::Binary: return join(pointer_origin(e->a), pointer_origin(e->b));
    case ExprKind::Cast:
    case ExprKind::Unary: return pointer_origin(e->a);
    case ExprKind::Select: return join(pointer_origin(e->a), pointer_origin(e->b));
    case ExprKind::Const:
    case ExprKind::BlockIdx:
    case ExprKind::Math: return -1;  // never a pointer
    case ExprKind::ElementLoad:
      // A pointer read from memory (a table of pointers) may point anywhere.
      return e->dtype.is_pointer ? -2 : -1;
  }
  return -2;
}

int CudaEmitter::bounds_site(const std::string& op, const Tensor& view, const GlobalInfo& g) {
  const std::string key = op + "|" + std::to_string(view->id) + "|" + loc_.file + ":" +
                          std::to_string(loc_.line) + ":" + std::to_string(loc_.column);
  auto it = bounds_site_ids_.find(key);
  if (it != bounds_site_ids_.end()) return it->second;
  BoundsSite site;
  site.op = op;
  site.view = view->name;
  site.param = program_.params[static_cast<size_t>(g.bounds_param)]->name;
  for (const Expr& extent : g.shape) site.view_shape.push_back(expr_str(extent));
  site.loc = loc_;
  bounds_sites_.push_back(site);
  const int id = static_cast<int>(bounds_sites_.size()) - 1;
  bounds_site_ids_.emplace(key, id);
  return id;
}

namespace {
// The report's trailing arguments: rank, then four index values (missing ones 0).
std::string index_args(CudaEmitter& e, const std::vector<Expr>& index) {
  std::string s = std::to_string(index.size());
  for (size_t d = 0; d < 4; ++d)
    s += ", " + (d < index.size() ? "(long long)(" + e.expr(index[d]) + ")" : std::string("0ll"));
  return s;
}
}  // namespace

std::string CudaEmitter::bounds_guard(const std::string& op, const Tensor& view, const GlobalInfo& g,
                                      const std::string& cond, const Expr& offset,
                                      const std::string& width, const std::vector<Expr>& index) {
  if (!options_.bounds_check || g.bounds_param < 0) return "";
  const int site = bounds_site(op, view, g);
  const int64_t elem = whole_bytes(view->dtype, 1, "bounds check: one element");
  const std::string x = "(long long)(" + expr(offset) + ") * " + std::to_string(elem) + "ll + " + g.bounds_base;
  const std::string limit = "tl_bc_size" + std::to_string(g.bounds_param) + " - (long long)(" + width + ")";
  const std::string ok = "tilus::bounds_ok(" + x + ", " + limit + ")";
  const std::string bx = banded_launch_ ? "tl_block_x" : "(int)blockIdx.x";
  const std::string by = banded_launch_ ? "tl_block_y" : "(int)blockIdx.y";
  line("if ((" + cond + ") && !" + ok + ") tilus::bounds_report(tl_bounds, " + std::to_string(site) +
       ", " + bx + ", " + by + ", " + x + ", " + index_args(*this, index) + ");");
  return ok;
}

std::string CudaEmitter::bounds_item(const Expr& e, const GlobalInfo& g, const std::string& offset) {
  if (!options_.bounds_check || g.bounds_param < 0) return "";
  const int site = bounds_site("element load", e->tensor, g);
  const std::string bx = banded_launch_ ? "tl_block_x" : "(int)blockIdx.x";
  const std::string by = banded_launch_ ? "tl_block_y" : "(int)blockIdx.y";
  return "tilus::bounds_item(" + g.ptr + ", (long long)(" + offset + "), " + g.bounds_base +
         ", tl_bc_size" + std::to_string(g.bounds_param) + " - (long long)sizeof(*" + g.ptr +
         "), tl_bounds, " + std::to_string(site) + ", " + bx + ", " + by + ", " +
         index_args(*this, e->indices) + ")";
}

}  // namespace tilus
