//===- BucketTimeline.cpp - The unscheduled step as a StepTimeline --------===//
//
// The auto bucketing policy's input: one simulation of the unscheduled step
// gives every kernel's and collective's time (no collective is in flight
// beside compute there), recorded op by op as a bucketing::StepTimeline, with
// what the buckets will add (BucketCosts) read from the reductions they
// replace.
//
//===----------------------------------------------------------------------===//

#include "ddp/ScheduleModel/ScheduleModel.h"

#include "ddp/Dialect/DDP/IR/MeshLookup.h"
#include "ddp/Sim/Simulator.h"
#include "ddp/Timing/HardwareProfile.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::schedule;
namespace bk = ddp::bucketing;

namespace {
/// The two groups that ddp-distribute-optimizer splits the buckets' group
/// into with several instances, placed as the simulator places them.
struct InstanceGroups {
  /// The ranks of one instance, and the ranks across instances that hold
  /// the same shard.
  timing::GroupPlacement shard, across;
  /// The size of the group within an instance as the IR has it.
  int64_t shardSize = 1;
};
} // namespace

/// With `numInstances` instances, the groups of the mesh as
/// ddp-distribute-optimizer splits it (axis `A` into `A_replicate`, slower,
/// and `A_shard`), resized by `dataParallelSize` as the simulator resizes
/// them. Nullopt where that pass refuses to split (and says why).
static FailureOr<std::optional<InstanceGroups>>
getInstanceGroups(func::FuncOp step, ArrayRef<GradientReduction> reductions,
                  int64_t numInstances, int64_t dataParallelSize,
                  int64_t gpusPerNode) {
  if (reductions.empty())
    return std::optional<InstanceGroups>();
  AllReduceOp first = reductions.front().allReduce;
  for (GradientReduction reduction : reductions)
    if (reduction.allReduce.getMeshAttr() != first.getMeshAttr() ||
        reduction.allReduce.getAxesAttr() != first.getAxesAttr())
      return std::optional<InstanceGroups>();
  MeshOp mesh = lookupMesh(step, first.getMeshAttr());
  if (!mesh || first.getAxes().size() != 1)
    return std::optional<InstanceGroups>();
  StringRef axis = cast<StringAttr>(first.getAxes()[0]).getValue();
  std::string instanceAxis = (axis + "_replicate").str();
  std::string shardAxis = (axis + "_shard").str();
  SmallVector<StringRef> names;
  SmallVector<int64_t> shape;
  std::optional<unsigned> split;
  for (auto [attr, size] : llvm::zip(mesh.getAxisNames(), mesh.getShape())) {
    StringRef name = cast<StringAttr>(attr).getValue();
    if (name == instanceAxis || name == shardAxis)
      return std::optional<InstanceGroups>();
    if (name != axis) {
      names.push_back(name);
      shape.push_back(size);
      continue;
    }
    if (size % numInstances != 0)
      return std::optional<InstanceGroups>();
    split = names.size();
    names.append({instanceAxis, shardAxis});
    shape.append({numInstances, size / numInstances});
  }
  if (!split)
    return std::optional<InstanceGroups>();
  InstanceGroups groups;
  groups.shardSize = shape[*split + 1];
  if (dataParallelSize > 0) {
    auto rescaled =
        sim::rescaleDataParallelAxes(names, shape, dataParallelSize);
    if (!rescaled)
      return mesh.emitError("the auto policy cannot price ")
             << numInstances << " distributed-optimizer instances: "
             << llvm::toString(rescaled.takeError());
    shape = std::move(*rescaled);
  }
  groups.across = sim::placeGroup(shape, {*split}, gpusPerNode);
  groups.shard = sim::placeGroup(shape, {*split + 1}, gpusPerNode);
  return std::optional<InstanceGroups>(groups);
}

/// How the distributed optimizer would update the parameter of `op`, an
/// optimizer op of `gradient`; ops of one class in a bucket share a shard
/// optimizer, as ddp-distribute-optimizer groups them.
static bk::ShardedUpdate getShardedUpdate(Operation *op,
                                          const bk::Gradient &gradient,
                                          llvm::StringMap<unsigned> &classes) {
  Value grad =
      isa<SGDOp>(op) ? cast<SGDOp>(op).getGrad() : cast<AdamOp>(op).getGrad();
  bk::ShardedUpdate update;
  update.rule =
      isa<SGDOp>(op) ? timing::OptimizerRule::SGD : timing::OptimizerRule::Adam;
  update.paramType = gradient.paramType;
  update.gradType =
      getElementTypeOf(grad.getType()).value_or(bk::ElementType::F32);
  // The optimizer with its hyperparameters, and the two element types.
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << " " << getElementTypeOrSelf(grad.getType()) << " "
     << stringifyElementType(gradient.paramType);
  for (NamedAttribute attr : op->getAttrs())
    if (attr.getName() != "param")
      os << " " << attr.getName() << "=" << attr.getValue();
  update.updateClass = classes.try_emplace(key, classes.size()).first->second;
  return update;
}

FailureOr<BucketModel> ddp::schedule::buildBucketModel(
    func::FuncOp step, ArrayRef<GradientReduction> reductions,
    ArrayRef<bk::Gradient> gradients, const BucketModelOptions &options) {
  llvm::Expected<timing::HardwareProfile> profile =
      timing::lookupHardwareProfile(options.hardware);
  if (!profile)
    return step.emitError(llvm::toString(profile.takeError()));
  timing::CostModel model(std::move(*profile));
  sim::SimOptions simOptions;
  simOptions.dataParallelSize = options.dataParallelSize;
  simOptions.recordEvents = true;
  // The unscheduled step prices every op the layout does not change: no
  // collective is in flight beside compute there, so each event's duration
  // is the op's own time.
  FailureOr<sim::SimResult> simulated =
      sim::simulateStep(step, model, simOptions);
  if (failed(simulated))
    return failure();

  llvm::DenseMap<Operation *, SmallVector<const sim::TimelineEvent *, 2>>
      eventsOf;
  for (const sim::TimelineEvent &event : simulated->events)
    eventsOf[event.op].push_back(&event);
  auto getEvents = [&](Operation *op) -> ArrayRef<const sim::TimelineEvent *> {
    auto it = eventsOf.find(op);
    if (it == eventsOf.end())
      return {};
    return it->second;
  };
  llvm::DenseMap<Operation *, size_t> readyIndex, reductionIndex;
  llvm::DenseMap<Value, size_t> reducedIndex;
  for (auto [index, entry] : llvm::enumerate(reductions)) {
    GradientReduction reduction = entry;
    readyIndex[reduction.ready] = index;
    reductionIndex[reduction.allReduce] = index;
    reducedIndex[reduction.allReduce.getResult()] = index;
  }

  size_t count = gradients.size();
  unsigned numStreams = simulated->streams.size() - 1;
  // With several distributed-optimizer instances the buckets' collectives
  // run on two groups the unscheduled step does not have, so on two streams
  // of their own: the reduce-scatters and all-gathers within an instance on
  // `instanceStream`, the all-reduces across instances on the next.
  std::optional<InstanceGroups> instances;
  if (options.useDistributedOptimizer &&
      options.numDistributedOptimizerInstances > 1) {
    FailureOr<std::optional<InstanceGroups>> groups = getInstanceGroups(
        step, reductions, options.numDistributedOptimizerInstances,
        options.dataParallelSize, model.getProfile().gpusPerNode);
    if (failed(groups))
      return failure();
    instances = *groups;
  }
  unsigned instanceStream = numStreams;
  if (instances)
    numStreams += 2;
  bk::StepTimeline timeline(count, numStreams, model.getCommComputeSlowdown());
  bk::BucketCosts costs(model);
  costs.stream.assign(count, 0);
  costs.packTime.assign(count, 0);
  costs.unpackTime.assign(count, 0);
  costs.prescaled.assign(numStreams, false);
  costs.distributedOptimizer = options.useDistributedOptimizer;
  costs.overlapParamGather =
      options.useDistributedOptimizer && options.overlapParamGather;
  costs.alignParamGather = costs.overlapParamGather && options.alignParamGather;
  // With overlap-param-gather: each parameter's gradient, to mark the first
  // op naming the parameter (where ddp-overlap-param-gather waits for its
  // all-gather).
  llvm::DenseMap<StringAttr, size_t> gradientOfParam;
  if (costs.overlapParamGather)
    for (auto [index, reduction] : llvm::enumerate(reductions))
      gradientOfParam[GradReadyOp(reduction.ready).getParamAttr().getAttr()] =
          index;
  if (options.useDistributedOptimizer) {
    costs.update.resize(count);
    costs.shardGroupSize.assign(numStreams, 1);
  }
  // With the distributed optimizer: the update classes seen so far, and the
  // gradients whose update was found.
  llvm::StringMap<unsigned> updateClasses;
  SmallVector<bool> updated(count, false);
  bool inTail = false;
  for (auto [ordinal, op] : llvm::enumerate(step.getBody().front())) {
    if (!inTail && !gradientOfParam.empty())
      forEachNamedSymbol(&op, [&](StringAttr name) {
        auto param = gradientOfParam.find(name);
        if (param == gradientOfParam.end())
          return;
        timeline.addParamUse(param->second, ordinal);
        gradientOfParam.erase(param);
      });
    auto reduction = reductionIndex.find(&op);
    if (reduction != reductionIndex.end()) {
      size_t index = reduction->second;
      ArrayRef<const sim::TimelineEvent *> events = getEvents(&op);
      auto comm = llvm::find_if(events, [](const sim::TimelineEvent *event) {
        return event->category == sim::EventCategory::Comm;
      });
      if (comm == events.end())
        return op.emitError("was not simulated; the auto policy cannot "
                            "price its bucket");
      unsigned stream = instances ? instanceStream : (*comm)->stream - 1;
      costs.stream[index] = stream;
      GradientReduction reduced = reductions[index];
      // The shards are those of the group as the IR has it, whatever `dp`
      // simulates (docs/CostModel.md).
      if (instances)
        costs.shardGroupSize[stream] = instances->shardSize;
      else if (options.useDistributedOptimizer)
        costs.shardGroupSize[stream] =
            getGroupSize(lookupMesh(step, reduced.allReduce.getMeshAttr()),
                         reduced.allReduce.getAxesAttr());
      costs.prescaled[stream] =
          !options.averageInCollective &&
          reduced.allReduce.getReduction() == ddp::Reduction::Avg;
      const bk::Gradient &gradient = gradients[index];
      Type gradType = reduced.ready.getType().getElementType();
      if (gradient.reduceType != *getElementTypeOf(gradType)) {
        // Simulator: a cast reads its input and writes its result.
        double bytes = gradient.numel *
                       double(getElementBytes(gradient.reduceType) +
                              getElementBytes(*getElementTypeOf(gradType)));
        costs.packTime[index] = model.memoryTime(bytes);
        costs.unpackTime[index] = model.memoryTime(bytes);
      }
      timeline.beginTail();
      inTail = true;
      continue;
    }
    auto ready = readyIndex.find(&op);
    if (ready != readyIndex.end()) {
      if (inTail)
        return op.emitError("becomes ready after the first gradient "
                            "reduction; the auto policy needs the unscheduled "
                            "form, every grad_ready before the reductions");
      timeline.addGradientReady(ready->second);
      continue;
    }
    SmallVector<size_t> uses;
    for (Value operand : op.getOperands()) {
      auto used = reducedIndex.find(operand);
      if (used != reducedIndex.end())
        uses.push_back(used->second);
    }
    std::optional<bk::ShardedUpdate> update;
    if (inTail && uses.size() == 1 && isa<SGDOp, AdamOp>(op))
      update = getShardedUpdate(&op, gradients[uses.front()], updateClasses);
    if (update && options.useDistributedOptimizer) {
      size_t index = uses.front();
      if (updated[index])
        return op.emitError("updates ")
               << GradReadyOp(reductions[index].ready).getParamAttr()
               << " a second time; the distributed optimizer updates each "
                  "parameter once";
      updated[index] = true;
      costs.update[index] = *update;
    }
    // A pipeline rank's program (ddp-pipeline-stages) is priced alone: its
    // stage-to-stage transfers take their own time, and the compute stream
    // stalls at their waits for what is left of it (the other ranks'
    // timing, the bubble, is not modelled here).
    bool asyncMessage = isa<SendOp, RecvOp>(op) &&
                        cast<AsyncOpInterface>(op).isAsync();
    if (asyncMessage)
      continue;
    if (auto wait = dyn_cast<WaitOp>(op);
        isa<SendOp, RecvOp>(op) ||
        (wait && isa_and_present<SendOp, RecvOp>(
                     wait.getToken().getDefiningOp()))) {
      for (const sim::TimelineEvent *event : getEvents(&op)) {
        if (inTail)
          timeline.addTailCompute(event->duration, {});
        else
          timeline.addCompute(event->duration);
      }
      continue;
    }
    bool priced = false;
    for (const sim::TimelineEvent *event : getEvents(&op)) {
      if (event->category == sim::EventCategory::Wait)
        continue;
      if (event->category == sim::EventCategory::Compute) {
        if (update)
          timeline.addTailUpdate(event->duration, uses.front());
        else if (inTail)
          timeline.addTailCompute(event->duration, uses);
        else
          timeline.addCompute(event->duration);
        priced = true;
        continue;
      }
      if (event->collective && event->collective->async)
        return op.emitError("is an asynchronous collective; the auto policy "
                            "replays the unscheduled form, where only the "
                            "buckets it lays out will be asynchronous");
      if (inTail)
        return op.emitError("is a collective after the gradient reductions; "
                            "the auto policy cannot replay it");
      timeline.addBlockingCollective(event->stream - 1, event->duration);
    }
    if (inTail && !priced && !uses.empty())
      timeline.addTailCompute(0, uses);
  }
  if (llvm::Error error = timeline.verify())
    return step.emitError("cannot replay the step for the auto policy: ")
           << llvm::toString(std::move(error));
  if (options.useDistributedOptimizer)
    for (auto [index, reduction] : llvm::enumerate(reductions))
      if (!updated[index])
        return GradReadyOp(reduction.ready)
            .emitError("has no ddp.sgd or ddp.adam update of its reduced "
                       "gradient; the auto policy prices the distributed "
                       "optimizer's shard of each update");

  for (const sim::StreamInfo &stream : llvm::drop_begin(simulated->streams))
    costs.placement.push_back(stream.placement);
  if (instances) {
    costs.placement.push_back(instances->shard);
    costs.placement.push_back(instances->across);
    costs.numInstances = options.numDistributedOptimizerInstances;
    costs.acrossInstancesStream = instanceStream + 1;
  }

  return BucketModel{std::move(timeline), std::move(costs)};
}
