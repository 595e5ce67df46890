//===- MegatronPolicy.cpp - Megatron-Core's gradient buffer layout --------===//
//
// Reproduces the bucket assignment of Megatron-Core's `_ParamAndGradBuffer`
// (megatron/core/distributed/param_and_grad_buffer.py) and of
// `DistributedOptimizer._compute_per_buffer_param_layout`, including where
// padding counts towards the bucket size. Checked against the cases of
// Megatron's tests/unit_tests/distributed/test_param_and_grad_buffer.py and
// test_param_layout.py in unittests/Bucketing.
//
//===----------------------------------------------------------------------===//

#include "ddp/Bucketing/Policies.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

using namespace ddp::bucketing;

llvm::Error
ddp::bucketing::checkMegatronOptions(const MegatronOptions &options) {
  if (options.bucketSize && options.numBuckets)
    return llvm::createStringError(
        "bucket-size and num-buckets are exclusive (Megatron: cannot specify "
        "both --ddp-num-buckets and --ddp-bucket-size)");
  if (options.bucketSize && *options.bucketSize < 1)
    return llvm::createStringError("bucket-size must be positive, got %lld",
                                   static_cast<long long>(*options.bucketSize));
  if (options.numBuckets && *options.numBuckets < 1)
    return llvm::createStringError("num-buckets must be positive, got %lld",
                                   static_cast<long long>(*options.numBuckets));
  return llvm::Error::success();
}

/// `DistributedDataParallel.__init__`: max(40M, 1M * dp) elements unless the
/// user chose a size or a count, and a single bucket when the reduction is
/// not overlapped with the backward pass.
static llvm::Expected<std::optional<int64_t>>
resolveBucketSize(llvm::ArrayRef<Gradient> gradients,
                  const MegatronOptions &options) {
  if (llvm::Error error = checkMegatronOptions(options))
    return std::move(error);
  if (options.dataParallelSize < 1)
    return llvm::createStringError(
        "the data-parallel size must be positive, got %lld",
        static_cast<long long>(options.dataParallelSize));
  if (!options.overlapGradReduce)
    return std::optional<int64_t>();
  if (options.numBuckets) {
    // megatron/training/training.py: num_parameters // args.ddp_num_buckets,
    // over every parameter of the model, whatever buffer it lands in.
    int64_t total = 0;
    for (const Gradient &gradient : gradients)
      total += gradient.numel;
    return std::optional<int64_t>(total / *options.numBuckets);
  }
  if (options.bucketSize)
    return options.bucketSize;
  std::optional<int64_t> scaled =
      llvm::checkedMul<int64_t>(1'000'000, options.dataParallelSize);
  if (!scaled)
    return llvm::createStringError(
        "the data-parallel size %lld is too large: the default bucket size, "
        "1M elements per rank, overflows int64",
        static_cast<long long>(options.dataParallelSize));
  return std::optional<int64_t>(std::max<int64_t>(40'000'000, *scaled));
}

llvm::Expected<BucketLayout>
ddp::bucketing::computeMegatronLayout(llvm::ArrayRef<Gradient> gradients,
                                      const MegatronOptions &options) {
  if (llvm::Error error = validateGradients(gradients))
    return std::move(error);
  llvm::Expected<std::optional<int64_t>> bucketSize =
      resolveBucketSize(gradients, options);
  if (!bucketSize)
    return bucketSize.takeError();

  // group_params_for_buffers: one buffer per (param dtype, grad dtype,
  // expert) of each model chunk; the group is part of the key because
  // expert gradients are reduced over the expert-data-parallel group.
  using BufferKey =
      std::tuple<int64_t, ElementType, ElementType, bool, std::string>;
  // MapVector keeps first-appearance order; std::map because DenseMap has no
  // std::string keys.
  llvm::MapVector<BufferKey, std::vector<size_t>, std::map<BufferKey, unsigned>>
      buffers;
  std::vector<size_t> byDeclaration(gradients.size());
  std::iota(byDeclaration.begin(), byDeclaration.end(), 0);
  llvm::stable_sort(byDeclaration, [&](size_t a, size_t b) {
    return gradients[a].declarationIndex < gradients[b].declarationIndex;
  });
  for (size_t index : byDeclaration) {
    const Gradient &gradient = gradients[index];
    buffers[{gradient.modelChunk, gradient.paramType, gradient.reduceType,
             gradient.expert, gradient.group}]
        .push_back(index);
  }

  const PaddingOptions &padding = options.padding;
  BucketLayout layout;
  for (auto &[key, members] : buffers) {
    // Bucketed only on the first pipeline rank's first model chunk; -1:
    // one bucket for the buffer. (A plain count: GCC 12 misreads a
    // std::optional here as maybe uninitialized.)
    int64_t bufferBucketSize =
        options.pipelineRank == 0 && std::get<0>(key) == 0
            ? bucketSize->value_or(-1)
            : -1;
    std::vector<size_t> current;
    // The end of the last gradient, relative to the bucket's start. Bucket
    // starts are multiples of lcm(dp, 128), so padding a gradient's start
    // relative to its bucket is the same as padding it in the whole buffer.
    int64_t cursor = 0;
    auto closeBucket = [&] {
      layout.buckets.push_back(layOutBucket(gradients, current, padding));
      current.clear();
      cursor = 0;
    };
    // Reverse registration order roughly follows the backward pass.
    for (size_t index : llvm::reverse(members)) {
      const Gradient &gradient = gradients[index];
      // Only the distributed optimizer isolates the shared embedding, so that
      // the first and last pipeline stages shard its optimizer state alike.
      bool needsOwnBucket =
          gradient.sharedEmbedding && padding.distributedOptimizer;
      if (needsOwnBucket && !current.empty())
        closeBucket();
      current.push_back(index);
      cursor = padGradientStart(padding, cursor) + gradient.numel;
      if ((bufferBucketSize >= 0 && cursor >= bufferBucketSize) ||
          needsOwnBucket)
        closeBucket();
    }
    if (!current.empty())
      closeBucket();
  }
  sortByCompletion(layout.buckets);
  return layout;
}
