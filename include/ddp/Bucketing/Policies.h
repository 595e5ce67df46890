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
  /// The pipeline rank of the step. Megatron makes one bucket per buffer on
  /// every pipeline rank but the first, and on every model chunk but the
  /// first (DistributedDataParallel.__init__: `if disable_bucketing or
  /// pp_rank > 0: self.bucket_size = None`; training.py's
  /// per_chunk_disable_bucketing), that communication being off the
  /// critical path.
  int64_t pipelineRank = 0;
};

/// What Megatron-LM rejects in a bucket size and a number of buckets: both
/// given (arguments.py asserts it), or either below 1. computeMegatronLayout
/// checks it first; ddp-assign-buckets checks it before it reads any IR.
llvm::Error checkMegatronOptions(const MegatronOptions &options);

/// Buffers keyed by (param dtype, grad dtype, expert or not, group); each
/// walked in reverse registration order; a bucket closes after the gradient
/// that makes it reach the bucket size (measured with start padding); with
/// the distributed optimizer a shared embedding gets a bucket of its own.
/// Buckets are returned in the order they complete in ready order.
llvm::Expected<BucketLayout>
computeMegatronLayout(llvm::ArrayRef<Gradient> gradients,
                      const MegatronOptions &options);

/// `dist._DEFAULT_FIRST_BUCKET_BYTES`.
inline constexpr int64_t kPyTorchDefaultFirstBucketBytes = 1 << 20;
/// DistributedDataParallel's default `bucket_cap_mb` (25) in bytes.
inline constexpr int64_t kPyTorchDefaultBucketCapBytes = 25 << 20;

/// PyTorch DDP's `compute_bucket_assignment_by_size` as its reducer calls it
/// when it rebuilds the buckets after the first iteration.
struct PyTorchOptions {
  /// The first bucket's cap per (dtype, group); unset: as torch 2.x,
  /// kPyTorchDefaultFirstBucketBytes when bucketCapBytes is unset, otherwise
  /// bucketCapBytes. Set it to 1 MiB for torch 1.x with an explicit
  /// bucket_cap_mb.
  std::optional<int64_t> firstBucketBytes;
  /// `bucket_cap_mb` in bytes; unset: kPyTorchDefaultBucketCapBytes.
  std::optional<int64_t> bucketCapBytes;
  /// PyTorch DDP pads nothing; with the distributed optimizer each bucket
  /// gets Megatron's padding so that it splits evenly over the group.
  PaddingOptions padding;
};

/// Per (dtype, group) accumulators over the ready order; a bucket closes after
/// the gradient that makes it reach the current byte limit; limits are
/// [first, cap] with the last repeating, per accumulator. Buckets are returned
/// in the order the reducer issues them in its steady state (it launches
/// bucket i+1 only after bucket i): the closed ones in the order they close,
/// then the still-open ones, the (dtype, group) whose first gradient came
/// last first.
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

/// FSDP units (Megatron-FSDP's grouping, param_and_grad_buffer.py at
/// Megatron-LM d98e8a64 L1789-1825; docs/FullySharded.md): per transformer
/// layer and buffer (parameter and gradient type, expert or not, group,
/// model chunk), one bucket of its gradients in ready order; the
/// parameters outside every layer one bucket per buffer, the shared
/// embedding one of its own (as the distributed optimizer gives it).
/// Buckets are returned in the order they complete in ready order.
llvm::Expected<BucketLayout>
computeUnitLayout(llvm::ArrayRef<Gradient> gradients,
                  const PaddingOptions &padding);

} // namespace ddp::bucketing

#endif // DDP_BUCKETING_POLICIES_H
