//===- DistributeOptimizer.cpp - The optimizer on each rank's shard -------===//
//
// Turns each materialised bucket's all-reduce and its parameters' optimizer
// ops into Megatron-Core's distributed-optimizer step: reduce-scatter, the
// optimizer on this rank's shard, all-gather of the updated parameters.
// With several distributed-optimizer instances the data-parallel axis of
// the mesh is split into an instance axis and a shard axis, the shard is
// all-reduced across the instances, and the shard's collectives run within
// an instance. Every bucket is checked before the first op changes, so a
// failing run leaves the IR as it was. docs/DistributedOptimizer.md has the
// design.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace ddp {
#define GEN_PASS_DEF_DISTRIBUTEOPTIMIZER
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

/// Parameters of a bucket updated alike: by one optimizer with the same
/// hyperparameters, reading gradients of one element type, with parameters
/// of one element type. One shard optimizer and one all-gather serve them.
struct UpdateGroup {
  /// The first of the group's optimizer ops, whose kind and
  /// hyperparameters the shard optimizer takes.
  Operation *representative = nullptr;
  Type gradElement, paramElement;
  SmallVector<Attribute> params;
  SmallVector<int64_t> offsets;
};

/// A bucket to shard, checked.
struct ShardPlan {
  int64_t index = 0;
  AllReduceOp collective;
  BucketUnpackOp unpack;
  /// The casts from the bucket's element type back to the gradients'.
  SmallVector<CastOp> castsBack;
  /// The optimizer op of each gradient, in the unpack's order.
  SmallVector<Operation *> optimizers;
  SmallVector<Attribute> params;
  /// The ranks that share the bucket's optimizer: the group, or with
  /// several instances the ranks of one instance.
  int64_t numShards = 1;
  /// The group of the reduce-scatter, shard optimizer and all-gather, and
  /// with several instances the group across them (null otherwise): set
  /// once every bucket is planned.
  ArrayAttr shardAxes, instanceAxes;
  /// outer-dp-sharding-strategy=optim: the optimizer sharded across the
  /// instances too.
  bool shardAcrossInstances = false;
  /// In order of their first parameter in the bucket; one group unless the
  /// layout mixed parameter types or optimizer settings in a bucket.
  SmallVector<UpdateGroup, 1> groups;
  /// The first optimizer op of the bucket in block order: the shard's
  /// optimizer, all-gather and write-back go there.
  Operation *firstUpdate = nullptr;
};

class DistributeOptimizerPass
    : public ddp::impl::DistributeOptimizerBase<DistributeOptimizerPass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  void shard(ShardPlan &plan);
};

} // namespace

static FlatSymbolRefAttr getUpdatedParam(Operation *op) {
  if (auto sgd = dyn_cast<SGDOp>(op))
    return sgd.getParamAttr();
  if (auto adam = dyn_cast<AdamOp>(op))
    return adam.getParamAttr();
  return {};
}

static Value getUpdateGradient(Operation *op) {
  if (auto sgd = dyn_cast<SGDOp>(op))
    return sgd.getGrad();
  return cast<AdamOp>(op).getGrad();
}

/// Whether two optimizer ops apply the same update: the same optimizer
/// with the same hyperparameters, bit for bit.
static bool isSameUpdate(Operation *a, Operation *b) {
  if (auto sgd = dyn_cast<SGDOp>(a)) {
    auto other = dyn_cast<SGDOp>(b);
    return other && sgd.getLrAttr() == other.getLrAttr();
  }
  auto adam = cast<AdamOp>(a);
  auto other = dyn_cast<AdamOp>(b);
  return other && adam.getLrAttr() == other.getLrAttr() &&
         adam.getBeta1Attr() == other.getBeta1Attr() &&
         adam.getBeta2Attr() == other.getBeta2Attr() &&
         adam.getEpsAttr() == other.getEpsAttr();
}

/// What the checks read about the step: each parameter's optimizer ops and
/// element type.
struct StepUpdates {
  llvm::DenseMap<StringAttr, SmallVector<Operation *>> updates;
  llvm::DenseMap<StringAttr, Type> paramElement;
};

/// Checks bucket `index`, whose collective is `collective`, and plans it
/// for `numInstances` distributed-optimizer instances.
static LogicalResult planShard(func::FuncOp step, int64_t index,
                               AllReduceOp collective,
                               const StepUpdates &stepUpdates,
                               int64_t numInstances, ShardPlan &plan) {
  const auto &updates = stepUpdates.updates;
  auto bucketError = [&](Operation *op) {
    return op->emitError() << "bucket " << index << ": ";
  };
  if (collective->getParentOp() != step)
    return bucketError(collective)
           << "its reduction must be at the top level of the step, where "
              "the shard optimizer goes";
  if (collective.getToken())
    return bucketError(collective)
           << "its reduction is already asynchronous; distribute the "
              "optimizer before ddp-overlap-grad-reduce";
  if (collective.getReduction() == Reduction::Max)
    return bucketError(collective) << "a 'max' reduction has no optimizer "
                                      "to shard";
  MeshOp mesh = lookupMesh(step, collective.getMeshAttr());
  if (!mesh)
    return bucketError(collective)
           << collective.getMeshAttr() << " is not a ddp.mesh";
  int64_t groupSize = getGroupSize(mesh, collective.getAxesAttr());
  if (groupSize < 1)
    return bucketError(collective)
           << "mesh " << collective.getMeshAttr() << " has no axes "
           << getGroupName(collective.getAxesAttr());
  if (numInstances > 1 && collective.getAxes().size() != 1)
    return bucketError(collective)
           << "its group " << collective.getMeshAttr() << "["
           << getGroupName(collective.getAxesAttr()) << "] spans "
           << collective.getAxes().size()
           << " axes; num-distributed-optimizer-instances=" << numInstances
           << " splits one data-parallel axis into instances"
           << (mesh.getAxisSize("ep") > 0
                   ? "; an expert-parallel step reduces its dense "
                     "gradients over the expert data-parallel and "
                     "expert axes together, so instances need a step "
                     "without expert parallelism (set "
                     "num-distributed-optimizer-instances=1)"
                   : "");
  if (groupSize % numInstances != 0)
    return mesh.emitError()
           << "num-distributed-optimizer-instances=" << numInstances
           << " does not divide axis '"
           << getGroupName(collective.getAxesAttr()) << "' (" << groupSize
           << " ranks) of mesh " << collective.getMeshAttr()
           << ": the data-parallel group cannot be split into equal instances";
  plan.numShards = groupSize / numInstances;
  int64_t numel = collective.getInput().getType().getNumElements();
  if (numel % plan.numShards != 0) {
    InFlightDiagnostic diag = bucketError(collective)
                              << "its " << numel << " elements do not split "
                              << "into " << plan.numShards << " equal shards";
    if (numInstances > 1)
      diag << " (the " << groupSize << " ranks of the group in "
           << numInstances << " instances of " << plan.numShards << ")";
    return diag << "; lay the buckets out with use-distributed-optimizer, "
                   "which pads them to a multiple of the group size";
  }
  if (!collective.getResult().hasOneUse())
    return bucketError(collective) << "its reduced bucket must be read by one "
                                      "ddp.bucket_unpack";
  plan.unpack = dyn_cast<BucketUnpackOp>(*collective->user_begin());
  if (!plan.unpack)
    return bucketError(*collective->user_begin())
           << "reads the reduced bucket; only ddp.bucket_unpack may";
  plan.index = index;
  plan.collective = collective;

  for (auto [position, unpacked] :
       llvm::enumerate(plan.unpack.getResults())) {
    int64_t offset = plan.unpack.getOffsets()[position];
    auto gradientError = [&](Operation *op) {
      return bucketError(op) << "the reduced gradient at offset " << offset;
    };
    Value gradient = unpacked;
    if (gradient.hasOneUse())
      if (auto castBack = dyn_cast<CastOp>(*gradient.user_begin());
          castBack && getBucketIndex(castBack)) {
        plan.castsBack.push_back(castBack);
        gradient = castBack.getResult();
      }
    if (!gradient.hasOneUse())
      return gradientError(plan.unpack)
             << " has " << std::distance(gradient.use_begin(),
                                         gradient.use_end())
             << " uses; the distributed optimizer needs it to feed its "
                "parameter's optimizer alone";
    Operation *update = *gradient.user_begin();
    FlatSymbolRefAttr param = getUpdatedParam(update);
    if (!param || update->getParentOp() != step)
      return gradientError(update)
             << " is read by '" << update->getName()
             << "'; the distributed optimizer needs it to feed its "
                "parameter's optimizer (ddp.sgd or ddp.adam at the top level "
                "of the step) alone";
    if (updates.lookup(param.getAttr()).size() != 1)
      return bucketError(update)
             << param << " is updated "
             << updates.lookup(param.getAttr()).size()
             << " times in the step; the distributed optimizer updates each "
                "parameter once";
    Type gradElement = getElementTypeOrSelf(getUpdateGradient(update));
    Type paramElement = stepUpdates.paramElement.lookup(param.getAttr());
    auto group = llvm::find_if(plan.groups, [&](const UpdateGroup &group) {
      return group.gradElement == gradElement &&
             group.paramElement == paramElement &&
             isSameUpdate(group.representative, update);
    });
    if (group == plan.groups.end())
      group = plan.groups.insert(
          group, UpdateGroup{update, gradElement, paramElement, {}, {}});
    group->params.push_back(param);
    group->offsets.push_back(offset);
    plan.optimizers.push_back(update);
    plan.params.push_back(param);
    if (!plan.firstUpdate || update->isBeforeInBlock(plan.firstUpdate))
      plan.firstUpdate = update;
  }
  return success();
}

/// The gathered parameters are written where the bucket's first update was:
/// a read of one of them between there and its own update would see the new
/// value where it saw the old one.
static LogicalResult checkReadsBeforeUpdate(const ShardPlan &plan,
                                            func::FuncOp step) {
  llvm::DenseMap<StringAttr, Operation *> updateOf;
  for (auto [param, update] : llvm::zip(plan.params, plan.optimizers))
    updateOf[cast<FlatSymbolRefAttr>(param).getAttr()] = update;
  for (Operation *op = plan.firstUpdate->getNextNode(); op;
       op = op->getNextNode()) {
    auto read = dyn_cast<GetParamOp>(op);
    if (!read)
      continue;
    Operation *update = updateOf.lookup(read.getParamAttr().getAttr());
    if (!update || !read->isBeforeInBlock(update))
      continue;
    InFlightDiagnostic diag =
        read.emitError()
        << "bucket " << plan.index << ": reads " << read.getParamAttr()
        << " after the bucket's first optimizer update, before its own; the "
           "distributed optimizer writes the bucket's parameters at the first";
    diag.attachNote(plan.firstUpdate->getLoc())
        << "the bucket's first optimizer update";
    return diag;
  }
  return success();
}

void DistributeOptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  int64_t numInstances = this->numInstances;
  if (numInstances < 1) {
    module.emitError() << "num-distributed-optimizer-instances must be at "
                          "least 1, not "
                       << numInstances;
    return signalPassFailure();
  }
  // Megatron-FSDP's values (arguments.py L3193-3198 at d98e8a6).
  if (outerDpShardingStrategy != ShardingStrategy::NoShard &&
      outerDpShardingStrategy != ShardingStrategy::Optim) {
    module.emitError() << "outer-dp-sharding-strategy takes no_shard or "
                          "optim, not "
                       << getShardingStrategyName(outerDpShardingStrategy);
    return signalPassFailure();
  }
  bool shardAcrossInstances =
      outerDpShardingStrategy == ShardingStrategy::Optim;
  if (shardAcrossInstances && numInstances == 1) {
    module.emitError("outer-dp-sharding-strategy=optim shards the optimizer "
                     "across the distributed-optimizer instances; give "
                     "num-distributed-optimizer-instances above 1");
    return signalPassFailure();
  }
  llvm::DenseMap<StringAttr, Type> paramElement;
  for (ParamOp param : module.getOps<ParamOp>())
    paramElement[param.getSymNameAttr()] =
        param.getTensorType().getElementType();

  SmallVector<ShardPlan, 0> plans;
  for (func::FuncOp step : module.getOps<func::FuncOp>()) {
    if (step.isExternal())
      continue;
    StepUpdates stepUpdates;
    stepUpdates.paramElement = paramElement;
    SmallVector<std::pair<int64_t, AllReduceOp>> collectives;
    step.walk([&](Operation *op) {
      if (FlatSymbolRefAttr param = getUpdatedParam(op))
        stepUpdates.updates[param.getAttr()].push_back(op);
      // A bucket's all-reduce of a reduce-scatter's shard is the reduction
      // across instances of a bucket already sharded.
      if (auto allReduce = dyn_cast<AllReduceOp>(op))
        if (std::optional<int64_t> index = getBucketIndex(op);
            index && !allReduce.getInput().getDefiningOp<ReduceScatterOp>())
          collectives.push_back({*index, allReduce});
    });
    for (auto [index, collective] : collectives) {
      ShardPlan &plan = plans.emplace_back();
      if (failed(planShard(step, index, collective, stepUpdates, numInstances,
                           plan)) ||
          failed(checkReadsBeforeUpdate(plan, step)))
        return signalPassFailure();
    }
  }
  if (plans.empty())
    return;

  if (numInstances == 1) {
    for (ShardPlan &plan : plans)
      plan.shardAxes = plan.collective.getAxesAttr();
  } else {
    // One axis is split, so every bucket must reduce over it.
    AllReduceOp first = plans.front().collective;
    for (ShardPlan &plan : plans)
      if (plan.collective.getMeshAttr() != first.getMeshAttr() ||
          plan.collective.getAxesAttr() != first.getAxesAttr()) {
        InFlightDiagnostic diag =
            plan.collective.emitError()
            << "bucket " << plan.index << ": reduces over "
            << plan.collective.getMeshAttr() << "["
            << getGroupName(plan.collective.getAxesAttr())
            << "] where bucket " << plans.front().index << " reduces over "
            << first.getMeshAttr() << "[" << getGroupName(first.getAxesAttr())
            << "]; num-distributed-optimizer-instances splits one axis";
        diag.attachNote(first.getLoc()) << "bucket " << plans.front().index;
        return signalPassFailure();
      }
    MeshOp mesh = lookupMesh(first->getParentOfType<func::FuncOp>(),
                             first.getMeshAttr());
    auto axis = cast<StringAttr>(first.getAxes()[0]);
    auto instanceAxis =
        StringAttr::get(&getContext(), axis.getValue() + "_replicate");
    auto shardAxis = StringAttr::get(&getContext(), axis.getValue() + "_shard");
    for (StringAttr name : {instanceAxis, shardAxis})
      if (mesh.getAxisSize(name.getValue()) >= 0) {
        mesh.emitError() << "num-distributed-optimizer-instances="
                         << numInstances << " splits axis " << axis
                         << " into " << instanceAxis << " and " << shardAxis
                         << ", but the mesh already has an axis " << name;
        return signalPassFailure();
      }
    // Sharded across the instances too, every bucket splits into the
    // whole group's shards.
    if (shardAcrossInstances)
      for (ShardPlan &plan : plans) {
        int64_t numel =
            plan.collective.getInput().getType().getNumElements();
        if (numel % (plan.numShards * numInstances) != 0) {
          plan.collective.emitError()
              << "bucket " << plan.index << " of " << numel
              << " elements cannot be split into "
              << plan.numShards * numInstances
              << " equal shards (outer-dp-sharding-strategy=optim shards it "
                 "across the instances too); pad the buckets to a multiple "
                 "of the data-parallel size";
          return signalPassFailure();
        }
      }
    splitMeshAxis(module, mesh, axis, numInstances, instanceAxis, shardAxis);
    Builder builder(&getContext());
    for (ShardPlan &plan : plans) {
      plan.shardAxes = builder.getStrArrayAttr({shardAxis.getValue()});
      plan.instanceAxes = builder.getStrArrayAttr({instanceAxis.getValue()});
      plan.shardAcrossInstances = shardAcrossInstances;
    }
  }
  for (ShardPlan &plan : plans)
    shard(plan);
}

void DistributeOptimizerPass::shard(ShardPlan &plan) {
  AllReduceOp collective = plan.collective;
  RankedTensorType bucketType = collective.getInput().getType();
  int64_t shardNumel = bucketType.getNumElements() / plan.numShards;
  auto gradShardType =
      RankedTensorType::get({shardNumel}, bucketType.getElementType());
  DictionaryAttr bucketAttrs = collective->getDiscardableAttrDictionary();

  // The reduce-scatter takes the all-reduce's place and bucket index, so
  // that ddp-overlap-grad-reduce moves it as it moves an all-reduce.
  OpBuilder builder(collective);
  auto reduceScatter = ReduceScatterOp::create(
      builder, collective.getLoc(), gradShardType, /*token=*/Type(),
      collective.getReductionAttr(), collective.getInput(),
      collective.getMeshAttr(), plan.shardAxes,
      /*asyncDependencies=*/ValueRange());
  reduceScatter->setDiscardableAttrs(bucketAttrs);
  // With several instances, each holds a partial reduction of the shard;
  // Megatron all-reduces it across the instances right after the
  // reduce-scatter, with the same reduction. It belongs to the bucket, so
  // that ddp-overlap-grad-reduce issues it asynchronously too.
  Value reducedShard = reduceScatter.getResult();
  // Sharded across the instances too: the instance's shard is
  // reduce-scattered across them (Megatron-FSDP's outer reduce-scatter,
  // param_and_grad_buffer.py L4184-4206 at d98e8a6); the optimizer's group
  // lists dp_shard first, so that its rank's part is where the two
  // reduce-scatters leave it.
  ArrayAttr optimizerAxes = plan.shardAxes;
  int64_t numInstances = 1;
  if (plan.shardAcrossInstances) {
    numInstances = getGroupSize(
        lookupMesh(collective->getParentOfType<func::FuncOp>(),
                   collective.getMeshAttr()),
        plan.instanceAxes);
    SmallVector<Attribute> axes(plan.shardAxes.begin(), plan.shardAxes.end());
    llvm::append_range(axes, plan.instanceAxes);
    optimizerAxes = builder.getArrayAttr(axes);
    builder.setInsertionPointAfter(reduceScatter);
    auto acrossInstances = ReduceScatterOp::create(
        builder, collective.getLoc(),
        RankedTensorType::get({shardNumel / numInstances},
                              bucketType.getElementType()),
        /*token=*/Type(), collective.getReductionAttr(), reducedShard,
        collective.getMeshAttr(), plan.instanceAxes,
        /*asyncDependencies=*/ValueRange());
    acrossInstances->setDiscardableAttrs(bucketAttrs);
    reducedShard = acrossInstances.getResult();
  } else if (plan.instanceAxes) {
    builder.setInsertionPointAfter(reduceScatter);
    auto acrossInstances = AllReduceOp::create(
        builder, collective.getLoc(), gradShardType, /*token=*/Type(),
        collective.getReductionAttr(), reducedShard, collective.getMeshAttr(),
        plan.instanceAxes, /*asyncDependencies=*/ValueRange());
    acrossInstances->setDiscardableAttrs(bucketAttrs);
    reducedShard = acrossInstances.getResult();
  }

  builder.setInsertionPoint(plan.firstUpdate);
  Location loc = plan.firstUpdate->getLoc();
  // The optimizer's shard: the instance's, or its part across instances.
  auto optimizerShardType = cast<RankedTensorType>(reducedShard.getType());
  llvm::SmallDenseMap<Type, Value> gradShards;
  gradShards[bucketType.getElementType()] = reducedShard;
  for (UpdateGroup &group : plan.groups) {
    // The optimizer reads the gradients as the per-parameter ops did: cast
    // back to their type where the bucket reduced them in a wider one.
    Value &gradShard = gradShards[group.gradElement];
    if (!gradShard) {
      auto castBack = CastOp::create(
          builder, loc, optimizerShardType.clone(group.gradElement),
          reducedShard);
      castBack->setDiscardableAttrs(bucketAttrs);
      gradShard = castBack.getResult();
    }
    auto paramShardType = optimizerShardType.clone(group.paramElement);
    ArrayAttr params = builder.getArrayAttr(group.params);
    DenseI64ArrayAttr offsets = builder.getDenseI64ArrayAttr(group.offsets);
    Value paramShard;
    if (auto sgd = dyn_cast<SGDOp>(group.representative)) {
      paramShard = ShardSGDOp::create(builder, loc, paramShardType, gradShard,
                                      params, offsets, collective.getMeshAttr(),
                                      optimizerAxes, sgd.getLrAttr());
    } else {
      auto adam = cast<AdamOp>(group.representative);
      paramShard = ShardAdamOp::create(
          builder, loc, paramShardType, gradShard, params, offsets,
          collective.getMeshAttr(), optimizerAxes, adam.getLrAttr(),
          adam.getBeta1Attr(), adam.getBeta2Attr(), adam.getEpsAttr());
    }
    // Across the instances first (Megatron-FSDP's outer all-gather,
    // L4543-4560), then within the instance.
    if (plan.shardAcrossInstances)
      paramShard =
          AllGatherOp::create(builder, loc, gradShardType.clone(group.paramElement),
                              /*token=*/Type(), paramShard,
                              collective.getMeshAttr(), plan.instanceAxes,
                              /*asyncDependencies=*/ValueRange())
              .getResult();
    Value gathered =
        AllGatherOp::create(builder, loc, bucketType.clone(group.paramElement),
                            /*token=*/Type(), paramShard,
                            collective.getMeshAttr(), plan.shardAxes,
                            /*asyncDependencies=*/ValueRange())
            .getResult();
    SetParamsOp::create(builder, loc, gathered, params, offsets);
  }

  for (Operation *update : plan.optimizers)
    update->erase();
  for (CastOp castBack : plan.castsBack)
    castBack->erase();
  plan.unpack->erase();
  collective->erase();
  ++numBucketsSharded;
  numOptimizerOpsReplaced += plan.optimizers.size();
}
