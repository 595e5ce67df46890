//===- Bucketize.cpp - Reduce gradients in their assigned buckets ---------===//
//
// Applies the attributes of ddp-assign-buckets. Everything is checked before
// the first op changes, so a failing run leaves the IR as it was.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace ddp {
#define GEN_PASS_DEF_BUCKETIZE
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

/// A bucket to materialise, checked.
struct BucketPlan {
  size_t index = 0;
  BucketSpec spec;
  SmallVector<BucketMember> members;
  /// The reduction of each member, in member order.
  SmallVector<AllReduceOp> reductions;
  Reduction reduction = Reduction::Avg;
  int64_t groupSize = 1;
  /// The bucket's collective goes after this op: the last of its reductions,
  /// or the previous bucket's collective if that comes later.
  Operation *anchor = nullptr;
};

class BucketizePass : public ddp::impl::BucketizeBase<BucketizePass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult bucketizeStep(func::FuncOp step);
  void materialize(BucketPlan &plan, Operation *insertAfter, Operation *&last);
};

} // namespace

/// Whether `ready`'s gradient already goes into bucket `index`'s ops.
static bool isMaterialized(GradReadyOp ready, int64_t index) {
  return llvm::any_of(ready.getResult().getUsers(), [&](Operation *user) {
    return getBucketIndex(user) == index;
  });
}

/// Checks bucket `index` and plans it; sets `done` when it is already
/// materialised.
static LogicalResult planBucket(func::FuncOp step, size_t index,
                                const RecordedBucket &bucket, BucketPlan &plan,
                                bool &done) {
  auto bucketError = [&](Operation *op) {
    return op->emitError() << "bucket " << index << ": ";
  };
  ArrayRef<BucketMember> members = bucket.members;
  size_t materialized = llvm::count_if(members, [&](const BucketMember &m) {
    return isMaterialized(m.ready, index);
  });
  // An empty bucket is not done: checkBucketLayout rejects it.
  done = !members.empty() && materialized == members.size();
  if (done)
    return success();
  if (materialized != 0)
    return bucketError(step)
           << materialized << " of its " << members.size()
           << " gradients are already in a materialised bucket; assign the "
              "others to a bucket of their own";
  FailureOr<int64_t> groupSize = checkBucketLayout(step, index, bucket);
  if (failed(groupSize))
    return failure();

  const BucketSpec &spec = bucket.spec;
  plan.index = index;
  plan.spec = spec;
  plan.members.assign(members.begin(), members.end());
  plan.groupSize = *groupSize;
  for (auto [position, member] : llvm::enumerate(members)) {
    GradReadyOp ready = member.ready;
    FailureOr<AllReduceOp> reduction = getGradientReduction(ready);
    if (failed(reduction))
      return failure();
    if (!*reduction)
      return bucketError(ready)
             << "the gradient of " << ready.getParamAttr()
             << " has no synchronous ddp.all_reduce to replace";
    AllReduceOp allReduce = *reduction;
    if (ready->getParentOp() != step || allReduce->getParentOp() != step)
      return bucketError(allReduce)
             << "bucketing needs the gradient of " << ready.getParamAttr()
             << " and its reduction at the top level of the step";
    if (allReduce.getMeshAttr() != spec.mesh ||
        allReduce.getAxesAttr() != spec.axes)
      return bucketError(allReduce)
             << "the gradient of " << ready.getParamAttr() << " is reduced "
             << "over " << allReduce.getMeshAttr() << "["
             << getGroupName(allReduce.getAxesAttr()) << "] but the bucket "
             << "over " << spec.mesh << "[" << getGroupName(spec.axes) << "]";
    if (position == 0)
      plan.reduction = allReduce.getReduction();
    else if (allReduce.getReduction() != plan.reduction)
      return bucketError(allReduce)
             << "the gradient of " << ready.getParamAttr() << " is reduced "
             << "with '" << stringifyEnum(allReduce.getReduction())
             << "', the bucket's first gradient with '"
             << stringifyEnum(plan.reduction) << "'";
    plan.reductions.push_back(allReduce);
    if (!plan.anchor || plan.anchor->isBeforeInBlock(allReduce))
      plan.anchor = allReduce;
  }
  return success();
}

void BucketizePass::runOnOperation() {
  func::FuncOp step = getOperation();
  if (step->hasAttr(kBucketsAttrName) && failed(bucketizeStep(step)))
    return signalPassFailure();
}

LogicalResult BucketizePass::bucketizeStep(func::FuncOp step) {
  FailureOr<SmallVector<RecordedBucket>> buckets = readRecordedBuckets(step);
  if (failed(buckets))
    return failure();

  SmallVector<BucketPlan> plans;
  for (auto [index, bucket] : llvm::enumerate(*buckets)) {
    BucketPlan plan;
    bool done = false;
    if (failed(planBucket(step, index, bucket, plan, done)))
      return failure();
    if (!done)
      plans.push_back(std::move(plan));
  }

  // Buckets are issued in index order, each after its last reduction; no
  // reduced gradient may be used before its bucket's collective.
  Operation *previous = nullptr;
  for (BucketPlan &plan : plans) {
    if (previous && plan.anchor->isBeforeInBlock(previous))
      plan.anchor = previous;
    previous = plan.anchor;
    Block *block = plan.anchor->getBlock();
    for (auto [member, allReduce] : llvm::zip(plan.members, plan.reductions))
      for (Operation *user : allReduce.getResult().getUsers()) {
        Operation *inBlock = block->findAncestorOpInBlock(*user);
        if (inBlock && !inBlock->isBeforeInBlock(plan.anchor) &&
            inBlock != plan.anchor)
          continue;
        InFlightDiagnostic diag =
            user->emitError()
            << "bucket " << plan.index << ": uses the reduced gradient of "
            << member.ready.getParamAttr() << " before the bucket is complete";
        diag.attachNote(plan.anchor->getLoc())
            << "the bucket's collective goes after this op";
        return diag;
      }
  }

  // Anchors no longer move backwards, so a bucket whose anchor is the
  // previous bucket's goes after that bucket's ops, and any other after its
  // anchor, which follows them. (Asking the block for its order after each
  // insertion would renumber it every time.)
  Operation *last = nullptr, *previousAnchor = nullptr;
  for (BucketPlan &plan : plans) {
    Operation *insertAfter = plan.anchor == previousAnchor ? last : plan.anchor;
    previousAnchor = plan.anchor;
    materialize(plan, insertAfter, last);
  }
  for (BucketPlan &plan : plans)
    for (AllReduceOp allReduce : plan.reductions)
      allReduce.erase();
  return success();
}

void BucketizePass::materialize(BucketPlan &plan, Operation *insertAfter,
                                Operation *&last) {
  OpBuilder builder(insertAfter->getContext());
  builder.setInsertionPointAfter(insertAfter);
  Location loc = plan.anchor->getLoc();
  auto mark = [&](Operation *op) {
    setBucketIndex(op, plan.index);
    last = op;
    return op;
  };
  FloatType bucketType = plan.spec.elementType;

  SmallVector<Value> packed;
  SmallVector<Type> unpackedTypes;
  SmallVector<int64_t> offsets;
  SmallVector<Attribute> params;
  for (const BucketMember &member : plan.members) {
    GradReadyOp ready = member.ready;
    RankedTensorType gradType = ready.getType();
    auto inBucket = gradType.clone(bucketType);
    Value gradient = ready.getResult();
    if (inBucket != gradType)
      gradient =
          mark(CastOp::create(builder, loc, inBucket, gradient))->getResult(0);
    packed.push_back(gradient);
    unpackedTypes.push_back(inBucket);
    offsets.push_back(member.offset);
    params.push_back(ready.getParamAttr());
  }
  auto bucketTensor =
      RankedTensorType::get({plan.spec.paddedNumel}, bucketType);
  DenseI64ArrayAttr offsetsAttr = builder.getDenseI64ArrayAttr(offsets);
  Value bucket = mark(BucketPackOp::create(builder, loc, bucketTensor, packed,
                                           offsetsAttr))
                     ->getResult(0);
  if (plan.spec.checkFinite)
    mark(CheckFiniteOp::create(builder, loc, bucket,
                               builder.getI64IntegerAttr(plan.index),
                               builder.getArrayAttr(params), offsetsAttr));
  Reduction reduction = plan.reduction;
  if (reduction == Reduction::Avg && !plan.spec.averageInCollective) {
    // Megatron's default: scale by 1/n, then sum; no scale by 1
    // (param_and_grad_buffer.py L666-667 at d98e8a6).
    if (plan.groupSize != 1)
      bucket = mark(ScaleOp::create(
                        builder, loc, bucket,
                        builder.getF64FloatAttr(1.0 / double(plan.groupSize))))
                   ->getResult(0);
    reduction = Reduction::Sum;
  }
  Value reduced = mark(AllReduceOp::create(
                           builder, loc, bucketTensor,
                           /*token=*/Type(),
                           ReductionAttr::get(builder.getContext(), reduction),
                           bucket, plan.spec.mesh, plan.spec.axes,
                           /*asyncDependencies=*/ValueRange()))
                      ->getResult(0);
  Operation *unpack = mark(BucketUnpackOp::create(builder, loc, unpackedTypes,
                                                  reduced, offsetsAttr));
  for (auto [result, allReduce] :
       llvm::zip(unpack->getResults(), plan.reductions)) {
    Value gradient = result;
    auto gradType = cast<RankedTensorType>(allReduce.getResult().getType());
    if (gradType != result.getType())
      gradient =
          mark(CastOp::create(builder, loc, gradType, gradient))->getResult(0);
    allReduce.getResult().replaceAllUsesWith(gradient);
  }
  ++numBucketsMaterialized;
  numReductionsReplaced += plan.reductions.size();
}
