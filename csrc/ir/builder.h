// IRBuilder: how the Python transpiler creates a Program.
//
// The transpiler walks a script's AST and calls one method per statement or tile
// instruction. A tile instruction's operands (dtype, rank, shape) are checked by its
// handler's check stage (ops/op_handler.h) through tile_op; the builder keeps what is
// its own state: names, which shared tensors are freed and which are views. A failed
// check throws a ScriptError that the builder stamps with the current source location
// (set_loc), so the Python side can name the script line.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/stmt.h"

namespace tilus {

class IRBuilder {
 public:
  IRBuilder(std::string kernel_name, std::string source_file);
  ~IRBuilder();
  IRBuilder(const IRBuilder&) = delete;
  IRBuilder& operator=(const IRBuilder&) = delete;

  void set_loc(int line, int column, std::string text);
  const SourceLoc& loc() const { return loc_; }

  // ---- kernel signature and launch attributes
  Expr add_param(const std::string& name, DataType dtype);
  void set_grid(std::vector<Expr> blocks);  // 1..3 int expressions over parameters
  void set_warps(int64_t warps);            // [1, 32]
  void set_cluster(std::vector<int64_t> blocks);  // 1..3 constants, product at most 16

  // ---- scalar variables and control flow
  Expr declare(const std::string& name, DataType dtype, Expr init);  // init may be null
  // A variable declared at the start of the kernel, whatever block is open: for state a
  // nested block sets and the code after it reads (the transpiler's kernel-exit flag).
  // init must be a constant (nothing else is known there).
  Expr declare_at_top(const std::string& name, DataType dtype, Expr init);
  void assign(const Expr& var, Expr value);
  Expr begin_for(const std::string& var_name, Expr start, Expr end, Expr step, int unroll);
  void end_for();
  void begin_if(Expr cond);
  // An if around the code after a kernel exit (StmtNode::exit_guard): closed by end_if.
  void begin_exit_guard(Expr not_exited);
  void begin_else();
  void end_if();
  void begin_while(Expr cond);
  void end_while();
  // Tilus 0.2's thread groups: `begin` is relative to the enclosing group (-1 with one
  // thread: any thread of it); statements until end_thread_group run on those threads.
  void begin_thread_group(int64_t begin, int64_t num_threads);
  void end_thread_group();
  // The innermost group: first thread (absolute) and thread count; the whole block
  // outside any group. Needs set_warps first.
  std::pair<int64_t, int64_t> current_thread_group() const;
  void emit_break();
  void emit_continue();

  // ---- tile instructions (see ir/inst.h for operands)
  // global_view and global_tensor check their operands here: their output is a global
  // tensor whose extents and strides are expressions (not an OutputType), and
  // global_tensor adds a workspace to the program.
  Tensor global_view(Expr ptr, DataType dtype, std::vector<Expr> shape,
                     std::vector<Expr> strides, const std::string& name);
  Tensor global_tensor(DataType dtype, std::vector<Expr> shape, bool requires_clean,
                       const std::string& name);
  // The rest are conveniences over tile_op (below): the op's handler checks them.
  Tensor shared_tensor(DataType dtype, std::vector<int64_t> shape, const std::string& name);
  Tensor register_tensor(DataType dtype, std::vector<int64_t> shape, Expr init,
                         std::shared_ptr<const RegisterLayout> layout, const std::string& name);
  Tensor slice_shared(const Tensor& shared, std::vector<Expr> indices);
  Tensor load_global(const Tensor& global, std::vector<Expr> offsets, std::vector<int64_t> shape,
                     std::vector<int> dims);
  void store_global(const Tensor& global, const Tensor& value, std::vector<Expr> offsets,
                    std::vector<int> dims);
  Tensor load_shared(const Tensor& shared);
  void store_shared(const Tensor& shared, const Tensor& value);
  void free_shared(const Tensor& shared);
  void sync();
  void copy_async(const Tensor& src, const Tensor& dst, std::vector<Expr> offsets,
                  std::vector<int> dims);
  void copy_async_commit_group();
  void copy_async_wait_group(int64_t n);
  void copy_async_wait_all();
  // out: write into this existing tensor instead of defining a new one (may be null).
  Tensor dot(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& out);
  Tensor cast(const Tensor& x, DataType dtype);
  Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
  // A tensor with a scalar operand; scalar_lhs puts the scalar on the left (1.0 - x).
  Tensor binary_scalar(BinaryOp op, const Tensor& x, Expr scalar, bool scalar_lhs,
                       const Tensor& out);
  Tensor unary(UnaryOp op, const Tensor& x);
  Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
  void assign_tensor(const Tensor& dst, const Tensor& src);
  void lock_semaphore(Expr semaphore, Expr value);
  void release_semaphore(Expr semaphore, Expr value);
  void print_tensor(const Tensor& x, const std::string& label);
  // An instruction built through its handler's check (ops/op_handler.h), which validates
  // and normalises the operands and gives the output's type. The operand fields are
  // those of Instruction (ir/inst.h); which ones an op uses is its own. The builder adds
  // what is its state: every shared operand must still be allocated; an eff::EndsShared
  // op (free_shared) frees an allocation, never a view; a shared output of a shared
  // input is a view of its allocation.
  struct TileOpOperands {
    std::vector<Tensor> inputs;
    std::vector<int> dims;
    int64_t int_attr = 0;
    std::vector<Expr> args;
    DataType dtype;
    std::vector<int64_t> shape;
    std::string text;
    UnaryOp unary_op = UnaryOp::Neg;
    BinaryOp binary_op = BinaryOp::Add;
    bool scalar_lhs = false;
    Tensor out;                // write into this existing tensor (out=) instead of defining one
    std::string name = "r";    // the defined tensor's name hint
    std::shared_ptr<const RegisterLayout> layout;  // the defined register tensor's, when given
  };
  Tensor tile_op(Op op, TileOpOperands operands);

  // Give a tensor the name of the script variable it is first bound to.
  void name_tensor(const Tensor& t, const std::string& name);

  std::shared_ptr<Program> finish();  // checks attributes were set; closes all blocks

 private:
  struct Frame;  // an open block: its statements and what closes it
  void emit(Stmt s);
  std::shared_ptr<StmtNode> new_declare(const std::string& name, DataType dtype, Expr init);
  void emit_inst(std::shared_ptr<Instruction> inst);
  std::shared_ptr<Instruction> new_inst(Op op);
  std::string unique_name(const std::string& hint);
  Tensor define(Scope scope, DataType dtype, std::vector<int64_t> shape, const std::string& hint);
  Expr as_int(Expr e, const char* what);
  void check_shared_live(const Tensor& t, const char* what);

  std::shared_ptr<Program> program_;
  std::vector<std::unique_ptr<Frame>> frames_;
  SourceLoc loc_;
  bool grid_set_ = false, warps_set_ = false;
  int loop_depth_ = 0;
  std::vector<std::pair<int64_t, int64_t>> groups_;  // open thread groups: absolute begin, threads
  std::vector<int> group_loop_depth_;  // loop_depth_ outside each open group
  std::unordered_set<std::string> used_names_;
  std::unordered_map<int, int> freed_shared_;  // root shared tensor id -> freed (1)
  std::unordered_map<int, int> shared_root_;   // view id -> root shared tensor id
  std::unordered_map<int, int> user_named_;    // tensor ids already named after a variable
};

}  // namespace tilus
