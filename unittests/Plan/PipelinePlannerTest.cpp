//===- PipelinePlannerTest.cpp - auto's choice of a pipeline schedule -----===//
//
// The candidates auto tries for a pipelined config, and its choice: the
// fastest that fits the device, else the smallest; options the user gives
// hold for every candidate.
//
//===----------------------------------------------------------------------===//

#include "ddp/Plan/PipelinePlanner.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Timing/HardwareProfile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/ThreadPool.h"

#include "gtest/gtest.h"

using namespace ddp;
using namespace ddp::plan;

namespace {

/// The tiny preset at 8 layers on 2 stages and 8 microbatches.
ModelConfig makeConfig() {
  ModelConfig config = lookupModelPreset("tiny")->config;
  config.numLayers = 8;
  config.pipelineModelParallelSize = 2;
  config.numMicrobatches = 8;
  EXPECT_FALSE(bool(validateModelConfig(config, "test")));
  return config;
}

timing::CostModel makeModel(double memoryCapacity = 0) {
  llvm::Expected<timing::HardwareProfile> profile =
      timing::lookupHardwareProfile("h100-sxm-ib400");
  EXPECT_TRUE(bool(profile));
  profile->memoryCapacity = memoryCapacity;
  return timing::CostModel(std::move(*profile));
}

PipelinePlan plan(const ModelConfig &config, const timing::CostModel &model,
                  llvm::StringRef options = "") {
  mlir::MLIRContext context;
  context.loadDialect<DDPDialect, mlir::func::FuncDialect>();
  llvm::Expected<PipelinePlan> result = planPipeline(
      context, config, nullptr, options, model, [](const llvm::Twine &) {});
  EXPECT_TRUE(bool(result));
  return result ? std::move(*result) : PipelinePlan();
}

TEST(PipelinePlannerTest, FirstChoicesAreEveryEvenVirtualSize) {
  std::vector<PipelineChoice> choices = getFirstPipelineChoices(makeConfig());
  std::vector<std::string> names;
  for (const PipelineChoice &choice : choices)
    names.push_back(choice.describe());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "1f1b", "1f1b overlap-p2p-comm",
                       "zb-h1 overlap-p2p-comm",
                       "interleaved v=2 group=2 overlap-p2p-comm",
                       "interleaved v=4 group=2 overlap-p2p-comm"}));
  // An uneven split keeps the configured virtual size.
  ModelConfig uneven = makeConfig();
  uneven.decoderFirstPipelineNumLayers = 3;
  EXPECT_EQ(getFirstPipelineChoices(uneven).size(), 3u);
  // ZB-H1 needs as many microbatches as stages.
  ModelConfig few = makeConfig();
  few.numMicrobatches = 1;
  for (const PipelineChoice &choice : getFirstPipelineChoices(few))
    EXPECT_NE(choice.schedule, PipelineScheduleKind::ZeroBubbleH1);
}

TEST(PipelinePlannerTest, RefinesTheGroupAndTheCallsAroundTheBest) {
  PipelineChoice best = getFirstPipelineChoices(makeConfig())[3];
  std::vector<std::string> names;
  for (const PipelineChoice &choice :
       getRefinedPipelineChoices(makeConfig(), best))
    names.push_back(choice.describe());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "interleaved v=2 group=2",
                       "interleaved v=2 group=4 overlap-p2p-comm",
                       "interleaved v=2 group=8 overlap-p2p-comm"}));
}

TEST(PipelinePlannerTest, ChoosesTheFastestCandidate) {
  PipelinePlan result = plan(makeConfig(), makeModel());
  ASSERT_TRUE(result.best);
  EXPECT_EQ(result.candidates[result.configured].choice.describe(), "1f1b");
  const PipelineCandidate &best = result.candidates[*result.best];
  size_t simulated = 0;
  for (const PipelineCandidate &candidate : result.candidates) {
    if (!candidate.result) {
      // Megatron refuses blocking interleaved calls on 2 ranks.
      EXPECT_NE(candidate.refusal.find("overlap_p2p_comm"), std::string::npos)
          << candidate.choice.describe() << ": " << candidate.refusal;
      continue;
    }
    ++simulated;
    EXPECT_TRUE(candidate.fits);
    EXPECT_LE(best.result->stepTime, candidate.result->stepTime)
        << candidate.choice.describe();
  }
  EXPECT_GE(simulated, 4u);
}

TEST(PipelinePlannerTest, ChoosesTheFastestThatFits) {
  PipelinePlan unlimited = plan(makeConfig(), makeModel());
  ASSERT_TRUE(unlimited.best);
  // A device just too small for the fastest plan.
  double fastestPeak = unlimited.candidates[*unlimited.best].peakMemoryBytes;
  double smallest = fastestPeak;
  for (const PipelineCandidate &candidate : unlimited.candidates)
    if (candidate.result)
      smallest = std::min(smallest, candidate.peakMemoryBytes);
  ASSERT_LT(smallest, fastestPeak);
  PipelinePlan limited = plan(makeConfig(), makeModel(fastestPeak - 1));
  ASSERT_TRUE(limited.best);
  const PipelineCandidate &best = limited.candidates[*limited.best];
  EXPECT_TRUE(best.fits);
  EXPECT_LT(best.peakMemoryBytes, fastestPeak);
  for (const PipelineCandidate &candidate : limited.candidates) {
    if (candidate.result && candidate.fits) {
      EXPECT_LE(best.result->stepTime, candidate.result->stepTime);
    }
  }
  // A device too small for any: the one that needs the least.
  PipelinePlan none = plan(makeConfig(), makeModel(smallest / 2));
  ASSERT_TRUE(none.best);
  EXPECT_FALSE(none.candidates[*none.best].fits);
  EXPECT_EQ(none.candidates[*none.best].peakMemoryBytes, smallest);
}

TEST(PipelinePlannerTest, GivenOptionsHoldForEveryCandidate) {
  PipelinePlan result =
      plan(makeConfig(), makeModel(), "pipeline-schedule=gpipe");
  ASSERT_FALSE(result.candidates.empty());
  for (const PipelineCandidate &candidate : result.candidates) {
    EXPECT_EQ(candidate.choice.schedule, PipelineScheduleKind::GPipe);
    EXPECT_TRUE(candidate.result) << candidate.refusal;
  }
  result = plan(makeConfig(), makeModel(), "overlap-p2p-comm=true");
  for (const PipelineCandidate &candidate : result.candidates)
    EXPECT_TRUE(candidate.choice.overlapP2PComm);
}

// ZB-H1's candidate is imported for it (its W passes) and runs; with its
// passes of one microbatch it leaves less bubble than 1F1B's.
TEST(PipelinePlannerTest, ZeroBubbleH1IsACandidate) {
  PipelinePlan result = plan(makeConfig(), makeModel());
  const PipelineCandidate *zeroBubble = nullptr, *oneFOneB = nullptr;
  for (const PipelineCandidate &candidate : result.candidates) {
    if (candidate.choice.schedule == PipelineScheduleKind::ZeroBubbleH1)
      zeroBubble = &candidate;
    if (candidate.choice.describe() == "1f1b overlap-p2p-comm")
      oneFOneB = &candidate;
  }
  ASSERT_TRUE(zeroBubble && oneFOneB);
  ASSERT_TRUE(zeroBubble->result) << zeroBubble->refusal;
  ASSERT_TRUE(oneFOneB->result) << oneFOneB->refusal;
  EXPECT_LT(zeroBubble->result->getMeanBubbleTime(),
            oneFOneB->result->getMeanBubbleTime());
  // Given, it holds for every candidate.
  result = plan(makeConfig(), makeModel(), "pipeline-schedule=zb-h1");
  ASSERT_FALSE(result.candidates.empty());
  for (const PipelineCandidate &candidate : result.candidates) {
    EXPECT_EQ(candidate.choice.schedule, PipelineScheduleKind::ZeroBubbleH1);
    EXPECT_TRUE(candidate.result) << candidate.refusal;
  }
}

// The candidates of a round run at once, each in a context of its own, on
// the caller's thread pool; what each simulates to, and the choice, are
// those of a serial plan, and a candidate's refusal is its own.
TEST(PipelinePlannerTest, ConcurrentCandidatesEqualSerialOnes) {
  ModelConfig config = makeConfig();
  timing::CostModel model = makeModel();
  auto run = [&](mlir::MLIRContext &context, unsigned &announced) {
    context.loadDialect<DDPDialect, mlir::func::FuncDialect>();
    llvm::Expected<PipelinePlan> result =
        planPipeline(context, config, nullptr, "", model,
                     [&](const llvm::Twine &) { ++announced; });
    EXPECT_TRUE(bool(result));
    return result ? std::move(*result) : PipelinePlan();
  };
  mlir::MLIRContext serialContext(mlir::MLIRContext::Threading::DISABLED);
  llvm::DefaultThreadPool pool(llvm::hardware_concurrency(4));
  mlir::MLIRContext sharedContext(mlir::MLIRContext::Threading::DISABLED);
  sharedContext.setThreadPool(pool);
  unsigned serialAnnounced = 0, concurrentAnnounced = 0;
  PipelinePlan serial = run(serialContext, serialAnnounced);
  PipelinePlan concurrent = run(sharedContext, concurrentAnnounced);
  ASSERT_EQ(serial.candidates.size(), concurrent.candidates.size());
  EXPECT_EQ(serialAnnounced, serial.candidates.size());
  EXPECT_EQ(concurrentAnnounced, serial.candidates.size());
  EXPECT_EQ(serial.best, concurrent.best);
  size_t refused = 0;
  for (auto [a, b] :
       llvm::zip_equal(serial.candidates, concurrent.candidates)) {
    EXPECT_EQ(a.choice.describe(), b.choice.describe());
    EXPECT_EQ(a.refusal, b.refusal);
    refused += !a.refusal.empty();
    ASSERT_EQ(bool(a.result), bool(b.result)) << a.choice.describe();
    if (!a.result)
      continue;
    EXPECT_EQ(a.result->stepTime, b.result->stepTime) << a.choice.describe();
    EXPECT_EQ(a.result->lowerBound, b.result->lowerBound);
    EXPECT_EQ(a.peakMemoryBytes, b.peakMemoryBytes);
  }
  // The blocking interleaved candidate, refused among simulated ones.
  EXPECT_GE(refused, 1u);
}

TEST(PipelinePlannerTest, BadOptionsAreAnError) {
  mlir::MLIRContext context;
  context.loadDialect<DDPDialect, mlir::func::FuncDialect>();
  llvm::Expected<PipelinePlan> result =
      planPipeline(context, makeConfig(), nullptr, "bucket-size=abc",
                   makeModel(), [](const llvm::Twine &) {});
  EXPECT_FALSE(bool(result));
  llvm::consumeError(result.takeError());
}

} // namespace
