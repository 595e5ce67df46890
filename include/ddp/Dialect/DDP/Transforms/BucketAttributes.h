//===- BucketAttributes.h - Bucket decisions recorded in the IR -*- C++ -*-===//
//
// `ddp-assign-buckets` records a bucket layout as attributes, and
// `ddp-bucketize`, `ddp-overlap-grad-reduce` and `ddp-print-bucket-layout`
// read them back; a user may edit them in between. This header names the
// attributes and reads them with located errors.
//
//   func.func @step(...) attributes {
//     ddp.bucket_policy = #ddp.bucket_policy<name = megatron>,
//     ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"],
//                                numel = 9183, padded_numel = 9216,
//                                average_in_collective = false,
//                                check_finite = false>]}
//   %g = ddp.grad_ready @w, %dw {ddp.bucket = 0 : i64,
//                                ddp.bucket_offset = 9088 : i64} : ...
//
// `#ddp.bucket` and `#ddp.bucket_policy` verify themselves (DDPAttributes.td);
// the per-gradient index and offset are the dialect's (DDPDialect.h's
// getBucketIndex and getBucketOffset), which it verifies.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_BUCKETATTRIBUTES_H
#define DDP_DIALECT_DDP_TRANSFORMS_BUCKETATTRIBUTES_H

#include "ddp/Bucketing/BucketLayout.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshLookup.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace ddp {

/// On the step: the buckets, in issue order, an array of `#ddp.bucket`.
constexpr llvm::StringLiteral kBucketsAttrName = "ddp.buckets";
/// On the step: the `#ddp.bucket_policy` that laid the buckets out.
constexpr llvm::StringLiteral kBucketPolicyAttrName = "ddp.bucket_policy";

/// One entry of `ddp.buckets`, read from its `#ddp.bucket`.
struct BucketSpec {
  mlir::FloatType elementType;
  mlir::FlatSymbolRefAttr mesh;
  mlir::ArrayAttr axes;
  int64_t numel = 0;
  int64_t paddedNumel = 0;
  /// Reduce with `avg` in the collective instead of pre-scaling by 1/n.
  bool averageInCollective = false;
  /// Check the packed bucket for NaN and Inf before the collective.
  bool checkFinite = false;
};

BucketAttr getBucketSpecAttr(mlir::MLIRContext *context,
                             const BucketSpec &spec);

/// A gradient assigned to a bucket by its attributes.
struct BucketMember {
  GradReadyOp ready;
  int64_t offset = 0;
};

/// One bucket as the attributes record it.
struct RecordedBucket {
  BucketSpec spec;
  /// The `ddp.grad_ready` ops assigned to it, in offset order.
  llvm::SmallVector<BucketMember> members;
};

/// Reads `ddp.buckets` of `step` (none: an empty list) and the bucket
/// attributes of its `ddp.grad_ready` ops. Emits an error on the step naming
/// the bucket when an entry is not a `#ddp.bucket` (the attribute's verifier
/// has checked its fields), and on the gradient that names a bucket
/// `ddp.buckets` does not have (the dialect has checked its attributes).
mlir::FailureOr<llvm::SmallVector<RecordedBucket>>
readRecordedBuckets(mlir::func::FuncOp step);

/// Checks the layout of bucket `index` of `step`: it has gradients, they
/// lie within its `padded_numel` elements without overlapping, the last
/// ends at its `numel`, and its group is a group of a mesh in the module;
/// returns the group's size. Errors name
/// the bucket, at the gradient or at the step. ddp-bucketize and
/// ddp-print-bucket-layout accept the same layouts through it.
mlir::FailureOr<int64_t> checkBucketLayout(mlir::func::FuncOp step,
                                           size_t index,
                                           const RecordedBucket &bucket);

/// The reduction a gradient goes through in the unscheduled step: the one
/// synchronous `ddp.all_reduce` of the `grad_ready` result. Null when there
/// is none; an error on the op when there are several.
mlir::FailureOr<AllReduceOp> getGradientReduction(GradReadyOp ready);

/// "dp", "dp,cp": how the layout report names a group.
std::string getGroupName(mlir::ArrayAttr axes);

/// Splits `axis` of `mesh` into `instanceAxis` (`numInstances`, slower) and
/// `shardAxis` (the rest) in its place, and rewrites every group over
/// `axis` in `module`, the recorded bucket layouts included, to the same
/// group over the two: the first axis varies slowest, so a rank's index in
/// the group is unchanged, and a group over `shardAxis` is one instance's
/// consecutive ranks, as Megatron lays out its distributed-optimizer
/// instances. `numInstances` must divide the axis.
void splitMeshAxis(mlir::ModuleOp module, MeshOp mesh, mlir::StringAttr axis,
                   int64_t numInstances, mlir::StringAttr instanceAxis,
                   mlir::StringAttr shardAxis);

} // namespace ddp

#endif // DDP_DIALECT_DDP_TRANSFORMS_BUCKETATTRIBUTES_H
