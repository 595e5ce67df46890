//===- Policies.h - Bucket layouts of Megatron-Core, PyTorch DDP, size -*- C++
//-*-===//
//
// The rule-based bucketing policies. `megatron` and `pytorch` reproduce their
// projects' layouts exactly (see docs/Bucketing.md for the sources and the
// upstream unit tests they are checked against); `size` is a plain budget.
// The cost-model-optimal policy is in OptimalLayout.h.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_BUCKETING_POLICIES_H
#define DDP_BUCKETING_POLICIES_H

#include "ddp/Bucketing/BucketLayout.h"

#include "llvm/Support/Error.h"

namespace ddp::bucketing {

/// Megatron-Core's `_ParamAndGradBuffer` layout (DistributedDataParallelConfig
/// field names in comments).
struct MegatronOptions {
  /// `bucket_size` in elements; when unset, max(40M, 1M * dataParallelSize).
  std::optional<int64_t> bucketSize;
  /// `--ddp-num-buckets`: bucket size = total elements / numBuckets.
  std::optional<int64_t> numBuckets;
  /// `overlap_grad_reduce`: without it Megatron makes one bucket per buffer.
  bool overlapGradReduce = true;
  /// `use_distributed_optimizer` and `pad_buckets_for_high_nccl_busbw`.
  PaddingOptions padding;
  /// The data-parallel size the default bucket size scales with.
  int64_t dataParallelSize = 1;
};

/// Buffers keyed by (param dtype, grad dtype, expert or not, group); each
/// walked in reverse registration order; a bucket closes after the gradient
/// that makes it reach the bucket size (measured with start padding); with
/// the distributed optimizer a shared embedding gets a bucket of its own.
/// Buckets are returned in the order they complete in ready order.
llvm::Expected<BucketLayout>
computeMegatronLayout(llvm::ArrayRef<Gradient> gradients,
                      const MegatronOptions &options);

/// PyTorch DDP's `compute_bucket_assignment_by_size`.
struct PyTorchOptions {
  /// `dist._DEFAULT_FIRST_BUCKET_BYTES`.
  int64_t firstBucketBytes = 1 << 20;
  /// `bucket_cap_mb` (25) in bytes.
  int64_t bucketCapBytes = 25 << 20;
};

/// Per (dtype, group) accumulators over the ready order; a bucket closes after
/// the gradient that makes it reach the current byte limit; limits are
/// [first, cap] with the last repeating, per accumulator; buckets are sorted
/// by their smallest ready index, which is the order PyTorch's reducer issues
/// them in (it launches bucket i+1 only after bucket i).
llvm::Expected<BucketLayout>
computePyTorchLayout(llvm::ArrayRef<Gradient> gradients,
                     const PyTorchOptions &options);

/// A plain budget: per (dtype, group), contiguous in ready order, a bucket
/// closes after the gradient that makes it reach `budget` elements or bytes.
struct SizeOptions {
  enum class Unit { Elements, Bytes };
  int64_t budget = 0;
  Unit unit = Unit::Bytes;
  PaddingOptions padding;
};

llvm::Expected<BucketLayout>
computeSizeLayout(llvm::ArrayRef<Gradient> gradients,
                  const SizeOptions &options);

} // namespace ddp::bucketing

#endif // DDP_BUCKETING_POLICIES_H
