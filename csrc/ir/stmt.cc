#include "ir/stmt.h"

namespace tilus {

Stmt make_inst_stmt(std::shared_ptr<Instruction> inst, const SourceLoc& loc) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Inst;
  s->loc = loc;
  s->inst = std::move(inst);
  return s;
}

void for_each_top_level(const Stmt& body, const std::function<void(const StmtNode&)>& f) {
  if (!body) return;
  if (body->kind == StmtKind::Seq) {
    for (const Stmt& s : body->seq) for_each_top_level(s, f);
  } else if (body->kind == StmtKind::If && body->exit_guard && !body->else_body) {
    for_each_top_level(body->then_body, f);
  } else {
    f(*body);
  }
}

Stmt make_seq_stmt(std::vector<Stmt> items, const SourceLoc& loc) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::Seq;
  s->loc = loc;
  s->seq = std::move(items);
  return s;
}

}  // namespace tilus
