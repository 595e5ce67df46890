//===- LayerSplitTest.cpp - Megatron's split of layers into stages --------===//

#include "ddp/Stages/LayerSplit.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace ddp;

namespace {

/// (first layer, count) per chunk in flow order, or the error.
std::vector<std::pair<int64_t, int64_t>> split(LayerSplitConfig config,
                                               std::string *error = nullptr) {
  std::vector<std::pair<int64_t, int64_t>> result;
  llvm::Expected<std::vector<ChunkLayers>> chunks = splitLayers(config);
  if (!chunks) {
    std::string message = llvm::toString(chunks.takeError());
    if (error)
      *error = message;
    return result;
  }
  for (const ChunkLayers &chunk : *chunks)
    result.push_back({chunk.firstLayer, chunk.numLayers});
  return result;
}

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

TEST(LayerSplitTest, EvenSplit) {
  EXPECT_EQ(split({8, 4, 1}), (Pairs{{0, 2}, {2, 2}, {4, 2}, {6, 2}}));
}

// Interleaved: the last rank's chunk c feeds the first rank's chunk c + 1,
// so rank 0 holds layers 0-1 and 8-9 of 16 at PP 4 x VP 2.
TEST(LayerSplitTest, InterleavedChunksAreStridedOverRanks) {
  Pairs chunks = split({16, 4, 2});
  EXPECT_EQ(chunks[0], (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_EQ(chunks[3], (std::pair<int64_t, int64_t>{6, 2}));
  EXPECT_EQ(chunks[4], (std::pair<int64_t, int64_t>{8, 2}));
  EXPECT_EQ(chunks[7], (std::pair<int64_t, int64_t>{14, 2}));
}

TEST(LayerSplitTest, UnevenFirstAndLastStages) {
  LayerSplitConfig config{10, 4, 1};
  config.firstStageLayers = 1;
  config.lastStageLayers = 3;
  EXPECT_EQ(split(config), (Pairs{{0, 1}, {1, 3}, {4, 3}, {7, 3}}));
  config.lastStageLayers = 2;
  std::string error;
  EXPECT_TRUE(split(config, &error).empty());
  EXPECT_THAT(error, testing::HasSubstr("7 layers left for the 2 middle"));
  // Megatron's "Mismatch: 0 middle layers remaining but 2 middle PP
  // stages" (transformer_config.py L2340-2345).
  config.firstStageLayers = 5;
  config.lastStageLayers = 5;
  error.clear();
  EXPECT_TRUE(split(config, &error).empty());
  EXPECT_THAT(error, testing::HasSubstr("no layer is left for the 2 middle"));
}

TEST(LayerSplitTest, EmbeddingAndLossCountAsLayers) {
  LayerSplitConfig config{6, 4, 1};
  config.accountForEmbedding = true;
  config.accountForLoss = true;
  EXPECT_EQ(split(config), (Pairs{{0, 1}, {1, 2}, {3, 2}, {5, 1}}));
}

TEST(LayerSplitTest, ErrorsNameTheArgument) {
  std::string error;
  EXPECT_TRUE(split({10, 4, 1}, &error).empty());
  EXPECT_THAT(error, testing::HasSubstr("pipeline_model_parallel_size (4)"));
  EXPECT_TRUE(split({8, 2, 3}, &error).empty());
  EXPECT_THAT(error,
              testing::HasSubstr("virtual_pipeline_model_parallel_size (3)"));
  LayerSplitConfig both{8, 2, 1};
  both.firstStageLayers = 2;
  both.accountForLoss = true;
  EXPECT_TRUE(split(both, &error).empty());
  EXPECT_THAT(error, testing::HasSubstr("cannot be combined"));
}

} // namespace
