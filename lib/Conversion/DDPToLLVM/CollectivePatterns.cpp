//===- CollectivePatterns.cpp - Collectives and their tokens --------------===//
//
// Lowerings of the step's communication: each collective becomes its
// runtime call with the group of its axes; an asynchronous one passes the
// stack slot of its token's ddprt_handle, which ddp.wait and ddp.join read,
// and one issued after others (`async after`) orders the communication
// after them with ddprt_comm_wait and joins their handles into its own.
//
//===----------------------------------------------------------------------===//

#include "ProgramLoweringImpl.h"

using namespace mlir;
using namespace ddp;

static int32_t getRuntimeReduction(Reduction reduction) {
  switch (reduction) {
  case Reduction::Sum:
    return DDPRT_REDUCTION_SUM;
  case Reduction::Avg:
    return DDPRT_REDUCTION_AVG;
  case Reduction::Max:
    return DDPRT_REDUCTION_MAX;
  }
  llvm_unreachable("unknown reduction");
}

static int32_t getDType(Value tensor) {
  return getRuntimeDType(
      cast<RankedTensorType>(tensor.getType()).getElementType());
}

namespace {

struct AllReduceLowering : StepOpPattern<AllReduceOp> {
  using StepOpPattern::StepOpPattern;
  void lower(AllReduceOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    step.callCollective(
        RuntimeFunction::AllReduce,
        {step.context(), step.getGroup(),
         step.i32(getRuntimeReduction(op.getReduction())),
         step.i32(getDType(op.getInput())),
         step.i64(ddp::getNumElements(op.getInput().getType())),
         adaptor.getInput(), step.result()},
        adaptor.getAsyncDependencies());
  }
};

struct ReduceScatterLowering : StepOpPattern<ReduceScatterOp> {
  using StepOpPattern::StepOpPattern;
  void lower(ReduceScatterOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    step.callCollective(
        RuntimeFunction::ReduceScatter,
        {step.context(), step.getGroup(),
         step.i32(getRuntimeReduction(op.getReduction())),
         step.i32(getDType(op.getInput())),
         step.i64(ddp::getNumElements(op.getResult().getType())),
         adaptor.getInput(), step.result()},
        adaptor.getAsyncDependencies());
  }
};

struct AllGatherLowering : StepOpPattern<AllGatherOp> {
  using StepOpPattern::StepOpPattern;
  void lower(AllGatherOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    step.callCollective(
        RuntimeFunction::AllGather,
        {step.context(), step.getGroup(), step.i32(getDType(op.getInput())),
         step.i64(ddp::getNumElements(op.getInput().getType())),
         adaptor.getInput(), step.result()},
        adaptor.getAsyncDependencies());
  }
};

struct SendLowering : StepOpPattern<SendOp> {
  using StepOpPattern::StepOpPattern;
  void lower(SendOp op, Adaptor adaptor, StepOpLowering &step) const override {
    step.callCollective(
        RuntimeFunction::Send,
        {step.context(), step.getGroup(), step.i64(op.getOffset()),
         step.i32(getDType(op.getInput())),
         step.i64(ddp::getNumElements(op.getInput().getType())),
         adaptor.getInput()},
        adaptor.getAsyncDependencies());
  }
};

struct RecvLowering : StepOpPattern<RecvOp> {
  using StepOpPattern::StepOpPattern;
  void lower(RecvOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    step.callCollective(
        RuntimeFunction::Recv,
        {step.context(), step.getGroup(), step.i64(op.getOffset()),
         step.i32(getDType(op.getResult())),
         step.i64(ddp::getNumElements(op.getResult().getType())),
         step.result()},
        adaptor.getAsyncDependencies());
  }
};

struct BroadcastLowering : StepOpPattern<BroadcastOp> {
  using StepOpPattern::StepOpPattern;
  void lower(BroadcastOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    step.callCollective(
        RuntimeFunction::Broadcast,
        {step.context(), step.getGroup(), step.i64(op.getRoot()),
         step.i32(getDType(op.getInput())),
         step.i64(ddp::getNumElements(op.getInput().getType())),
         adaptor.getInput(), step.result()},
        adaptor.getAsyncDependencies());
  }
};

struct WaitLowering : StepOpPattern<WaitOp> {
  using StepOpPattern::StepOpPattern;
  void lower(WaitOp op, Adaptor adaptor, StepOpLowering &step) const override {
    Value handle =
        LLVM::LoadOp::create(step.entry().getBuilder(), step.loc,
                             step.entry().getI64Type(), adaptor.getToken());
    step.call(RuntimeFunction::Wait, {step.context(), handle});
  }
};

struct JoinLowering : StepOpPattern<JoinOp> {
  using StepOpPattern::StepOpPattern;
  void lower(JoinOp op, Adaptor adaptor, StepOpLowering &step) const override {
    EntryPointBuilder &entry = step.entry();
    RewriterBase &b = entry.getBuilder();
    Type i64Type = entry.getI64Type();
    Value handles = step.program.joinArray;
    for (auto [index, slot] : llvm::enumerate(adaptor.getTokens())) {
      Value handle = LLVM::LoadOp::create(b, step.loc, i64Type, slot);
      Value element = LLVM::GEPOp::create(
          b, step.loc, entry.getPtrType(), i64Type, handles,
          ArrayRef<LLVM::GEPArg>{entry.gepIndex(step.loc, index)});
      LLVM::StoreOp::create(b, step.loc, handle, element);
    }
    Value joined = entry.allocaAtEntry(step.loc, i64Type, 1);
    step.setResult(0, joined);
    step.call(RuntimeFunction::Join, {step.context(), handles,
                                      step.i32(op.getTokens().size()), joined});
  }
};

} // namespace

void ddp::populateCollectivePatterns(StepOpLowerers &lowerers) {
  lowerers.add<AllReduceLowering, ReduceScatterLowering, AllGatherLowering,
               SendLowering, RecvLowering, BroadcastLowering, WaitLowering,
               JoinLowering>();
}
