#include "ir/stmt.h"

namespace tilus {

Stmt make_inst_stmt(std::shared_ptr<Instruction> inst, const SourceLoc& loc) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Inst;
  s->loc = loc;
  s->inst = std::move(inst);
  return s;
}

Stmt make_seq_stmt(std::vector<Stmt> items, const SourceLoc& loc) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Seq;
  s->loc = loc;
  s->seq = std::move(items);
  return s;
}

}  // namespace tilus
