//===- DDPAttributes.cpp - Attributes of the ddp dialect ------------------===//
//
// Verifiers of the bucket layout attributes, and the assembly of
// #ddp.bucket. The verifiers run when an attribute is parsed or built with
// getChecked, so a hand-edited layout is rejected where it is written, before
// any pass reads it.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"

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

// `#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 9,
//   padded_numel = 12, average_in_collective = false, check_finite = false>`:
// every field once, in any order.
Attribute BucketAttr::parse(AsmParser &parser, Type) {
  SMLoc start = parser.getCurrentLocation();
  Type dtype;
  FlatSymbolRefAttr mesh;
  ArrayAttr axes;
  int64_t numel = 0, paddedNumel = 0;
  bool average = false, check = false;
  llvm::StringSet<> seen;
  auto parseBool = [&](bool &value) -> ParseResult {
    SMLoc at = parser.getCurrentLocation();
    StringRef word;
    if (parser.parseOptionalKeyword(&word) || (word != "true" && word != "false"))
      return parser.emitError(at, "expected 'true' or 'false'");
    value = word == "true";
    return success();
  };
  auto parseField = [&]() -> ParseResult {
    SMLoc at = parser.getCurrentLocation();
    StringRef name;
    if (parser.parseKeyword(&name))
      return failure();
    if (!seen.insert(name).second)
      return parser.emitError(at) << "#ddp.bucket has '" << name << "' twice";
    if (parser.parseEqual())
      return failure();
    if (name == "dtype")
      return parser.parseType(dtype);
    if (name == "mesh")
      return parser.parseAttribute(mesh);
    if (name == "axes")
      return parser.parseAttribute(axes);
    if (name == "numel")
      return parser.parseInteger(numel);
    if (name == "padded_numel")
      return parser.parseInteger(paddedNumel);
    if (name == "average_in_collective")
      return parseBool(average);
    if (name == "check_finite")
      return parseBool(check);
    return parser.emitError(at) << "#ddp.bucket has no field '" << name << "'";
  };
  if (parser.parseLess() || parser.parseCommaSeparatedList(parseField) ||
      parser.parseGreater())
    return {};
  for (StringRef field : {"dtype", "mesh", "axes", "numel", "padded_numel",
                          "average_in_collective", "check_finite"})
    if (!seen.contains(field)) {
      parser.emitError(start) << "#ddp.bucket is missing '" << field << "'";
      return {};
    }
  return getChecked([&] { return parser.emitError(start); },
                    parser.getContext(), dtype, mesh, axes, numel, paddedNumel,
                    average, check);
}

void BucketAttr::print(AsmPrinter &printer) const {
  auto boolean = [](bool value) { return value ? "true" : "false"; };
  printer << "<dtype = " << getDtype() << ", mesh = " << getMesh()
          << ", axes = " << getAxes() << ", numel = " << getNumel()
          << ", padded_numel = " << getPaddedNumel()
          << ", average_in_collective = " << boolean(getAverageInCollective())
          << ", check_finite = " << boolean(getCheckFinite()) << ">";
}
