//===- BucketAttributes.cpp - Bucket decisions recorded in the IR ---------===//

#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

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
  // The dialect has checked that a gradient has both, each non-negative.
  WalkResult walk = step.walk([&](GradReadyOp ready) {
    std::optional<int64_t> index = getBucketIndex(ready);
    std::optional<int64_t> offset = getBucketOffset(ready);
    if (!index || !offset)
      return WalkResult::advance();
    int64_t bucket = *index;
    if (bucket >= static_cast<int64_t>(numBuckets)) {
      ready.emitError() << "is assigned to bucket " << bucket << ", but '"
                        << kBucketsAttrName << "' of the step has "
                        << numBuckets << " buckets";
      return WalkResult::interrupt();
    }
    members[bucket].push_back({ready, *offset});
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

FailureOr<int64_t> ddp::checkBucketLayout(func::FuncOp step, size_t index,
                                          const RecordedBucket &bucket) {
  auto bucketError = [&](Operation *op) {
    return op->emitError() << "bucket " << index << ": ";
  };
  const BucketSpec &spec = bucket.spec;
  if (bucket.members.empty())
    return bucketError(step) << "no gradient is assigned to it";
  int64_t end = 0;
  for (const BucketMember &member : bucket.members) {
    GradReadyOp ready = member.ready;
    int64_t numel = ready.getType().getNumElements();
    // The dialect rejects a negative offset.
    if (member.offset < end)
      return bucketError(ready)
             << "the gradient of " << ready.getParamAttr() << " at offset "
             << member.offset << " overlaps the gradient before it, which "
             << "ends at element " << end;
    if (llvm::AddOverflow(member.offset, numel, end))
      return bucketError(ready)
             << "the gradient of " << ready.getParamAttr() << " at offset "
             << member.offset << " with " << numel << " elements ends past "
             << "the " << spec.paddedNumel << " elements of the bucket";
    if (end > spec.paddedNumel)
      return bucketError(ready)
             << "the gradient of " << ready.getParamAttr() << " ends at "
             << "element " << end << ", past the " << spec.paddedNumel
             << " elements of the bucket";
  }
  if (end != spec.numel)
    return bucketError(step)
           << "'numel' is " << spec.numel
           << " but its last gradient ends at element " << end;
  MeshOp mesh = lookupMesh(step, spec.mesh);
  if (!mesh)
    return bucketError(step) << spec.mesh << " is not a ddp.mesh";
  int64_t groupSize = getGroupSize(mesh, spec.axes);
  if (groupSize < 1)
    return bucketError(step) << "mesh " << spec.mesh << " has no axes "
                             << getGroupName(spec.axes);
  return groupSize;
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

std::string ddp::getGroupName(ArrayAttr axes) {
  return llvm::join(llvm::map_range(axes,
                                    [](Attribute axis) {
                                      return cast<StringAttr>(axis).getValue();
                                    }),
                    ",");
}

/// `axes` with `axis` replaced by `replacement`, in its place.
static ArrayAttr replaceAxis(ArrayAttr axes, StringAttr axis,
                             ArrayRef<Attribute> replacement) {
  SmallVector<Attribute> result;
  for (Attribute name : axes) {
    if (name == axis)
      llvm::append_range(result, replacement);
    else
      result.push_back(name);
  }
  return ArrayAttr::get(axes.getContext(), result);
}

void ddp::splitMeshAxis(ModuleOp module, MeshOp mesh, StringAttr axis,
                          int64_t numInstances, StringAttr instanceAxis,
                          StringAttr shardAxis) {
  Builder builder(module.getContext());
  SmallVector<Attribute> names;
  SmallVector<int64_t> shape;
  for (auto [name, size] : llvm::zip(mesh.getAxisNames(), mesh.getShape())) {
    if (name != axis) {
      names.push_back(name);
      shape.push_back(size);
      continue;
    }
    names.append({instanceAxis, shardAxis});
    shape.append({numInstances, size / numInstances});
  }
  mesh.setAxisNamesAttr(builder.getArrayAttr(names));
  mesh.setShapeAttr(builder.getDenseI64ArrayAttr(shape));

  SmallVector<Attribute, 2> split = {instanceAxis, shardAxis};
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  module.walk([&](Operation *op) {
    // Every op that names a group does so with these two attributes (the
    // collectives, the shard optimizers).
    auto opMesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
    auto opAxes = op->getAttrOfType<ArrayAttr>("axes");
    if (opMesh == meshRef && opAxes)
      op->setAttr("axes", replaceAxis(opAxes, axis, split));
    auto buckets = op->getAttrOfType<ArrayAttr>(kBucketsAttrName);
    if (!buckets)
      return;
    SmallVector<Attribute> rewritten;
    for (Attribute attr : buckets) {
      auto bucket = dyn_cast<BucketAttr>(attr);
      if (bucket && bucket.getMesh() == meshRef)
        attr = BucketAttr::get(
            bucket.getContext(), bucket.getDtype(), bucket.getMesh(),
            replaceAxis(bucket.getAxes(), axis, split), bucket.getNumel(),
            bucket.getPaddedNumel(), bucket.getAverageInCollective(),
            bucket.getCheckFinite());
      rewritten.push_back(attr);
    }
    op->setAttr(kBucketsAttrName, builder.getArrayAttr(rewritten));
  });
}
