// Comparing expressions by structure, and the variables they read: what analyses that
// match two instructions' operands use (the verifier's async check, the transaction-byte
// check).
#pragma once
#include <unordered_set>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace tilus {

// The same value wherever both are evaluated with the same variables: the same tree of
// operations over the same variables and constants. Element loads never compare equal (a
// load may read a different value each time).
bool same_expr(const Expr& a, const Expr& b);

// Whether `e` reads any variable of `vars` (by var_id).
bool mentions(const Expr& e, const std::unordered_set<int>& vars);

// The variables statement `s` may change (declared, assigned, loop variables), anywhere
// below it: an expression that mentions one may not mean after `s` what it meant before.
std::unordered_set<int> written_vars(const Stmt& s);

}  // namespace tilus
