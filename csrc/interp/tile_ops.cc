// The interpreter semantics of the tile instructions (interp/tile_ops.h). All threads
// of a block execute an instruction together, so each works on whole tensors of one
// block.
#include <cstdio>
#include <new>
#include <sstream>

#include "interp/buffer.h"
#include "interp/state.h"
#include "interp/tile_math.h"
#include "interp/tile_ops.h"
#include "ops/op_handler.h"
#include "support/error.h"

namespace tilus::interp {

TensorValue& define_output(BlockState& st, const TensorNode* node, DataType dtype) {
  TensorValue& tv = st.tensor(node);
  int64_t n = node->numel();
  // element_bytes: a low-precision element takes one byte here (interp/buffer.h).
  size_t bytes = static_cast<size_t>(n * element_bytes(dtype));
  // Reuse the previous iteration's buffer unless a shared view or a pending copy
  // still refers to it.
  if (!(tv.storage && tv.storage.use_count() == 1 && tv.storage->size() == bytes)) {
    try {
      tv.storage = std::make_shared<std::vector<uint8_t>>(bytes);
    } catch (const std::bad_alloc&) {
      throw ScriptError("MemoryError", cat("the interpreter cannot allocate ", bytes,
                                           " bytes for ", node->name, " (", node->type_str(), ")"));
    }
  }
  tv.data = tv.storage->data();
  tv.elem_offsets.reset();
  tv.defined = true;
  tv.unset = false;
  tv.node = node;
  tv.dtype = dtype;
  tv.shape = &node->shape;
  tv.numel = n;
  return tv;
}

const TensorValue& input(BlockState& st, const Tensor& t, const Instruction& inst) {
  TILUS_ASSERT(t != nullptr, "missing operand of ", op_name(inst.op));
  const TensorValue& tv = st.tensor(t.get());
  TILUS_CHECK(tv.defined, "RuntimeError", op_name(inst.op), ": tensor ", t->name,
              " is used before it is defined or after it was freed");
  // Printing an uninitialised tensor shows its poison, which is what the user asked for.
  if (tv.unset && inst.op != Op::PrintTensor) uninitialised_register(t.get(), inst);
  return tv;
}

// The tensor an out= instruction writes: the existing one, or a fresh buffer when the
// name was never given storage on this path.
TensorValue& existing_output(BlockState& st, const Instruction& inst) {
  TensorValue& tv = st.tensor(inst.output.get());
  if (inst.defines_output || !tv.defined ||
      tv.numel != inst.output->numel() || tv.dtype != inst.output->dtype)
    return define_output(st, inst.output.get(), inst.output->dtype);
  tv.unset = false;  // the instruction writes all of it
  return tv;
}

namespace {

std::vector<int64_t> eval_ints(BlockState& st, const std::vector<Expr>& es) {
  std::vector<int64_t> r(es.size());
  for (size_t i = 0; i < es.size(); ++i) r[i] = eval_int(st, es[i]);
  return r;
}

void define_global(BlockState& st, const TensorNode* node, uintptr_t base, int region) {
  TensorValue& tv = st.tensor(node);
  tv.region = region;
  tv.defined = true;
  tv.node = node;
  tv.dtype = node->dtype;
  tv.storage.reset();
  tv.data = nullptr;
  tv.base = base;
  tv.gshape = eval_ints(st, node->global_shape);
  for (size_t d = 0; d < tv.gshape.size(); ++d)
    TILUS_CHECK(tv.gshape[d] >= 0, "ValueError", "global tensor ", node->name, ": dimension ",
                d, " has negative size ", tv.gshape[d]);
  if (!node->global_strides.empty()) {
    tv.gstrides = eval_ints(st, node->global_strides);
  } else {  // row-major
    tv.gstrides.assign(tv.gshape.size(), 1);
    for (int d = static_cast<int>(tv.gshape.size()) - 2; d >= 0; --d)
      tv.gstrides[d] = tv.gstrides[d + 1] * tv.gshape[d + 1];
  }
}

void fill(TensorValue& tv, Value v, DataType from) {
  int b = element_bytes(tv.dtype);
  if (tv.numel == 0) return;
  Value x = convert(v, from, tv.dtype);
  if (tv.dtype.is_float()) store_f(tv.data, tv.dtype.kind, x.f);
  else store_i(tv.data, tv.dtype.kind, x.i);
  for (int64_t i = 1; i < tv.numel; ++i) std::memcpy(tv.data + i * b, tv.data, b);
}

void slice_shared(BlockState& st, const Instruction& inst) {
  const TensorValue& s = input(st, inst.inputs[0], inst);
  const std::vector<int64_t>& shape = *s.shape;
  TILUS_CHECK(inst.args.size() <= shape.size(), "ValueError", "slice_shared: ",
              inst.args.size(), " indices for a rank-", shape.size(), " tensor");
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t idx = d < inst.args.size() ? eval_int(st, inst.args[d]) : 0;
    TILUS_CHECK(idx >= 0 && idx < shape[d], "RuntimeError", "shared tensor ",
                inst.inputs[0]->name, ": index ", idx, " is out of range for dimension ", d,
                " of size ", shape[d]);
    offset = offset * shape[d] + idx;
  }
  TensorValue& out = st.tensor(inst.output.get());
  out.defined = true;
  out.node = inst.output.get();
  out.dtype = s.dtype;
  out.storage = s.storage;
  out.shadow = s.shadow;
  out.unset = false;
  out.shape = &inst.output->shape;
  out.numel = inst.output->numel();
  if (s.elem_offsets) {  // the slice's elements are a row-major range of the view's
    const int64_t start = offset / out.numel * out.numel;
    out.data = s.data;
    out.elem_offsets = std::make_shared<const std::vector<int64_t>>(
        s.elem_offsets->begin() + start, s.elem_offsets->begin() + start + out.numel);
  } else {
    out.data = s.data + offset * element_bytes(s.dtype);
    out.elem_offsets.reset();
  }
}

}  // namespace

void copy_tensor(const TensorValue& src, TensorValue& dst, const Instruction& inst) {
  TILUS_CHECK(src.numel == dst.numel, "ValueError", op_name(inst.op), ": ",
              src.node ? src.node->type_str() : "?", " does not fit ",
              dst.node ? dst.node->type_str() : "?");
  if (!src.elem_offsets && !dst.elem_offsets) {
    convert_elements(src.data, src.dtype, dst.data, dst.dtype, src.numel);
    return;
  }
  const int sb = element_bytes(src.dtype), db = element_bytes(dst.dtype);  // a permuted view
  for (int64_t i = 0; i < src.numel; ++i)
    convert_elements(src.data + (src.elem_offsets ? (*src.elem_offsets)[i] : i) * sb, src.dtype,
                     dst.data + (dst.elem_offsets ? (*dst.elem_offsets)[i] : i) * db, dst.dtype, 1);
}

namespace {

uintptr_t semaphore_address(BlockState& st, const Instruction& inst) {
  const ExprNode* addr = inst.args[0].get();
  if (addr->kind == ExprKind::ElementAddr) {  // ~g[i]: it must lie in g's own buffer
    const TensorValue* tv;
    std::vector<int64_t> index;
    uintptr_t p = element_address(st, addr, tv, index);
    for (size_t d = 0; d < index.size() && d < tv->gshape.size(); ++d)
      TILUS_CHECK(index[d] >= 0 && index[d] < tv->gshape[d], "IndexError", op_name(inst.op),
                  ": index ", index[d], " is out of range for dimension ", d, " of ",
                  addr->tensor->name, " (size ", tv->gshape[d], ")");
    check_global_access(*st.launch, p, 4, op_name(inst.op), tv, index);
    return p;
  }
  auto p = static_cast<uintptr_t>(eval(st, inst.args[0]).i);
  TILUS_CHECK(find_region(*st.launch, p, 4) != nullptr, "RuntimeError",
              "global memory access out of bounds: ", op_name(inst.op),
              " on a semaphore address outside every buffer passed to the kernel (",
              expr_str(inst.args[0]), ")");
  return p;
}

void print_values(std::ostringstream& os, const TensorValue& x, int dim, int64_t& i,
                  int indent) {
  const auto& shape = *x.shape;
  if (dim == static_cast<int>(shape.size())) {
    const uint8_t* p = x.data + i * element_bytes(x.dtype);
    ++i;
    if (x.dtype.is_float()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", load_f(p, x.dtype.kind));
      os << buf;
    } else if (x.dtype.is_bool()) {
      os << (load_i(p, x.dtype.kind) ? "true" : "false");
    } else if (x.dtype.kind == ScalarKind::UInt64) {
      os << static_cast<uint64_t>(load_i(p, x.dtype.kind));
    } else {
      os << load_i(p, x.dtype.kind);
    }
    return;
  }
  os << "[";
  for (int64_t k = 0; k < shape[dim]; ++k) {
    if (k) {
      os << ",";
      if (dim + 1 < static_cast<int>(shape.size())) os << "\n" << std::string(indent + 1, ' ');
      else os << " ";
    }
    print_values(os, x, dim + 1, i, indent + 1);
  }
  os << "]";
}

void print_tensor(BlockState& st, const Instruction& inst) {
  const TensorValue& x = input(st, inst.inputs[0], inst);
  TILUS_CHECK(x.data != nullptr || x.numel == 0, "TypeError",
              "print_tensor: global tensors cannot be printed; load a tile first");
  std::ostringstream os;
  os << inst.text << (inst.text.empty() ? "" : " ") << "blockIdx=(" << st.block_idx[0] << ", "
     << st.block_idx[1] << ", " << st.block_idx[2] << ") " << inst.inputs[0]->type_str() << ":\n";
  int64_t i = 0;
  if (x.elem_offsets) {  // a permuted shared view: print a dense copy
    TensorValue dense = x;
    auto copy = std::make_shared<std::vector<uint8_t>>(x.numel * element_bytes(x.dtype));
    dense.storage = copy;
    dense.data = copy->data();
    dense.elem_offsets.reset();
    copy_tensor(x, dense, inst);
    print_values(os, dense, 0, i, 0);
  } else {
    print_values(os, x, 0, i, 0);
  }
  os << "\n";
  std::string s = os.str();
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

namespace {
void land(BlockState& st, const PendingCopy& c, const StmtNode* wait) {
  perform_copy(*st.launch, c);
  if (st.launch->debug) shared_copy_landed(st, c, wait);
}
}  // namespace

size_t shared_root_slot(const BlockState& st, const TensorValue& view) {
  for (size_t k = 0; k < st.tensors.size(); ++k) {
    const TensorValue& t = st.tensors[k];
    if (t.defined && t.storage == view.storage && t.node && t.node->scope == Scope::Shared &&
        t.data == t.storage->data())
      return k;
  }
  TILUS_ASSERT(false, "a shared view without its allocation");
  return 0;
}

void complete_copies(BlockState& st, size_t keep_groups, const StmtNode* wait) {
  while (st.committed_copies.size() > keep_groups) {
    for (const PendingCopy& c : st.committed_copies.front()) land(st, c, wait);
    st.committed_copies.pop_front();
  }
}

void complete_all_copies(BlockState& st, const StmtNode* wait) {
  complete_copies(st, 0, wait);
  for (const PendingCopy& c : st.open_copies) land(st, c, wait);
  st.open_copies.clear();
}

// One function per op of ir/ops.def, registered as the interpreter semantics of its
// family's handler (csrc/ops/); exec_inst dispatches through that table.
#define TILUS_EXEC(fn) void fn(BlockState& st, [[maybe_unused]] const StmtNode& stmt, const Instruction& inst)

TILUS_EXEC(exec_global_view) {
  const Launch& l = *st.launch;
  const TensorNode* out = inst.output.get();
  auto param = l.prep.view_param.find(out->id);
  int region = param == l.prep.view_param.end() ? -1 : l.param_region[param->second];
  define_global(st, out, static_cast<uintptr_t>(eval(st, inst.args[0]).i), region);
}

TILUS_EXEC(exec_global_tensor) {
  int w = inst.workspace;
  TILUS_ASSERT(w >= 0 && w < static_cast<int>(st.launch->workspace_base.size()),
               "global_tensor without a workspace");
  define_global(st, inst.output.get(), st.launch->workspace_base[w], st.launch->workspace_region[w]);
}

TILUS_EXEC(exec_shared_tensor) {
  TensorValue& tv = define_output(st, inst.output.get(), inst.output->dtype);
  poison(tv.data, tv.dtype.kind, tv.numel);
  shared_allocated(st, tv);
}

TILUS_EXEC(exec_register_tensor) {
  TensorValue& tv = define_output(st, inst.output.get(), inst.output->dtype);
  if (!inst.args.empty() && inst.args[0]) {
    fill(tv, eval(st, inst.args[0]), inst.args[0]->dtype);
  } else {
    poison(tv.data, tv.dtype.kind, tv.numel);
    tv.unset = st.launch->debug && st.launch->debug->checks.uninit;
  }
}

TILUS_EXEC(exec_slice_shared) { slice_shared(st, inst); }

TILUS_EXEC(exec_load_global) {
  const TensorNode* out = inst.output.get();
  const TensorValue& g = input(st, inst.inputs[0], inst);
  std::vector<int64_t> offsets = eval_ints(st, inst.args);
  TensorValue& tv = define_output(st, out, out->dtype);
  transfer_window(*st.launch, g, offsets, inst.dims, tv.data, tv.dtype, out->shape,
                  Transfer::Load, "load_global");
  if (st.launch->debug)
    global_tile_access(st, g, offsets, inst.dims, out->shape, thread_map_of(st, out), Access::Read, stmt);
}

TILUS_EXEC(exec_store_global) {
  const TensorValue& g = input(st, inst.inputs[0], inst);
  const TensorValue& v = input(st, inst.inputs[1], inst);
  std::vector<int64_t> offsets = eval_ints(st, inst.args);
  transfer_window(*st.launch, g, offsets, inst.dims, v.data, v.dtype, *v.shape,
                  Transfer::Store, "store_global");
  if (st.launch->debug)
    global_tile_access(st, g, offsets, inst.dims, *v.shape, thread_map_of(st, inst.inputs[1].get()),
                       Access::Write, stmt);
}

TILUS_EXEC(exec_load_shared) {
  const TensorValue& s = input(st, inst.inputs[0], inst);
  copy_tensor(s, define_output(st, inst.output.get(), inst.output->dtype), inst);
  shared_tile_access(st, s, inst.output.get(), Access::Read, stmt);
}

TILUS_EXEC(exec_store_shared) {
  const TensorValue& v = input(st, inst.inputs[1], inst);
  TensorValue& s = st.tensor(inst.inputs[0].get());
  TILUS_CHECK(s.defined, "RuntimeError", "store_shared: shared tensor ",
              inst.inputs[0]->name, " is used after it was freed");
  wgmma_shared_write(st, s, "store_shared", inst.inputs[0]->name);
  copy_tensor(v, s, inst);
  shared_tile_access(st, s, inst.inputs[1].get(), Access::Write, stmt);
}

TILUS_EXEC(exec_free_shared) {
  TensorValue& s = st.tensor(inst.inputs[0].get());
  s.defined = false;
  s.storage.reset();  // pending copies and views keep their own reference
  s.data = nullptr;
}

// The whole block executes each instruction together; a barrier only ends the
// interval within which the race checks compare the threads' accesses.
TILUS_EXEC(exec_sync) { debug_barrier(st); }

TILUS_EXEC(exec_copy_async) {
  const TensorValue& g = input(st, inst.inputs[0], inst);
  const TensorValue& dst = input(st, inst.inputs[1], inst);
  wgmma_shared_write(st, dst, "copy_async", inst.inputs[1]->name);  // it may land at once
  PendingCopy c;
  c.src = g;
  c.keep_alive = dst.storage;
  c.dst = dst.data;
  c.dst_dtype = dst.dtype;
  c.dst_shape = *dst.shape;
  c.offsets = eval_ints(st, inst.args);
  c.dims = inst.dims;
  c.stmt = &stmt;
  c.dst_offsets = dst.elem_offsets;
  if (st.launch->debug) {
    c.dst_node = inst.inputs[1].get();
    c.shadow = dst.shadow;
    c.issue_epoch = st.epoch;
    global_tile_access(st, g, c.offsets, c.dims, c.dst_shape, copy_thread_map(st, c.dst_node),
                       Access::Read, stmt);
  }
  st.open_copies.push_back(std::move(c));
}

TILUS_EXEC(exec_copy_async_commit_group) {
  st.committed_copies.push_back(std::move(st.open_copies));
  st.open_copies.clear();
}

TILUS_EXEC(exec_copy_async_wait_group) {
  TILUS_CHECK(inst.int_attr >= 0, "ValueError", "copy_async_wait_group: n must be >= 0");
  complete_copies(st, static_cast<size_t>(inst.int_attr), &stmt);
}

TILUS_EXEC(exec_copy_async_wait_all) { complete_all_copies(st, &stmt); }

TILUS_EXEC(exec_cast) {
  const TensorValue& x = input(st, inst.inputs[0], inst);
  copy_tensor(x, define_output(st, inst.output.get(), inst.output->dtype), inst);
}

TILUS_EXEC(exec_assign) {
  const TensorNode* out = inst.output.get();
  const TensorValue& src = input(st, inst.inputs[0], inst);
  TensorValue& dst = st.tensor(out);
  if (&dst == &src) return;
  if (!dst.defined || dst.numel != src.numel || !dst.data) {
    copy_tensor(src, define_output(st, out, out->dtype), inst);
    return;
  }
  copy_tensor(src, dst, inst);
  dst.unset = false;
}

TILUS_EXEC(exec_lock_semaphore) {
  uintptr_t p = semaphore_address(st, inst);
  auto v = static_cast<int32_t>(convert(eval(st, inst.args[1]), inst.args[1]->dtype,
                                        dtypes::int32).i);
  wait_semaphore(st, reinterpret_cast<const uint8_t*>(p), v, stmt);
  debug_acquire(st, p);
}

TILUS_EXEC(exec_release_semaphore) {
  uintptr_t p = semaphore_address(st, inst);
  auto v = static_cast<int32_t>(convert(eval(st, inst.args[1]), inst.args[1]->dtype,
                                        dtypes::int32).i);
  debug_release(st, p);
  store_raw<int32_t>(reinterpret_cast<void*>(p), v);
}

TILUS_EXEC(exec_print_tensor) { print_tensor(st, inst); }

#undef TILUS_EXEC

void exec_inst(BlockState& st, const StmtNode& stmt, const Instruction& inst) {
  ++st.launch->instructions;
  if (st.wgmma) wgmma_guard(st, stmt, inst);
  op_handler(inst.op).interpret(st, stmt, inst);
}

}  // namespace tilus::interp
