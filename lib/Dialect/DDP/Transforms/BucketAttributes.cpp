//===- BucketAttributes.cpp - Bucket decisions recorded in the IR ---------===//

#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace ddp;

BucketAttr ddp::getBucketSpecAttr(MLIRContext *context,
                                  const BucketSpec &spec) {
  return BucketAttr::get(context, spec.elementType, spec.mesh, spec.axes,
                         spec.numel, spec.paddedNumel,
                         spec.averageInCollective, spec.checkFinite);
}

/// Reads `ddp.buckets` of `step`; see readRecordedBuckets.
static FailureOr<SmallVector<BucketSpec>> readBucketSpecs(func::FuncOp step) {
  SmallVector<BucketSpec> specs;
  Attribute attr = step->getAttr(kBucketsAttrName);
  if (!attr)
    return specs;
  auto list = dyn_cast<ArrayAttr>(attr);
  if (!list)
    return step.emitError() << "'" << kBucketsAttrName
                            << "' must be an array of #ddp.bucket attributes";
  for (auto [index, entry] : llvm::enumerate(list)) {
    auto bucket = dyn_cast<BucketAttr>(entry);
    if (!bucket)
      return step.emitError()
             << "bucket " << index << " in '" << kBucketsAttrName
             << "' is not a #ddp.bucket: " << entry;
    BucketSpec spec;
    spec.elementType = bucket.getElementType();
    spec.mesh = bucket.getMesh();
    spec.axes = bucket.getAxes();
    spec.numel = bucket.getNumel();
    spec.paddedNumel = bucket.getPaddedNumel();
    spec.averageInCollective = bucket.getAverageInCollective();
    spec.checkFinite = bucket.getCheckFinite();
    specs.push_back(spec);
  }
  return specs;
}

/// The `ddp.grad_ready` ops of `step` that carry bucket attributes, by
/// bucket, in offset order; see readRecordedBuckets.
static FailureOr<SmallVector<SmallVector<BucketMember>>>
readBucketMembers(func::FuncOp step, size_t numBuckets) {
  SmallVector<SmallVector<BucketMember>> members(numBuckets);
  WalkResult walk = step.walk([&](GradReadyOp ready) {
    Attribute index = ready->getAttr(kBucketAttrName);
    Attribute offset = ready->getAttr(kBucketOffsetAttrName);
    if (!index && !offset)
      return WalkResult::advance();
    auto indexInt = dyn_cast_or_null<IntegerAttr>(index);
    auto offsetInt = dyn_cast_or_null<IntegerAttr>(offset);
    if (!indexInt || !offsetInt) {
      ready.emitError() << "needs both '" << kBucketAttrName << "' and '"
                        << kBucketOffsetAttrName << "' as integers";
      return WalkResult::interrupt();
    }
    int64_t bucket = indexInt.getInt();
    if (bucket < 0 || bucket >= static_cast<int64_t>(numBuckets)) {
      ready.emitError() << "is assigned to bucket " << bucket << ", but '"
                        << kBucketsAttrName << "' of the step has "
                        << numBuckets << " buckets";
      return WalkResult::interrupt();
    }
    members[bucket].push_back({ready, offsetInt.getInt()});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (SmallVector<BucketMember> &bucket : members)
    llvm::stable_sort(bucket, [](const BucketMember &a, const BucketMember &b) {
      return a.offset < b.offset;
    });
  return members;
}

FailureOr<SmallVector<RecordedBucket>>
ddp::readRecordedBuckets(func::FuncOp step) {
  FailureOr<SmallVector<BucketSpec>> specs = readBucketSpecs(step);
  if (failed(specs))
    return failure();
  FailureOr<SmallVector<SmallVector<BucketMember>>> members =
      readBucketMembers(step, specs->size());
  if (failed(members))
    return failure();
  SmallVector<RecordedBucket> buckets;
  for (auto [spec, bucketMembers] : llvm::zip_equal(*specs, *members))
    buckets.push_back({spec, std::move(bucketMembers)});
  return buckets;
}

FailureOr<AllReduceOp> ddp::getGradientReduction(GradReadyOp ready) {
  AllReduceOp found;
  for (Operation *user : ready.getResult().getUsers()) {
    auto allReduce = dyn_cast<AllReduceOp>(user);
    if (!allReduce || allReduce.getToken())
      continue;
    if (found && found != allReduce)
      return ready.emitError("the gradient of ")
             << ready.getParamAttr() << " is reduced by more than one "
             << "ddp.all_reduce; bucketing needs exactly one";
    found = allReduce;
  }
  return found;
}

MeshOp ddp::lookupMesh(func::FuncOp step, FlatSymbolRefAttr name) {
  auto module = step->getParentOfType<ModuleOp>();
  if (!module)
    return nullptr;
  for (MeshOp mesh : module.getOps<MeshOp>())
    if (mesh.getSymNameAttr() == name.getAttr())
      return mesh;
  return nullptr;
}

std::string ddp::getGroupName(ArrayAttr axes) {
  return llvm::join(llvm::map_range(axes,
                                    [](Attribute axis) {
                                      return cast<StringAttr>(axis).getValue();
                                    }),
                    ",");
}
