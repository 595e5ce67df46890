//===- PyTorchPolicy.cpp - PyTorch DDP's bucket assignment ----------------===//
//
// Reproduces `compute_bucket_assignment_by_size` of PyTorch's
// torch/csrc/distributed/c10d/reducer.cpp applied to the ready order, checked
// against the cases of `ComputeBucketAssignmentTest` (test/distributed/
// test_c10d_common.py) in unittests/Bucketing.
//
//===----------------------------------------------------------------------===//

#include "ddp/Bucketing/Policies.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <map>

#include <utility>

using namespace ddp::bucketing;

llvm::Expected<BucketLayout>
ddp::bucketing::computePyTorchLayout(llvm::ArrayRef<Gradient> gradients,
                                     const PyTorchOptions &options) {
  if (llvm::Error error = validateGradients(gradients))
    return std::move(error);
  const int64_t bucketCapBytes =
      options.bucketCapBytes.value_or(kPyTorchDefaultBucketCapBytes);
  // torch 2.x's DistributedDataParallel.__init__ gives the reducer
  // `dist._DEFAULT_FIRST_BUCKET_BYTES` as the first bucket's cap only while
  // bucket_cap_mb is the default; an explicit bucket_cap_mb caps the first
  // bucket too.
  const int64_t firstBucketBytes = options.firstBucketBytes.value_or(
      options.bucketCapBytes ? bucketCapBytes
                             : kPyTorchDefaultFirstBucketBytes);
  if (firstBucketBytes < 1 || bucketCapBytes < 1)
    return llvm::createStringError(
        "PyTorch bucket limits must be positive, got first-bucket-bytes=%lld "
        "bucket-cap-bytes=%lld",
        static_cast<long long>(firstBucketBytes),
        static_cast<long long>(bucketCapBytes));
  const int64_t limits[] = {firstBucketBytes, bucketCapBytes};

  // PyTorch keys its accumulators by (scalar type, device); a device is one
  // process group here, and groups never share a bucket.
  struct Accumulator {
    std::vector<size_t> members;
    int64_t bytes = 0;
    // Index into `limits`: the first limit is used once per key, then the
    // last one repeats.
    size_t limit = 0;
  };
  using StreamKey = std::pair<ElementType, std::string>;
  // Keys in the order of their first gradient.
  llvm::MapVector<StreamKey, Accumulator, std::map<StreamKey, unsigned>>
      accumulators;
  // In the order the buckets close, which is the order the reducer issues
  // them in: the rebuild passes `tensor_indices` (the ready order), and with
  // them `compute_bucket_assignment_by_size` does not sort its result.
  std::vector<std::vector<size_t>> assignment;
  for (auto [index, gradient] : llvm::enumerate(gradients)) {
    Accumulator &accumulator =
        accumulators[{gradient.reduceType, gradient.group}];
    accumulator.members.push_back(index);
    accumulator.bytes += gradient.getBytes();
    if (accumulator.bytes >= limits[accumulator.limit]) {
      assignment.push_back(std::move(accumulator.members));
      accumulator.members.clear();
      accumulator.bytes = 0;
      accumulator.limit = std::min<size_t>(accumulator.limit + 1, 1);
    }
  }
  // The still-open buckets come last, in the iteration order of PyTorch's
  // `std::unordered_map` of accumulators. With libstdc++ (which PyTorch's
  // Linux wheels are built with) that map starts with 13 hash buckets and
  // puts each new key into an empty one in front of the others, so it
  // iterates the most recently added key first: the reverse of the keys'
  // first gradients. This holds while no two keys share a hash bucket, which
  // is the case for f32, f16, bf16 and f64 on one device (CPU or CUDA:0).
  for (auto &[key, accumulator] : llvm::reverse(accumulators))
    if (!accumulator.members.empty())
      assignment.push_back(std::move(accumulator.members));

  BucketLayout layout;
  for (const std::vector<size_t> &members : assignment)
    layout.buckets.push_back(
        layOutBucket(gradients, members, options.padding));
  return layout;
}
