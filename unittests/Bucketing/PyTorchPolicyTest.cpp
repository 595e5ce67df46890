//===- PyTorchPolicyTest.cpp - The pytorch policy vs PyTorch's tests ------===//
//
// The cases of `ComputeBucketAssignmentTest` in PyTorch's
// test/distributed/test_c10d_common.py, which call
// `dist._compute_bucket_assignment_by_size(tensors, limits)`; `float` is f32
// and `double` f64. The limits lists there are [first] or [first, cap].
//
//===----------------------------------------------------------------------===//

#include "TestGradients.h"

#include "ddp/Bucketing/Policies.h"

#include "gtest/gtest.h"

using namespace ddp::bucketing;
using namespace ddp::bucketing::testing;

namespace {

std::vector<Gradient>
tensors(std::initializer_list<std::pair<int64_t, ElementType>> shapes) {
  std::vector<Gradient> gradients;
  for (auto [numel, type] : shapes)
    gradients.push_back(
        makeGradient("t" + std::to_string(gradients.size()), numel, type));
  return gradients;
}

std::vector<std::vector<size_t>> assign(llvm::ArrayRef<Gradient> gradients,
                                        int64_t first, int64_t cap) {
  PyTorchOptions options;
  options.firstBucketBytes = first;
  options.bucketCapBytes = cap;
  llvm::Expected<BucketLayout> layout =
      computePyTorchLayout(gradients, options);
  if (!layout) {
    ADD_FAILURE() << llvm::toString(layout.takeError());
    return {};
  }
  return bucketIndices(*layout);
}

constexpr ElementType kFloat = ElementType::F32;
constexpr ElementType kDouble = ElementType::F64;

TEST(ComputeBucketAssignmentTest, SingleLimitSingleDtype) {
  auto gradients =
      tensors({{100, kFloat}, {200, kFloat}, {100, kFloat}, {50, kFloat}});
  EXPECT_EQ(assign(gradients, 400, 400),
            (std::vector<std::vector<size_t>>{{0}, {1}, {2}, {3}}));
}

TEST(ComputeBucketAssignmentTest, SingleLimitMultiDtype) {
  auto gradients = tensors({{50, kFloat},
                            {25, kDouble},
                            {50, kFloat},
                            {25, kDouble},
                            {50, kFloat},
                            {25, kDouble}});
  EXPECT_EQ(assign(gradients, 400, 400),
            (std::vector<std::vector<size_t>>{{0, 2}, {1, 3}, {4}, {5}}));
}

TEST(ComputeBucketAssignmentTest, MultiLimitSingleDtype) {
  auto gradients =
      tensors({{10, kFloat}, {10, kFloat}, {10, kFloat}, {10, kFloat}});
  EXPECT_EQ(assign(gradients, 40, 80),
            (std::vector<std::vector<size_t>>{{0}, {1, 2}, {3}}));
}

TEST(ComputeBucketAssignmentTest, MultiLimitMultiDtype) {
  auto gradients = tensors({{50, kFloat},
                            {25, kDouble},
                            {50, kFloat},
                            {25, kDouble},
                            {50, kFloat},
                            {25, kDouble}});
  EXPECT_EQ(assign(gradients, 200, 400),
            (std::vector<std::vector<size_t>>{{0}, {1}, {2, 4}, {3, 5}}));
}

TEST(PyTorchPolicy, DefaultsAreOneAndTwentyFiveMiB) {
  // 256K f32 elements = 1 MiB closes the first bucket, then 25 MiB buckets.
  std::vector<Gradient> gradients;
  for (int i = 0; i < 60; ++i)
    gradients.push_back(makeGradient("p" + std::to_string(i), 1 << 18));
  llvm::Expected<BucketLayout> layout =
      computePyTorchLayout(gradients, PyTorchOptions());
  ASSERT_TRUE(bool(layout));
  std::vector<size_t> sizes;
  for (const Bucket &bucket : layout->buckets)
    sizes.push_back(bucket.entries.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 25, 25, 9}));
}

TEST(PyTorchPolicy, GroupsNeverShareABucket) {
  std::vector<Gradient> gradients = tensors({{10, kFloat}, {10, kFloat}});
  gradients[1].group = "edp";
  EXPECT_EQ(assign(gradients, 1000, 1000),
            (std::vector<std::vector<size_t>>{{0}, {1}}));
}

TEST(PyTorchPolicy, OffsetsArePackedInIndexOrder) {
  auto gradients = tensors({{50, kFloat}, {25, kDouble}, {50, kFloat}});
  PyTorchOptions options;
  llvm::Expected<BucketLayout> layout =
      computePyTorchLayout(gradients, options);
  ASSERT_TRUE(bool(layout));
  const Bucket &floats = layout->buckets[0];
  EXPECT_EQ(floats.entries[1].offset, 50);
  EXPECT_EQ(floats.numel, 100);
  EXPECT_EQ(floats.paddedNumel, 100);
}

TEST(PyTorchPolicy, RejectsNonPositiveLimits) {
  auto gradients = tensors({{10, kFloat}});
  PyTorchOptions options;
  options.bucketCapBytes = 0;
  llvm::Expected<BucketLayout> layout =
      computePyTorchLayout(gradients, options);
  ASSERT_FALSE(layout);
  EXPECT_EQ(llvm::toString(layout.takeError()),
            "PyTorch bucket limits must be positive, got "
            "first-bucket-bytes=1048576 bucket-cap-bytes=0");
}

} // namespace
