// Statements and the Program.
#pragma once
#include <functional>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/inst.h"
#include "support/error.h"

namespace tilus {

enum class StmtKind : uint8_t { Seq, Declare, Assign, For, If, While, Break, Continue, Inst, ThreadGroup };

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind;
  SourceLoc loc;
  std::vector<Stmt> seq;                // Seq
  Expr var;                             // Declare, Assign, For (loop variable)
  Expr value;                           // Declare (may be null), Assign
  Expr start, end, step;                // For: var in [start, end) by step (step > 0)
  int unroll = 0;                       // For: 0 = compiler decides, n = unroll by n, -1 = fully
  Expr cond;                            // If, While
  Stmt then_body, else_body, body;      // If (else may be null); For, While, ThreadGroup
  // ThreadGroup: `body` runs on threads [group_begin, group_begin + group_threads) of the
  // enclosing group (Tilus 0.2's `with self.thread_group(...)`); group_begin -1 with one
  // thread: any single thread of the enclosing group (single_thread()'s elect-any).
  int64_t group_begin = 0, group_threads = 0;
  // If: the guard the transpiler puts around the code after a `return` under a runtime
  // condition (the kernel ends there; lang/transpiler.py): cond is "the kernel has not
  // ended". Its body is the rest of the enclosing block, so for what the host evaluates
  // before launch (workspace sizes, the grid) declarations in it count as top-level.
  bool exit_guard = false;
  std::shared_ptr<const Instruction> inst;  // Inst
};

// A global_tensor allocation the runtime provides on each launch.
struct Workspace {
  Tensor tensor;
  bool requires_clean = false;
  SourceLoc loc;  // the global_tensor line: errors in its size point there
};

struct Program {
  std::string name;                      // kernel name, from the script class
  std::vector<Expr> params;              // runtime parameters, in call order (Var exprs)
  std::array<Expr, 3> grid;              // blocks in x, y, z (int32 exprs over params)
  SourceLoc grid_loc;                    // the self.attrs.blocks line
  int warps = 1;
  std::array<int64_t, 3> cluster{1, 1, 1};  // blocks per cluster (self.attrs.cluster_blocks)
  Stmt body;
  std::vector<Workspace> workspaces;
  std::string source_file;
};
using ProgramPtr = std::shared_ptr<const Program>;

std::string print_program(const Program& p);  // ir/printer.cc

// Statement constructors for passes that splice new statements in (ir/stmt.cc).
Stmt make_inst_stmt(std::shared_ptr<Instruction> inst, const SourceLoc& loc);
Stmt make_seq_stmt(std::vector<Stmt> items, const SourceLoc& loc);

// The statements at the top level of `body`, in order: through nested sequences and the
// bodies of exit guards (StmtNode::exit_guard), not into loops, branches or groups. The
// declarations among them are the ones the host can evaluate before a launch.
void for_each_top_level(const Stmt& body, const std::function<void(const StmtNode&)>& f);

}  // namespace tilus
