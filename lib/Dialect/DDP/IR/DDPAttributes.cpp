//===- DDPAttributes.cpp - Attributes of the ddp dialect ------------------===//
//
// Verifiers of the bucket layout attributes. They run when an attribute is
// parsed or built with getChecked, so a hand-edited layout is rejected where
// it is written, before any pass reads it.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include <cmath>

using namespace mlir;
using namespace ddp;

LogicalResult
BucketAttr::verify(function_ref<InFlightDiagnostic()> emitError, Type dtype,
                   FlatSymbolRefAttr mesh, ArrayAttr axes, int64_t numel,
                   int64_t paddedNumel, bool averageInCollective,
                   bool checkFinite) {
  if (!dtype || !isa<FloatType>(dtype) || !getElementTypeOf(dtype))
    return emitError() << "#ddp.bucket needs 'dtype', one of f16, bf16, f32, "
                          "f64, got "
                       << dtype;
  if (!mesh)
    return emitError()
           << "#ddp.bucket needs 'mesh', a symbol reference to a ddp.mesh";
  if (!axes || axes.empty() ||
      !llvm::all_of(axes, [](Attribute axis) { return isa<StringAttr>(axis); }))
    return emitError() << "#ddp.bucket needs 'axes', a non-empty array of "
                          "mesh axis names";
  if (numel < 1 || paddedNumel < numel)
    return emitError() << "#ddp.bucket has numel " << numel
                       << " and padded_numel " << paddedNumel
                       << "; it needs 1 <= numel <= padded_numel";
  if (!getTensorSizeInBytes(RankedTensorType::get({paddedNumel}, dtype)))
    return emitError() << "#ddp.bucket has padded_numel " << paddedNumel
                       << "; its " << dtype
                       << " buffer would take 2^63 bytes or more";
  return success();
}

LogicalResult
BucketPolicyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         BucketPolicy name, StringAttr hardware,
                         FloatAttr predictedStepTime) {
  if (name != BucketPolicy::Auto && (hardware || predictedStepTime))
    return emitError() << "#ddp.bucket_policy: only the auto policy records "
                          "'hw' and 'predicted_step_time_us', not "
                       << stringifyBucketPolicy(name);
  if (predictedStepTime) {
    double time = predictedStepTime.getValueAsDouble();
    if (!std::isfinite(time) || time < 0)
      return emitError() << "#ddp.bucket_policy: 'predicted_step_time_us' "
                            "must be finite and not negative, got "
                         << time;
  }
  return success();
}
