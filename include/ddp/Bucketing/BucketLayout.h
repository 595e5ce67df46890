//===- BucketLayout.h - Gradients, buckets and the layout report -*- C++
//-*-===//
//
// The vocabulary shared by every bucketing policy: the gradients to reduce (in
// the order they become ready), the buckets a policy groups them into, and the
// JSON layout report. Nothing here depends on MLIR, so the policies can be
// unit-tested and reused outside the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_BUCKETING_BUCKETLAYOUT_H
#define DDP_BUCKETING_BUCKETLAYOUT_H

#include "ddp/Support/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace ddp::bucketing {

/// The element type of a gradient or a bucket; its names ("f16", "bf16",
/// "f32", "f64") are those the layout report uses.
using ddp::ElementType;

/// One gradient to reduce. Policies receive them in ready order: the order in
/// which their `grad_ready` ops are issued.
struct Gradient {
  std::string name;
  int64_t numel = 0;
  /// The parameter's element type (Megatron keys its buffers by it).
  ElementType paramType = ElementType::F32;
  /// The element type the gradient is reduced in: the bucket's type.
  ElementType reduceType = ElementType::F32;
  /// The process group that reduces it, e.g. "dp" or "edp". Gradients of
  /// different groups never share a bucket.
  std::string group;
  int64_t groupSize = 1;
  /// Mixture-of-experts parameter (Megatron gives experts their own buffers).
  bool expert = false;
  /// The word embedding shared with the output layer.
  bool sharedEmbedding = false;
  /// Position in registration order (Megatron walks it backwards).
  size_t declarationIndex = 0;
  /// The model chunk of a pipeline rank it belongs to: Megatron wraps each
  /// chunk in a DistributedDataParallel of its own, so chunks never share a
  /// buffer.
  int64_t modelChunk = 0;
  /// The transformer layer it belongs to (an FSDP unit, UnitPolicy.cpp);
  /// none for the embeddings, the final norm and the output layer.
  std::optional<int64_t> layer;

  int64_t getBytes() const { return numel * getElementBytes(reduceType); }
};

/// A gradient's place in a bucket.
struct BucketEntry {
  /// Index into the gradient list (ready order).
  size_t gradient;
  /// First element of the gradient inside the bucket.
  int64_t offset;
};

/// One flat buffer reduced by one collective.
struct Bucket {
  ElementType type = ElementType::F32;
  std::string group;
  int64_t groupSize = 1;
  /// Gradients in increasing offset order.
  std::vector<BucketEntry> entries;
  /// The end of the last gradient: the unpadded size.
  int64_t numel = 0;
  /// The size including end padding; the collective reduces this many.
  int64_t paddedNumel = 0;
};

/// Buckets in the order their collectives are issued.
struct BucketLayout {
  std::vector<Bucket> buckets;
};

/// Padding that Megatron-Core's distributed optimizer applies, usable with any
/// policy: every gradient starts at a multiple of 64 elements and every bucket
/// ends at a multiple of lcm(group size, 128), times 2^16 for high NCCL bus
/// bandwidth.
struct PaddingOptions {
  bool distributedOptimizer = false;
  bool padForHighNcclBusbw = false;
};

/// The most ranks a gradient may be reduced over: NCCL and MPI number ranks
/// with an int. The importer caps the data-parallel size at it, so that
/// every step it builds can be bucketed.
constexpr int64_t kMaxGroupSize = std::numeric_limits<int32_t>::max();

/// Checks what every policy assumes of its input: at least one element per
/// gradient, a group of 1 to kMaxGroupSize ranks, distinct names, and less than
/// 2^62 bytes in all (with padding), so that no cursor, padded size or byte
/// count of a layout overflows int64. Returns the first problem found.
llvm::Error validateGradients(llvm::ArrayRef<Gradient> gradients);

/// The multiple a bucket's end is padded to under `padding` for a group of
/// `groupSize` ranks (1 when nothing is padded).
int64_t getBucketEndDivisor(const PaddingOptions &padding, int64_t groupSize);

/// The element a gradient placed at `cursor` starts at under `padding`.
int64_t padGradientStart(const PaddingOptions &padding, int64_t cursor);
/// `value` rounded up to a multiple of `divisor`.
int64_t alignTo(int64_t value, int64_t divisor);

/// Lays the given gradients out in one bucket, in the given order, applying
/// `padding`. The gradients must share a reduce type and a group.
Bucket layOutBucket(llvm::ArrayRef<Gradient> gradients,
                    llvm::ArrayRef<size_t> members,
                    const PaddingOptions &padding);

/// The position in ready order of the bucket's last gradient: when its
/// collective can be issued at the earliest.
size_t getLastReadyIndex(const Bucket &bucket);

/// Sorts buckets by the ready position of their last gradient, the order in
/// which a runtime that issues each bucket when it is complete issues them.
void sortByCompletion(std::vector<Bucket> &buckets);

/// Writes the layout report, keys in this order (llvm::json::Value would sort
/// them):
///   {"buckets": [{"index": 0, "dtype": "bf16", "group": "dp",
///                 "params": [{"name": ..., "offset": 0, "numel": 9025}],
///                 "numel": 9025, "padded_numel": 9088}]}
/// With `shards` (the distributed optimizer), each bucket also gets the
/// range of the padded bucket each of its group's ranks owns, rank r of n
/// [r * padded/n, (r + 1) * padded/n), and the elements of each parameter
/// in it (the parameter's own flat indices):
///   "shard_numel": 4544, "shards": [{"rank": 0, "begin": 0, "end": 4544,
///       "params": [{"name": ..., "begin": 0, "end": 4544}]}, ...]
/// Every bucket's padded size must then be a multiple of its group size.
void writeLayoutJSON(llvm::json::OStream &json, const BucketLayout &layout,
                     llvm::ArrayRef<Gradient> gradients, bool shards = false);

/// The same layout as a table to read: one row per bucket (its group,
/// element type, parameters, elements, padded elements and bytes, and its
/// first and last parameter), then the totals; with `shards`, each rank's
/// shard of every bucket in elements.
void writeLayoutTable(llvm::raw_ostream &os, const BucketLayout &layout,
                      llvm::ArrayRef<Gradient> gradients, bool shards = false);

} // namespace ddp::bucketing

#endif // DDP_BUCKETING_BUCKETLAYOUT_H
