//===- PyTorchPolicyTest.cpp - The pytorch policy vs PyTorch's tests ------===//
//
// The cases of `ComputeBucketAssignmentTest` in PyTorch's
// test/distributed/test_c10d_common.py, which call
// `dist._compute_bucket_assignment_by_size(tensors, limits)`; `float` is f32
// and `double` f64. The limits lists there are [first] or [first, cap].
// Those calls pass no `tensor_indices` and get their buckets sorted by
// smallest index; the reducer's rebuild, which this policy reproduces, passes
// the ready order as `tensor_indices` and gets them in the order they close,
// the open ones last. The expectations below are that call's results (torch
// 1.13: `_compute_bucket_assignment_by_size(tensors, limits, [],
// list(range(len(tensors))))`); test/Bucketing/pytorch-random-inventories.test
// compares more against torch itself.
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
  // Upstream (sorted): [[0, 2], [1, 3], [4], [5]]. The open buckets come
  // last, the dtype seen last first.
  EXPECT_EQ(assign(gradients, 400, 400),
            (std::vector<std::vector<size_t>>{{0, 2}, {1, 3}, {5}, {4}}));
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

/// Bucket sizes in gradients of `count` 1 MiB f32 gradients.
std::vector<size_t> bucketSizes(int count, const PyTorchOptions &options) {
  std::vector<Gradient> gradients;
  for (int i = 0; i < count; ++i)
    gradients.push_back(makeGradient("p" + std::to_string(i), 1 << 18));
  llvm::Expected<BucketLayout> layout =
      computePyTorchLayout(gradients, options);
  if (!layout) {
    ADD_FAILURE() << llvm::toString(layout.takeError());
    return {};
  }
  std::vector<size_t> sizes;
  for (const Bucket &bucket : layout->buckets)
    sizes.push_back(bucket.entries.size());
  return sizes;
}

TEST(PyTorchPolicy, DefaultsAreOneAndTwentyFiveMiB) {
  // 256K f32 elements = 1 MiB closes the first bucket, then 25 MiB buckets.
  EXPECT_EQ(bucketSizes(60, PyTorchOptions()),
            (std::vector<size_t>{1, 25, 25, 9}));
}

// torch 2.x's DistributedDataParallel.__init__ passes the reducer
// `dist._DEFAULT_FIRST_BUCKET_BYTES if self.bucket_bytes_cap_default else
// self.bucket_bytes_cap` as the first bucket's cap: an explicit bucket_cap_mb,
// even 25, caps the first bucket too.
TEST(PyTorchPolicy, ExplicitBucketCapAlsoCapsTheFirstBucket) {
  PyTorchOptions options;
  options.bucketCapBytes = 25 << 20;
  EXPECT_EQ(bucketSizes(60, options), (std::vector<size_t>{25, 25, 10}));
  options.bucketCapBytes = 10 << 20;
  EXPECT_EQ(bucketSizes(25, options), (std::vector<size_t>{10, 10, 5}));
}

// torch 1.x kept the 1 MiB first bucket whatever bucket_cap_mb was.
TEST(PyTorchPolicy, ExplicitFirstBucketBytesReproducesTorch1) {
  PyTorchOptions options;
  options.firstBucketBytes = 1 << 20;
  options.bucketCapBytes = 10 << 20;
  EXPECT_EQ(bucketSizes(25, options), (std::vector<size_t>{1, 10, 10, 4}));
}

// Issue 11: f32 norms between bf16 weights. The f32 bucket only fills at the
// end of the backward; sorted by smallest index it would be issued second and
// hold back every later bf16 bucket. The reducer issues it last.
TEST(PyTorchPolicy, MixedPrecisionOpenBucketIsIssuedLast) {
  constexpr ElementType kBf16 = ElementType::BF16;
  auto gradients = tensors({{1000, kBf16},
                            {10, kFloat},
                            {1000, kBf16},
                            {10, kFloat},
                            {1000, kBf16},
                            {10, kFloat},
                            {1000, kBf16},
                            {10, kFloat}});
  EXPECT_EQ(assign(gradients, 4000, 4000),
            (std::vector<std::vector<size_t>>{{0, 2}, {4, 6}, {1, 3, 5, 7}}));
}

// The open buckets follow the (dtype, group) keys' first gradients, latest
// first, not their own first members: f32's key comes from gradient 0 (whose
// bucket closed), so the open bf16 bucket goes before the open f32 one that
// starts after it.
TEST(PyTorchPolicy, OpenBucketsFollowTheKeysFirstGradientsLatestFirst) {
  auto gradients = tensors(
      {{10, kFloat}, {10, ElementType::BF16}, {10, kFloat}, {10, kFloat}});
  EXPECT_EQ(assign(gradients, 40, 1000),
            (std::vector<std::vector<size_t>>{{0}, {1}, {2, 3}}));
  auto threeDtypes = tensors(
      {{10, kFloat}, {10, ElementType::F16}, {10, ElementType::BF16}});
  EXPECT_EQ(assign(threeDtypes, 1000, 1000),
            (std::vector<std::vector<size_t>>{{2}, {1}, {0}}));
}

TEST(PyTorchPolicy, GroupsNeverShareABucket) {
  std::vector<Gradient> gradients = tensors({{10, kFloat}, {10, kFloat}});
  gradients[1].group = "edp";
  EXPECT_EQ(assign(gradients, 1000, 1000),
            (std::vector<std::vector<size_t>>{{1}, {0}}));
}

TEST(PyTorchPolicy, OffsetsArePackedInIndexOrder) {
  auto gradients = tensors({{50, kFloat}, {25, kDouble}, {50, kFloat}});
  PyTorchOptions options;
  llvm::Expected<BucketLayout> layout =
      computePyTorchLayout(gradients, options);
  ASSERT_TRUE(bool(layout));
  // Both buckets are open at the end; f64's key came last, so it goes first.
  ASSERT_EQ(bucketIndices(*layout),
            (std::vector<std::vector<size_t>>{{1}, {0, 2}}));
  const Bucket &floats = layout->buckets[1];
  EXPECT_EQ(floats.entries[1].offset, 50);
  EXPECT_EQ(floats.numel, 100);
  EXPECT_EQ(floats.paddedNumel, 100);
}

TEST(PyTorchPolicy, RejectsNonPositiveLimits) {
  auto gradients = tensors({{10, kFloat}});
  PyTorchOptions options;
  options.firstBucketBytes = 1 << 20;
  options.bucketCapBytes = 0;
  llvm::Expected<BucketLayout> layout =
      computePyTorchLayout(gradients, options);
  ASSERT_FALSE(layout);
  EXPECT_EQ(llvm::toString(layout.takeError()),
            "PyTorch bucket limits must be positive, got "
            "first-bucket-bytes=1048576 bucket-cap-bytes=0");
}

} // namespace
