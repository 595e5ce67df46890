//===- StepTimeline.cpp - The step as the auto policy replays it ----------===//
//
// What the timeline holds and what buckets add to it; TimelineReplay.cpp
// prices layouts on it.
//
//===----------------------------------------------------------------------===//

#include "ddp/Bucketing/StepTimeline.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace ddp::bucketing;

//===----------------------------------------------------------------------===//
// BucketCosts
//===----------------------------------------------------------------------===//

double BucketCosts::getBucketIssueTime(unsigned stream, ElementType type,
                                       int64_t paddedNumel) const {
  // Simulator: a scale reads and writes the bucket.
  return prescaled[stream]
             ? model.memoryTime(2.0 * paddedNumel * getElementBytes(type))
             : 0.0;
}

double BucketCosts::getCollectiveTime(unsigned stream, ElementType type,
                                      int64_t paddedNumel) const {
  return model.collectiveTime(distributedOptimizer
                                  ? CollectiveKind::ReduceScatter
                                  : CollectiveKind::AllReduce,
                              double(paddedNumel) * getElementBytes(type),
                              placement[stream]);
}

//===----------------------------------------------------------------------===//
// ShardedTail
//===----------------------------------------------------------------------===//

double ShardedTail::getFromFirstGather() const {
  double seconds = 0;
  for (auto [index, group] : llvm::enumerate(groups)) {
    if (index > 0)
      seconds += group.beforeGather;
    seconds += group.gather;
  }
  return seconds;
}

void ShardedTailBuilder::add(size_t gradient) {
  unsigned updateClass = costs.update[gradient].updateClass;
  if (llvm::none_of(classes, [&](size_t known) {
        return costs.update[known].updateClass == updateClass;
      }))
    classes.push_back(gradient);
}

ShardedTail ShardedTailBuilder::build(unsigned stream, ElementType bucketType,
                                      int64_t paddedNumel,
                                      size_t position) const {
  // Simulator: each op of ddp-distribute-optimizer's groups, priced as it
  // prices them.
  const timing::CostModel &model = costs.model;
  double shardNumel = double(paddedNumel / costs.shardGroupSize[stream]);
  ShardedTail tail;
  tail.position = position;
  llvm::SmallVector<ElementType, 2> castTo{bucketType};
  for (size_t gradient : classes) {
    const ShardedUpdate &update = costs.update[gradient];
    ShardedGroup group;
    if (!llvm::is_contained(castTo, update.gradType)) {
      castTo.push_back(update.gradType);
      group.cast = model.memoryTime(
          shardNumel * getElementBytes(bucketType) +
          shardNumel * getElementBytes(update.gradType));
      group.beforeGather = group.cast;
    }
    group.beforeGather += model.optimizerTime(update.rule, shardNumel,
                                              update.paramType,
                                              update.gradType);
    group.gather = model.collectiveTime(
        CollectiveKind::AllGather,
        double(paddedNumel) * getElementBytes(update.paramType),
        costs.placement[stream]);
    // Simulator: the parameters are stored in the gathered bucket
    // (ParamsInGathers), so ddp.set_params, ddp.get_param_shard and
    // ddp.set_param_shard copy nothing.
    tail.groups.push_back(group);
  }
  // Simulator: the all-reduce of the shard, in the bucket's type.
  if (costs.numInstances > 1)
    tail.acrossInstances =
        model.collectiveTime(CollectiveKind::AllReduce,
                             shardNumel * getElementBytes(bucketType),
                             costs.placement[costs.acrossInstancesStream]);
  return tail;
}

//===----------------------------------------------------------------------===//
// StepTimeline
//===----------------------------------------------------------------------===//

void StepTimeline::addCompute(double seconds) {
  if (inTail) {
    addTailCompute(seconds);
    return;
  }
  // Consecutive kernels merge: a kernel's slowed duration only depends on how
  // long communication stays in flight, which no kernel changes.
  if (!backward.empty() && backward.back().kind == Item::Compute) {
    backward.back().seconds += seconds;
    return;
  }
  backward.push_back({Item::Compute, seconds, 0, 0});
}

void StepTimeline::addBlockingCollective(unsigned stream, double seconds) {
  if (stream >= numStreams && buildError.empty())
    buildError = llvm::formatv("a collective uses stream {0} of {1}", stream,
                               numStreams);
  if (inTail && buildError.empty())
    buildError = "a synchronous collective after the backward part cannot be "
                 "replayed";
  backward.push_back({Item::Blocking, seconds, stream, 0});
}

void StepTimeline::addGradientReady(size_t gradient) {
  if (inTail && buildError.empty())
    buildError = llvm::formatv("gradient {0} becomes ready after the "
                               "optimizer started",
                               gradient);
  backward.push_back({Item::Ready, 0, 0, gradient});
}

void StepTimeline::addParamUse(size_t gradient, size_t ordinal) {
  if (inTail && buildError.empty())
    buildError = llvm::formatv("the first use of gradient {0}'s parameter is "
                               "marked after the backward part",
                               gradient);
  backward.push_back({Item::ParamUse, 0, 0, gradient, ordinal});
}

void StepTimeline::beginTail() { inTail = true; }

void StepTimeline::addTailCompute(double seconds,
                                  llvm::ArrayRef<size_t> gradients) {
  tail.push_back(
      {seconds, std::vector<size_t>(gradients.begin(), gradients.end())});
}

void StepTimeline::addTailUpdate(double seconds, size_t gradient) {
  tail.push_back({seconds, {gradient}, /*isUpdate=*/true});
}

llvm::Error StepTimeline::verify() const {
  if (!buildError.empty())
    return llvm::createStringError(buildError);
  if (!inTail)
    return llvm::createStringError("the timeline has no tail");
  if (!(slowdown >= 1) || !std::isfinite(slowdown))
    return llvm::createStringError(
        llvm::formatv("the compute slowdown must be at least 1, got {0}",
                      llvm::format("%g", slowdown)));
  size_t expected = 0;
  std::vector<bool> used(numGradients, false);
  for (const Item &item : backward) {
    if (item.kind == Item::ParamUse) {
      if (item.gradient >= numGradients || used[item.gradient])
        return llvm::createStringError(llvm::formatv(
            "the first use of gradient {0}'s parameter is marked twice or "
            "the gradient is not one of {1}",
            item.gradient, numGradients));
      used[item.gradient] = true;
      continue;
    }
    if (!(item.seconds >= 0) || !std::isfinite(item.seconds))
      return llvm::createStringError(
          llvm::formatv("a kernel or collective takes {0} s",
                        llvm::format("%g", item.seconds)));
    if (item.kind != Item::Ready)
      continue;
    if (item.gradient != expected)
      return llvm::createStringError(
          llvm::formatv("gradient {0} becomes ready where gradient {1} was "
                        "expected; gradients are numbered in ready order",
                        item.gradient, expected));
    ++expected;
  }
  if (expected != numGradients)
    return llvm::createStringError(llvm::formatv(
        "{0} of {1} gradients become ready", expected, numGradients));
  for (const TailItem &item : tail)
    for (size_t gradient : item.gradients)
      if (gradient >= numGradients)
        return llvm::createStringError(llvm::formatv(
            "the tail uses gradient {0} of {1}", gradient, numGradients));
  return llvm::Error::success();
}
