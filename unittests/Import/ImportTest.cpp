//===- ImportTest.cpp - Acceptance numbers of the importer ----------------===//
//
// FLOPs and sizes of imported steps, computed from the IR (StepStats) and
// compared with the published formulas.
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/Import.h"
#include "ddp/Dialect/DDP/Analysis/StepStats.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace ddp;

namespace {

class ImportTest : public ::testing::Test {
protected:
  ImportTest() { context.loadDialect<DDPDialect, mlir::func::FuncDialect>(); }

  ModelConfig getPreset(llvm::StringRef name) {
    const ModelPreset *preset = lookupModelPreset(name);
    EXPECT_NE(preset, nullptr) << name.str();
    return preset->config;
  }

  /// Imports `config`, checks that the step verifies and uses every value,
  /// and summarises it.
  StepStats importAndSummarise(const ModelConfig &config) {
    EXPECT_FALSE(bool(validateModelConfig(config, "test")));
    mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, config);
    EXPECT_TRUE(mlir::succeeded(mlir::verify(*module)));
    mlir::FailureOr<StepStats> stats = computeStepStats(*module);
    EXPECT_TRUE(mlir::succeeded(stats));
    if (mlir::failed(stats))
      return StepStats();
    EXPECT_EQ(stats->numUnusedResults, 0);
    return *stats;
  }

  mlir::MLIRContext context;
};

/// Narayanan et al. 2021, Eq. (3): FLOPs of one step without activation
/// recomputation, 72 B s l h^2 (1 + s/6h + V/12lh).
double getNarayananFlops(double batch, double seq, double layers, double hidden,
                         double vocab) {
  return 72 * batch * seq * layers * hidden * hidden *
         (1 + seq / (6 * hidden) + vocab / (12 * layers * hidden));
}

TEST_F(ImportTest, Gpt3StepFlopsMatchNarayanan) {
  ModelConfig config = getPreset("gpt3-175b");
  ASSERT_EQ(config.numLayers, 96);
  ASSERT_EQ(config.numMicrobatches, 8);
  ASSERT_EQ(config.tensorModelParallelSize, 8);
  StepStats stats = importAndSummarise(config);

  // All 8 ranks of a tensor-parallel group together.
  double flops = stats.getTotalFlops() * config.tensorModelParallelSize;
  double batch = config.microBatchSize * config.numMicrobatches;
  // The ranks compute the padded vocabulary; the paper's V is the
  // tokenizer's. Both agree within 1%.
  for (double vocab :
       {double(config.vocabSize), double(config.getPaddedVocabSize())}) {
    double expected = getNarayananFlops(
        batch, config.seqLength, config.numLayers, config.hiddenSize, vocab);
    EXPECT_NEAR(flops / expected, 1.0, 0.01)
        << "IR: " << flops << " formula: " << expected << " V = " << vocab;
  }
}

TEST_F(ImportTest, GemmPhasesCostTheSame) {
  // Each linear layer's dgrad and wgrad have its forward's 2*M*N*K; only the
  // first layer of an inventory would skip a dgrad, and a preset has none.
  StepStats stats = importAndSummarise(getPreset("gpt3-175b"));
  EXPECT_EQ(stats.gemmFwdFlops, stats.gemmDgradFlops);
  EXPECT_EQ(stats.gemmFwdFlops, stats.gemmWgradFlops);
}

TEST_F(ImportTest, Gpt3GemmFlopsMatchTheLinearLayers) {
  // Per rank, per microbatch: 24 b s h^2 / T in the layers' GEMMs and
  // 2 b s h V / T in the logits, three times (fwd, dgrad, wgrad).
  ModelConfig config = getPreset("gpt3-175b");
  config.numLayers = 4;
  StepStats stats = importAndSummarise(config);
  double tokens = config.getTokensPerMicrobatch();
  double h = config.hiddenSize, tp = config.tensorModelParallelSize;
  double perMicrobatch = (24 * tokens * h * h * config.numLayers +
                          2 * tokens * h * config.getPaddedVocabSize()) /
                         tp;
  EXPECT_EQ(stats.gemmFwdFlops, perMicrobatch * config.numMicrobatches);
}

TEST_F(ImportTest, OpCountIsLinearInLayersAndMicrobatches) {
  // The graph grows by the same number of ops for every layer and every
  // microbatch, so the importer's work is linear in the ops it builds.
  auto countOps = [&](int64_t layers, int64_t microbatches) {
    ModelConfig config = getPreset("gpt3-175b");
    config.numLayers = layers;
    config.numMicrobatches = microbatches;
    return importAndSummarise(config).numOps;
  };
  int64_t base = countOps(1, 1);
  int64_t perLayer = countOps(2, 1) - base;
  int64_t perMicrobatch = countOps(1, 2) - base;
  EXPECT_GT(perLayer, 0);
  EXPECT_GT(perMicrobatch, 0);
  EXPECT_EQ(countOps(5, 1), base + 4 * perLayer);
  EXPECT_EQ(countOps(1, 4), base + 3 * perMicrobatch);
  // A layer adds its ops to every microbatch, and its gradient tail once.
  int64_t perLayerAndMicrobatch =
      countOps(2, 2) - base - perLayer - perMicrobatch;
  EXPECT_EQ(countOps(3, 3), base + 2 * perLayer + 2 * perMicrobatch +
                                4 * perLayerAndMicrobatch);
}

TEST_F(ImportTest, MoEExpertsReceiveTheirShareOfTokens) {
  // Mixtral under EP 8: the 8 x 4096 gathered tokens, each routed to 2 of
  // the 8 experts, give the one local expert 8192 tokens; its three GEMMs
  // per matrix then cost 3 x 2 x 8192 x h x ffn for each of its 3 matrices.
  ModelConfig config = getPreset("mixtral-8x7b");
  config.numLayers = 1;
  config.numMicrobatches = 1;
  StepStats dense = importAndSummarise(config);
  double tokens = config.getTokensPerMicrobatch();
  double h = config.hiddenSize, ffn = config.getFfnHiddenSize();
  double expertTokens = 8 * tokens * 2 / 8;
  double expertFwd = 3 * 2 * expertTokens * h * ffn;
  double kv = config.getNumQueryGroups() * config.getKvChannels();
  double attentionFwd = 2 * tokens * h * (h + 2 * kv) + 2 * tokens * h * h;
  double routerFwd = 2 * tokens * h * config.numExperts;
  double logitsFwd = 2 * tokens * h * config.getPaddedVocabSize();
  EXPECT_EQ(dense.gemmFwdFlops,
            expertFwd + attentionFwd + routerFwd + logitsFwd);
}

} // namespace
