//===- ActivationMemoryTest.cpp - Activations in flight against Megatron --===//
//
// Megatron-LM's `compute_activation_memory` (megatron/training/
// theoretical_memory_usage.py, commit 00caa53 of NVIDIA/Megatron-LM) gives
// the first pipeline stage's activations with sequence parallelism:
//
//   (sbh(18 + 4f/h) L + 8sbp + sbhp) x k / t
//
// with k = min(1, m/p) for 1F1B and k = 1 + (p - 1)/(pv) interleaved (its
// "interleaved schedule memory penalty"). ddp counts what each rank's
// program holds instead; on rank 0 with layers split evenly that is the
// same for 1F1B, and the same layers interleaved (Megatron scales the
// embedding's p in-flight inputs by its penalty too, where ddp counts the
// chunk-0 forwards the schedule holds).
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/ActivationMemory.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Import/ActivationModel.h"
#include "ddp/Import/Import.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace ddp;

namespace {

/// GPT-3 175B's layer (h 12288, f 4h, 96 heads) at a short sequence,
/// TP 8 with sequence parallelism, as Megatron's script runs it.
ModelConfig gpt3Layer(int64_t stages, int64_t virtualStages,
                      int64_t microbatches) {
  ModelConfig config = lookupModelPreset("gpt3-175b")->config;
  config.seqLength = 64;
  config.microBatchSize = 1;
  config.tensorModelParallelSize = 8;
  config.sequenceParallel = true;
  config.dataParallelSize = 1;
  config.pipelineModelParallelSize = stages;
  config.virtualPipelineModelParallelSize = virtualStages > 1 ? virtualStages : 0;
  config.numLayers = stages * virtualStages;
  config.numMicrobatches = microbatches;
  config.vocabSize = 1024;
  return config;
}

TEST(ActivationModel, MatchesMegatronsFormulaWithSequenceParallelism) {
  ModelConfig config = gpt3Layer(1, 1, 1);
  double s = 64, h = 12288, f = 4 * h, t = 8;
  double vocab = double(config.getPaddedVocabSize());
  ActivationBytes bytes = computeActivationBytes(config);
  // compute_activation_memory: per layer, the embedding's input and
  // dropout per microbatch in flight, and the output layer's inputs.
  EXPECT_EQ(bytes.layer, int64_t(s * h * (18 + 4 * (f / h)) / t));
  EXPECT_EQ(bytes.embedding, int64_t((8 * s + s * h) / t));
  EXPECT_EQ(bytes.output, int64_t(s * h * 4 * (1 + vocab / h) / t));
}

TEST(ActivationModel, MatchesMegatronsFormulaWithoutSequenceParallelism) {
  ModelConfig config = gpt3Layer(1, 1, 1);
  config.sequenceParallel = false;
  double s = 64, h = 12288, t = 8;
  double vocab = double(config.getPaddedVocabSize());
  ActivationBytes bytes = computeActivationBytes(config);
  // compute_activation_memory_without_sp, before its 5 % overhead.
  EXPECT_EQ(bytes.layer, int64_t(s * h * (10 + 24 / t)));
  EXPECT_EQ(bytes.embedding, int64_t(8 * s + s * h));
  EXPECT_EQ(bytes.output, int64_t((s * vocab / t + s * h) * 2));
}

class ActivationPeakTest : public ::testing::Test {
protected:
  ActivationPeakTest() { context.loadDialect<DDPDialect, func::FuncDialect>(); }

  /// Each pipeline rank's peak, rank by rank.
  std::vector<ActivationPeak> peaks(const ModelConfig &config,
                                    StringRef options) {
    EXPECT_FALSE(bool(validateModelConfig(config, "test")));
    module = importModel(context, config);
    SchedulePipelineOptions parsed;
    EXPECT_TRUE(succeeded(parsed.parseFromString(options)));
    PassManager pm(&context);
    populateDDPSchedulePipeline(pm, parsed);
    EXPECT_TRUE(succeeded(pm.run(*module))) << options.str();
    std::optional<ActivationBytes> bytes = getActivationBytes(*module);
    EXPECT_TRUE(bytes.has_value());
    std::vector<ActivationPeak> result(config.pipelineModelParallelSize);
    for (auto func : module->getOps<func::FuncOp>()) {
      std::optional<int64_t> rank = getPipelineStage(func);
      if (!rank || !bytes)
        continue;
      std::optional<ActivationPeak> peak = computeActivationPeak(func, *bytes);
      EXPECT_TRUE(peak.has_value());
      result[*rank] = peak.value_or(ActivationPeak());
    }
    return result;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(ActivationPeakTest, OneFOneBFirstStageIsMegatrons) {
  for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8}, {4, 2}, {3, 5}}) {
    SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m));
    ModelConfig config = gpt3Layer(p, 1, m);
    ActivationBytes bytes = computeActivationBytes(config);
    std::vector<ActivationPeak> ranks = peaks(config, "policy=megatron");
    double layers = double(config.numLayers);
    double k = std::min(1.0, double(m) / double(p));
    double megatron =
        (double(bytes.layer) * layers + double(bytes.embedding) * p) * k;
    EXPECT_EQ(double(ranks[0].bytes), megatron);
    // Rank r holds min(p - r, m) microbatches (its warmup plus one); the
    // last rank also the output layer's inputs of one.
    for (int64_t r = 0; r < p; ++r) {
      int64_t inFlight = std::min(p - r, m);
      EXPECT_EQ(ranks[r].forwards, inFlight) << "rank " << r;
      EXPECT_EQ(ranks[r].layers, inFlight) << "rank " << r;
    }
    EXPECT_EQ(ranks[p - 1].bytes, bytes.layer + bytes.output);
  }
}

TEST_F(ActivationPeakTest, InterleavedFirstStageHoldsMegatronsLayers) {
  // p 4, v 2, m 8, groups of p: rank 0 warms up with 2(p - 1) + (v - 1)p =
  // 10 forwards and holds 11, L(1 + (p - 1)/(pv)) = 8 x 11/8 layers.
  int64_t p = 4, v = 2, m = 8;
  ModelConfig config = gpt3Layer(p, v, m);
  ActivationBytes bytes = computeActivationBytes(config);
  std::vector<ActivationPeak> ranks = peaks(config, "policy=megatron");
  double penalty = 1 + double(p - 1) / double(p * v);
  EXPECT_EQ(double(ranks[0].layers), double(config.numLayers) * penalty);
  EXPECT_EQ(ranks[0].forwards, 2 * (p - 1) + (v - 1) * p + 1);
  // The peak in bytes comes one task later: the first backward frees a
  // forward through chunk 1 and the forward of microbatch 7 through chunk
  // 0, which also holds the embedding's inputs, takes its place. Then all
  // 2p = 8 forwards through chunk 0 are held (Megatron scales p = 4 of
  // them by its penalty 1.375: 5.5).
  EXPECT_EQ(ranks[0].bytes,
            ranks[0].layers * bytes.layer + 2 * p * bytes.embedding);
}

TEST_F(ActivationPeakTest, InterleavedRanksHoldTheirWarmupPlusOne) {
  // Megatron's interleaved schedule: rank r warms up with 2(p - r - 1) +
  // (v - 1)p forwards and holds one more in the steady state. With
  // overlapped p2p, a rank posts the receive of its next forward's input
  // before the backward it follows ends; the forward's activations come
  // with its compute, not with that receive (odd ranks held one forward
  // too many).
  int64_t p = 4, v = 2, m = 8;
  ModelConfig config = gpt3Layer(p, v, m);
  for (StringRef options :
       {"policy=megatron overlap-p2p-comm=true",
        "policy=megatron overlap-p2p-comm=false batch-p2p-comm=false"}) {
    SCOPED_TRACE(options.str());
    std::vector<ActivationPeak> ranks = peaks(config, options);
    for (int64_t r = 0; r < p; ++r)
      EXPECT_EQ(ranks[r].forwards, 2 * (p - r - 1) + (v - 1) * p + 1)
          << "rank " << r;
  }
}

TEST_F(ActivationPeakTest, GPipeHoldsEveryMicrobatch) {
  int64_t p = 2, m = 4;
  ModelConfig config = gpt3Layer(p, 1, m);
  ActivationBytes bytes = computeActivationBytes(config);
  std::vector<ActivationPeak> ranks =
      peaks(config, "policy=megatron pipeline-schedule=gpipe");
  EXPECT_EQ(ranks[0].forwards, m);
  EXPECT_EQ(ranks[0].bytes, m * (bytes.layer + bytes.embedding));
  EXPECT_EQ(ranks[1].bytes, m * (bytes.layer + bytes.output));
}

// Full recomputation keeps 2sbh/t per checkpointed input (Korthikanti et
// al., Table 2, with sequence parallelism): each layer's with uniform 1,
// the first layer's of each chunk with block 1 (the other layer keeps its
// activations), one per group of two with uniform 2. On top, the group
// being rerun holds its layers' activations for one microbatch.
TEST_F(ActivationPeakTest, FullRecomputationKeepsTheCheckpointedInputs) {
  int64_t p = 4, m = 8;
  double checkpoint = 2.0 * 64 * 12288 / 8;
  struct Case {
    RecomputeMethod method;
    int64_t layers;
    double checkpoints, keptLayers, rerunLayers;
  };
  for (Case c : {Case{RecomputeMethod::Uniform, 1, 2, 0, 1},
                 Case{RecomputeMethod::Block, 1, 1, 1, 1},
                 Case{RecomputeMethod::Uniform, 2, 1, 0, 2}}) {
    ModelConfig config = gpt3Layer(p, 1, m);
    config.numLayers = 2 * p;
    config.recompute = {RecomputeGranularity::Full, c.method, c.layers};
    ActivationBytes bytes = computeActivationBytes(config);
    double layer = double(bytes.layer);
    double perRank = c.checkpoints * checkpoint + c.keptLayers * layer;
    std::vector<ActivationPeak> ranks = peaks(config, "policy=megatron");
    EXPECT_EQ(ranks[0].forwards, p);
    EXPECT_EQ(double(ranks[0].bytes), p * (perRank + double(bytes.embedding)) +
                                          c.rerunLayers * layer);
    EXPECT_EQ(double(ranks[p - 1].bytes),
              perRank + double(bytes.output) + c.rerunLayers * layer);
  }
}

// defer_embedding_wgrad_compute: after each backward the last rank keeps
// what the deferred output-layer wgrad reads, the output layer's input
// [s/t, h] and the logits' gradient [s, V/t] in 16 bits, until the W
// passes after its schedule. In 1F1B its peak is the forward of the last
// microbatch with the m - 1 earlier ones' kept.
TEST_F(ActivationPeakTest, DeferredWgradKeepsItsInputsUntilTheFlush) {
  int64_t p = 2, m = 4;
  ModelConfig config = gpt3Layer(p, 1, m);
  config.deferEmbeddingWgradCompute = true;
  ActivationBytes bytes = computeActivationBytes(config);
  int64_t t = config.tensorModelParallelSize, s = config.seqLength;
  int64_t kept = 2 * (s / t * config.hiddenSize +
                      s * config.getPaddedVocabSize() / t);
  std::vector<ActivationPeak> ranks = peaks(config, "policy=megatron");
  EXPECT_EQ(ranks[p - 1].bytes,
            (m - 1) * kept + bytes.layer + bytes.output);
  // Without deferral, one microbatch at a time.
  config.deferEmbeddingWgradCompute = false;
  EXPECT_EQ(peaks(config, "policy=megatron")[p - 1].bytes,
            bytes.layer + bytes.output);
}

// ZB-H1's W passes keep what they read after their backward. An expert's
// routed rows are buffers for the worst case (all of a rank's routes when
// dropless) of which balanced routing fills ddp.routed_fill; the held rows
// count that fill, as the formula counts a forward's MoE layer balanced.
// So a dropless step holds what a step padded to a capacity of exactly the
// balanced share (fill 1) holds: once 16 times more on qwen3-30b-a3b.
TEST_F(ActivationPeakTest, WeightGradPassesHoldTheBalancedRoutedRows) {
  ModelConfig config = lookupModelPreset("tiny-moe")->config;
  config.moe.dispatcher = MoEDispatcher::AllToAll;
  config.expertModelParallelSize = 1;
  config.tensorModelParallelSize = 1;
  config.dataParallelSize = 1;
  config.pipelineModelParallelSize = 2;
  config.numLayers = 2;
  config.numMicrobatches = 4;
  config.pipelineSchedule = PipelineScheduleKind::ZeroBubbleH1;
  std::vector<ActivationPeak> dropless = peaks(config, "policy=megatron");
  config.moe.capacityFactor = 1.0;
  config.moe.padToCapacity = true;
  std::vector<ActivationPeak> balanced = peaks(config, "policy=megatron");
  ASSERT_EQ(dropless.size(), balanced.size());
  for (size_t rank = 0; rank < dropless.size(); ++rank) {
    SCOPED_TRACE(rank);
    EXPECT_GT(dropless[rank].bytes, 0);
    EXPECT_EQ(dropless[rank].bytes, balanced[rank].bytes);
  }
}

TEST_F(ActivationPeakTest, UnpipelinedStepHoldsOneMicrobatch) {
  ModelConfig config = gpt3Layer(1, 1, 4);
  config.numLayers = 3;
  ActivationBytes bytes = computeActivationBytes(config);
  module = importModel(context, config);
  auto step = *module->getOps<func::FuncOp>().begin();
  std::optional<ActivationPeak> peak = computeActivationPeak(step, bytes);
  ASSERT_TRUE(peak.has_value());
  EXPECT_EQ(peak->forwards, 1);
  EXPECT_EQ(peak->layers, 3);
  EXPECT_EQ(peak->bytes, 3 * bytes.layer + bytes.embedding + bytes.output);
}

} // namespace

namespace {

// Megatron's combined 1F1B (overlap_moe_expert_parallel_comm): microbatch
// m's forward fills layers while m - 1's backward frees them, a layer at a
// time. With L = 2 layers, embedding E, layer B and output O: after m's
// embedding both are held (2E + 2B + O); after m's first layer, m - 1 has
// freed its output but not its last layer (2E + 3B).
TEST_F(ActivationPeakTest, CombinedOneFOneBHoldsOneMicrobatchAndALayer) {
  ModelConfig config = lookupModelPreset("tiny-moe")->config;
  config.moe.dispatcher = MoEDispatcher::AllToAll;
  config.paramsDtype = ElementType::BF16;
  config.numMicrobatches = 3;
  ASSERT_FALSE(bool(validateModelConfig(config, "test")));
  ActivationBytes bytes = computeActivationBytes(config);
  int64_t e = bytes.embedding, b = bytes.layer, o = bytes.output;
  for (bool overlap : {false, true}) {
    SCOPED_TRACE(overlap ? "combined 1F1B" : "program order");
    module = importModel(context, config);
    SchedulePipelineOptions options;
    ASSERT_TRUE(succeeded(options.parseFromString(
        overlap ? "policy=megatron overlap-moe-expert-parallel-comm=true"
                : "policy=megatron")));
    PassManager pm(&context);
    populateDDPSchedulePipeline(pm, options);
    ASSERT_TRUE(succeeded(pm.run(*module)));
    auto step = *module->getOps<func::FuncOp>().begin();
    std::optional<ActivationPeak> peak = computeActivationPeak(step, bytes);
    ASSERT_TRUE(peak.has_value());
    if (!overlap) {
      EXPECT_EQ(peak->forwards, 1);
      EXPECT_EQ(peak->bytes, e + 2 * b + o);
      continue;
    }
    EXPECT_EQ(peak->forwards, 2);
    EXPECT_EQ(peak->bytes, 2 * e + 2 * b + std::max(o, b));
  }
}

} // namespace
