//===- LowerBound.cpp - The step's lower bound ----------------------------===//
//
// No schedule of the step beats the larger of its ideal compute and its
// busiest stream's transfers, nor the ideal compute up to the last
// gradient plus that gradient's update and its own reduction
// (docs/CostModel.md).
//
//===----------------------------------------------------------------------===//

#include "StepSimulator.h"

#include "ddp/Dialect/DDP/IR/TensorBytes.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

using namespace mlir;
using namespace ddp;
using namespace ddp::sim;
using ddp::sim::detail::SimGroup;
using ddp::sim::detail::StepSimulator;

/// The collective that reduces `gradient`, looking through the ops that
/// only move or convert it on the way (bucket packing, casts, scaling).
static CollectiveOpInterface findReducingCollective(Value gradient) {
  SmallVector<Value> worklist{gradient};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      if (auto collective = dyn_cast<CollectiveOpInterface>(user))
        return collective;
      if (isa<BucketPackOp, CastOp, ScaleOp>(user))
        worklist.push_back(user->getResult(0));
    }
  }
  return nullptr;
}

void StepSimulator::computeLowerBound() {
  LowerBound &bound = result.lowerBound;
  bound.compute = result.idealComputeTime;
  for (double transfer : streamTransferBound)
    bound.communication = std::max(bound.communication, transfer);
  if (result.gradReady.empty())
    return;
  const GradReadyTime &last = result.gradReady.back();
  bound.tail = idealComputeAtReady.back() + optimizerTime.lookup(last.param);
  CollectiveOpInterface collective =
      findReducingCollective(last.op->getResult(0));
  if (!collective)
    return;
  FailureOr<SimGroup *> group = getGroup(collective);
  if (failed(group))
    return;
  // The gradient alone, in the element type it is reduced in.
  double bytes =
      getTensorBytes(last.numElements, collective.getPayload().getType());
  bound.tail += model.collectiveTime(collective.getCostKind(), bytes,
                                     (*group)->placement);
}
