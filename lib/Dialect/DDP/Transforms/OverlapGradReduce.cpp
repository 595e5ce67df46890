//===- OverlapGradReduce.cpp - Overlap bucket reductions with backward ----===//
//
// Works on the ops ddp-bucketize marked with `ddp.bucket`: those before the
// bucket's collective (casts, packing, the NaN check, pre-scaling) move with
// it to right after the last op they need, those after it (unpacking, casts
// back) sink to their first use, and the collective becomes asynchronous
// with its wait before that use.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>

namespace ddp {
#define GEN_PASS_DEF_OVERLAPGRADREDUCE
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

/// The ops of one bucket, in block order, split at its collective.
struct BucketOps {
  SmallVector<Operation *> beforeCollective;
  AllReduceOp collective;
  SmallVector<Operation *> afterCollective;
};

class OverlapGradReducePass
    : public ddp::impl::OverlapGradReduceBase<OverlapGradReducePass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult overlapStep(func::FuncOp step);
  void overlapBucket(Block &block, BucketOps &bucket, Operation *&lastIssued);
};

} // namespace

void OverlapGradReducePass::runOnOperation() {
  for (auto step : getOperation().getOps<func::FuncOp>())
    if (!step.isExternal() && failed(overlapStep(step)))
      return signalPassFailure();
}

LogicalResult OverlapGradReducePass::overlapStep(func::FuncOp step) {
  std::map<int64_t, BucketOps> buckets;
  WalkResult walk = step.walk([&](Operation *op) {
    auto index = op->getAttrOfType<IntegerAttr>(kBucketAttrName);
    if (!index || isa<GradReadyOp>(op))
      return WalkResult::advance();
    if (op->getParentOp() != step) {
      op->emitError("bucket ") << index.getInt()
                               << ": its ops must be at the top level of the "
                                  "step";
      return WalkResult::interrupt();
    }
    BucketOps &bucket = buckets[index.getInt()];
    if (isa<CollectiveOpInterface>(op)) {
      auto allReduce = dyn_cast<AllReduceOp>(op);
      if (!allReduce || bucket.collective) {
        op->emitError("bucket ")
            << index.getInt() << ": expected one ddp.all_reduce per bucket";
        return WalkResult::interrupt();
      }
      bucket.collective = allReduce;
      return WalkResult::advance();
    }
    (bucket.collective ? bucket.afterCollective : bucket.beforeCollective)
        .push_back(op);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (auto &[index, bucket] : buckets)
    if (!bucket.collective)
      return step.emitError("bucket ")
             << index << ": no ddp.all_reduce carries its '" << kBucketAttrName
             << "'";
  if (buckets.empty())
    return success();
  if (!step.getBody().hasOneBlock())
    return step.emitError("overlapping needs a step with a single block");

  Block &block = step.getBody().front();
  Operation *lastIssued = nullptr;
  for (auto &[index, bucket] : buckets)
    overlapBucket(block, bucket, lastIssued);
  return success();
}

void OverlapGradReducePass::overlapBucket(Block &block, BucketOps &bucket,
                                          Operation *&lastIssued) {
  AllReduceOp collective = bucket.collective;
  if (collective.getToken()) {
    // Already asynchronous (the pass ran before); keep the issue order.
    lastIssued = collective;
    return;
  }

  // The bucket is issued once everything it reads exists: right after the
  // last op outside it that defines an operand (the last grad_ready), and
  // after the previous bucket's collective.
  SmallVector<Operation *> issued(bucket.beforeCollective);
  issued.push_back(collective);
  llvm::SmallPtrSet<Operation *, 8> inBucket(issued.begin(), issued.end());
  Operation *point = lastIssued;
  for (Operation *op : issued)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || inBucket.contains(def))
        continue;
      Operation *top = block.findAncestorOpInBlock(*def);
      if (!point || point->isBeforeInBlock(top))
        point = top;
    }
  for (Operation *op : issued) {
    if (point)
      op->moveAfter(point);
    else
      op->moveBefore(&block, block.begin());
    point = op;
  }

  OpBuilder builder(collective);
  auto async = AllReduceOp::create(
      builder, collective.getLoc(), collective.getResult().getType(),
      builder.getType<TokenType>(), collective.getReductionAttr(),
      collective.getInput(), collective.getMeshAttr(),
      collective.getAxesAttr());
  async->setDiscardableAttrs(collective->getDiscardableAttrDictionary());
  collective.getResult().replaceAllUsesWith(async.getResult());
  collective.erase();
  lastIssued = async;
  ++numCollectivesMadeAsync;

  // Unpacking and casts back sink to their first use, latest first so that
  // each finds its users already in place.
  auto firstUser = [&](Operation *op) -> Operation * {
    Operation *first = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *top = block.findAncestorOpInBlock(*user);
      if (top && (!first || top->isBeforeInBlock(first)))
        first = top;
    }
    return first;
  };
  // What nobody reads goes to the end of the step.
  for (Operation *op : llvm::reverse(bucket.afterCollective)) {
    Operation *user = firstUser(op);
    if (!user)
      user = block.getTerminator();
    if (op->isBeforeInBlock(user))
      op->moveBefore(user);
  }
  Operation *waitBefore = firstUser(async);
  if (!waitBefore)
    waitBefore = block.getTerminator();
  builder.setInsertionPoint(waitBefore);
  WaitOp::create(builder, async.getLoc(), async.getToken())
      ->setAttr(kBucketAttrName, async->getAttr(kBucketAttrName));
}
