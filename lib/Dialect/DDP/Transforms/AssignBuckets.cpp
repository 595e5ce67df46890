//===- AssignBuckets.cpp - Decide the gradient bucket layout --------------===//
//
// Collects the gradients of the unscheduled step (each grad_ready with its one
// synchronous all-reduce) in ready order, runs a policy of lib/Bucketing and
// records the layout as attributes (BucketAttributes.h). The `auto` policy
// searches the layouts of the overlapped step on the timeline of the
// unscheduled step that ddp/ScheduleModel builds from one simulation of it.
//
//===----------------------------------------------------------------------===//

#include "ddp/Bucketing/OptimalLayout.h"
#include "ddp/Bucketing/Policies.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/ScheduleModel/ScheduleModel.h"
#include "ddp/Sim/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace ddp {
#define GEN_PASS_DEF_ASSIGNBUCKETS
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;
namespace bk = ddp::bucketing;
using schedule::GradientReduction;

namespace {

/// A step's layout as the attributes that record it.
struct StepDecision {
  func::FuncOp step;
  /// (grad_ready, bucket, offset)
  SmallVector<std::tuple<GradReadyOp, int64_t, int64_t>> members;
  ArrayAttr buckets;
  BucketPolicyAttr policy;
};

class AssignBucketsPass
    : public ddp::impl::AssignBucketsBase<AssignBucketsPass> {
public:
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  AssignBucketsOptions getOptions() const;
  FailureOr<StepDecision> assignStep(func::FuncOp step);
  FailureOr<bk::BucketLayout>
  computeAutoLayout(func::FuncOp step, ArrayRef<GradientReduction> reductions,
                    ArrayRef<bk::Gradient> gradients,
                    ArrayRef<bk::BucketLayout> startingLayouts,
                    double &predictedStepTime);
  /// `pipelineRank`: the step's (0 without a pipeline).
  bk::MegatronOptions getMegatronOptions(ArrayRef<bk::Gradient> gradients,
                                         int64_t pipelineRank);
  bk::PyTorchOptions getPyTorchOptions();
  bk::PaddingOptions getPadding() {
    return {useDistributedOptimizer, padBucketsForHighNcclBusbw};
  }
};

} // namespace

/// The size of the group `axes` of `mesh` as the layout sees it: with the
/// `dp` option the mesh's data-parallel axes are resized as the simulator
/// resizes them.
static FailureOr<int64_t> getLaidOutGroupSize(MeshOp mesh, ArrayAttr axes,
                                              int64_t dataParallelSize,
                                              Operation *diagnosticOp) {
  SmallVector<StringRef> names;
  for (Attribute name : mesh.getAxisNames())
    names.push_back(cast<StringAttr>(name).getValue());
  SmallVector<int64_t> shape(mesh.getShape());
  if (dataParallelSize > 0) {
    auto rescaled =
        sim::rescaleDataParallelAxes(names, mesh.getShape(), dataParallelSize);
    if (!rescaled)
      return diagnosticOp->emitError(llvm::toString(rescaled.takeError()));
    shape = std::move(*rescaled);
  }
  int64_t size = 1;
  for (Attribute axis : axes) {
    auto it = llvm::find(names, cast<StringAttr>(axis).getValue());
    if (it == names.end())
      return diagnosticOp->emitError("uses axis ")
             << axis << ", which mesh " << mesh.getSymName()
             << " does not have";
    if (llvm::MulOverflow(size, shape[std::distance(names.begin(), it)],
                          size))
      return diagnosticOp->emitError("with dp=")
             << dataParallelSize << " the group " << axes << " of mesh "
             << mesh.getSymName() << " has more ranks than fit in int64";
  }
  return size;
}

llvm::Error
ddp::checkAssignBucketsOptionValues(const AssignBucketsOptions &options) {
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"bucket-size", options.bucketSize},
        {"bucket-bytes", options.bucketBytes},
        {"num-buckets", options.numBuckets},
        {"dp", options.dataParallelSize},
        {"max-bucket-gradients", options.maxBucketGradients},
        {"first-bucket-bytes", options.firstBucketBytes},
        {"bucket-cap-bytes", options.bucketCapBytes}})
    if (value < 0)
      return llvm::createStringError(
          llvm::formatv("{0} must not be negative, got {1}", name, value));
  // ddp-distribute-optimizer rejects it too, but only once it runs.
  if (options.numDistributedOptimizerInstances < 1)
    return llvm::createStringError(
        llvm::formatv("num-distributed-optimizer-instances must be at least "
                      "1, got {0}",
                      options.numDistributedOptimizerInstances));
  // The profile is read now, so that a misspelt name or a missing file is
  // reported once, before any IR, and not at the step with its signature.
  if (!options.hardware.empty())
    if (llvm::Expected<timing::HardwareProfile> profile =
            timing::lookupHardwareProfile(options.hardware);
        !profile)
      return llvm::createStringError("hw=" + options.hardware + ": " +
                                     llvm::toString(profile.takeError()));
  return llvm::Error::success();
}

llvm::Error
ddp::checkAssignBucketsOptions(const AssignBucketsOptions &options) {
  if (llvm::Error error = checkAssignBucketsOptionValues(options))
    return error;
  if (options.policy == BucketPolicy::Size &&
      (options.bucketSize > 0) == (options.bucketBytes > 0))
    return llvm::createStringError("the size policy needs exactly one of "
                                   "bucket-size (elements) and bucket-bytes");
  // The megatron layout's own checks (auto starts from that layout), here so
  // that they are reported before any IR is read, and once.
  if (options.policy == BucketPolicy::Megatron ||
      options.policy == BucketPolicy::Auto) {
    bk::MegatronOptions megatron;
    if (options.bucketSize > 0)
      megatron.bucketSize = options.bucketSize;
    if (options.numBuckets > 0)
      megatron.numBuckets = options.numBuckets;
    if (llvm::Error error = bk::checkMegatronOptions(megatron))
      return error;
  }
  // Megatron-LM asserts the same: the instances partition the distributed
  // optimizer's shards, so without it the option would be silently ignored.
  if (options.numDistributedOptimizerInstances != 1 &&
      !options.useDistributedOptimizer)
    return llvm::createStringError(
        llvm::formatv("num-distributed-optimizer-instances={0} needs "
                      "use-distributed-optimizer=true",
                      options.numDistributedOptimizerInstances));
  // Megatron-LM asserts this too: the gathers that overlap are those of the
  // distributed optimizer's updated shards. ddp-overlap-param-gather finds
  // it at the first full optimizer op; this finds it before any IR is read.
  if (options.overlapParamGather && !options.useDistributedOptimizer)
    return llvm::createStringError("overlap-param-gather=true needs "
                                   "use-distributed-optimizer=true");
  return llvm::Error::success();
}

AssignBucketsOptions AssignBucketsPass::getOptions() const {
  AssignBucketsOptions options;
  options.policy = policy;
  options.bucketSize = bucketSize;
  options.bucketBytes = bucketBytes;
  options.numBuckets = numBuckets;
  options.overlapGradReduce = overlapGradReduce;
  options.useDistributedOptimizer = useDistributedOptimizer;
  options.overlapParamGather = overlapParamGather;
  options.alignParamGather = alignParamGather;
  options.numDistributedOptimizerInstances = numDistributedOptimizerInstances;
  options.padBucketsForHighNcclBusbw = padBucketsForHighNcclBusbw;
  options.gradReduceInFp32 = gradReduceInFp32;
  options.averageInCollective = averageInCollective;
  options.checkForNanInGrad = checkForNanInGrad;
  options.firstBucketBytes = firstBucketBytes;
  options.bucketCapBytes = bucketCapBytes;
  options.hardware = hardware;
  options.dataParallelSize = dataParallelSize;
  options.maxBucketGradients = maxBucketGradients;
  return options;
}

/// Bad options are reported once, before any IR is looked at.
LogicalResult AssignBucketsPass::initialize(MLIRContext *context) {
  if (llvm::Error error = checkAssignBucketsOptions(getOptions()))
    return emitError(UnknownLoc::get(context))
           << llvm::toString(std::move(error));
  return success();
}

void AssignBucketsPass::runOnOperation() {
  func::FuncOp step = getOperation();
  if (step.isExternal())
    return;
  // The step is laid out before any attribute is written, so that a failure
  // leaves it as it was.
  FailureOr<StepDecision> decision = assignStep(step);
  if (failed(decision))
    return signalPassFailure();
  if (!decision->step)
    return;
  Builder builder(&getContext());
  for (auto [ready, bucket, offset] : decision->members) {
    setBucketIndex(ready, bucket);
    setBucketOffset(ready, offset);
  }
  step->setAttr(kBucketsAttrName, decision->buckets);
  step->setAttr(kBucketPolicyAttrName, decision->policy);
}

bk::MegatronOptions
AssignBucketsPass::getMegatronOptions(ArrayRef<bk::Gradient> gradients,
                                      int64_t pipelineRank) {
  bk::MegatronOptions options;
  if (bucketSize > 0)
    options.bucketSize = bucketSize;
  if (numBuckets > 0)
    options.numBuckets = numBuckets;
  options.overlapGradReduce = overlapGradReduce;
  options.padding = getPadding();
  options.pipelineRank = pipelineRank;
  // Megatron's default bucket size scales with the dense data-parallel group.
  options.dataParallelSize = 1;
  for (const bk::Gradient &gradient : gradients)
    if (!gradient.expert) {
      options.dataParallelSize = gradient.groupSize;
      break;
    }
  return options;
}

bk::PyTorchOptions AssignBucketsPass::getPyTorchOptions() {
  bk::PyTorchOptions options;
  if (firstBucketBytes > 0)
    options.firstBucketBytes = firstBucketBytes;
  if (bucketCapBytes > 0)
    options.bucketCapBytes = bucketCapBytes;
  options.padding = getPadding();
  return options;
}

/// The layout of `step`; a decision without a step when it reduces no
/// gradient.
FailureOr<StepDecision> AssignBucketsPass::assignStep(func::FuncOp step) {
  std::optional<int64_t> stage = getPipelineStage(step);
  int64_t pipelineRank = stage.value_or(0);
  // Gradients in ready order: the order of their grad_ready ops.
  SmallVector<GradientReduction> reductions;
  WalkResult walk = step.walk([&](GradReadyOp ready) {
    FailureOr<AllReduceOp> reduction = getGradientReduction(ready);
    if (failed(reduction))
      return WalkResult::interrupt();
    if (*reduction)
      reductions.push_back({ready, *reduction});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (reductions.empty())
    return StepDecision();
  if (!step.getBody().hasOneBlock())
    return step.emitError("bucketing needs a step with a single block");
  for (GradientReduction reduction : reductions)
    for (Operation *op :
         {reduction.ready.getOperation(), reduction.allReduce.getOperation()})
      if (op->getParentOp() != step)
        return op->emitError("bucketing needs the gradients and their "
                             "reductions at the top level of the step");

  // Sibling steps may be rewritten in parallel, so symbols are looked up
  // among the module's ddp.param and ddp.mesh ops only (BucketAttributes.h).
  auto module = step->getParentOfType<ModuleOp>();
  if (!module)
    return step.emitError("bucketing needs the step inside a module");
  llvm::DenseMap<StringAttr, std::pair<ParamOp, size_t>> paramByName;
  for (auto [index, param] : llvm::enumerate(module.getOps<ParamOp>()))
    paramByName[param.getSymNameAttr()] = {param, index};

  SmallVector<bk::Gradient> gradients;
  FlatSymbolRefAttr meshRef = reductions.front().allReduce.getMeshAttr();
  llvm::StringMap<GradientReduction> reductionByGroup;
  for (GradientReduction reduction : reductions) {
    AllReduceOp allReduce = reduction.allReduce;
    if (allReduce.getMeshAttr() != meshRef)
      return allReduce.emitError("bucketing needs every gradient reduced "
                                 "over one mesh; this one uses ")
             << allReduce.getMeshAttr() << " and an earlier one " << meshRef;
    auto [param, declarationIndex] =
        paramByName.lookup(reduction.ready.getParamAttr().getAttr());
    MeshOp mesh = lookupMesh(step, meshRef);
    if (!param || !mesh)
      return reduction.ready.emitError("names a parameter or mesh that does "
                                       "not exist; run the verifier first");
    std::string group = getGroupName(allReduce.getAxesAttr());
    // A bucket is reduced one way: sum and average never share a group.
    auto [first, inserted] = reductionByGroup.try_emplace(group, reduction);
    GradientReduction earlier = first->second;
    if (!inserted &&
        earlier.allReduce.getReduction() != allReduce.getReduction())
      return allReduce.emitError("reduces with '")
             << stringifyEnum(allReduce.getReduction()) << "' where "
             << earlier.ready.getParamAttr() << " in the same group [" << group
             << "] uses '" << stringifyEnum(earlier.allReduce.getReduction())
             << "'; a bucket has one reduction";

    FailureOr<int64_t> groupSize = getLaidOutGroupSize(
        mesh, allReduce.getAxesAttr(), dataParallelSize, allReduce);
    if (failed(groupSize))
      return failure();
    // The distributed optimizer shards each bucket over the group the step
    // has (over one instance of it, with several), whatever size the layout
    // is priced at: the padding for the priced group must also split into
    // that many shards. (Instances that do not divide the group are an
    // error of their own.)
    int64_t programGroupSize = getGroupSize(mesh, allReduce.getAxesAttr());
    int64_t numShards = programGroupSize;
    if (numDistributedOptimizerInstances > 1 &&
        programGroupSize % numDistributedOptimizerInstances == 0)
      numShards = programGroupSize / numDistributedOptimizerInstances;
    // A group past kMaxGroupSize is the layout's error to report (and its
    // padding would overflow here).
    int64_t endDivisor =
        *groupSize <= bk::kMaxGroupSize
            ? bk::getBucketEndDivisor(getPadding(), *groupSize)
            : numShards;
    if (useDistributedOptimizer && endDivisor % numShards != 0)
      return allReduce.emitError("with dp=")
             << int64_t(dataParallelSize)
             << " and use-distributed-optimizer the buckets of this group are "
                "padded to multiples of "
             << endDivisor << " elements for its " << *groupSize
             << " ranks, which do not split into the " << numShards
             << " shards the step's mesh gives it; import the step at that "
                "data-parallel size (ddp-import --set data_parallel_size="
             << int64_t(dataParallelSize)
             << ") or pick a dp whose padding the mesh's group divides";
    RankedTensorType gradType = reduction.ready.getType();
    std::optional<bk::ElementType> gradElement =
        getElementTypeOf(gradType.getElementType());
    std::optional<bk::ElementType> paramElement =
        getElementTypeOf(param.getTensorType().getElementType());
    if (!gradElement || !paramElement)
      return reduction.ready.emitError("has no floating-point element type");

    bk::Gradient gradient;
    gradient.name = reduction.ready.getParam().str();
    gradient.numel = gradType.getNumElements();
    gradient.paramType = *paramElement;
    gradient.reduceType = *gradElement;
    if (gradReduceInFp32 && getElementBytes(*gradElement) < 4)
      gradient.reduceType = bk::ElementType::F32;
    gradient.group = std::move(group);
    gradient.groupSize = *groupSize;
    gradient.expert = param.getExpert();
    gradient.sharedEmbedding = param.getSharedEmbedding();
    gradient.declarationIndex = declarationIndex;
    if (std::optional<uint64_t> layer = param.getLayer())
      gradient.layer = int64_t(*layer);
    if (std::optional<PipelineTask> task =
            getPipelineTask(reduction.ready))
      gradient.modelChunk = task->chunk;
    else if (gradient.sharedEmbedding && pipelineRank > 0)
      gradient.modelChunk = -1; // the last chunk's output layer; set below
    gradients.push_back(std::move(gradient));
  }

  // The tied embedding's gradient is final after the pipeline on both of
  // its ranks; on the last rank it is the output layer's, of the last chunk.
  int64_t lastChunk = 0;
  for (const bk::Gradient &gradient : gradients)
    lastChunk = std::max(lastChunk, gradient.modelChunk);
  for (bk::Gradient &gradient : gradients)
    if (gradient.modelChunk < 0)
      gradient.modelChunk = lastChunk;

  // Without overlap every bucket waits for the end of the backward pass, and
  // a collective's time is subadditive in its size (latency plus the
  // cheaper of two affine algorithms), so one bucket per stream is best: the
  // megatron layout without a bucket size.
  bool singleBucketPerBuffer =
      !overlapGradReduce && policy == BucketPolicy::Auto;
  llvm::Expected<bk::BucketLayout> layout(bk::BucketLayout{});
  double predictedStepTime = -1;
  if (policy == BucketPolicy::Megatron || singleBucketPerBuffer) {
    layout =
        bk::computeMegatronLayout(gradients,
                                  getMegatronOptions(gradients, pipelineRank));
  } else if (policy == BucketPolicy::PyTorch) {
    layout = bk::computePyTorchLayout(gradients, getPyTorchOptions());
  } else if (policy == BucketPolicy::Unit) {
    layout = bk::computeUnitLayout(gradients, getPadding());
  } else if (policy == BucketPolicy::Size) {
    bk::SizeOptions options;
    options.budget = bucketSize > 0 ? bucketSize : bucketBytes;
    options.unit = bucketSize > 0 ? bk::SizeOptions::Unit::Elements
                                  : bk::SizeOptions::Unit::Bytes;
    options.padding = getPadding();
    layout = bk::computeSizeLayout(gradients, options);
  } else {
    // The defaults the search must not lose to.
    SmallVector<bk::BucketLayout> starts;
    llvm::Expected<bk::BucketLayout> megatron =
        bk::computeMegatronLayout(gradients,
                                  getMegatronOptions(gradients, pipelineRank));
    if (!megatron)
      return step.emitError(llvm::toString(megatron.takeError()));
    starts.push_back(std::move(*megatron));
    llvm::Expected<bk::BucketLayout> pytorch =
        bk::computePyTorchLayout(gradients, getPyTorchOptions());
    if (!pytorch)
      return step.emitError(llvm::toString(pytorch.takeError()));
    starts.push_back(std::move(*pytorch));
    FailureOr<bk::BucketLayout> optimal = computeAutoLayout(
        step, reductions, gradients, starts, predictedStepTime);
    if (failed(optimal))
      return failure();
    layout = std::move(*optimal);
  }
  if (!layout)
    return step.emitError(llvm::toString(layout.takeError()));

  // The decision, as attributes.
  StepDecision decision;
  decision.step = step;
  MLIRContext *context = &getContext();
  Builder builder(context);
  SmallVector<Attribute> buckets;
  for (auto [index, bucket] : llvm::enumerate(layout->buckets)) {
    GradientReduction first = reductions[bucket.entries.front().gradient];
    BucketSpec spec;
    spec.elementType = getFloatType(context, bucket.type);
    spec.mesh = first.allReduce.getMeshAttr();
    spec.axes = first.allReduce.getAxesAttr();
    spec.numel = bucket.numel;
    spec.paddedNumel = bucket.paddedNumel;
    spec.averageInCollective =
        averageInCollective || first.allReduce.getReduction() != Reduction::Avg;
    spec.checkFinite = checkForNanInGrad;
    buckets.push_back(getBucketSpecAttr(context, spec));
    for (const bk::BucketEntry &entry : bucket.entries) {
      GradientReduction member = reductions[entry.gradient];
      decision.members.emplace_back(member.ready, index, entry.offset);
    }
  }
  decision.buckets = builder.getArrayAttr(buckets);
  decision.policy =
      BucketPolicyAttr::get(context, policy, StringAttr(), FloatAttr());
  if (policy == BucketPolicy::Auto && predictedStepTime >= 0) {
    decision.policy = BucketPolicyAttr::get(
        context, policy, builder.getStringAttr(hardware),
        builder.getF64FloatAttr(predictedStepTime * 1e6));
    predictedStepTimeMicros = static_cast<uint64_t>(predictedStepTime * 1e6);
  }
  numBucketsMade += layout->buckets.size();
  numGradientsBucketed += gradients.size();
  return decision;
}

FailureOr<bk::BucketLayout> AssignBucketsPass::computeAutoLayout(
    func::FuncOp step, ArrayRef<GradientReduction> reductions,
    ArrayRef<bk::Gradient> gradients,
    ArrayRef<bk::BucketLayout> startingLayouts, double &predictedStepTime) {
  schedule::BucketModelOptions modelOptions;
  modelOptions.hardware = hardware;
  modelOptions.dataParallelSize = dataParallelSize;
  modelOptions.useDistributedOptimizer = useDistributedOptimizer;
  modelOptions.overlapParamGather = overlapParamGather;
  modelOptions.alignParamGather = alignParamGather;
  modelOptions.numDistributedOptimizerInstances =
      numDistributedOptimizerInstances;
  modelOptions.averageInCollective = averageInCollective;
  FailureOr<schedule::BucketModel> model =
      schedule::buildBucketModel(step, reductions, gradients, modelOptions);
  if (failed(model))
    return failure();

  bk::TimelineReplay replay(model->timeline, model->costs);
  bk::OptimalLayoutOptions options;
  options.padding = getPadding();
  options.maxBucketGradients = maxBucketGradients;
  llvm::Expected<bk::OptimalLayoutResult> result =
      bk::computeOptimalLayout(gradients, replay, options, startingLayouts);
  if (!result)
    return step.emitError(llvm::toString(result.takeError()));
  predictedStepTime = result->stepTime;
  return std::move(result->layout);
}
