//===- SimulatorTest.cpp - Step times of small graphs computed by hand ----===//
//
// The unit profile runs 1 Tflop in 1 s and moves 1 GB in 1 s over any link
// with no latency, so `ddp.compute "k"() flops 1.0e9` takes 1 ms and an
// all-reduce over 2 ranks (bus factor 2 * 1/2 = 1) of 250000 f32 elements
// (1 MB) takes 1 ms.
//
//===----------------------------------------------------------------------===//

#include "ddp/Sim/Simulator.h"

#include "SimTestUtils.h"
#include "TestProfiles.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

using namespace ddp::sim;
using namespace ddp::timing;
using namespace ddp::sim::test;
using namespace ddp::timing::test;

namespace {
constexpr double kMs = 1e-3;
constexpr double kTolerance = 1e-12;

class SimulatorTest : public ::testing::Test {
protected:
  SimResult simulate(llvm::StringRef ir, HardwareProfile profile,
                     SimOptions options = {}) {
    module = parseStep(*context, ir);
    EXPECT_TRUE(module) << "test IR does not parse";
    CostModel model(std::move(profile), CollectiveAlgorithm::Ring);
    mlir::FailureOr<SimResult> result =
        simulateStep(getStep(*module), model, options);
    EXPECT_TRUE(mlir::succeeded(result));
    return mlir::succeeded(result) ? std::move(*result) : SimResult();
  }

  /// The duration of each compute event, by name (the last of a name).
  static llvm::StringMap<double> getComputeDurations(const SimResult &result) {
    llvm::StringMap<double> duration;
    for (const TimelineEvent &event : result.events)
      if (event.category == EventCategory::Compute)
        duration[event.name] = event.duration;
    return duration;
  }

  std::unique_ptr<mlir::MLIRContext> context = makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

// compute 1 ms, all-reduce 2 ms issued at 1 ms, compute 1 ms, wait: the wait
// blocks from 2 ms to 3 ms.
constexpr llvm::StringLiteral kWaitBlocks = R"mlir(
ddp.mesh @world(dp = 2)
ddp.param @w : tensor<500000xf32>
func.func @step(%g: tensor<500000xf32>) {
  %a = ddp.compute "fwd"() flops 1.0e9 bytes 0.0 : () -> tensor<500000xf32>
  %r = ddp.grad_ready @w, %g : tensor<500000xf32>
  %s, %t = ddp.all_reduce sum %r over @world[dp] async : tensor<500000xf32>
  %b = ddp.compute "more"() flops 1.0e9 bytes 0.0 : () -> tensor<1xf32>
  ddp.wait %t
  return
}
)mlir";

TEST_F(SimulatorTest, WaitBlocksTheComputeStream) {
  SimResult result = simulate(kWaitBlocks, makeUnitProfile());
  EXPECT_NEAR(result.stepTime, 3 * kMs, kTolerance);
  EXPECT_NEAR(result.computeTime, 2 * kMs, kTolerance);
  EXPECT_NEAR(result.commTime, 2 * kMs, kTolerance);
  EXPECT_NEAR(result.exposedCommTime, 1 * kMs, kTolerance);
  // All of it on the dp stream.
  ASSERT_EQ(result.streams.size(), 2u);
  EXPECT_NEAR(result.streams[1].exposedTime, 1 * kMs, kTolerance);
  ASSERT_TRUE(result.overlapFraction().has_value());
  EXPECT_NEAR(*result.overlapFraction(), 0.5, 1e-9);
  EXPECT_EQ(result.numCollectives, 1);
  EXPECT_EQ(result.numWaits, 1);

  // compute, comm, compute, wait; the wait is on the compute stream.
  ASSERT_EQ(result.events.size(), 4u);
  const TimelineEvent &comm = result.events[1];
  EXPECT_EQ(comm.category, EventCategory::Comm);
  EXPECT_EQ(comm.stream, 1u);
  EXPECT_NEAR(comm.start, 1 * kMs, kTolerance);
  EXPECT_NEAR(comm.duration, 2 * kMs, kTolerance);
  const TimelineEvent &wait = result.events[3];
  EXPECT_EQ(wait.category, EventCategory::Wait);
  EXPECT_EQ(wait.stream, 0u);
  EXPECT_NEAR(wait.start, 2 * kMs, kTolerance);
  EXPECT_NEAR(wait.duration, 1 * kMs, kTolerance);

  ASSERT_EQ(result.gradReady.size(), 1u);
  EXPECT_EQ(result.gradReady[0].param, "w");
  EXPECT_NEAR(result.gradReady[0].time, 1 * kMs, kTolerance);

  // Bounds: compute 2 ms; communication 2 ms; tail 1 ms + 2 ms = 3 ms.
  EXPECT_NEAR(result.lowerBound.compute, 2 * kMs, kTolerance);
  EXPECT_NEAR(result.lowerBound.communication, 2 * kMs, kTolerance);
  EXPECT_NEAR(result.lowerBound.tail, 3 * kMs, kTolerance);
  EXPECT_EQ(result.lowerBound.binding(), "tail");
  EXPECT_NEAR(result.stepOverLowerBound(), 1.0, 1e-9);
}

// all-reduce 1 ms issued at 1 ms, 2 ms of compute after it: hidden.
constexpr llvm::StringLiteral kFullyHidden = R"mlir(
ddp.mesh @world(dp = 2)
ddp.param @w : tensor<250000xf32>
func.func @step(%g: tensor<250000xf32>) {
  %a = ddp.compute "fwd"() flops 1.0e9 bytes 0.0 : () -> tensor<1xf32>
  %r = ddp.grad_ready @w, %g : tensor<250000xf32>
  %s, %t = ddp.all_reduce sum %r over @world[dp] async : tensor<250000xf32>
  %b = ddp.compute "more"() flops 2.0e9 bytes 0.0 : () -> tensor<1xf32>
  ddp.wait %t
  return
}
)mlir";

TEST_F(SimulatorTest, CommunicationFullyHidden) {
  SimResult result = simulate(kFullyHidden, makeUnitProfile());
  EXPECT_NEAR(result.stepTime, 3 * kMs, kTolerance);
  EXPECT_NEAR(result.exposedCommTime, 0, kTolerance);
  EXPECT_NEAR(*result.overlapFraction(), 1.0, 1e-9);
  // No wait event: the wait did not block.
  for (const TimelineEvent &event : result.events)
    EXPECT_NE(event.category, EventCategory::Wait);
  EXPECT_EQ(result.lowerBound.binding(), "compute");
}

// A synchronous all-reduce blocks compute: 1 + 1 + 1 ms.
constexpr llvm::StringLiteral kSynchronous = R"mlir(
ddp.mesh @world(dp = 2)
ddp.param @w : tensor<250000xf32>
func.func @step(%g: tensor<250000xf32>) {
  %a = ddp.compute "fwd"() flops 1.0e9 bytes 0.0 : () -> tensor<1xf32>
  %r = ddp.grad_ready @w, %g : tensor<250000xf32>
  %s = ddp.all_reduce sum %r over @world[dp] : tensor<250000xf32>
  %b = ddp.compute "more"() flops 1.0e9 bytes 0.0 : () -> tensor<1xf32>
  return
}
)mlir";

TEST_F(SimulatorTest, SynchronousCollectiveBlocksCompute) {
  SimResult result = simulate(kSynchronous, makeUnitProfile());
  EXPECT_NEAR(result.stepTime, 3 * kMs, kTolerance);
  EXPECT_NEAR(result.exposedCommTime, 1 * kMs, kTolerance);
  EXPECT_NEAR(result.streams[1].exposedTime, 1 * kMs, kTolerance);
  EXPECT_NEAR(*result.overlapFraction(), 0.0, 1e-9);
  // The collective is on its group's stream, the compute stream waits.
  ASSERT_EQ(result.events.size(), 4u);
  EXPECT_EQ(result.events[1].stream, 1u);
  EXPECT_EQ(result.events[2].category, EventCategory::Wait);
  EXPECT_NEAR(result.events[3].start, 2 * kMs, kTolerance);
}

TEST_F(SimulatorTest, ComputeSlowsDownWhileCommunicationRuns) {
  HardwareProfile profile = makeUnitProfile();
  profile.commComputeSlowdown = 2;
  // The 1 ms all-reduce overlaps "more" (2 ms alone): in its first 1 ms
  // "more" does 0.5 ms of work, the remaining 1.5 ms run at full speed.
  SimResult result = simulate(kFullyHidden, profile);
  EXPECT_NEAR(result.stepTime, 3.5 * kMs, kTolerance);
  EXPECT_NEAR(result.computeTime, 3.5 * kMs, kTolerance);
  EXPECT_NEAR(result.idealComputeTime, 3 * kMs, kTolerance);
  EXPECT_NEAR(result.lowerBound.compute, 3 * kMs, kTolerance);
}

// Two async all-reduces of one group queue on its stream; one over another
// group runs beside them on a second stream; a join waits for all.
constexpr llvm::StringLiteral kTwoStreams = R"mlir(
ddp.mesh @world(dp = 2, tp = 2)
func.func @step(%x: tensor<250000xf32>) {
  %a, %t0 = ddp.all_reduce sum %x over @world[dp] async : tensor<250000xf32>
  %b, %t1 = ddp.all_reduce sum %x over @world[dp] async : tensor<250000xf32>
  %c, %t2 = ddp.all_reduce sum %x over @world[tp] async : tensor<250000xf32>
  %j = ddp.join %t0, %t1, %t2
  ddp.wait %j
  return
}
)mlir";

TEST_F(SimulatorTest, OneStreamPerGroupAndJoin) {
  SimResult result = simulate(kTwoStreams, makeUnitProfile());
  ASSERT_EQ(result.streams.size(), 3u);
  EXPECT_EQ(result.streams[1].axes, llvm::SmallVector<std::string>{"dp"});
  EXPECT_EQ(result.streams[2].axes, llvm::SmallVector<std::string>{"tp"});
  // dp: [0, 1] and [1, 2] ms; tp: [0, 1] ms. The join completes at 2 ms.
  EXPECT_NEAR(result.events[1].start, 1 * kMs, kTolerance);
  EXPECT_EQ(result.events[2].stream, 2u);
  EXPECT_NEAR(result.events[2].start, 0, kTolerance);
  EXPECT_NEAR(result.stepTime, 2 * kMs, kTolerance);
  EXPECT_NEAR(result.exposedCommTime, 2 * kMs, kTolerance);
  // The wait on the join holds compute for the dp stream, which ends last.
  EXPECT_NEAR(result.streams[1].exposedTime, 2 * kMs, kTolerance);
  EXPECT_NEAR(result.streams[2].exposedTime, 0, kTolerance);
  // Busiest group: 2 ms of transfer on dp.
  EXPECT_NEAR(result.lowerBound.communication, 2 * kMs, kTolerance);
}

TEST_F(SimulatorTest, DataParallelSizeRescalesTheMesh) {
  // dp=16 with tp=2 on 8-GPU nodes: the dp group holds ranks 0, 2, ..., 30,
  // four per node on four nodes.
  SimOptions options;
  options.dataParallelSize = 16;
  HardwareProfile profile = makeUnitProfile();
  // Room inside the node, so that the NICs are what limits the group.
  profile.intraNodeBusBandwidth = 10e9;
  SimResult result = simulate(kTwoStreams, profile, options);
  EXPECT_EQ(result.dataParallelSize, 16);
  EXPECT_EQ(result.numRanks, 32);
  EXPECT_EQ(result.numNodes, 4);
  ASSERT_EQ(result.meshAxes.size(), 2u);
  EXPECT_EQ(result.meshAxes[0].size, 16);
  EXPECT_EQ(result.meshAxes[0].sizeInIR, 2);
  const GroupPlacement &dp = result.streams[1].placement;
  EXPECT_EQ(dp.ranks, 16);
  EXPECT_EQ(dp.nodes, 4);
  EXPECT_EQ(dp.ranksPerNode, 4);
  // 2*15/16 * 1 MB over 4 NICs of 1 GB/s.
  EXPECT_NEAR(result.events[0].duration, 2.0 * 15 / 16 * 1e6 / 4e9, kTolerance);
}

// moe-imbalance: the ops marked ddp.routed (the tokens routed to this
// rank's experts) cost the busiest rank's share more, up to their cap; the
// others, and the model FLOPs, stay as they are.
constexpr llvm::StringLiteral kRouted = R"mlir(
ddp.mesh @world(ep = 2)
func.func @step() {
  %a = ddp.compute "attn"() flops 1.0e9 bytes 0.0 : () -> tensor<250000xf32>
  %t = ddp.all_to_all %a over @world[ep] {ddp.routed = 0.0 : f64} : tensor<250000xf32>
  %e = ddp.compute "expert"(%t) flops 1.0e9 bytes 0.0 {ddp.routed = 0.0 : f64} : (tensor<250000xf32>) -> tensor<1xf32>
  %c = ddp.compute "capped"() flops 1.0e9 bytes 0.0 {ddp.routed = 1.5 : f64} : () -> tensor<1xf32>
  return
}
)mlir";

TEST_F(SimulatorTest, ImbalanceScalesTheRoutedOps) {
  SimResult balanced = simulate(kRouted, makeUnitProfile());
  SimOptions options;
  options.moeImbalance = 2;
  SimResult skewed = simulate(kRouted, makeUnitProfile(), options);
  llvm::StringMap<double> before = getComputeDurations(balanced),
                          after = getComputeDurations(skewed);
  EXPECT_NEAR(before["attn"], 1 * kMs, kTolerance);
  EXPECT_NEAR(after["attn"], 1 * kMs, kTolerance);
  EXPECT_NEAR(after["expert"], 2 * before["expert"], kTolerance);
  EXPECT_NEAR(after["capped"], 1.5 * before["capped"], kTolerance);
  EXPECT_NEAR(skewed.commTime, 2 * balanced.commTime, kTolerance);
  EXPECT_EQ(skewed.flops, balanced.flops);
}

TEST(RescaleDataParallelAxes, FirstDataParallelAxisAbsorbsTheChange) {
  EXPECT_EQ(cantFail(rescaleDataParallelAxes({"dp", "tp"}, {8, 8}, 512)),
            (llvm::SmallVector<int64_t>{512, 8}));
  // Expert parallelism is carved out of data parallelism: with ep = 4 the
  // expert-data-parallel axis becomes 64 / 4.
  EXPECT_EQ(
      cantFail(rescaleDataParallelAxes({"edp", "ep", "tp"}, {2, 4, 2}, 64)),
      (llvm::SmallVector<int64_t>{16, 4, 2}));
  llvm::Expected<llvm::SmallVector<int64_t>> bad =
      rescaleDataParallelAxes({"edp", "ep", "tp"}, {2, 4, 2}, 6);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "cannot simulate dp=6: it must be a multiple of 4, the size of "
            "the data-parallel axes after 'edp'");
  llvm::Expected<llvm::SmallVector<int64_t>> none =
      rescaleDataParallelAxes({"tp"}, {8}, 2);
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_EQ(llvm::toString(none.takeError()),
            "cannot simulate dp=2: the mesh has only model-parallel axes (tp)");
}

// The tail bound: compute until the last grad_ready (1 ms), all-reduce of
// that gradient alone (1 MB: 1 ms) and its optimizer step (SGD on 250000 f32:
// read param + grad, write param = 3 MB at 1 TB/s = 3 us).
constexpr llvm::StringLiteral kBucketed = R"mlir(
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<250000xf32>
ddp.param @b : tensor<250000xf32>
func.func @step(%ga: tensor<250000xf32>, %gb: tensor<250000xf32>) {
  %x = ddp.compute "bwd"() flops 1.0e9 bytes 0.0 : () -> tensor<1xf32>
  %ra = ddp.grad_ready @a, %ga : tensor<250000xf32>
  %rb = ddp.grad_ready @b, %gb : tensor<250000xf32>
  %bucket = ddp.bucket_pack %ra, %rb offsets [0, 250000] : tensor<250000xf32>, tensor<250000xf32> -> tensor<500000xf32>
  %s, %t = ddp.all_reduce sum %bucket over @world[dp] async : tensor<500000xf32>
  ddp.wait %t
  %ua, %ub = ddp.bucket_unpack %s offsets [0, 250000] : tensor<500000xf32> -> tensor<250000xf32>, tensor<250000xf32>
  ddp.sgd @a, %ua lr 1.0e-2 : tensor<250000xf32>
  ddp.sgd @b, %ub lr 1.0e-2 : tensor<250000xf32>
  return
}
)mlir";

TEST_F(SimulatorTest, LowerBoundTailAndFreeBucketViews) {
  SimResult result = simulate(kBucketed, makeUnitProfile());
  // 1 ms compute, 2 ms all-reduce of the bucket, two 3 us SGD steps.
  EXPECT_NEAR(result.stepTime, 3 * kMs + 6e-6, kTolerance);
  EXPECT_NEAR(result.lowerBound.tail, 1 * kMs + 1 * kMs + 3e-6, kTolerance);
  EXPECT_NEAR(result.lowerBound.communication, 2 * kMs, kTolerance);
  EXPECT_NEAR(result.lowerBound.compute, 1 * kMs + 6e-6, kTolerance);
  EXPECT_EQ(result.lowerBound.binding(), "tail");
  // Pack and unpack cost nothing: only compute, comm, wait and two SGDs.
  EXPECT_EQ(result.numComputeOps, 3);
  EXPECT_EQ(result.events.size(), 5u);
}

TEST_F(SimulatorTest, GemmAndMemoryBoundOps) {
  constexpr llvm::StringLiteral ir = R"mlir(
ddp.mesh @world(dp = 1)
ddp.param @w : tensor<1000x1000xf32>
func.func @step(%x: tensor<1000x1000xf32>, %y: tensor<1000x1000xbf16>) {
  %w = ddp.get_param @w : tensor<1000x1000xf32>
  %h = ddp.gemm fwd %x, %w : tensor<1000x1000xf32>, tensor<1000x1000xf32> -> tensor<1000x1000xf32>
  %acc = ddp.accumulate %h, %h : tensor<1000x1000xf32>
  %c = ddp.cast %y : tensor<1000x1000xbf16> to tensor<1000x1000xf32>
  ddp.adam @w, %acc lr 1.0e-3 betas(0.9, 0.999) eps 1.0e-8 : tensor<1000x1000xf32>
  return
}
)mlir";
  SimResult result = simulate(ir, makeUnitProfile());
  ASSERT_EQ(result.events.size(), 4u);
  // 2e9 flops at 1 TFLOP/s.
  EXPECT_NEAR(result.events[0].duration, 2e-3, kTolerance);
  // accumulate: 3 * 4 MB; cast: 2 MB + 4 MB; adam: 2 * 4 MB + 4 MB + 16 MB.
  EXPECT_NEAR(result.events[1].duration, 12e6 / 1e12, kTolerance);
  EXPECT_NEAR(result.events[2].duration, 6e6 / 1e12, kTolerance);
  EXPECT_NEAR(result.events[3].duration, 28e6 / 1e12, kTolerance);
  EXPECT_EQ(result.events[0].name, "gemm fwd");
  EXPECT_EQ(result.events[3].name, "adam");
}

// The distributed optimizer's ops: the shard optimizers are priced as
// ddp.sgd / ddp.adam on the shard's elements, set_params as a copy of the
// parameters' elements.
TEST_F(SimulatorTest, ShardOptimizersAndSetParams) {
  constexpr llvm::StringLiteral ir = R"mlir(
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<1000000xbf16>
ddp.param @b : tensor<999998xbf16>
func.func @step(%g: tensor<2000000xf32>) {
  %s = ddp.reduce_scatter sum %g over @world[dp] : tensor<2000000xf32> -> tensor<1000000xf32>
  %c = ddp.cast %s : tensor<1000000xf32> to tensor<1000000xbf16>
  %p = ddp.shard_adam %c params [@a, @b] offsets [0, 1000000] over @world[dp] lr 1.0e-3 betas(0.9, 0.999) eps 1.0e-8 : tensor<1000000xbf16> -> tensor<1000000xbf16>
  %q = ddp.shard_sgd %c params [@a, @b] offsets [0, 1000000] over @world[dp] lr 0.1 : tensor<1000000xbf16> -> tensor<1000000xbf16>
  %w = ddp.all_gather %p over @world[dp] : tensor<1000000xbf16> -> tensor<2000000xbf16>
  ddp.set_params %w params [@a, @b] offsets [0, 1000000] : tensor<2000000xbf16>
  return
}
)mlir";
  SimResult result = simulate(ir, makeUnitProfile());
  EXPECT_TRUE(result.unmodeledOps.empty());
  llvm::StringMap<double> duration = getComputeDurations(result);
  // Adam on 1e6 bf16 elements, through their f32 main copy (read and
  // written, 8 MB) to the parameter (written, 2 MB): 10 MB + the gradient's
  // 2 MB + the moments' 16 MB; SGD: 10 MB + 2 MB; the copy reads and writes
  // 1999998 bf16 elements (not the padding).
  EXPECT_NEAR(duration["shard_adam"], 28e6 / 1e12, kTolerance);
  EXPECT_NEAR(duration["shard_sgd"], 12e6 / 1e12, kTolerance);
  EXPECT_NEAR(duration["set_params"], 2 * 1999998 * 2 / 1e12, kTolerance);
}

// overlap-param-gather's shard reads and writes are copies of the shard
// (its whole size, padding included, as the shard optimizers are priced),
// not unmodeled ops, where the parameters have storage of their own: here
// @a is read between the all-gather and ddp.set_params, so it is not stored
// in the gathered bucket (@b is, and ddp.set_params copies @a only), and the
// shard written back is not produced in the bucket.
TEST_F(SimulatorTest, ParamShardCopies) {
  constexpr llvm::StringLiteral ir = R"mlir(
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<1000000xbf16>
ddp.param @b : tensor<999998xbf16>
func.func @step(%p: tensor<1000000xbf16>) {
  %s = ddp.get_param_shard params [@a, @b] offsets [0, 1000000] over @world[dp] : tensor<1000000xbf16>
  %w, %t = ddp.all_gather %s over @world[dp] async : tensor<1000000xbf16> -> tensor<2000000xbf16>
  %old = ddp.get_param @a : tensor<1000000xbf16>
  ddp.wait %t
  ddp.set_params %w params [@a, @b] offsets [0, 1000000] : tensor<2000000xbf16>
  ddp.set_param_shard %p params [@a, @b] offsets [0, 1000000] over @world[dp] : tensor<1000000xbf16>
  return
}
)mlir";
  SimResult result = simulate(ir, makeUnitProfile());
  EXPECT_TRUE(result.unmodeledOps.empty());
  llvm::StringMap<double> duration = getComputeDurations(result);
  // Each reads and writes 1e6 bf16 elements.
  EXPECT_NEAR(duration["get_param_shard"], 2 * 1e6 * 2 / 1e12, kTolerance);
  EXPECT_NEAR(duration["set_params"], 2 * 1e6 * 2 / 1e12, kTolerance);
  EXPECT_NEAR(duration["set_param_shard"], 2 * 1e6 * 2 / 1e12, kTolerance);
}

// overlap-param-gather's step as ddp-overlap-param-gather builds it: the
// parameters are stored in the bucket the all-gather fills, the shard read
// out of them is the rank's shard of that bucket, and the shard optimizer
// updates them there, so no op copies anything (docs/Lowering.md, rule 8).
TEST_F(SimulatorTest, ParamsStoredInTheirGatheredBucketAreNotCopied) {
  constexpr llvm::StringLiteral ir = R"mlir(
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<1000000xbf16>
ddp.param @b : tensor<999998xbf16>
func.func @step(%g: tensor<1000000xbf16>) {
  %s = ddp.get_param_shard params [@a, @b] offsets [0, 1000000] over @world[dp] : tensor<1000000xbf16>
  %w, %t = ddp.all_gather %s over @world[dp] async : tensor<1000000xbf16> -> tensor<2000000xbf16>
  ddp.wait %t
  ddp.set_params %w params [@a, @b] offsets [0, 1000000] : tensor<2000000xbf16>
  %read = ddp.get_param @a : tensor<1000000xbf16>
  %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 1000000] over @world[dp] lr 0.1 : tensor<1000000xbf16> -> tensor<1000000xbf16>
  ddp.set_param_shard %p params [@a, @b] offsets [0, 1000000] over @world[dp] : tensor<1000000xbf16>
  return
}
)mlir";
  SimResult result = simulate(ir, makeUnitProfile());
  EXPECT_TRUE(result.unmodeledOps.empty());
  llvm::StringMap<double> duration = getComputeDurations(result);
  EXPECT_FALSE(duration.count("get_param_shard"));
  EXPECT_FALSE(duration.count("set_params"));
  EXPECT_FALSE(duration.count("set_param_shard"));
  EXPECT_NEAR(duration["shard_sgd"], 12e6 / 1e12, kTolerance);
}

TEST_F(SimulatorTest, UnknownRescaleIsAnErrorAtTheMesh) {
  module = parseStep(*context, kTwoStreams);
  ASSERT_TRUE(module);
  std::string message;
  mlir::ScopedDiagnosticHandler handler(context.get(),
                                        [&](mlir::Diagnostic &diag) {
                                          message = diag.str();
                                          return mlir::success();
                                        });
  SimOptions options;
  options.dataParallelSize = 3;
  // dp is the only data-parallel axis, so any size works; make it fail with
  // a mesh of only model-parallel axes instead.
  mlir::OwningOpRef<mlir::ModuleOp> tpOnly = parseStep(*context, R"mlir(
ddp.mesh @world(tp = 2)
func.func @step(%x: tensor<4xf32>) {
  %a = ddp.all_reduce sum %x over @world[tp] : tensor<4xf32>
  return
}
)mlir");
  ASSERT_TRUE(tpOnly);
  CostModel model(makeUnitProfile());
  EXPECT_TRUE(mlir::failed(simulateStep(getStep(*tpOnly), model, options)));
  EXPECT_EQ(message,
            "cannot simulate dp=3: the mesh has only model-parallel axes (tp)");
  EXPECT_TRUE(mlir::succeeded(simulateStep(getStep(*module), model, options)));
}

TEST_F(SimulatorTest, UnmodeledOpsAreListed) {
  context->allowUnregisteredDialects();
  SimResult result = simulate(R"mlir(
ddp.mesh @world(dp = 2)
func.func @step() {
  "foo.bar"() : () -> ()
  "foo.bar"() : () -> ()
  return
}
)mlir",
                              makeUnitProfile());
  EXPECT_EQ(result.unmodeledOps, llvm::SmallVector<std::string>{"foo.bar"});
  EXPECT_EQ(result.stepTime, 0);
}

TEST_F(SimulatorTest, WithoutEventsTheTotalsAreTheSame) {
  SimOptions options;
  options.recordEvents = false;
  SimResult lean = simulate(kWaitBlocks, makeUnitProfile(), options);
  EXPECT_TRUE(lean.events.empty());
  EXPECT_NEAR(lean.stepTime, 3 * kMs, kTolerance);
  EXPECT_NEAR(lean.exposedCommTime, 1 * kMs, kTolerance);
}
} // namespace
