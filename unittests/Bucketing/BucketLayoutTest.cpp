//===- BucketLayoutTest.cpp - Padding, validation and the JSON report -----===//

#include "TestGradients.h"

#include "ddp/Bucketing/BucketLayout.h"

#include "llvm/Support/raw_ostream.h"

#include <limits>

#include "gtest/gtest.h"

using namespace ddp::bucketing;
using namespace ddp::bucketing::testing;

namespace {

TEST(Padding, MegatronDivisors) {
  PaddingOptions none;
  EXPECT_EQ(getBucketEndDivisor(none, 8), 1);
  EXPECT_EQ(padGradientStart(none, 65), 65);
  PaddingOptions distributed;
  distributed.distributedOptimizer = true;
  // test_param_layout.py::TestPaddingUtilities.
  EXPECT_EQ(padGradientStart(distributed, 0), 0);
  EXPECT_EQ(padGradientStart(distributed, 1), 64);
  EXPECT_EQ(padGradientStart(distributed, 64), 64);
  EXPECT_EQ(padGradientStart(distributed, 65), 128);
  EXPECT_EQ(getBucketEndDivisor(distributed, 4), 128);
  EXPECT_EQ(getBucketEndDivisor(distributed, 3), 384);
  distributed.padForHighNcclBusbw = true;
  EXPECT_EQ(getBucketEndDivisor(distributed, 4), 1 << 16);
  EXPECT_EQ(getBucketEndDivisor(distributed, 3), 3 << 16);
}

TEST(Validation, RejectsEmptyGradientsAndDuplicates) {
  llvm::Error error = validateGradients({makeGradient("a", 0)});
  EXPECT_EQ(llvm::toString(std::move(error)),
            "gradient of 'a' has 0 elements; bucketing needs at least one");
  error = validateGradients({makeGradient("a", 1), makeGradient("a", 2)});
  EXPECT_EQ(llvm::toString(std::move(error)),
            "parameter 'a' has two gradients");
  error = validateGradients({makeGradient("a", 1, ElementType::F32, 0)});
  EXPECT_EQ(llvm::toString(std::move(error)),
            "gradient of 'a' is reduced over a group of 0 ranks");
  EXPECT_FALSE(validateGradients({makeGradient("a", 1)}));
}

// Layouts compute cursors, padded sizes and byte counts in int64; the bounds
// validateGradients sets keep all of them from overflowing.
TEST(Validation, RejectsSizesThatOverflowLayouts) {
  llvm::Error error = validateGradients(
      {makeGradient("a", 1, ElementType::F32, int64_t(1) << 31)});
  EXPECT_EQ(llvm::toString(std::move(error)),
            "gradient of 'a' is reduced over a group of 2147483648 ranks; "
            "bucketing supports at most 2147483647");
  // numel + 64 would overflow before the byte count does.
  error = validateGradients(
      {makeGradient("a", std::numeric_limits<int64_t>::max())});
  EXPECT_EQ(llvm::toString(std::move(error)),
            "the gradients up to 'a' take more than 2^62 bytes; bucketing "
            "supports no more");
  // 2^61 f64 elements are 2^64 bytes.
  error = validateGradients(
      {makeGradient("a", int64_t(1) << 61, ElementType::F64)});
  EXPECT_EQ(llvm::toString(std::move(error)),
            "the gradients up to 'a' take more than 2^62 bytes; bucketing "
            "supports no more");
  // Each fits, the sum does not.
  error = validateGradients({makeGradient("a", int64_t(1) << 59),
                             makeGradient("b", int64_t(1) << 59)});
  EXPECT_EQ(llvm::toString(std::move(error)),
            "the gradients up to 'b' take more than 2^62 bytes; bucketing "
            "supports no more");
  EXPECT_FALSE(validateGradients(
      {makeGradient("a", (int64_t(1) << 59) - 64)}));
}

TEST(LayoutReport, KeysInTheDocumentedOrder) {
  std::vector<Gradient> gradients = {
      makeGradient("layers.9.weight", 9025, ElementType::BF16),
      makeGradient("layers.9.bias", 95, ElementType::BF16)};
  PaddingOptions padding;
  padding.distributedOptimizer = true;
  BucketLayout layout;
  layout.buckets.push_back(layOutBucket(gradients, {0, 1}, padding));
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os);
  writeLayoutJSON(json, layout, gradients);
  EXPECT_EQ(text,
            "{\"buckets\":[{\"index\":0,\"dtype\":\"bf16\",\"group\":\"dp\","
            "\"params\":[{\"name\":\"layers.9.weight\",\"offset\":0,"
            "\"numel\":9025},{\"name\":\"layers.9.bias\",\"offset\":9088,"
            "\"numel\":95}],\"numel\":9183,\"padded_numel\":9216}]}");
}

} // namespace
