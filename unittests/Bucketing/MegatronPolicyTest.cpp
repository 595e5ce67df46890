//===- MegatronPolicyTest.cpp - The megatron policy vs Megatron-Core's tests
//===//
//
// Each test names the Megatron-Core unit test it reproduces:
// tests/unit_tests/distributed/test_param_and_grad_buffer.py and
// tests/unit_tests/distributed/test_param_layout.py (NVIDIA/Megatron-LM).
//
//===----------------------------------------------------------------------===//

#include "TestGradients.h"

#include "ddp/Bucketing/Policies.h"

#include "gtest/gtest.h"

#include <limits>
#include <numeric>
#include <ostream>
#include <string>

using namespace ddp::bucketing;
using namespace ddp::bucketing::testing;

namespace {

BucketLayout layOut(llvm::ArrayRef<Gradient> gradients,
                    const MegatronOptions &options) {
  llvm::Expected<BucketLayout> layout =
      computeMegatronLayout(gradients, options);
  if (!layout) {
    ADD_FAILURE() << llvm::toString(layout.takeError());
    return {};
  }
  return std::move(*layout);
}

std::vector<int64_t> numels(const BucketLayout &layout) {
  std::vector<int64_t> result;
  for (const Bucket &bucket : layout.buckets)
    result.push_back(bucket.numel);
  return result;
}

std::vector<int64_t> paddedNumels(const BucketLayout &layout) {
  std::vector<int64_t> result;
  for (const Bucket &bucket : layout.buckets)
    result.push_back(bucket.paddedNumel);
  return result;
}

MegatronOptions distributedOptimizer(int64_t dp,
                                     std::optional<int64_t> bucketSize = {}) {
  MegatronOptions options;
  options.padding.distributedOptimizer = true;
  options.dataParallelSize = dp;
  options.bucketSize = bucketSize;
  return options;
}

//===----------------------------------------------------------------------===//
// test_param_and_grad_buffer.py::test_bucket_sizes
//===----------------------------------------------------------------------===//

/// TestModel(input_dim=95, output_dim=95, num_layers=10, bias,
/// shared_embedding).bfloat16() wrapped with grad_reduce_in_fp32=True: bf16
/// parameters, f32 gradient buffer, `layers[-1].weight` flagged as the shared
/// embedding.
std::vector<Gradient> testModel(bool bias, bool sharedEmbedding, int64_t dp) {
  std::vector<Gradient> declared;
  for (int layer = 0; layer < 10; ++layer) {
    std::string prefix = "layers." + std::to_string(layer);
    declared.push_back(
        makeGradient(prefix + ".weight", 95 * 95, ElementType::F32, dp));
    if (bias)
      declared.push_back(
          makeGradient(prefix + ".bias", 95, ElementType::F32, dp));
  }
  for (Gradient &gradient : declared)
    gradient.paramType = ElementType::BF16;
  if (sharedEmbedding)
    declared[declared.size() - (bias ? 2 : 1)].sharedEmbedding = true;
  return readyInReverse(std::move(declared));
}

struct BucketSizeCase {
  std::optional<int64_t> bucketSize;
  bool distributedOptimizer, bias, sharedEmbedding;
  int64_t dp;
};

/// The gold values of test_bucket_sizes, computed the way the test computes
/// them.
std::pair<std::vector<int64_t>, std::vector<int64_t>>
goldBucketSizes(const BucketSizeCase &c) {
  auto padIfNeeded = [&](int64_t numel, int64_t divisor) {
    return c.distributedOptimizer ? alignTo(numel, divisor) : numel;
  };
  int64_t bucketDivisor = std::lcm(c.dp, int64_t(128));
  std::vector<int64_t> numel, padded, paramSizes;
  for (int layer = 0; layer < 10; ++layer) {
    paramSizes.push_back(95 * 95);
    if (c.bias)
      paramSizes.push_back(95);
  }
  if (c.sharedEmbedding && c.distributedOptimizer) {
    numel.push_back(paramSizes.back());
    padded.push_back(padIfNeeded(paramSizes.back(), bucketDivisor));
    paramSizes.pop_back();
  }
  int64_t inLastBucket = 0;
  for (int64_t size : llvm::reverse(paramSizes)) {
    inLastBucket = padIfNeeded(inLastBucket, 64) + size;
    if (inLastBucket >= *c.bucketSize) {
      numel.push_back(inLastBucket);
      padded.push_back(padIfNeeded(inLastBucket, bucketDivisor));
      inLastBucket = 0;
    }
  }
  if (inLastBucket > 0) {
    numel.push_back(inLastBucket);
    padded.push_back(padIfNeeded(inLastBucket, bucketDivisor));
  }
  return {numel, padded};
}

class TestBucketSizes : public ::testing::TestWithParam<BucketSizeCase> {};

TEST_P(TestBucketSizes, MatchesMegatronGold) {
  const BucketSizeCase &c = GetParam();
  MegatronOptions options;
  options.bucketSize = c.bucketSize;
  options.padding.distributedOptimizer = c.distributedOptimizer;
  options.dataParallelSize = c.dp;
  BucketLayout layout =
      layOut(testModel(c.bias, c.sharedEmbedding, c.dp), options);
  if (!c.bucketSize) {
    // bucket_size=None: the default (40M elements) holds the whole model.
    EXPECT_EQ(layout.buckets.size(),
              c.sharedEmbedding && c.distributedOptimizer ? 2u : 1u);
    return;
  }
  auto [gold, goldPadded] = goldBucketSizes(c);
  EXPECT_EQ(numels(layout), gold);
  EXPECT_EQ(paddedNumels(layout), goldPadded);
  if (c.distributedOptimizer) {
    for (int64_t padded : paddedNumels(layout))
      EXPECT_EQ(padded % c.dp, 0);
  }
}

std::vector<BucketSizeCase> bucketSizeCases() {
  std::vector<BucketSizeCase> cases;
  for (std::optional<int64_t> size :
       {std::optional<int64_t>(), std::optional<int64_t>(9000),
        std::optional<int64_t>(9025), std::optional<int64_t>(9050),
        std::optional<int64_t>(18000), std::optional<int64_t>(18050),
        std::optional<int64_t>(20000)})
    for (bool distributedOptimizer : {false, true})
      for (bool bias : {false, true})
        for (bool shared : {false, true})
          // "Don't bother running shared_embedding + bias".
          if (!(shared && bias))
            for (int64_t dp : {1, 8, 48})
              cases.push_back({size, distributedOptimizer, bias, shared, dp});
  return cases;
}

/// The case as CTest lists it, e.g. `size9025_distopt_bias_dp8`.
std::string describe(const BucketSizeCase &c) {
  std::string name = c.bucketSize ? "size" + std::to_string(*c.bucketSize)
                                  : "defaultsize";
  if (c.distributedOptimizer)
    name += "_distopt";
  if (c.bias)
    name += "_bias";
  if (c.sharedEmbedding)
    name += "_shared";
  return name + "_dp" + std::to_string(c.dp);
}

std::string bucketSizeCaseName(
    const ::testing::TestParamInfo<BucketSizeCase> &info) {
  return describe(info.param);
}

/// What gtest prints for GetParam(), instead of the struct's bytes.
void PrintTo(const BucketSizeCase &c, std::ostream *os) { *os << describe(c); }

INSTANTIATE_TEST_SUITE_P(TestParamAndGradBuffer, TestBucketSizes,
                         ::testing::ValuesIn(bucketSizeCases()),
                         bucketSizeCaseName);

/// Two of the cases above with their numbers written out, so that the gold
/// computation itself is checked too: 95*95 = 9025-element weights and 95-
/// element biases, walked from layers.9.
TEST(TestBucketSizesExplicit, BiasWithDistributedOptimizer) {
  BucketLayout layout =
      layOut(testModel(/*bias=*/true, false, 8), distributedOptimizer(8, 9050));
  // bias 95, weight at 128 ends at 9153 >= 9050: close; padded to 128s.
  ASSERT_EQ(layout.buckets.size(), 10u);
  EXPECT_EQ(layout.buckets[0].numel, 9153);
  EXPECT_EQ(layout.buckets[0].paddedNumel, 9216);
  EXPECT_EQ(layout.buckets[0].entries[1].offset, 128);
}

// Megatron's default bucket size, max(40M, 1M x dp), must not overflow.
TEST(TestBucketSizesExplicit, DefaultSizeOverflowIsAnError) {
  MegatronOptions options;
  options.dataParallelSize = std::numeric_limits<int64_t>::max();
  llvm::Expected<BucketLayout> layout =
      computeMegatronLayout({makeGradient("a", 4)}, options);
  ASSERT_FALSE(layout);
  EXPECT_EQ(llvm::toString(layout.takeError()),
            "the data-parallel size 9223372036854775807 is too large: the "
            "default bucket size, 1M elements per rank, overflows int64");
}

TEST(TestBucketSizesExplicit, SharedEmbeddingWithoutDistributedOptimizer) {
  // Without the distributed optimizer Megatron keeps the shared embedding
  // with its neighbours.
  MegatronOptions options;
  options.bucketSize = 18000;
  BucketLayout layout = layOut(testModel(false, /*shared=*/true, 8), options);
  EXPECT_EQ(numels(layout),
            (std::vector<int64_t>{18050, 18050, 18050, 18050, 18050}));
  EXPECT_EQ(paddedNumels(layout), numels(layout));
}

//===----------------------------------------------------------------------===//
// test_param_and_grad_buffer.py::test_param_to_index_alignment_with_padding
//===----------------------------------------------------------------------===//

TEST(TestParamAndGradBuffer, ParamToIndexAlignmentWithPadding) {
  // One Linear(4, 4) with bias: the 16-element weight pushes the bias start
  // from 4 to 64 (the bias comes first in reverse order).
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("weight", 16), makeGradient("bias", 4)});
  BucketLayout layout = layOut(gradients, distributedOptimizer(8));
  ASSERT_EQ(layout.buckets.size(), 1u);
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{{"bias", "weight"}}));
  EXPECT_EQ(layout.buckets[0].entries[0].offset, 0);
  EXPECT_EQ(layout.buckets[0].entries[1].offset, 64);
  EXPECT_EQ(layout.buckets[0].numel, 80);
  EXPECT_EQ(layout.buckets[0].paddedNumel, 128);
}

//===----------------------------------------------------------------------===//
// test_param_layout.py: TestGroupParamsForBuffers
//===----------------------------------------------------------------------===//

TEST(TestGroupParamsForBuffers, MixedDtypes) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("bf16", 100, ElementType::BF16),
                      makeGradient("fp32", 100, ElementType::F32)});
  BucketLayout layout = layOut(gradients, MegatronOptions());
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{{"fp32"}, {"bf16"}}));
}

TEST(TestGroupParamsForBuffers, ExpertParallelSeparation) {
  Gradient expert = makeGradient("expert", 100);
  expert.expert = true;
  expert.group = "edp";
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("dense", 100), expert});
  BucketLayout layout = layOut(gradients, MegatronOptions());
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{{"expert"}, {"dense"}}));
  EXPECT_EQ(layout.buckets[0].group, "edp");
}

TEST(TestGroupParamsForBuffers, SameDtypeDifferentParamDtype) {
  // grad_reduce_in_fp32: bf16 and f32 parameters both reduce in f32 but sit
  // in different buffers, keyed by (param dtype, grad dtype).
  Gradient bf16 = makeGradient("bf16", 100, ElementType::F32);
  bf16.paramType = ElementType::BF16;
  std::vector<Gradient> gradients =
      readyInReverse({bf16, makeGradient("fp32", 100, ElementType::F32)});
  BucketLayout layout = layOut(gradients, MegatronOptions());
  EXPECT_EQ(layout.buckets.size(), 2u);
}

//===----------------------------------------------------------------------===//
// test_param_layout.py: TestDefaultParamLayout (no distributed optimizer)
//===----------------------------------------------------------------------===//

TEST(TestDefaultParamLayout, SingleBucketNoPadding) {
  std::vector<Gradient> gradients = readyInReverse(
      {makeGradient("p0", 100 * 100), makeGradient("p1", 50 * 50)});
  BucketLayout layout = layOut(gradients, MegatronOptions());
  ASSERT_EQ(layout.buckets.size(), 1u);
  // param_index_map: p1 -> (0, 2500), p0 -> (2500, 12500).
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{{"p1", "p0"}}));
  EXPECT_EQ(layout.buckets[0].entries[1].offset, 2500);
  EXPECT_EQ(layout.buckets[0].numel, 12500);
  EXPECT_EQ(layout.buckets[0].paddedNumel, 12500);
}

TEST(TestDefaultParamLayout, MultipleBuckets) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("p0", 10000), makeGradient("p1", 10000),
                      makeGradient("p2", 10000)});
  MegatronOptions options;
  options.bucketSize = 15000;
  EXPECT_EQ(numels(layOut(gradients, options)),
            (std::vector<int64_t>{20000, 10000}));
}

TEST(TestDefaultParamLayout, NoPaddingApplied) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("p0", 97), makeGradient("p1", 103)});
  BucketLayout layout = layOut(gradients, MegatronOptions());
  EXPECT_EQ(numels(layout), (std::vector<int64_t>{200}));
  EXPECT_EQ(paddedNumels(layout), (std::vector<int64_t>{200}));
}

TEST(TestDefaultParamLayout, SingleParam) {
  std::vector<Gradient> gradients = readyInReverse({makeGradient("p0", 256)});
  BucketLayout layout = layOut(gradients, MegatronOptions());
  EXPECT_EQ(numels(layout), (std::vector<int64_t>{256}));
  EXPECT_EQ(layout.buckets[0].entries[0].offset, 0);
}

//===----------------------------------------------------------------------===//
// test_param_layout.py: TestDistOptParamLayout
//===----------------------------------------------------------------------===//

TEST(TestDistOptParamLayout, ParamStart64Alignment) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("p0", 97), makeGradient("p1", 103)});
  BucketLayout layout = layOut(gradients, distributedOptimizer(2));
  for (const BucketEntry &entry : layout.buckets[0].entries)
    EXPECT_EQ(entry.offset % 64, 0);
  EXPECT_EQ(layout.buckets[0].entries[1].offset, 128);
}

TEST(TestDistOptParamLayout, BucketEndDpDivisible) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("p0", 1000), makeGradient("p1", 1000)});
  BucketLayout layout = layOut(gradients, distributedOptimizer(4));
  EXPECT_EQ(paddedNumels(layout), (std::vector<int64_t>{2048}));
}

TEST(TestDistOptParamLayout, BucketEndHighBusbwPadding) {
  std::vector<Gradient> gradients = readyInReverse({makeGradient("p0", 1000)});
  MegatronOptions options = distributedOptimizer(2);
  options.padding.padForHighNcclBusbw = true;
  EXPECT_EQ(paddedNumels(layOut(gradients, options)),
            (std::vector<int64_t>{1 << 16}));
}

TEST(TestDistOptParamLayout, SharedEmbeddingGetsSeparateBucket) {
  Gradient shared = makeGradient("shared", 1000);
  shared.sharedEmbedding = true;
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("regular", 1000), shared});
  BucketLayout layout = layOut(gradients, distributedOptimizer(2));
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{{"shared"}, {"regular"}}));
}

TEST(TestDistOptParamLayout, SharedEmbeddingAsFirstReversedParamNoExtraBucket) {
  Gradient shared = makeGradient("shared", 1000);
  shared.sharedEmbedding = true;
  std::vector<Gradient> gradients =
      readyInReverse({shared, makeGradient("regular", 1000)});
  BucketLayout layout = layOut(gradients, distributedOptimizer(2));
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{{"regular"}, {"shared"}}));
}

TEST(TestDistOptParamLayout, MultipleBucketsWithBucketSize) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("p0", 5000), makeGradient("p1", 5000),
                      makeGradient("p2", 5000)});
  BucketLayout layout = layOut(gradients, distributedOptimizer(2, 8000));
  // p2 ends at 5000, p1 starts at 5056 and ends at 10056 >= 8000.
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{{"p2", "p1"}, {"p0"}}));
  EXPECT_EQ(numels(layout), (std::vector<int64_t>{10056, 5000}));
}

TEST(TestDistOptParamLayout, NumelUnpaddedVsPadded) {
  std::vector<Gradient> gradients = readyInReverse({makeGradient("p0", 1000)});
  BucketLayout layout = layOut(gradients, distributedOptimizer(8));
  EXPECT_EQ(numels(layout), (std::vector<int64_t>{1000}));
  EXPECT_EQ(paddedNumels(layout), (std::vector<int64_t>{1024}));
}

TEST(TestDistOptParamLayout, SharedEmbeddingWithBucketSize) {
  Gradient shared = makeGradient("shared", 5000);
  shared.sharedEmbedding = true;
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("r0", 5000), makeGradient("r1", 5000),
                      makeGradient("r2", 5000), shared});
  BucketLayout layout = layOut(gradients, distributedOptimizer(2, 8000));
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{
                {"shared"}, {"r2", "r1"}, {"r0"}}));
}

TEST(TestDistOptParamLayout, LayoutMatchesDefaultWhenNoPaddingNeeded) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("p0", 64 * 10), makeGradient("p1", 64 * 20),
                      makeGradient("p2", 64 * 15)});
  BucketLayout padded = layOut(gradients, distributedOptimizer(1));
  BucketLayout plain = layOut(gradients, MegatronOptions());
  EXPECT_EQ(bucketIndices(padded), bucketIndices(plain));
  EXPECT_EQ(numels(padded), numels(plain));
  for (auto [a, b] :
       llvm::zip(padded.buckets[0].entries, plain.buckets[0].entries))
    EXPECT_EQ(a.offset, b.offset);
}

//===----------------------------------------------------------------------===//
// test_param_layout.py: TestComputeFullParamLayout
//===----------------------------------------------------------------------===//

TEST(TestComputeFullParamLayout, ExpertUsesExpertDpWorldSize) {
  // Dense dp 3 pads bucket ends to lcm(3, 128) = 384, expert dp 256 to 256.
  Gradient expert = makeGradient("expert", 1000, ElementType::F32, 256);
  expert.expert = true;
  expert.group = "edp";
  std::vector<Gradient> gradients = readyInReverse(
      {makeGradient("dense", 1000, ElementType::F32, 3), expert});
  BucketLayout layout = layOut(gradients, distributedOptimizer(3));
  EXPECT_EQ(bucketNames(layout, gradients),
            (std::vector<std::vector<std::string>>{{"expert"}, {"dense"}}));
  EXPECT_EQ(paddedNumels(layout), (std::vector<int64_t>{1024, 1152}));
}

//===----------------------------------------------------------------------===//
// Bucket size and count resolution (megatron/training/training.py and
// DistributedDataParallel.__init__)
//===----------------------------------------------------------------------===//

TEST(MegatronBucketSize, DefaultScalesWithDataParallelSize) {
  // 50 gradients of 1M elements: 40M per bucket up to dp 40, then 1M * dp.
  std::vector<Gradient> declared;
  for (int i = 0; i < 50; ++i)
    declared.push_back(makeGradient("p" + std::to_string(i), 1'000'000));
  std::vector<Gradient> gradients = readyInReverse(declared);
  MegatronOptions options;
  options.dataParallelSize = 8;
  EXPECT_EQ(numels(layOut(gradients, options)),
            (std::vector<int64_t>{40'000'000, 10'000'000}));
  options.dataParallelSize = 45;
  EXPECT_EQ(numels(layOut(gradients, options)),
            (std::vector<int64_t>{45'000'000, 5'000'000}));
}

TEST(MegatronBucketSize, NumBucketsDividesAllParameters) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("p0", 300), makeGradient("p1", 300),
                      makeGradient("p2", 300), makeGradient("p3", 300)});
  MegatronOptions options;
  options.numBuckets = 3; // 1200 // 3 = 400 elements per bucket.
  EXPECT_EQ(numels(layOut(gradients, options)),
            (std::vector<int64_t>{600, 600}));
}

TEST(MegatronBucketSize, NoOverlapMeansOneBucketPerBuffer) {
  std::vector<Gradient> gradients =
      readyInReverse({makeGradient("p0", 300), makeGradient("p1", 300)});
  MegatronOptions options;
  options.bucketSize = 1;
  options.overlapGradReduce = false;
  EXPECT_EQ(numels(layOut(gradients, options)), (std::vector<int64_t>{600}));
}

TEST(MegatronBucketSize, RejectsBadOptions) {
  std::vector<Gradient> gradients = readyInReverse({makeGradient("p0", 3)});
  MegatronOptions both;
  both.bucketSize = 10;
  both.numBuckets = 2;
  llvm::Expected<BucketLayout> layout = computeMegatronLayout(gradients, both);
  ASSERT_FALSE(layout);
  EXPECT_EQ(llvm::toString(layout.takeError()),
            "bucket-size and num-buckets are exclusive (Megatron: cannot "
            "specify both --ddp-num-buckets and --ddp-bucket-size)");
  MegatronOptions zero;
  zero.bucketSize = 0;
  layout = computeMegatronLayout(gradients, zero);
  ASSERT_FALSE(layout);
  EXPECT_EQ(llvm::toString(layout.takeError()),
            "bucket-size must be positive, got 0");
}

TEST(MegatronOrder, BucketsAreIssuedInCompletionOrder) {
  // A ready order that is not reverse registration. Megatron still forms
  // its buckets from the registration order, and each bucket is issued when
  // its last gradient is ready.
  std::vector<Gradient> gradients = {
      makeGradient("p0", 10), makeGradient("p3", 10), makeGradient("p1", 10),
      makeGradient("p2", 10)};
  gradients[0].declarationIndex = 0;
  gradients[1].declarationIndex = 3;
  gradients[2].declarationIndex = 1;
  gradients[3].declarationIndex = 2;
  MegatronOptions options;
  options.bucketSize = 20;
  BucketLayout layout = layOut(gradients, options);
  // Megatron buckets {p3, p2} and {p1, p0}; {p1, p0} completes at ready
  // index 2, {p3, p2} at 3.
  EXPECT_EQ(
      bucketNames(layout, gradients),
      (std::vector<std::vector<std::string>>{{"p1", "p0"}, {"p3", "p2"}}));
}

} // namespace

//===----------------------------------------------------------------------===//
// Pipelines: per-chunk buffers, bucketing only on the first rank's first
// chunk (DistributedDataParallel.__init__, `if disable_bucketing or
// pp_rank > 0: self.bucket_size = None`; training.py,
// per_chunk_disable_bucketing = [chunk_idx > 0 ...]).
//===----------------------------------------------------------------------===//

namespace {
std::vector<Gradient> twoChunkModel() {
  std::vector<Gradient> gradients = testModel(false, false, 1);
  // The later half of the registration order is chunk 1.
  for (Gradient &gradient : gradients)
    gradient.modelChunk =
        gradient.declarationIndex >= gradients.size() / 2 ? 1 : 0;
  return gradients;
}
} // namespace

TEST(TestPipelineBuffers, OnlyTheFirstRanksFirstChunkIsBucketed) {
  std::vector<Gradient> gradients = twoChunkModel();
  MegatronOptions options;
  options.bucketSize = 18000;
  BucketLayout first = layOut(gradients, options);
  int64_t chunk1 = 0, chunk0Buckets = 0;
  for (const Bucket &bucket : first.buckets) {
    int64_t chunk = gradients[bucket.entries.front().gradient].modelChunk;
    for (const BucketEntry &entry : bucket.entries)
      EXPECT_EQ(gradients[entry.gradient].modelChunk, chunk)
          << "a bucket mixes model chunks";
    if (chunk == 1)
      ++chunk1;
    else
      ++chunk0Buckets;
  }
  EXPECT_EQ(chunk1, 1) << "chunk 1 is one bucket";
  EXPECT_GT(chunk0Buckets, 1) << "chunk 0 is bucketed";

  options.pipelineRank = 1;
  BucketLayout later = layOut(gradients, options);
  EXPECT_EQ(later.buckets.size(), 2u) << "one bucket per chunk's buffer";
}
