// The CUDA C++ emitter, shared by the files of csrc/codegen:
//   emitter.cc       kernel skeleton, statements, scalar expressions, shared allocation
//   emit_memory.cc   global/shared loads and stores, cp.async, layout conversions
//   emit_packed.cc   the same for packed sub-byte tensors
//   emit_compute.cc  register tensors, elementwise ops, casts, semaphores
//   emit_dot.cc      dot: mma.sync and SIMT
//   emit_wgmma.cc    dot: wgmma, and the waits the async pass placed for it
#pragma once
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/codegen.h"
#include "transforms/divisibility.h"
#include "transforms/layout_inference.h"
#include "transforms/vector_extents.h"

namespace tilus {

class CudaEmitter;
namespace ops {
// copy_async's lowering to TMA (ops/async_copy.cc): decided and set up before the body,
// finished after it.
void prepare_copy_lowering(CudaEmitter& e);
void finish_copy_lowering(CudaEmitter& e);
// Places the ring of group barriers after the tiles: fixes its offset in `body` and grows
// `dynamic_smem` by it.
void place_copy_ring(const CudaEmitter& e, std::string& body, int64_t& dynamic_smem);
}  // namespace ops

// First-fit allocator of the dynamic shared memory, blocks aligned to 128 bytes or more.
class SharedAllocator {
 public:
  int64_t allocate(int64_t bytes, int64_t align = 128);
  // Frees `offset` for reuse, except inside a thread group (hold): sibling groups run
  // concurrently, so memory one group's code releases may still be in use by a group
  // emitted after it; what is released there stays reserved for the rest of the kernel.
  void release(int64_t offset);
  void hold() { ++holds_; }
  void unhold() { --holds_; }
  int64_t peak() const { return peak_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> used_;  // (offset, bytes), sorted
  int64_t peak_ = 0;
  int holds_ = 0;
};

class CudaEmitter {
 public:
  CudaEmitter(const Program& program, const CodegenOptions& options);
  GeneratedKernel run();

  // ---- text
  void line(const std::string& s);
  void open(const std::string& head);  // "head {" and indent
  void close(const std::string& tail = "}");
  std::string fresh(const std::string& hint);
  // A variable of the generated code (loop counters, frozen values); printed verbatim.
  Expr internal_var(const std::string& name, DataType dtype = dtypes::int32);
  std::string expr(const Expr& e);
  static std::string ctype(DataType t);
  static std::string zero(DataType t);

  // ---- tensors
  std::string reg_name(const Tensor& t);
  std::string declare_reg(const Tensor& t, const RegisterLayout& layout);
  // A register operand in `need`: its own array, or a converted copy.
  std::string reg_operand(const Tensor& t, const RegisterLayout& need);
  // Element i (a loop counter named "i" over out_layout's local elements) of a register
  // operand of an elementwise op whose output `out` is laid out as out_layout: "x[i]" for an
  // operand of the output's shape and layout; for a broadcast operand, its element that
  // output element i reads, in the layout ops::broadcast_layout gives it (converted to
  // that layout first if it has another).
  std::string operand_at(const Tensor& t, const Tensor& out, const RegisterLayout& out_layout);
  // The array operand_at reads and, per output element l, the index of the element it reads.
  std::pair<std::string, std::vector<int64_t>> operand_elements(const Tensor& t, const Tensor& out,
                                                                const RegisterLayout& out_layout);
  // Writes `value_array` (laid out as `have`) into tensor t, converting if t differs.
  void write_back(const Tensor& t, const std::string& value_array, const RegisterLayout& have);
  std::string convert(const std::string& array, DataType dtype, const RegisterLayout& from,
                      const RegisterLayout& to);

  // Iterates over the local elements of `layout` with nested unrolled loops; `vec`
  // elements of the innermost local mode are handled per iteration. The body receives
  // the coordinate of the first element per dimension and its local index.
  struct Element {
    std::vector<Expr> coords;  // of the first element, per dimension
    Expr local;                // its local index
    // coords = thread_coords + sum over the loops of var * step (per dimension)
    std::vector<Expr> thread_coords;
    struct Loop {
      Expr var;
      int64_t trips;
      std::vector<int64_t> step;
    };
    std::vector<Loop> loops;
  };
  // outer_unroll: 0 unrolls every loop; k > 0 unrolls the outermost one k times only
  // (at most k of its iterations' values in flight at once).
  void for_each_local(const RegisterLayout& layout, int64_t vec,
                      const std::function<void(const Element&)>& body, int outer_unroll = 0);
  // Largest vector (elements) the innermost local mode of `layout` allows along the
  // last dimension, at most max_elems.
  static int64_t innermost_run(const RegisterLayout& layout);
  // C++ condition true when the element `el` of a walk over `layout` lies inside a tile
  // of shape `extent` ("" when the layout covers exactly the tile). A padded layout
  // (block_layouts.h default_tile_layout) holds elements outside its tile; loads,
  // stores, conversions, reductions and prints skip them. A vector of the walk lies
  // wholly inside or outside: its width divides the tile's last extent.
  std::string tile_mask(const RegisterLayout& layout, const std::vector<int64_t>& extent,
                        const Element& el);
  // C++ condition true for the one thread of each replica group (or "" if none).
  std::string replica_leader(const RegisterLayout& layout);

  // ---- global and shared tensors
  struct GlobalInfo {
    std::string ptr;
    std::vector<Expr> shape, strides;       // as in the IR, for analysis
    std::vector<std::string> shape_c, stride_c;  // frozen C++ names/literals
    std::vector<Expr> shape_v, stride_v;         // the same as expressions
    // Bounds checking (CodegenOptions::bounds_check): the user parameter whose tensor
    // holds this view (-1: unknown, unchecked) and the C++ name of the view pointer's
    // byte offset from that tensor's start.
    int bounds_param = -1;
    std::string bounds_base;
    // What the view's pointer is known to be a multiple of, in bytes: 16 for a kernel
    // parameter in the aligned build or a workspace; a view at an element address
    // (`~g[i, j]`) keeps what g's pointer and the offset allow. Vector accesses never
    // assume more (global_vector).
    int64_t align_bytes = 1;
  };
  // The test that a global store's or cp.async copy's whole tile is in bounds ("" where
  // none applies).
  std::string whole_tile_in_bounds(const Instruction& i, const RegisterLayout& layout,
                                   const std::vector<int64_t>& extent, const GlobalInfo& g);
  // emit(false) under `whole` (saying `untested` is what that branch leaves out), else
  // emit(true); just emit(true) where `whole` is empty.
  void split_on_whole_tile(const std::string& whole, const std::string& untested,
                           const std::function<void(bool tested)>& emit);
  // One step from a view's coordinates back to its parent's, for views that are not
  // trailing parts of their allocation (reshape_shared, permute_shared; ops/views.cc).
  struct ViewStep {
    enum class Kind { Slice, Permute, Reshape } kind = Kind::Slice;
    std::vector<Expr> lead;         // Slice: the frozen leading indices
    std::vector<int> dims;          // Permute: view dim i is parent dim dims[i]
    std::vector<int64_t> from, to;  // Reshape: the parent's shape, the view's shape
  };
  struct SharedInfo {
    int root = -1;
    std::string ptr;                   // typed pointer to the allocation
    std::vector<Expr> lead;            // frozen leading indices of a view
    std::vector<int64_t> shape;        // the view's shape
    // After `lead`: the steps of a transformed view, parent first (empty: a trailing
    // part of the allocation). shared_offset applies them last to first.
    std::vector<ViewStep> steps;
  };
  // The coordinates in the space after `lead` of a view's coordinates.
  static std::vector<Expr> unview(const SharedInfo& s, std::vector<Expr> coords);
  // Whether the view's last dimension runs along the allocation's last dimension, one
  // element per element, so vectors along it stay vectors.
  static bool keeps_rows(const SharedInfo& s);
  static bool reshapes_dense_rows(const SharedInfo& s, const SharedLayout& l);
  Expr shared_offset(const SharedInfo& s, const std::vector<Expr>& coords);
  // The offset of an element of a for_each_local walk. When the swizzle never changes
  // along the walk's loops (checked for every thread), it is the thread's offset plus
  // a constant per loop step: the thread's part is the same in every iteration of the
  // code around, so the compiler computes it once instead of per element.
  Expr element_offset(const SharedInfo& s, const RegisterLayout& layout, int64_t vec, const Element& el);
  bool shared_contiguous(const SharedInfo& s, int64_t vec) const;
  // Elements of register tile t (layout) one shared-memory access of view s moves: the
  // threads' runs along the last dimension, at most 16 bytes, contiguous in the view.
  int64_t shared_vector(const RegisterLayout& layout, const Tensor& t, const SharedInfo& s) const;
  // Elements one access of a tile's rows moves in view g: what the pointer, the strides
  // and the offsets allow (16 bytes at most). `need_full_vectors`: the row's last extent
  // must be a multiple of it too -- unless `partial_last` is given, which is then set
  // when it is not known to be: the caller moves the vector a row's end cuts apart
  // (emit_memory.cc partial_count).
  int64_t global_vector(const GlobalInfo& g, const std::vector<Expr>& offsets,
                        const std::vector<int>& dims, int64_t tile_last, int64_t dtype_bits,
                        bool need_full_vectors, bool* partial_last = nullptr) const;
  // Realigned accesses (device/memory.cuh load_realigned_16): where a view's rows are not
  // known to be 16-byte aligned, a run of 16 bytes along its last dimension is still read
  // with two aligned 16-byte loads. The run's elements (0: the view or the build does not
  // allow it: transforms/vector_extents.h realignable_run, or bounds checking).
  int64_t realigned_run(const Tensor& view, const std::vector<int>& dims, DataType dtype) const;
  // Emits the run's bounds and returns the C++ expression (a uint4) of the run whose first
  // element is at view index gi; `valid` (C++, "" when always) must hold for any of it to
  // be read, and the elements outside the view read as zero.
  std::string realigned_load(const GlobalInfo& g, const std::vector<Expr>& gi, int64_t run,
                             DataType dtype, const std::string& valid, bool bypass_l1);

  // ---- bounds checking (CodegenOptions::bounds_check; codegen/device/bounds.cuh)
  // The user parameter a pointer expression points into: -1 none, -2 several.
  int pointer_origin(const Expr& e) const;
  std::string param_cname(int k) const;  // the C++ name of user parameter #k
  // For an access of `width` bytes (a C++ expression) at element `offset` of view `g`
  // (`view`), at the view index `index`, when `cond` (C++, "true" when always) holds:
  // emits the report of a failure and returns the condition under which the access may
  // run ("" when nothing is checked: the option is off or the view's tensor unknown).
  std::string bounds_guard(const std::string& op, const Tensor& view, const GlobalInfo& g,
                           const std::string& cond, const Expr& offset, const std::string& width,
                           const std::vector<Expr>& index);
  // The site id of (op, view) at the current script line, for the host's message.
  int bounds_site(const std::string& op, const Tensor& view, const GlobalInfo& g);
  // A scalar element load `g[...]` with its check (bounds.cuh bounds_item), or "".
  std::string bounds_item(const Expr& e, const GlobalInfo& g, const std::string& offset);
  std::vector<BoundsSite> bounds_sites_;
  std::unordered_map<std::string, int> bounds_site_ids_;

  // ---- statements and instructions
  void find_written_globals();
  void find_read_tensors();
  bool is_read(const Tensor& t) const { return read_tensors_.count(t->id) > 0; }
  void stmt(const Stmt& s);
  bool wgmma_loop_of_known_trips(const StmtNode& loop) const;
  void block(const Stmt& body);      // a nested C++ block (scopes_)
  void inst(const Instruction& i);
  void emit_global_view(const Instruction& i);
  void emit_global_tensor(const Instruction& i);
  // Declares the pointer of a global tensor and freezes its shape and strides.
  void bind_global(const Tensor& t, const std::string& pointer, const std::string& note, int64_t align_bytes);
  // The bytes a pointer expression is known to be a multiple of (GlobalInfo::align_bytes).
  int64_t pointer_alignment(const Expr& e) const;
  void emit_shared_tensor(const Instruction& i);
  void emit_slice_shared(const Instruction& i);
  void emit_register_tensor(const Instruction& i);
  void emit_load_global(const Instruction& i);
  void emit_store_global(const Instruction& i);
  void emit_load_shared(const Instruction& i);
  void emit_store_shared(const Instruction& i);
  void emit_copy_async(const Instruction& i);
  // Packed sub-byte tensors in memory (emit_packed.cc, ir/packed.h).
  void emit_load_global_packed(const Instruction& i);
  void emit_store_global_packed(const Instruction& i);
  void emit_load_shared_packed(const Instruction& i);
  void emit_store_shared_packed(const Instruction& i);
  void emit_copy_async_packed(const Instruction& i);
  // `vec` elements of `bits` bits between the byte address `mem` and the register
  // elements at `regs`, in whole bytes through `access` ("tilus::load_global_vec" ...).
  void packed_vector_load(const std::string& access, const std::string& regs,
                          const std::string& mem, int bits, int64_t vec);
  void packed_vector_store(const std::string& access, const std::string& mem,
                           const std::string& regs, int bits, int64_t vec);
  void emit_dot(const Instruction& i);
  // A dot's operand arrays (converted to the layouts the plan needs) and accumulator.
  struct DotOperands {
    std::string a, b, acc;
    bool in_place = false;
  };
  void emit_mma(const Instruction& i, const DotPlan& plan, const DotOperands& ops);
  void emit_simt_dot(const Instruction& i, const DotPlan& plan, const DotOperands& ops);
  void emit_wgmma(const Instruction& i, const DotPlan& plan, const std::string& acc, bool in_place);
  // The name of the generated helper that issues one wgmma.m64n<n>k16 (defined once per
  // kernel before it, in helpers_).
  std::string wgmma_helper(int64_t n, DataType operand, bool b_kmajor = false);
  // After shared-memory writes wgmma may read: make them visible to the async proxy.
  void fence_for_wgmma();

  // ---- waiting for wgmma dots (the async pass placed the waits: transforms/async_waits.h)
  void emit_wgmma_wait(const Instruction& i);
  // After a wait that retired the dot writing `acc`: keep reads of its registers below.
  void pin(const Tensor& acc);
  bool accumulates_into_output(const Instruction& i, const RegisterLayout& c_layout) const;
  std::string dot_accumulator(const Instruction& i, const std::string& rc,
                              const RegisterLayout& c_layout, bool& in_place);
  void finish_dot(const Instruction& i, const std::string& acc, const RegisterLayout& c_layout,
                  bool in_place);
  void emit_cast(const Instruction& i);
  void emit_elementwise(const Instruction& i);
  struct PairedCast;
  void emit_paired_cast(const PairedCast& pc);
  bool emit_zero_fold(const Instruction& i);
  bool emit_scale_fold(const Instruction& i);
  void emit_unary(const Instruction& i);
  void emit_where(const Instruction& i);
  void emit_assign(const Instruction& i);
  void emit_semaphore(const Instruction& i);
  void emit_print(const Instruction& i);
  bool emit_ldmatrix(const Instruction& i);
  // Whether load_shared `i` gives an mma operand in the fragment layout ldmatrix fills
  // (layout and atom), and whether it can be ldmatrix (that, and a plain shared tile,
  // known once the tile is emitted).
  bool ldmatrix_layout_fits(const Instruction& i) const;
  bool ldmatrix_applies(const Instruction& i) const;
  // The ldmatrix of load `i` into the 32-bit registers `regs`: every k step, or only step
  // `ik` (a C++ expression) when the dot streams the operand.
  void emit_ldmatrix_loads(const Instruction& i, const std::string& regs, const std::string& ik);
  // Operands an mma dot loads one k step at a time inside its own loop (find_streamed_operands).
  void find_streamed_operands();
  void emit_streamed_operands(const Instruction& dot, const std::string& ik);

  // The statement that synchronises the threads of the current thread group:
  // __syncthreads() for the block, a named barrier (bar.sync id, n) for a group of whole
  // warps, __syncwarp(mask) for a group inside one warp.
  std::string block_sync() const;
  // The index of the thread's warpgroup within the current thread group (or block), as
  // an expression the compiler knows to be warp-uniform (wgmma descriptors built from it
  // stay on the uniform datapath): 0 when the threads are one warpgroup.
  std::string uniform_warpgroup() const;
  // The current thread group: first thread (absolute) and thread count.
  int64_t group_begin() const { return groups_.empty() ? 0 : groups_.back().begin; }
  int64_t group_threads() const { return threads_; }
  // tilus.option.debug.hang_check (CodegenOptions::hang_check_ns), for a wait loop on
  // barrier `bar` with parity `parity`: hang_clock() declares the loop's start time and
  // names it ("" when the check is off); hang_give_up(done, ...) is the statement the
  // loop runs after each try: tilus::hang_check (device/hang.cuh, the copy ring's waits
  // call it too), which reports the current script line and traps once the time allowed
  // has passed. hang_site() is that line as a C string literal.
  std::string hang_clock();
  std::string hang_give_up(const std::string& done, const std::string& bar, const std::string& parity,
                           const std::string& start) const;
  std::string hang_site() const;

  const Program& program_;
  CodegenOptions options_;
  // The views this build moves element by element (transforms/vector_extents.h).
  ScalarGlobals scalar_globals_;
  LayoutPlan plan_;
  Divisibility div_;
  int threads_;
  Expr tid_;  // the thread index as an IR variable
  bool banded_launch_ = false;  // blockIdx.x/y remapped to tl_block_x/y (run())
  SharedAllocator smem_;
  std::unordered_map<int, int64_t> smem_offset_;  // shared allocation id -> byte offset
  std::unordered_map<int, GlobalInfo> globals_;
  std::unordered_map<int, SharedInfo> shared_;
  std::unordered_map<int, std::string> reg_names_;
  // register tensor id -> (dot, operand 0 = A, 1 = B, 2 = the [n, k] tile whose register
  // transpose is B) for tensors an mma dot reads that are loaded with ldmatrix
  std::unordered_map<int, std::pair<const DotPlan*, int>> mma_operands_;
  // Streamed operands: a load_shared whose tile only one mma dot reads, shortly after it
  // with no shared-memory write between, is issued step by step inside the dot's k loop,
  // so one k step of the operand is live instead of the whole tile (a 64x128 K tile of
  // Tilus 0.2's attention is 128 registers a thread). load -> its dot, the dot -> its
  // loads, and the u32 register pointer each streamed load declared.
  std::unordered_map<const Instruction*, const Instruction*> streamed_loads_;
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> streamed_by_dot_;
  std::unordered_map<const Instruction*, std::string> streamed_regs_;
  // permute outputs that are a streamed load's registers under another name
  std::unordered_map<int, int> streamed_aliases_;
  // Sub-byte register tile id -> the packed 32-bit words a view unpacked it from, and the
  // C++ block they are declared in: a cast can convert straight from the words.
  struct PackedWords {
    std::string name;
    int scope;
  };
  std::unordered_map<int, PackedWords> packed_words_;
  // Register tile id -> the paired 4-bit cast that computes it (emit_cast), while it holds
  // that value: a subtraction of zero points can fold into it (emit_zero_fold). The codes
  // tile, the result's array, its words' array, the word each group of 8 results comes
  // from, the C++ block.
  struct PairedCast {
    Tensor codes;
    std::string dst;
    std::string words;
    std::vector<int64_t> word_of_group;
    bool is_signed;
    bool to_half;  // else bfloat16
    int scope;
  };
  std::unordered_map<int, PairedCast> paired_casts_;
  // Register tile id -> the packed_cast of finite small-float codes (float6_e3m2 ...) that
  // computes it, while it holds that value: a multiplication by scales can take the codes'
  // rebias (emit_scale_fold). The codes tile, its words' array, the C++ block.
  struct FloatPackedCast {
    Tensor codes;
    std::string words;
    int scope;
  };
  std::unordered_map<int, FloatPackedCast> float_packed_casts_;
  // Register tile id -> the integer type a cast computed it from, while it holds that value.
  std::unordered_map<int, DataType> integer_casts_;
  const PackedWords* packed_words_of(const Tensor& t) const;
  std::unordered_set<std::string> used_names_;
  std::unordered_set<int> internal_vars_;
  // global tensors whose memory (same pointer parameter) the kernel also stores to
  std::unordered_set<int> written_globals_;
  // tensors some instruction or expression reads (an atomic whose old values are not
  // among them issues PTX red)
  std::unordered_set<int> read_tensors_;
  int64_t unroll_budget_ = 0;              // codegen/unroll_budget.h
  std::vector<int> scopes_ = {0};             // ids of the enclosing C++ blocks
  int next_scope_ = 1;
  std::unordered_map<int, int> reg_scopes_;   // register tensor id -> block it is declared in
  std::vector<std::string> helpers_;  // device functions emitted before the kernel
  std::unordered_set<std::string> helper_names_;
  std::unordered_map<std::string, std::optional<std::vector<int64_t>>> linear_walks_;  // element_offset
  // ---- TMA (ops/tma.cc): the tensor maps the kernel takes after its workspaces, and
  // whether it issues stores (it then waits for their reads before exiting)
  std::vector<TmaMapSpec> tma_maps_;
  bool tma_stores_ = false;
  bool copy_tma_ = false;  // copy_async runs as TMA copies (ops/async_copy.cc)
  // setmaxnreg needs a register count fixed at entry (ops/clusters.cc)
  bool reallocates_registers_ = false;
  struct GroupScope {
    int64_t begin, threads;
    int barrier;  // named barrier id (1..15) of bar.sync in this group
  };
  std::vector<GroupScope> groups_;  // open thread groups, innermost last
  int next_barrier_ = 1;
  void emit_thread_group(const Stmt& s);
  std::ostringstream out_;
  int indent_ = 1;
  SourceLoc loc_;
};

// Index helpers of the memory emitters (emit_memory.cc), shared with emit_packed.cc.
namespace memory_index {
// Largest power of two <= cap that divides n.
int64_t pow2_divisor(int64_t n, int64_t cap);
// The global index of every dimension for a tile element at `coords`.
std::vector<Expr> global_index(const std::vector<Expr>& offsets, const std::vector<int>& dims,
                               const std::vector<Expr>& coords);
// C++ condition: the global index lies inside the tensor (dimension skip_dim unchecked).
std::string in_bounds(CudaEmitter& e, const std::vector<Expr>& gi, const CudaEmitter::GlobalInfo& g,
                      int skip_dim = -1);
// The element offset of a global index.
Expr global_offset(const std::vector<Expr>& gi, const CudaEmitter::GlobalInfo& g);
// An element's global offset in two parts (cp.async sources: the first computed once a
// thread, the second a constant once its loops are unrolled): its thread's first
// element's, and what the element's loops add to it.
Expr thread_part_offset(const std::vector<Expr>& offsets, const std::vector<int>& dims,
                        const RegisterLayout& layout, const Expr& tid, const CudaEmitter::GlobalInfo& g);
Expr loop_part_offset(const CudaEmitter::Element& el, const std::vector<int>& dims, size_t view_rank,
                      const CudaEmitter::GlobalInfo& g);
}  // namespace memory_index

}  // namespace tilus
