//===- ScheduleMark.cpp - Whether a step is scheduled already -------------===//

#include "ddp/Dialect/DDP/Transforms/ScheduleMark.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"

using namespace mlir;
using namespace ddp;

std::optional<std::pair<Location, std::string>>
ddp::findScheduleMark(func::FuncOp step, ScheduleMarks marks) {
  bool any = marks == ScheduleMarks::Any;
  for (StringRef name : {kBucketsAttrName, kBucketPolicyAttrName})
    if (step->hasAttr(name))
      return std::make_pair(step.getLoc(),
                            ("it has the bucket layout attribute '" + name +
                             "' of ddp-assign-buckets")
                                .str());
  std::optional<std::pair<Location, std::string>> mark;
  step.walk([&](Operation *op) {
    std::string why;
    auto async = dyn_cast<AsyncOpInterface>(op);
    bool reducesGradient = llvm::any_of(op->getOperands(), [](Value operand) {
      return operand.getDefiningOp<GradReadyOp>();
    });
    if (async && async.isAsync() && (any || reducesGradient))
      why = "it has an asynchronous '" + op->getName().getStringRef().str() +
            "'" + (reducesGradient ? " of a gradient" : "");
    else if (isa<BucketPackOp, BucketUnpackOp, ShardSGDOp, ShardAdamOp,
                 GetParamShardOp, SetParamShardOp, SetParamsOp>(op) ||
             (any && isa<WaitOp, JoinOp, ChunkOp, ConcatOp>(op)))
      why = "it has a '" + op->getName().getStringRef().str() +
            "', which only the schedule passes create";
    else if (isa<GradReadyOp>(op) && getBucketIndex(op))
      why = "a gradient is assigned to a bucket ('" +
            DDPDialect::BucketAttrHelper::getNameStr().str() + "')";
    else
      return WalkResult::advance();
    mark = std::make_pair(op->getLoc(), std::move(why));
    return WalkResult::interrupt();
  });
  return mark;
}
