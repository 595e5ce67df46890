//===- PipelineSimulatorTest.cpp - A pipeline's bubble --------------------===//
//
// Uniform stages with (almost) free communication: every model chunk's
// forward takes 1/v ms and its backward 2/v ms on the unit profile, and
// activations are one f32 (4 ns over its 1 GB/s links). The idle time of
// every rank over its ideal compute is then the bubble of Narayanan et al.
// (SC'21, Sec. 2.2): (p - 1) / m for 1F1B and (p - 1) / (v m) interleaved.
//
//===----------------------------------------------------------------------===//

#include "ddp/Sim/PipelineSimulator.h"

#include "SimTestUtils.h"
#include "TestProfiles.h"

#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

using namespace ddp::sim;
using namespace ddp::timing;
using namespace ddp::sim::test;
using namespace ddp::timing::test;

namespace {

/// The reference step of a pipeline of `stages` ranks with `chunks` model
/// chunks each, `microbatches` microbatches, one compute op per chunk and
/// pass; ddp-pipeline-stages splits it. With `splitW` each backward is a B
/// op (the input's gradient, 1/v ms) and a W op (the weights', 1/v ms, its
/// own task), as the importer builds for ZB-H1.
std::string makeUniformPipeline(int64_t stages, int64_t chunks,
                                int64_t microbatches, int64_t elements = 1,
                                bool splitW = false) {
  int64_t flowChunks = stages * chunks;
  double forwardFlops = 1e9 / chunks;
  std::string type = llvm::formatv("tensor<{0}xf32>", elements).str();
  std::string ir = llvm::formatv("ddp.mesh @world(pp = {0}, dp = 1)\n"
                                 "func.func @step(%x: {1}) {{\n",
                                 stages, type)
                       .str();
  auto tag = [&](char phase, int64_t microbatch, int64_t flowChunk) {
    return llvm::formatv("{{ddp.pipeline_stage = {0} : i64, ddp.task = "
                         "\"{1}{2}.{3}\"}",
                         flowChunk % stages, phase, microbatch,
                         flowChunk / stages)
        .str();
  };
  for (int64_t m = 0; m < microbatches; ++m) {
    std::string previous = "%x";
    for (int64_t g = 0; g < flowChunks; ++g) {
      std::string name = llvm::formatv("%f{0}_{1}", m, g).str();
      ir += llvm::formatv("  {0} = ddp.compute \"f\"({1}) flops {2:e} bytes "
                          "0.0 {3} : ({4}) -> {4}\n",
                          name, previous, forwardFlops, tag('F', m, g), type)
                .str();
      previous = name;
    }
    for (int64_t g = flowChunks - 1; g >= 0; --g) {
      std::string name = llvm::formatv("%b{0}_{1}", m, g).str();
      ir += llvm::formatv("  {0} = ddp.compute \"b\"({1}, %f{2}_{3}) flops "
                          "{4:e} bytes 0.0 {5} : ({6}, {6}) -> {6}\n",
                          name, previous, m, g,
                          (splitW ? 1 : 2) * forwardFlops, tag('B', m, g),
                          type)
                .str();
      if (splitW)
        ir += llvm::formatv("  %w{0}_{1} = ddp.compute \"w\"({2}, "
                            "%f{0}_{1}) flops {3:e} bytes 0.0 {4} : ({5}, "
                            "{5}) -> {5}\n",
                            m, g, previous, forwardFlops, tag('W', m, g),
                            type)
                  .str();
      previous = name;
    }
  }
  return ir + "  return\n}\n";
}

mlir::FailureOr<PipelineSimResult>
simulateUniformPipeline(int64_t stages, int64_t chunks, int64_t microbatches,
                        llvm::StringRef schedule, bool overlapP2PComm,
                        int64_t elements = 1) {
  std::unique_ptr<mlir::MLIRContext> context = makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      parseStep(*context, makeUniformPipeline(stages, chunks, microbatches,
                                              elements, schedule == "zb-h1"));
  EXPECT_TRUE(module);
  mlir::PassManager pm(context.get());
  ddp::PipelineStagesOptions options;
  options.pipelineSchedule = schedule.str();
  options.overlapP2PComm = overlapP2PComm;
  pm.addPass(ddp::createPipelineStages(options));
  pm.addPass(ddp::createVerifyCollectiveOrder());
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  CostModel model(makeUnitProfile(), CollectiveAlgorithm::Ring);
  return simulatePipeline(*module, model);
}

double simulateIdleFraction(int64_t stages, int64_t chunks,
                            int64_t microbatches, llvm::StringRef schedule,
                            bool overlapP2PComm = false) {
  mlir::FailureOr<PipelineSimResult> result = simulateUniformPipeline(
      stages, chunks, microbatches, schedule, overlapP2PComm);
  EXPECT_TRUE(mlir::succeeded(result));
  if (mlir::failed(result))
    return -1;
  // Every rank computes 3 ms per microbatch and stands idle as long.
  double idle = result->getIdleFraction(0);
  // The pipeline's lower bound is Narayanan et al.'s: the ideal compute
  // times 1 + (p - 1)/(v m), which the schedule reaches with free
  // communication.
  double bubble = double(stages - 1) / double(chunks * microbatches);
  EXPECT_NEAR(result->lowerBound, 3e-3 * microbatches * (1 + bubble), 1e-7);
  EXPECT_NEAR(result->stepTime / result->lowerBound, 1.0, 1e-4);
  for (int64_t rank = 0; rank < stages; ++rank) {
    EXPECT_NEAR(result->stages[rank].idealComputeTime, 3e-3 * microbatches,
                1e-9);
    EXPECT_NEAR(result->getIdleFraction(rank), idle, 1e-4) << rank;
    // With free communication the idle time is all bubble.
    EXPECT_NEAR(result->getBubbleTime(rank), result->getIdleTime(rank), 1e-6)
        << rank;
    EXPECT_LT(result->getExposedP2PTime(rank), 1e-6) << rank;
  }
  return idle;
}

TEST(PipelineSimulatorTest, OneFOneBBubbleIsStagesMinusOneOverMicrobatches) {
  EXPECT_NEAR(simulateIdleFraction(4, 1, 8, "1f1b"), 3.0 / 8, 1e-4);
  EXPECT_NEAR(simulateIdleFraction(3, 1, 6, "1f1b"), 2.0 / 6, 1e-4);
  EXPECT_NEAR(simulateIdleFraction(2, 1, 5, "1f1b"), 1.0 / 5, 1e-4);
}

TEST(PipelineSimulatorTest, GPipeHasTheSameBubbleAs1F1B) {
  EXPECT_NEAR(simulateIdleFraction(4, 1, 8, "gpipe"), 3.0 / 8, 1e-4);
}

// With Megatron's overlapped calls (its default for interleaving), and with
// its blocking ones where it allows them (more than 2 ranks).
TEST(PipelineSimulatorTest, InterleavingDividesTheBubbleByTheChunks) {
  for (bool overlap : {true, false}) {
    EXPECT_NEAR(simulateIdleFraction(4, 2, 8, "interleaved", overlap),
                3.0 / 16, 1e-4);
    EXPECT_NEAR(simulateIdleFraction(4, 4, 8, "interleaved", overlap),
                3.0 / 32, 1e-4);
    EXPECT_NEAR(simulateIdleFraction(3, 2, 6, "interleaved", overlap),
                2.0 / 12, 1e-4);
  }
  EXPECT_NEAR(simulateIdleFraction(2, 2, 4, "interleaved", true), 1.0 / 8,
              1e-4);
}

// Qi et al. (ICLR 2024, Sec. 3.1): with T_F = T_B = T_W, ZB-H1 leaves
// (p - 1)(T_F + T_B - T_W), a third of 1F1B's bubble, every rank idle as
// long; its lower bound takes the W passes after a rank's last backward
// off the chain, and the schedule reaches it.
TEST(PipelineSimulatorTest, ZeroBubbleH1LeavesAThirdOfTheBubble) {
  for (auto [stages, microbatches] :
       {std::pair<int64_t, int64_t>{4, 8}, {3, 6}, {2, 2}, {5, 5}}) {
    mlir::FailureOr<PipelineSimResult> result = simulateUniformPipeline(
        stages, 1, microbatches, "zb-h1", /*overlapP2PComm=*/false);
    ASSERT_TRUE(mlir::succeeded(result));
    double ideal = 3e-3 * microbatches;
    double bubble = 1e-3 * (stages - 1);
    EXPECT_NEAR(result->stepTime, ideal + bubble, 1e-6) << stages;
    EXPECT_NEAR(result->lowerBound, ideal + bubble, 1e-6) << stages;
    for (int64_t rank = 0; rank < stages; ++rank) {
      EXPECT_NEAR(result->stages[rank].idealComputeTime, ideal, 1e-9);
      EXPECT_NEAR(result->getIdleFraction(rank), bubble / ideal, 1e-4)
          << rank;
    }
  }
}

// 1F1B with ddp's early receives (overlap-p2p-comm on 1f1b).
TEST(PipelineSimulatorTest, EarlyReceivesKeepThe1F1BBubble) {
  EXPECT_NEAR(simulateIdleFraction(4, 1, 8, "1f1b", true), 3.0 / 8, 1e-4);
}

// Activations of 25000 f32 take 0.1 ms over the unit profile's 1 GB/s:
// idle time splits into waiting for the peer and the transfers themselves,
// and with no other communication the two make all of it. Blocking calls
// expose every transfer; Megatron's overlapped interleaved calls hide those
// that a rank has slack for (one on the critical path stays exposed).
TEST(PipelineSimulatorTest, IdleSplitsIntoBubbleAndExposedTransfers) {
  auto exposedP2P = [](llvm::StringRef schedule, int64_t chunks,
                       bool overlap) {
    mlir::FailureOr<PipelineSimResult> result =
        simulateUniformPipeline(4, chunks, 8, schedule, overlap, 25000);
    EXPECT_TRUE(mlir::succeeded(result));
    if (mlir::failed(result))
      return -1.0;
    for (size_t rank = 0; rank < result->stages.size(); ++rank) {
      EXPECT_NEAR(result->getBubbleTime(rank) +
                      result->getExposedP2PTime(rank),
                  result->getIdleTime(rank), 1e-9)
          << rank;
      EXPECT_NEAR(result->getOtherExposedCommTime(rank), 0, 1e-9) << rank;
    }
    return result->getMeanExposedP2PTime();
  };
  double blocking = exposedP2P("1f1b", 1, false);
  // Each rank's sends and receives block: at least one 0.1 ms transfer
  // per microbatch and direction on the middle ranks.
  EXPECT_GT(blocking, 8 * 0.1e-3);
  double interleavedBlocking = exposedP2P("interleaved", 2, false);
  double interleavedOverlapped = exposedP2P("interleaved", 2, true);
  EXPECT_LT(interleavedOverlapped, 0.75 * interleavedBlocking);
}

} // namespace
