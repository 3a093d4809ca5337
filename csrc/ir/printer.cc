// The IR as readable text: what `kernel.ir(...)` shows and tests assert on.
//
//   kernel add_one(n: int32, a_ptr: ~float32, b_ptr: ~float32)
//     blocks = [((n + 127) / 128), 1, 1], warps = 4
//   {
//     offset: int32 = (blockIdx.x * 128)
//     %ga = global_view(a_ptr, dtype=float32, shape=[n])   # global[float32, n]
//     ...
//   }
#include <sstream>

#include "layout/register_layout.h"
#include "ir/functor.h"

namespace tilus {

namespace {

std::string list(const std::vector<Expr>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + expr_str(xs[i]);
  return s + "]";
}

std::string ints(const std::vector<int64_t>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

std::string dims_attr(const Instruction& inst, int global_rank, size_t tile_rank) {
  // Only print dims when they differ from the default (the last tile-rank dims).
  bool is_default = true;
  for (size_t i = 0; i < inst.dims.size(); ++i)
    if (inst.dims[i] != global_rank - static_cast<int>(tile_rank) + static_cast<int>(i)) is_default = false;
  if (is_default) return "";
  std::string s = ", dims=[";
  for (size_t i = 0; i < inst.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(inst.dims[i]);
  return s + "]";
}

class Printer : public StmtVisitor {
 public:
  std::string run(const Program& p) {
    os_ << "kernel " << p.name << "(";
    for (size_t i = 0; i < p.params.size(); ++i)
      os_ << (i ? ", " : "") << p.params[i]->name << ": " << p.params[i]->dtype.name();
    os_ << ")\n  blocks = [" << expr_str(p.grid[0]) << ", " << expr_str(p.grid[1]) << ", "
        << expr_str(p.grid[2]) << "], warps = " << p.warps;
    if (p.cluster != std::array<int64_t, 3>{1, 1, 1})
      os_ << ", cluster_blocks = [" << p.cluster[0] << ", " << p.cluster[1] << ", " << p.cluster[2] << "]";
    os_ << "\n{\n";
    indent_ = 1;
    visit_stmt(p.body);
    os_ << "}\n";
    return os_.str();
  }

 private:
  void line(const std::string& s) { os_ << std::string(indent_ * 2, ' ') << s << "\n"; }

  // head {, the indented body, then the closing line
  void block(const std::string& head, const Stmt& body) {
    line(head + " {");
    ++indent_;
    visit_stmt(body);
    --indent_;
  }

  void visit_declare(const Stmt& s) override {
    line(s->var->name + ": " + s->var->dtype.name() + (s->value ? " = " + expr_str(s->value) : std::string()));
  }
  void visit_assign(const Stmt& s) override { line(s->var->name + " = " + expr_str(s->value)); }
  void visit_for(const Stmt& s) override {
    std::string head = "for " + s->var->name + " in range(" + expr_str(s->start) + ", " +
                       expr_str(s->end) + ", " + expr_str(s->step) + ")";
    if (s->unroll != 0) head += s->unroll < 0 ? " unroll(all)" : " unroll(" + std::to_string(s->unroll) + ")";
    block(head, s->body);
    line("}");
  }
  void visit_if(const Stmt& s) override {
    block("if " + expr_str(s->cond), s->then_body);
    if (s->else_body) {
      line("} else {");
      ++indent_;
      visit_stmt(s->else_body);
      --indent_;
    }
    line("}");
  }
  void visit_while(const Stmt& s) override {
    block("while " + expr_str(s->cond), s->body);
    line("}");
  }
  // thread_group(begin, n): the threads, relative to the enclosing group, that run it.
  void visit_thread_group(const Stmt& s) override {
    block("thread_group(" + (s->group_begin < 0 ? std::string("any") : std::to_string(s->group_begin)) + ", " +
              std::to_string(s->group_threads) + ")",
          s->body);
    line("}");
  }
  void visit_break(const Stmt& s) override { line("break"); }
  void visit_continue(const Stmt& s) override { line("continue"); }
  void visit_inst(const Stmt& s) override { line(inst(*s->inst)); }

  static std::string t(const Tensor& x) { return "%" + x->name; }

  std::string inst(const Instruction& i) {
    std::ostringstream o;
    if (i.output && i.defines_output) o << t(i.output) << " = ";
    o << op_name(i.op) << "(";
    switch (i.op) {
      case Op::GlobalView:
        o << expr_str(i.args[0]) << ", dtype=" << i.dtype.name() << ", shape="
          << list(i.output->global_shape) << ")";
        break;
      case Op::GlobalTensor:
        o << "dtype=" << i.dtype.name() << ", shape=" << list(i.output->global_shape)
          << ", requires_clean=" << (i.requires_clean ? "True" : "False") << ")";
        break;
      case Op::SharedTensor:
        o << "dtype=" << i.dtype.name() << ", shape=" << ints(i.output->shape) << ")";
        break;
      case Op::RegisterTensor:
        o << "dtype=" << i.dtype.name() << ", shape=" << ints(i.output->shape);
        if (!i.args.empty()) o << ", init=" << expr_str(i.args[0]);
        o << ")";
        break;
      case Op::SliceShared:
        o.str("");
        o << t(i.output) << " = " << t(i.inputs[0]) << list(i.args);
        return o.str() + "   # " + i.output->type_str();
      case Op::LoadGlobal:
        o << t(i.inputs[0]) << ", offsets=" << list(i.args) << ", shape=" << ints(i.shape)
          << dims_attr(i, i.inputs[0]->rank(), i.shape.size()) << ")";
        break;
      case Op::StoreGlobal:
        o << t(i.inputs[0]) << ", " << t(i.inputs[1]) << ", offsets=" << list(i.args)
          << dims_attr(i, i.inputs[0]->rank(), i.inputs[1]->shape.size()) << ")";
        break;
      case Op::CopyAsync:
        o << "src=" << t(i.inputs[0]) << ", dst=" << t(i.inputs[1]) << ", offsets=" << list(i.args)
          << dims_attr(i, i.inputs[0]->rank(), i.inputs[1]->shape.size()) << ")";
        break;
      case Op::CopyAsyncWaitGroup: o << "n=" << i.int_attr << ")"; break;
      case Op::CopyAsyncWaitAll: o << ")" << (i.text.empty() ? "" : "   # " + i.text); break;
      case Op::WgmmaWaitGroup: {
        o << "n=" << i.int_attr;
        if (!i.inputs.empty() && i.inputs[0]->scope == Scope::Shared) {
          o << ", if_writing=" << t(i.inputs[0]) << ", hits=[";
          for (size_t k = 1; k < i.inputs.size(); ++k) o << (k > 1 ? ", " : "") << t(i.inputs[k]);
          o << "]";
        } else if (!i.inputs.empty()) {
          o << ", fence=[";
          for (size_t k = 0; k < i.inputs.size(); ++k) o << (k ? ", " : "") << t(i.inputs[k]);
          o << "]";
        }
        o << ")";
        if (!i.text.empty()) o << "   # " << i.text;
        break;
      }
      case Op::Cast: o << t(i.inputs[0]) << ", dtype=" << i.dtype.name() << ")"; break;
      case Op::Elementwise: {
        o.str("");
        if (i.defines_output) o << t(i.output) << " = ";
        std::string sym = binary_op_symbol(i.binary_op);
        std::string lhs = t(i.inputs[0]);
        std::string rhs = i.inputs.size() > 1 ? t(i.inputs[1]) : expr_str(i.args[0]);
        if (i.inputs.size() == 1 && i.scalar_lhs) std::swap(lhs, rhs);
        if (sym == "min" || sym == "max")
          o << sym << "(" << lhs << ", " << rhs << ")";
        else
          o << lhs << " " << sym << " " << rhs;
        if (!i.defines_output) o << "  -> " << t(i.output);
        break;
      }
      case Op::UnaryElementwise:
        o.str("");
        o << t(i.output) << " = " << (i.unary_op == UnaryOp::Neg ? "-" : "!") << t(i.inputs[0]);
        break;
      case Op::Assign:
        o.str("");
        o << t(i.output) << " := " << t(i.inputs[0]);
        return o.str();
      case Op::LockSemaphore:
      case Op::ReleaseSemaphore:
        o << expr_str(i.args[0]) << ", value=" << expr_str(i.args[1]) << ")";
        break;
      case Op::PrintTensor: o << "\"" << i.text << "\", " << t(i.inputs[0]) << ")"; break;
      // kernel utilities
      case Op::Printf:
        o << "\"" << i.text << "\"";
        for (const Expr& a : i.args) o << ", " << expr_str(a);
        o << ")";
        break;
      case Op::Assume: o << expr_str(i.args[0]) << ")"; break;
      case Op::IndexTile: o << "dim=" << i.dims.at(0) << ")"; break;
      // hopper family (ops/mbarrier.cc, ops/tma.cc)
      case Op::MbarrierAlloc:
        o.str("");
        o << expr_str(i.args[0]) << " = mbarrier_alloc(counts="
          << list(std::vector<Expr>(i.args.begin() + 1, i.args.end())) << ")";
        return o.str();
      case Op::MbarrierArrive:
      case Op::MbarrierArriveExpectTx:
      case Op::MbarrierWait:
        o << expr_str(i.args[0]) << (i.op == Op::MbarrierWait ? ", phase=" : i.op == Op::MbarrierArrive ? ", count=" : ", transaction_bytes=")
          << expr_str(i.args[1]) << ")";
        break;
      case Op::TmaGlobalToShared:
        o << t(i.inputs[0]) << ", " << t(i.inputs[1]) << ", offsets="
          << list(std::vector<Expr>(i.args.begin() + 1, i.args.end())) << ", dims=" << ints(std::vector<int64_t>(i.dims.begin(), i.dims.end()))
          << ", mbarrier=" << expr_str(i.args[0]) << ")";
        break;
      case Op::TmaSharedToGlobal:
        o << t(i.inputs[0]) << ", " << t(i.inputs[1]) << ", offsets=" << list(i.args)
          << ", dims=" << ints(std::vector<int64_t>(i.dims.begin(), i.dims.end())) << ")";
        break;
      case Op::TmaCommitGroup:
      case Op::FenceProxyAsyncRelease: o << ")"; break;
      case Op::TmaWaitGroup:
        o << i.int_attr << (i.dims.size() == 1 && i.dims[0] ? ", read=True" : "") << ")";
        break;
      case Op::FenceProxyAsync: o << "space=" << i.text << ")"; break;
      // wgmma family (ops/wgmma.cc): the script's explicit self.wgmma
      case Op::WgmmaFence:
      case Op::WgmmaCommit: o << ")"; break;
      case Op::WgmmaWait: o << i.int_attr << ")"; break;
      case Op::WgmmaMma:
        o << t(i.inputs[0]) << ", " << t(i.inputs[1]) << ", " << t(i.inputs[2]) << ")";
        break;
      // shared-tensor elements (ops/shared_item.cc)
      case Op::SharedItemPtr:
        o.str("");
        o << expr_str(i.args[0]) << " = " << t(i.inputs[0]) << ".item_ptr()";
        return o.str();
      // thread groups and clusters (ops/clusters.cc)
      case Op::SetMaxNReg: o << i.int_attr << ", " << (i.dims.at(0) ? "inc" : "dec") << ")"; break;
      case Op::ClusterSync: o << ")"; break;
      case Op::ClusterQuery:
        o.str("");
        o << expr_str(i.args[0]) << " = cluster_query(" << cluster_what_name(i.int_attr) << ")";
        return o.str();
      case Op::ClusterMapSharedAddr:
        o.str("");
        o << expr_str(i.args[0]) << " = cluster_map_shared_addr(" << expr_str(i.args[1]) << ", rank="
          << expr_str(i.args[2]) << ")";
        return o.str();
      case Op::MbarrierArriveCluster:
        o << expr_str(i.args[0]) << ", transaction_bytes=" << expr_str(i.args[1])
          << (i.dims.at(0) ? ", multicast_mask=" : ", target_rank=") << expr_str(i.args[2]) << ")";
        break;
      // math family (ops/math.cc)
      case Op::Abs:
      case Op::Exp2:
      case Op::Log:
      case Op::Sin:
      case Op::Cos:
      case Op::Round:
      case Op::Square:
      case Op::Sqrt:
      case Op::Rsqrt:
      case Op::Clip:
        o << t(i.inputs[0]);
        if (i.op == Op::Clip) o << ", min=" << expr_str(i.args[0]) << ", max=" << expr_str(i.args[1]);
        if (i.int_attr == 1) o << ", approx=True";
        o << ")";
        break;
      case Op::TensorItem:
        o.str("");
        for (size_t k = 0; k < i.args.size(); ++k) o << (k ? ", " : "") << expr_str(i.args[k]);
        o << " = " << t(i.inputs[0]) << (i.args.size() > 1 ? ".tolist()" : ".item()");
        return o.str();
      case Op::Scan:
        o << t(i.inputs[0]) << ", dim=" << i.dims.at(0) << ", op='" << i.text
          << "', exclusive=" << (i.int_attr ? "True" : "False") << ")";
        break;
      case Op::Sum:
      // reductions and scans
      case Op::Max:
      case Op::Min:
      case Op::Any:
      case Op::All:
        o << t(i.inputs[0]) << ", dim=" << i.dims.at(0) << ", keepdim=" << (i.int_attr ? "True" : "False") << ")";
        break;
      // atomics and scatter stores (ops/atomics.cc), random numbers (ops/random.cc)
      case Op::AtomicShared:
      case Op::AtomicGlobal:
      case Op::AtomicSharedScatter:
      case Op::AtomicGlobalScatter:
      case Op::StoreSharedScatter:
      case Op::StoreGlobalScatter: {
        static const char* const scopes[] = {"cta", "cluster", "gpu", "sys"};
        static const char* const sems[] = {"relaxed", "acquire", "release", "acq_rel"};
        for (size_t k = 0; k < i.inputs.size(); ++k) o << (k ? ", " : "") << t(i.inputs[k]);
        if (i.op == Op::AtomicGlobal) o << ", offsets=" << list(i.args);
        if (!i.dims.empty()) o << ", dim=" << i.dims[0];
        if (i.op != Op::StoreSharedScatter && i.op != Op::StoreGlobalScatter)
          o << ", op=" << i.text << ", sem=" << sems[(i.int_attr >> 2) & 3] << ", scope=" << scopes[i.int_attr & 3];
        o << ")";
        break;
      }
      case Op::Randint:
      case Op::Rand:
      case Op::Randn:
        o << expr_str(i.args[0]) << ", " << t(i.inputs[0]) << ", n_rounds=" << i.int_attr;
        if (i.op == Op::Randint) o << ", word=" << i.dims.at(0);
        o << ")";
        break;
      // ---- views (ops/reshape.cc, ops/views.cc)
      case Op::Reshape: o << t(i.inputs[0]) << ", shape=" << ints(i.shape) << ")"; break;
      case Op::Permute: {
        o << t(i.inputs[0]) << ", dims=[";
        for (size_t k = 0; k < i.dims.size(); ++k) o << (k ? ", " : "") << i.dims[k];
        o << "])";
        break;
      }
      case Op::View:
        o << t(i.inputs[0]) << ", dtype=" << i.dtype.name();
        if (i.int_attr) o << ", layout=" << (i.output->layout ? i.output->layout->str() : "?");
        o << ")";
        break;
      case Op::Repeat:
      case Op::RepeatInterleave: o << t(i.inputs[0]) << ", repeats=" << ints(i.shape) << ")"; break;
      case Op::ReshapeShared: o << t(i.inputs[0]) << ", shape=" << ints(i.shape) << ")"; break;
      case Op::PermuteShared: {
        o << t(i.inputs[0]) << ", dims=[";
        for (size_t k = 0; k < i.dims.size(); ++k) o << (k ? ", " : "") << i.dims[k];
        o << "])";
        break;
      }
      // Operands only: inputs, then out= when writing into an existing tensor.
      case Op::LoadShared:
      case Op::StoreShared:
      case Op::FreeShared:
      case Op::Sync:
      case Op::CopyAsyncCommitGroup:
      case Op::WgmmaCommitGroup:
      case Op::Dot:
      case Op::Exp:
      case Op::Where: {
        for (size_t k = 0; k < i.inputs.size(); ++k) o << (k ? ", " : "") << t(i.inputs[k]);
        if (i.output && !i.defines_output) o << (i.inputs.empty() ? "" : ", ") << "out=" << t(i.output);
        if (i.op == Op::Dot && dot_lowering(i) == DotLowering::WgmmaSync) o << ", wgmma=sync";
        if (i.op == Op::Dot && dot_lowering(i) == DotLowering::WgmmaAsync) o << ", wgmma=async";
        o << ")";
      }
    }
    if (i.output && i.defines_output) o << "   # " << i.output->type_str();
    return o.str();
  }

  std::ostringstream os_;
  int indent_ = 0;
};

}  // namespace

std::string print_program(const Program& p) { return Printer().run(p); }

}  // namespace tilus
