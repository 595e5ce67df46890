//===- OverlapGradReduce.cpp - Overlap bucket reductions with backward ----===//
//
// Works on the ops ddp-bucketize marked with `ddp.bucket`: those before the
// bucket's collective (casts, packing, the NaN check, pre-scaling) move with
// it to right after the last op they need, those after it (unpacking, casts
// back) sink to their first use, and the collective becomes asynchronous
// with its wait before that use. With several distributed-optimizer
// instances a bucket has a second collective, the all-reduce of the shard
// across instances: it is issued right after the reduce-scatter, after it
// on a communication stream (`async after`), as Megatron issues both on its
// communication stream, and only its wait goes on the compute stream.
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
  /// A ddp.all_reduce, or a ddp.reduce_scatter under the distributed
  /// optimizer.
  Operation *collective = nullptr;
  /// Under several distributed-optimizer instances: the all-reduce of the
  /// reduce-scatter's shard across them (a reduce-scatter with
  /// outer-dp-sharding-strategy=optim).
  Operation *acrossInstances = nullptr;
  SmallVector<Operation *> afterCollective;
};

/// The order of the block's ops as the pass moves them, kept here because
/// asking the block after a move renumbers all its ops, which made the pass
/// quadratic in the number of buckets. An op is ordered by the index it had
/// when the pass started, or, once moved, right after (or before) another op,
/// after whatever was moved there before it.
class BlockOrder {
public:
  explicit BlockOrder(Block &block) {
    int64_t index = 0;
    for (Operation &op : block)
      keys[&op] = {++index, 0};
  }

  bool isBefore(Operation *a, Operation *b) const {
    return keys.lookup(a) < keys.lookup(b);
  }
  void movedAfter(Operation *op, Operation *anchor) {
    keys[op] = {keys.lookup(anchor).first, ++sequence};
  }
  void movedBefore(Operation *op, Operation *anchor) {
    keys[op] = {keys.lookup(anchor).first - 1, ++sequence};
  }
  void replaced(Operation *old, Operation *replacement) {
    keys[replacement] = keys.lookup(old);
    keys.erase(old);
  }

private:
  llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> keys;
  int64_t sequence = 0;
};

class OverlapGradReducePass
    : public ddp::impl::OverlapGradReduceBase<OverlapGradReducePass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult overlapStep(func::FuncOp step);
  void overlapBucket(Block &block, BlockOrder &order, BucketOps &bucket,
                     Operation *&lastIssued);
};

} // namespace

void OverlapGradReducePass::runOnOperation() {
  func::FuncOp step = getOperation();
  if (!step.isExternal() && failed(overlapStep(step)))
    return signalPassFailure();
}

LogicalResult OverlapGradReducePass::overlapStep(func::FuncOp step) {
  std::map<int64_t, BucketOps> buckets;
  WalkResult walk = step.walk([&](Operation *op) {
    std::optional<int64_t> index = getBucketIndex(op);
    if (!index || isa<GradReadyOp>(op))
      return WalkResult::advance();
    if (op->getParentOp() != step) {
      op->emitError("bucket ") << *index
                               << ": its ops must be at the top level of the "
                                  "step";
      return WalkResult::interrupt();
    }
    BucketOps &bucket = buckets[*index];
    if (isa<AllReduceOp, ReduceScatterOp>(op) &&
        isa_and_nonnull<ReduceScatterOp>(bucket.collective) &&
        !bucket.acrossInstances &&
        op->getOperand(0) == bucket.collective->getResult(0)) {
      bucket.acrossInstances = op;
      return WalkResult::advance();
    }
    if (isa<CollectiveOpInterface>(op)) {
      if (!isa<AllReduceOp, ReduceScatterOp>(op) || bucket.collective) {
        op->emitError("bucket ")
            << *index
            << ": expected one ddp.all_reduce per bucket (or one "
               "ddp.reduce_scatter, under the distributed optimizer)";
        return WalkResult::interrupt();
      }
      bucket.collective = op;
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
             << index << ": no ddp.all_reduce carries its '"
             << DDPDialect::BucketAttrHelper::getNameStr()
             << "' (nor a ddp.reduce_scatter)";
  if (buckets.empty())
    return success();
  if (!step.getBody().hasOneBlock())
    return step.emitError("overlapping needs a step with a single block");

  Block &block = step.getBody().front();
  BlockOrder order(block);
  Operation *lastIssued = nullptr;
  for (auto &[index, bucket] : buckets)
    overlapBucket(block, order, bucket, lastIssued);
  return success();
}

void OverlapGradReducePass::overlapBucket(Block &block, BlockOrder &order,
                                          BucketOps &bucket,
                                          Operation *&lastIssued) {
  Operation *collective = bucket.collective;
  if (cast<AsyncOpInterface>(collective).isAsync()) {
    // Already asynchronous (the pass ran before); keep the issue order.
    lastIssued = collective;
    if (bucket.acrossInstances)
      lastIssued = bucket.acrossInstances;
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
      if (!point || order.isBefore(point, top))
        point = top;
    }
  for (Operation *op : issued) {
    if (point) {
      op->moveAfter(point);
      order.movedAfter(op, point);
    } else {
      op->moveBefore(&block, block.begin());
      order.movedBefore(op, &block.front());
    }
    point = op;
  }

  OpBuilder builder(collective);
  Operation *async = createAsyncCollective(builder, collective);
  async->setDiscardableAttrs(collective->getDiscardableAttrDictionary());
  collective->getResult(0).replaceAllUsesWith(async->getResult(0));
  order.replaced(collective, async);
  collective->erase();
  bucket.collective = async;
  lastIssued = async;
  ++numCollectivesMadeAsync;

  // The all-reduce across instances reads the shard on the communication
  // stream right after the reduce-scatter: the compute stream waits for the
  // pair once, before the shard is used.
  Operation *waited = async;
  if (Operation *acrossInstances = bucket.acrossInstances) {
    builder.setInsertionPointAfter(async);
    Operation *chained = createAsyncCollective(
        builder, acrossInstances,
        cast<AsyncOpInterface>(async).getAsyncToken());
    chained->setDiscardableAttrs(
        acrossInstances->getDiscardableAttrDictionary());
    acrossInstances->getResult(0).replaceAllUsesWith(chained->getResult(0));
    order.replaced(acrossInstances, chained);
    order.movedAfter(chained, async);
    acrossInstances->erase();
    bucket.acrossInstances = nullptr;
    lastIssued = waited = chained;
    ++numCollectivesMadeAsync;
  }

  // Unpacking and casts back sink to right before their first use outside
  // the bucket (an optimizer op); an op whose only users are the bucket's
  // casts goes where the first of them goes, and what nobody reads goes to
  // the end of the step. Moving them in block order keeps each before its
  // users.
  llvm::DenseMap<Operation *, Operation *> destination;
  Operation *terminator = block.getTerminator();
  for (Operation *op : llvm::reverse(bucket.afterCollective)) {
    Operation *first = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *top = block.findAncestorOpInBlock(*user);
      if (!top)
        continue;
      if (Operation *sunk = destination.lookup(top))
        top = sunk;
      if (!first || order.isBefore(top, first))
        first = top;
    }
    destination[op] = first ? first : terminator;
  }
  for (Operation *op : bucket.afterCollective) {
    Operation *target = destination[op];
    op->moveBefore(target);
    order.movedBefore(op, target);
  }
  // The one wait covers the reduce-scatter too: it goes before the first
  // reader of either result (but the all-reduce chained after it).
  Operation *waitBefore = nullptr;
  for (Value result : {async->getResult(0), waited->getResult(0)})
    for (Operation *user : result.getUsers()) {
      Operation *top = block.findAncestorOpInBlock(*user);
      if (top && top != waited &&
          (!waitBefore || order.isBefore(top, waitBefore)))
        waitBefore = top;
    }
  builder.setInsertionPoint(waitBefore ? waitBefore : terminator);
  auto wait = WaitOp::create(builder, waited->getLoc(),
                             cast<AsyncOpInterface>(waited).getAsyncToken());
  setBucketIndex(wait, *getBucketIndex(waited));
}
