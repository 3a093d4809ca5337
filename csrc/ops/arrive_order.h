// The PTX ordering of an mbarrier arrival from Tilus 0.2's sem/scope attributes
// (int_attr: scope << 2 | sem; ops/mbarrier.cc, ops/clusters.cc). scope='cluster'
// releases at cluster scope, also for sem='relaxed' (stronger, and `.relaxed` needs PTX
// 8.6); scope='cta' is the plain arrival (release at CTA scope).
#pragma once
#include <string>

#include "ir/inst.h"

namespace tilus::ops {

inline std::string arrive_order(const Instruction& i) { return (i.int_attr >> 2) ? ".release.cluster" : ""; }

}  // namespace tilus::ops
