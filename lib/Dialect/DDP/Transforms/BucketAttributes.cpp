//===- BucketAttributes.cpp - Bucket decisions recorded in the IR ---------===//

#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace ddp;

DictionaryAttr ddp::getBucketSpecAttr(MLIRContext *context,
                                      const BucketSpec &spec) {
  Builder builder(context);
  return builder.getDictionaryAttr({
      builder.getNamedAttr("dtype", TypeAttr::get(spec.elementType)),
      builder.getNamedAttr("mesh", spec.mesh),
      builder.getNamedAttr("axes", spec.axes),
      builder.getNamedAttr("numel", builder.getI64IntegerAttr(spec.numel)),
      builder.getNamedAttr("padded_numel",
                           builder.getI64IntegerAttr(spec.paddedNumel)),
      builder.getNamedAttr("average_in_collective",
                           builder.getBoolAttr(spec.averageInCollective)),
      builder.getNamedAttr("check_finite",
                           builder.getBoolAttr(spec.checkFinite)),
  });
}

FailureOr<SmallVector<BucketSpec>> ddp::readBucketSpecs(func::FuncOp step) {
  SmallVector<BucketSpec> specs;
  Attribute attr = step->getAttr(kBucketsAttrName);
  if (!attr)
    return specs;
  auto list = dyn_cast<ArrayAttr>(attr);
  if (!list)
    return step.emitError() << "'" << kBucketsAttrName
                            << "' must be an array of bucket dictionaries";
  for (auto [index, entry] : llvm::enumerate(list)) {
    auto dict = dyn_cast<DictionaryAttr>(entry);
    auto fail = [&, index = index](StringRef problem) {
      return step.emitError() << "bucket " << index << " in '"
                              << kBucketsAttrName << "' " << problem;
    };
    if (!dict)
      return fail("is not a dictionary");
    BucketSpec spec;
    auto dtype = dict.getAs<TypeAttr>("dtype");
    if (!dtype || !isa<FloatType>(dtype.getValue()) ||
        !getElementTypeOf(dtype.getValue()))
      return fail("needs 'dtype', one of f16, bf16, f32, f64");
    spec.elementType = cast<FloatType>(dtype.getValue());
    spec.mesh = dict.getAs<FlatSymbolRefAttr>("mesh");
    if (!spec.mesh)
      return fail("needs 'mesh', a symbol reference to a ddp.mesh");
    spec.axes = dict.getAs<ArrayAttr>("axes");
    if (!spec.axes || spec.axes.empty() ||
        !llvm::all_of(spec.axes,
                      [](Attribute axis) { return isa<StringAttr>(axis); }))
      return fail("needs 'axes', a non-empty array of mesh axis names");
    auto numel = dict.getAs<IntegerAttr>("numel");
    auto padded = dict.getAs<IntegerAttr>("padded_numel");
    if (!numel || !padded)
      return fail("needs integer 'numel' and 'padded_numel'");
    spec.numel = numel.getInt();
    spec.paddedNumel = padded.getInt();
    if (spec.numel < 1 || spec.paddedNumel < spec.numel)
      return fail("has numel ")
             << spec.numel << " and padded_numel " << spec.paddedNumel
             << "; it needs 1 <= numel <= padded_numel";
    if (!getTensorSizeInBytes(RankedTensorType::get({spec.paddedNumel},
                                              spec.elementType)))
      return fail("has padded_numel ")
             << spec.paddedNumel << "; its " << spec.elementType
             << " buffer would take 2^63 bytes or more";
    auto average = dict.getAs<BoolAttr>("average_in_collective");
    auto check = dict.getAs<BoolAttr>("check_finite");
    if (!average || !check)
      return fail("needs boolean 'average_in_collective' and 'check_finite'");
    spec.averageInCollective = average.getValue();
    spec.checkFinite = check.getValue();
    specs.push_back(spec);
  }
  return specs;
}

FailureOr<SmallVector<SmallVector<BucketMember>>>
ddp::readBucketMembers(func::FuncOp step, size_t numBuckets) {
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
