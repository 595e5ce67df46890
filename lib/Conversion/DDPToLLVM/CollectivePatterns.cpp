//===- CollectivePatterns.cpp - Collectives and their tokens --------------===//
//
// Lowerings of the step's communication: each collective becomes the call
// of its kind's entry point with the group of its axes, one lowering for
// all; an asynchronous one passes the
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

/// The entry point of a collective kind: the one of the same name (a kind
/// without one does not compile).
static RuntimeFunction getRuntimeFunction(CollectiveKind kind) {
  switch (kind) {
#define DDP_COLLECTIVE(Enumerator, Name, BusFactor, Steps, InterSteps)          \
  case CollectiveKind::Enumerator:                                             \
    return RuntimeFunction::Enumerator;
#include "ddp/Runtime/Collectives.def"
  }
  llvm_unreachable("unknown collective kind");
}

/// An attribute of getRuntimeAttributes as the integer the runtime takes.
static int64_t getRuntimeValue(Operation *op, Attribute attribute) {
  if (auto reduction = dyn_cast<ReductionAttr>(attribute))
    return getRuntimeReduction(reduction.getValue());
  if (auto integer = dyn_cast_or_null<IntegerAttr>(attribute))
    return integer.getInt();
  // A contributor's mistake, as below.
  llvm::report_fatal_error(llvm::Twine("lowering ") +
                           op->getName().getStringRef() +
                           ": a runtime attribute is neither a reduction "
                           "nor an integer");
}

namespace {

/// Every collective, from CollectiveOpInterface: its entry point takes the
/// context, the group, the op's runtime attributes, the payload's dtype,
/// NCCL's count, the tensors it reads, those it writes, and the handle slot.
/// A collective needs no lowering of its own (docs/Extending.md).
struct CollectiveLowering : StepOpLowerer {
  void lowerOp(Operation *op, ValueRange operands,
               StepOpLowering &step) const override {
    auto collective = cast<CollectiveOpInterface>(op);
    RuntimeFunction function = getRuntimeFunction(collective.getCostKind());
    LLVM::LLVMFunctionType type =
        getRuntimeFunctionType(function, op->getContext());
    SmallVector<Attribute> attributes = collective.getRuntimeAttributes();
    SmallVector<Value> tensorOperands;
    for (auto [value, converted] : llvm::zip_equal(op->getOperands(), operands))
      if (isa<RankedTensorType>(value.getType()))
        tensorOperands.push_back(converted);
    SmallVector<unsigned> tensorResults;
    for (OpResult result : op->getResults())
      if (isa<RankedTensorType>(result.getType()))
        tensorResults.push_back(result.getResultNumber());
    // A contributor's mistake, not a user's: the op's ODS and its entry
    // point in RuntimeFunctions.def disagree.
    size_t passed = 2 + attributes.size() + 2 + tensorOperands.size() +
                    tensorResults.size() + 1;
    if (passed != type.getNumParams())
      llvm::report_fatal_error(llvm::Twine("lowering ") +
                               op->getName().getStringRef() + " passes " +
                               llvm::Twine(passed) + " arguments to " +
                               getRuntimeFunctionName(function) +
                               ", which takes " +
                               llvm::Twine(type.getNumParams()));

    SmallVector<Value> arguments{step.context(), step.getGroup()};
    for (Attribute attribute : attributes) {
      int64_t value = getRuntimeValue(op, attribute);
      Type parameter = type.getParamType(arguments.size());
      if (!parameter.isInteger(32) && !parameter.isInteger(64))
        llvm::report_fatal_error(
            llvm::Twine("lowering ") + op->getName().getStringRef() +
            ": the entry point takes a runtime attribute as " +
            (isa<LLVM::LLVMPointerType>(parameter) ? "a pointer"
                                                   : "a non-integer") +
            "; RuntimeFunctions.def and the op's ODS disagree");
      arguments.push_back(parameter.isInteger(32) ? step.i32(value)
                                                  : step.i64(value));
    }
    arguments.push_back(step.i32(getRuntimeDType(
        collective.getPayload().getType().getElementType())));
    arguments.push_back(step.i64(
        ddp::getNumElements(collective.getRuntimeCountTensor().getType())));
    llvm::append_range(arguments, tensorOperands);
    for (unsigned index : tensorResults)
      arguments.push_back(step.result(index));
    // An empty range has no operand index.
    OperandRange dependencies =
        cast<AsyncOpInterface>(op).getAsyncDependencies();
    step.callCollective(
        function, std::move(arguments),
        dependencies.empty()
            ? ValueRange()
            : operands.slice(dependencies.getBeginOperandIndex(),
                             dependencies.size()));
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
  lowerers.add<WaitLowering, JoinLowering>();
  lowerers.setCollectiveLowering(std::make_unique<CollectiveLowering>());
}
