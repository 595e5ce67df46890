//===- CollectiveKind.h - The collectives, one enum for all -----*- C++ -*-===//
//
// Generated from Collectives.def, so that the dialect, the cost model and
// the runtime name a collective by the same enumerator and print it by the
// same name. C++ only, with no dependency, so that the runtime builds it
// without LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_RUNTIME_COLLECTIVEKIND_H
#define DDP_RUNTIME_COLLECTIVEKIND_H

namespace ddp {

enum class CollectiveKind {
#define DDP_COLLECTIVE(Enumerator, Name, BusFactor, Steps, InterSteps)          \
  Enumerator,
#include "ddp/Runtime/Collectives.def"
};

/// "all_reduce", "send", ...: the name in messages, traces and reports.
constexpr const char *getCollectiveName(CollectiveKind kind) {
  switch (kind) {
#define DDP_COLLECTIVE(Enumerator, Name, BusFactor, Steps, InterSteps)          \
  case CollectiveKind::Enumerator:                                             \
    return Name;
#include "ddp/Runtime/Collectives.def"
  }
  return "?";
}

/// Whether every rank sends each peer a block of its own: the cost model
/// prices these per GPU (CostModel::allToAllCost), not along a ring.
constexpr bool isAllToAll(CollectiveKind kind) {
  return kind == CollectiveKind::AllToAll || kind == CollectiveKind::AllToAllV;
}

} // namespace ddp

#endif // DDP_RUNTIME_COLLECTIVEKIND_H
