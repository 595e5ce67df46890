//===- SizePolicyTest.cpp - The size policy -------------------------------===//

#include "TestGradients.h"

#include "ddp/Bucketing/Policies.h"

#include "gtest/gtest.h"

using namespace ddp::bucketing;
using namespace ddp::bucketing::testing;

namespace {

TEST(SizePolicy, ClosesAfterTheGradientThatReachesTheBudget) {
  std::vector<Gradient> gradients = {
      makeGradient("a", 30), makeGradient("b", 30), makeGradient("c", 50),
      makeGradient("d", 10)};
  SizeOptions options;
  options.budget = 60;
  options.unit = SizeOptions::Unit::Elements;
  llvm::Expected<BucketLayout> layout = computeSizeLayout(gradients, options);
  ASSERT_TRUE(bool(layout));
  EXPECT_EQ(bucketIndices(*layout),
            (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}}));
  // 60 elements of f32 are 240 bytes: the same split by bytes.
  options.budget = 240;
  options.unit = SizeOptions::Unit::Bytes;
  layout = computeSizeLayout(gradients, options);
  ASSERT_TRUE(bool(layout));
  EXPECT_EQ(bucketIndices(*layout),
            (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}}));
}

TEST(SizePolicy, StreamsAreSeparateAndIssuedByCompletion) {
  std::vector<Gradient> gradients = {makeGradient("a", 10, ElementType::BF16),
                                     makeGradient("b", 10, ElementType::F32),
                                     makeGradient("c", 10, ElementType::BF16),
                                     makeGradient("d", 10, ElementType::F32)};
  SizeOptions options;
  options.budget = 20;
  options.unit = SizeOptions::Unit::Elements;
  llvm::Expected<BucketLayout> layout = computeSizeLayout(gradients, options);
  ASSERT_TRUE(bool(layout));
  EXPECT_EQ(bucketIndices(*layout),
            (std::vector<std::vector<size_t>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(layout->buckets[0].type, ElementType::BF16);
}

TEST(SizePolicy, AppliesDistributedOptimizerPadding) {
  std::vector<Gradient> gradients = {makeGradient("a", 10),
                                     makeGradient("b", 10)};
  SizeOptions options;
  options.budget = 1000;
  options.padding.distributedOptimizer = true;
  llvm::Expected<BucketLayout> layout = computeSizeLayout(gradients, options);
  ASSERT_TRUE(bool(layout));
  EXPECT_EQ(layout->buckets[0].entries[1].offset, 64);
  EXPECT_EQ(layout->buckets[0].numel, 74);
  EXPECT_EQ(layout->buckets[0].paddedNumel, 128);
}

TEST(SizePolicy, RejectsAnEmptyBudget) {
  llvm::Expected<BucketLayout> layout =
      computeSizeLayout({makeGradient("a", 10)}, SizeOptions());
  ASSERT_FALSE(layout);
  EXPECT_EQ(llvm::toString(layout.takeError()),
            "the bucket budget must be positive, got 0");
}

} // namespace
