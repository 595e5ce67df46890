//===- SimResult.cpp - What a simulation reports ---------------------------===//

#include "ddp/Sim/Simulator.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

using namespace mlir;
using namespace ddp;
using namespace ddp::sim;

StringRef ddp::sim::stringifyEventCategory(EventCategory category) {
  switch (category) {
  case EventCategory::Compute:
    return "compute";
  case EventCategory::Comm:
    return "comm";
  case EventCategory::Wait:
    return "wait";
  }
  llvm_unreachable("unknown event category");
}

StringRef LowerBound::binding() const {
  double bound = value();
  if (bound == compute)
    return "compute";
  if (bound == communication)
    return "communication";
  return "tail";
}

std::optional<double> SimResult::overlapFraction() const {
  if (commTime <= 0)
    return std::nullopt;
  return std::clamp(1 - exposedCommTime / commTime, 0.0, 1.0);
}

double SimResult::stepOverLowerBound() const {
  double bound = lowerBound.value();
  return bound > 0 ? stepTime / bound : 1;
}
