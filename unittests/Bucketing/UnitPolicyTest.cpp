//===- UnitPolicyTest.cpp - One bucket per FSDP unit ----------------------===//

#include "TestGradients.h"

#include "ddp/Bucketing/Policies.h"

#include "gtest/gtest.h"

using namespace ddp::bucketing;
using namespace ddp::bucketing::testing;

namespace {

Gradient inLayer(Gradient gradient, std::optional<int64_t> layer) {
  gradient.layer = layer;
  return gradient;
}

// Ready order of a two-layer model: the final norm, layer 1, layer 0 (its
// f32 norm beside bf16 weights), then the embeddings. Each layer is one
// bucket per type; what no layer holds is one per type, the shared
// embedding one of its own; buckets in the order they complete.
TEST(UnitPolicy, OneBucketPerLayerAndBuffer) {
  std::vector<Gradient> gradients = {
      inLayer(makeGradient("final_norm", 8), std::nullopt),
      inLayer(makeGradient("l1.fc", 64, ElementType::BF16), 1),
      inLayer(makeGradient("l1.qkv", 32, ElementType::BF16), 1),
      inLayer(makeGradient("l0.fc", 64, ElementType::BF16), 0),
      inLayer(makeGradient("l0.norm", 8), 0),
      inLayer(makeGradient("l0.qkv", 32, ElementType::BF16), 0),
      inLayer(makeGradient("position", 16), std::nullopt),
      inLayer(makeGradient("word", 128), std::nullopt)};
  gradients.back().sharedEmbedding = true;
  PaddingOptions padding;
  llvm::Expected<BucketLayout> layout = computeUnitLayout(gradients, padding);
  ASSERT_TRUE(bool(layout));
  EXPECT_EQ(bucketIndices(*layout),
            (std::vector<std::vector<size_t>>{
                {1, 2}, {4}, {3, 5}, {0, 6}, {7}}));
}

// Gradients of one layer in different groups (an expert's and a dense
// one) or model chunks never share a bucket.
TEST(UnitPolicy, GroupsAndChunksAreSeparate) {
  Gradient expert = inLayer(makeGradient("expert", 16), 0);
  expert.group = "edp";
  expert.expert = true;
  Gradient chunk1 = inLayer(makeGradient("chunk1", 16), 0);
  chunk1.modelChunk = 1;
  std::vector<Gradient> gradients = {inLayer(makeGradient("dense", 16), 0),
                                     expert, chunk1};
  llvm::Expected<BucketLayout> layout =
      computeUnitLayout(gradients, PaddingOptions());
  ASSERT_TRUE(bool(layout));
  EXPECT_EQ(layout->buckets.size(), 3u);
}

// With the distributed optimizer's padding, as any bucket.
TEST(UnitPolicy, AppliesDistributedOptimizerPadding) {
  std::vector<Gradient> gradients = {inLayer(makeGradient("a", 10), 0),
                                     inLayer(makeGradient("b", 10), 0)};
  PaddingOptions padding;
  padding.distributedOptimizer = true;
  llvm::Expected<BucketLayout> layout = computeUnitLayout(gradients, padding);
  ASSERT_TRUE(bool(layout));
  ASSERT_EQ(layout->buckets.size(), 1u);
  EXPECT_EQ(layout->buckets[0].entries[1].offset, 64);
  EXPECT_EQ(layout->buckets[0].paddedNumel, 128);
}

} // namespace
