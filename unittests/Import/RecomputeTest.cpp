//===- RecomputeTest.cpp - Activation recomputation, as Megatron's --------===//
//
// The checkpointed groups are those of Megatron's _checkpointed_forward
// (megatron/core/recompute.py L157-179 at NVIDIA/Megatron-LM d98e8a64):
// uniform walks layer_idx in steps of recompute_num_layers, each chunk
// ending at min(layer_idx + n, layers); block checkpoints layers
// 0 .. n - 1 one by one.
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/Recompute.h"

#include <gtest/gtest.h>

using namespace ddp;

namespace {

using Groups = std::vector<std::pair<int64_t, int64_t>>;

RecomputeConfig full(RecomputeMethod method, int64_t layers) {
  return {RecomputeGranularity::Full, method, layers};
}

TEST(RecomputeTest, UniformSplitsEveryLayerIntoGroups) {
  EXPECT_EQ(getRecomputeGroups(full(RecomputeMethod::Uniform, 1), 3),
            (Groups{{0, 1}, {1, 2}, {2, 3}}));
  // The last group takes what is left.
  EXPECT_EQ(getRecomputeGroups(full(RecomputeMethod::Uniform, 2), 5),
            (Groups{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(getRecomputeGroups(full(RecomputeMethod::Uniform, 4), 3),
            (Groups{{0, 3}}));
}

TEST(RecomputeTest, BlockCheckpointsTheFirstLayersAlone) {
  EXPECT_EQ(getRecomputeGroups(full(RecomputeMethod::Block, 2), 5),
            (Groups{{0, 1}, {1, 2}}));
  EXPECT_EQ(getRecomputeGroups(full(RecomputeMethod::Block, 3), 2),
            (Groups{{0, 1}, {1, 2}}));
  EXPECT_TRUE(getRecomputeGroups(full(RecomputeMethod::Block, 0), 4).empty());
}

TEST(RecomputeTest, NoGroupsWithoutFullRecomputation) {
  EXPECT_TRUE(getRecomputeGroups(RecomputeConfig(), 4).empty());
  RecomputeConfig selective{RecomputeGranularity::Selective, std::nullopt,
                            std::nullopt};
  EXPECT_TRUE(getRecomputeGroups(selective, 4).empty());
}

TEST(RecomputeTest, ChecksAsMegatronDoes) {
  auto check = [](const RecomputeConfig &config) {
    llvm::StringRef field;
    llvm::Error error = checkRecompute(config, field);
    return error ? (field + ": " + llvm::toString(std::move(error))).str()
                 : std::string();
  };
  EXPECT_EQ(check(full(RecomputeMethod::Uniform, 1)), "");
  EXPECT_EQ(check(full(RecomputeMethod::Block, 0)), "");
  // Past a chunk's layers: clamped, as Megatron's loops clamp it.
  EXPECT_EQ(check(full(RecomputeMethod::Uniform, 1000)), "");
  EXPECT_EQ(check(full(RecomputeMethod::Uniform, 0)).substr(0, 34),
            "recompute_num_layers: recompute_nu");
  RecomputeConfig noMethod{RecomputeGranularity::Full, std::nullopt, 1};
  EXPECT_EQ(check(noMethod).substr(0, 22), "recompute_granularity:");
  RecomputeConfig noGranularity{RecomputeGranularity::None,
                                RecomputeMethod::Uniform, std::nullopt};
  EXPECT_EQ(check(noGranularity).substr(0, 17), "recompute_method:");
}

TEST(RecomputeTest, ParsesMegatronsValues) {
  EXPECT_EQ(parseRecomputeGranularity("None"), RecomputeGranularity::None);
  EXPECT_EQ(parseRecomputeGranularity("full"), RecomputeGranularity::Full);
  EXPECT_EQ(parseRecomputeGranularity("selective"),
            RecomputeGranularity::Selective);
  EXPECT_FALSE(parseRecomputeGranularity("Full").has_value());
  EXPECT_EQ(parseRecomputeMethod("block"), RecomputeMethod::Block);
  EXPECT_FALSE(parseRecomputeMethod("None").has_value());
}

} // namespace
