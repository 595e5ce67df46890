//===- StepTimelineTest.cpp - Replaying layouts by hand-computed cases ----===//

#include "TestGradients.h"

#include "ddp/Bucketing/StepTimeline.h"

#include "gtest/gtest.h"

using namespace ddp::bucketing;
using namespace ddp::bucketing::testing;

namespace {

/// Two 5-element gradients ready at t = 10 and t = 20, each used by a 1 s
/// optimizer kernel; a bucket's all-reduce takes 1 s per element.
struct TwoGradients {
  std::vector<Gradient> gradients = {makeGradient("g0", 5),
                                     makeGradient("g1", 5)};
  BucketCosts costs{makeLinearCostModel(/*latency=*/0,
                                        /*secondsPerElement=*/1)};
  StepTimeline timeline;

  explicit TwoGradients(double slowdown, bool sharedCollective = false)
      : timeline(2, 1, slowdown) {
    costs.stream = {0, 0};
    costs.packTime = {0, 0};
    costs.unpackTime = {0, 0};
    costs.placement = {kPairInNode};
    costs.prescaled = {false};
    timeline.addCompute(10);
    timeline.addGradientReady(0);
    if (sharedCollective)
      timeline.addBlockingCollective(0, 3);
    timeline.addCompute(10);
    timeline.addGradientReady(1);
    timeline.beginTail();
    timeline.addTailCompute(1, {0});
    timeline.addTailCompute(1, {1});
    EXPECT_FALSE(timeline.verify());
  }

  double evaluate(std::vector<std::vector<size_t>> buckets) {
    BucketLayout layout;
    for (const std::vector<size_t> &members : buckets)
      layout.buckets.push_back(
          layOutBucket(gradients, members, PaddingOptions()));
    return TimelineReplay(timeline, costs).evaluate(layout);
  }
};

TEST(StepTimeline, OneBucketWaitsForEverything) {
  // Issued at 20, done at 30, then the two updates.
  EXPECT_DOUBLE_EQ(TwoGradients(1).evaluate({{0, 1}}), 32);
}

TEST(StepTimeline, TwoBucketsOverlapTheBackward) {
  // 10 -> 15 hidden behind compute; 20 -> 25; update g0 at 20, wait until
  // 25, update g1.
  EXPECT_DOUBLE_EQ(TwoGradients(1).evaluate({{0}, {1}}), 26);
}

TEST(StepTimeline, ComputeSlowsDownBesideCommunication) {
  // Slowdown 2: the 10 s kernel after t = 10 runs 5 s at half speed while
  // the first bucket is in flight, then 7.5 s: g1 is ready at 22.5, its
  // bucket ends at 27.5. The update of g0 runs at half speed (2 s), the wait
  // ends at 27.5, the last update takes 1 s.
  EXPECT_DOUBLE_EQ(TwoGradients(2).evaluate({{0}, {1}}), 28.5);
}

TEST(StepTimeline, SynchronousCollectiveQueuesBehindABucket) {
  // The 3 s synchronous collective on the buckets' stream starts when the
  // first bucket ends (15) and holds compute until 18.
  EXPECT_DOUBLE_EQ(
      TwoGradients(1, /*sharedCollective=*/true).evaluate({{0}, {1}}), 34);
}

TEST(StepTimeline, BucketsKeepTheLayoutsIssueOrder) {
  // The bucket of g1 is first: it goes at 20, and the bucket of g0 after it,
  // 25 -> 30 (as PyTorch's reducer launches buckets in index order).
  EXPECT_DOUBLE_EQ(TwoGradients(1).evaluate({{1}, {0}}), 32);
}

TEST(StepTimeline, PackAndUnpackKernelsRunOnTheComputeStream) {
  TwoGradients step(1);
  step.costs.packTime = {2, 2};
  step.costs.unpackTime = {0.5, 0.5};
  // One bucket: packs at 20 -> 24, all-reduce 24 -> 34, then unpack + update
  // twice.
  EXPECT_DOUBLE_EQ(step.evaluate({{0, 1}}), 37);
}

/// TwoGradients with the distributed optimizer: two 4-element f32
/// gradients ready at t = 10 and t = 20 over a group of two, updated by SGD,
/// then a 2 s kernel. A reduce-scatter or all-gather of a P-element bucket
/// takes P / 2 s; SGD on an S-element shard moves 12 S bytes at 8 B/s. The
/// parameters are stored in the gathered buckets: nothing copies them.
struct ShardedTwoGradients {
  std::vector<Gradient> gradients = {
      makeGradient("g0", 4, ElementType::F32, /*groupSize=*/2),
      makeGradient("g1", 4, ElementType::F32, /*groupSize=*/2)};
  BucketCosts costs{makeLinearCostModel(/*latency=*/0,
                                        /*secondsPerElement=*/1,
                                        /*scaleOverhead=*/0,
                                        /*scaleSecondsPerElement=*/1)};
  StepTimeline timeline;

  /// With `paramUses`, g1's parameter is first used at t = `firstUse` (op
  /// 0) and g0's `gap` s later (op 1), in the 10 s before g0 is ready.
  explicit ShardedTwoGradients(double slowdown, bool paramUses = false,
                               double firstUse = 0, double gap = 4)
      : timeline(2, 1, slowdown) {
    costs.stream = {0, 0};
    costs.packTime = {0, 0};
    costs.unpackTime = {0, 0};
    costs.placement = {kPairInNode};
    costs.prescaled = {false};
    costs.distributedOptimizer = true;
    costs.shardGroupSize = {2};
    costs.update.resize(2);
    if (paramUses) {
      if (firstUse > 0)
        timeline.addCompute(firstUse);
      timeline.addParamUse(1, 0);
      timeline.addCompute(gap);
      timeline.addParamUse(0, 1);
      timeline.addCompute(10 - firstUse - gap);
    } else {
      timeline.addCompute(10);
    }
    timeline.addGradientReady(0);
    timeline.addCompute(10);
    timeline.addGradientReady(1);
    timeline.beginTail();
    // The updates' own times do not count: the shard optimizers replace
    // them.
    timeline.addTailUpdate(100, 0);
    timeline.addTailUpdate(100, 1);
    timeline.addTailCompute(2);
    EXPECT_FALSE(timeline.verify());
  }

  double evaluate(std::vector<std::vector<size_t>> buckets) {
    BucketLayout layout;
    for (const std::vector<size_t> &members : buckets)
      layout.buckets.push_back(
          layOutBucket(gradients, members, PaddingOptions()));
    return TimelineReplay(timeline, costs).evaluate(layout);
  }
};

TEST(StepTimeline, ShardedBucketsGatherAfterTheirShardOptimizer) {
  // Reduce-scatters 10 -> 12 and 20 -> 22. At 20 the first bucket's SGD on
  // 2 elements (3 s), its all-gather queued behind the second
  // reduce-scatter, 23 -> 25; then the second bucket the same way,
  // 25 -> 30, and the 2 s kernel.
  EXPECT_DOUBLE_EQ(ShardedTwoGradients(1).evaluate({{0}, {1}}), 32);
  // One bucket: reduce-scatter 20 -> 24, SGD on 4 elements (6 s), all-gather
  // 4 s, the kernel: 36.
  EXPECT_DOUBLE_EQ(ShardedTwoGradients(1).evaluate({{0, 1}}), 36);
}

TEST(StepTimeline, ShardedTailSlowsDownBesideCommunication) {
  // Slowdown 2: the 10 s kernel after t = 10 runs 2 s at half speed beside
  // the first reduce-scatter (10 -> 12), then 9 s: g1 is ready at 21, its
  // reduce-scatter ends at 23. The first SGD (3 s) runs 2 s at half speed,
  // then 2 s: 25; all-gather 25 -> 27, then the rest at full speed:
  // 27 + 3 + 2 + 2 = 34.
  EXPECT_DOUBLE_EQ(ShardedTwoGradients(2).evaluate({{0}, {1}}), 34);
}

TEST(StepTimeline, ShardedUpdateClassesGetAGroupEach) {
  // g1 is a bf16 parameter updated by Adam from a bf16 gradient, in an f32
  // bucket: its group casts the 4-element shard (24 B, 3 s), runs Adam on
  // it through the f32 main copy (4 * (4 + 4 + 2) + 8 + 64 = 112 B, 14 s)
  // and gathers 8 bf16 elements (2 s): 19 s. The f32 group first: SGD 6 s,
  // all-gather 4 s. From the reduce-scatter's end at 24: 24 + 10 + 19 + 2 =
  // 55.
  ShardedTwoGradients step(1);
  step.gradients[1].paramType = ElementType::BF16;
  step.costs.update[1] = {1, ddp::timing::OptimizerRule::Adam, ElementType::BF16,
                          ElementType::BF16};
  EXPECT_DOUBLE_EQ(step.evaluate({{0, 1}}), 55);
}

TEST(StepTimeline, ParamUsesDoNotChangeTheSynchronousGathers) {
  EXPECT_DOUBLE_EQ(ShardedTwoGradients(1, true).evaluate({{0}, {1}}), 32);
}

TEST(StepTimeline, OverlappedParamGathersRunInForwardOrder) {
  // g1's bucket is gathered first, 0 -> 2 (its shard is already in the
  // bucket that stores the parameters), and waited at its first use: 2;
  // then g0's bucket is issued, 2 -> 4. The 4 s kernel: 6; g0's bucket is
  // complete; the 6 s kernel: 12, reduce-scatter 12 -> 14; the 10 s
  // kernel: 22, reduce-scatter 22 -> 24. The tail: per bucket SGD (3 s),
  // updating the parameters where they are: 25, 28, and the 2 s kernel: 30.
  ShardedTwoGradients chained(1, true);
  chained.costs.overlapParamGather = true;
  EXPECT_DOUBLE_EQ(chained.evaluate({{0}, {1}}), 30);
  // Aligned: both issued at the start, the second all-gather 2 -> 4 behind
  // the first, as chained.
  ShardedTwoGradients aligned(1, true);
  aligned.costs.overlapParamGather = true;
  aligned.costs.alignParamGather = true;
  EXPECT_DOUBLE_EQ(aligned.evaluate({{0}, {1}}), 30);
  // g1's parameter first used at 3, g0's at 4: chained, g0's all-gather is
  // issued at 3 (g1's wait), 3 -> 5, and the forward waits 1 s for it: the
  // 6 s kernel 5 -> 11, reduce-scatter 11 -> 13, the 10 s kernel 21,
  // reduce-scatter 21 -> 23; SGD 24, SGD 27, the kernel: 29. Aligned, it
  // runs 2 -> 4 and nothing waits: everything 1 s earlier, 28.
  ShardedTwoGradients chainedLate(1, true, /*firstUse=*/3, /*gap=*/1);
  chainedLate.costs.overlapParamGather = true;
  EXPECT_DOUBLE_EQ(chainedLate.evaluate({{0}, {1}}), 29);
  ShardedTwoGradients alignedLate(1, true, /*firstUse=*/3, /*gap=*/1);
  alignedLate.costs.overlapParamGather = true;
  alignedLate.costs.alignParamGather = true;
  EXPECT_DOUBLE_EQ(alignedLate.evaluate({{0}, {1}}), 28);
}

TEST(StepTimeline, VerifyNamesTheProblem) {
  StepTimeline timeline(2, 1, 1);
  timeline.addGradientReady(1);
  timeline.beginTail();
  EXPECT_EQ(llvm::toString(timeline.verify()),
            "gradient 1 becomes ready where gradient 0 was expected; "
            "gradients are numbered in ready order");
  StepTimeline noTail(0, 1, 1);
  EXPECT_EQ(llvm::toString(noTail.verify()), "the timeline has no tail");
  StepTimeline slow(0, 1, 0.5);
  slow.beginTail();
  EXPECT_EQ(llvm::toString(slow.verify()),
            "the compute slowdown must be at least 1, got 0.5");
  StepTimeline twice(1, 1, 1);
  twice.addParamUse(0, 0);
  twice.addParamUse(0, 1);
  twice.addGradientReady(0);
  twice.beginTail();
  EXPECT_EQ(llvm::toString(twice.verify()),
            "the first use of gradient 0's parameter is marked twice or the "
            "gradient is not one of 1");
  StepTimeline late(1, 1, 1);
  late.addGradientReady(0);
  late.beginTail();
  late.addParamUse(0, 2);
  EXPECT_EQ(llvm::toString(late.verify()),
            "the first use of gradient 0's parameter is marked after the "
            "backward part");
}

} // namespace
