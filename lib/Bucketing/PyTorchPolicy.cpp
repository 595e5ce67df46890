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
  if (options.firstBucketBytes < 1 || options.bucketCapBytes < 1)
    return llvm::createStringError(
        "PyTorch bucket limits must be positive, got first-bucket-bytes=%lld "
        "bucket-cap-bytes=%lld",
        static_cast<long long>(options.firstBucketBytes),
        static_cast<long long>(options.bucketCapBytes));
  const int64_t limits[] = {options.firstBucketBytes, options.bucketCapBytes};

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
  llvm::MapVector<StreamKey, Accumulator, std::map<StreamKey, unsigned>>
      accumulators;
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
  for (auto &[key, accumulator] : accumulators)
    if (!accumulator.members.empty())
      assignment.push_back(std::move(accumulator.members));

  // Sorted by smallest index: the reducer launches bucket i+1 only after
  // bucket i, so this is also the order of the collectives.
  llvm::sort(assignment,
             [](const std::vector<size_t> &a, const std::vector<size_t> &b) {
               return a.front() < b.front();
             });
  BucketLayout layout;
  for (const std::vector<size_t> &members : assignment)
    layout.buckets.push_back(
        layOutBucket(gradients, members, PaddingOptions()));
  return layout;
}
