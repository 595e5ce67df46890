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
}

} // namespace
