//===- OptimizerVerifiers.cpp - Verifiers of the buckets and optimizers ---===//
//
// The verifiers of the ops that pack gradients into buckets and update
// parameters from them, plain and distributed (DDPOpVerifiers.cpp has the
// others, and the reasons for verifySymbolUses).
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "VerifierUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace ddp;
using namespace ddp::detail;

//===----------------------------------------------------------------------===//
// Buckets and optimizer
//===----------------------------------------------------------------------===//

/// The gradients of a bucket lie inside it, do not overlap and share its
/// element type.
static LogicalResult verifyBucketLayout(Operation *op, TypeRange grads,
                                        ArrayRef<int64_t> offsets,
                                        RankedTensorType bucket) {
  if (grads.empty())
    return op->emitOpError("needs at least one gradient");
  if (grads.size() != offsets.size())
    return op->emitOpError("has ")
           << grads.size() << " gradients but " << offsets.size()
           << " offsets; it needs one offset per gradient";
  SmallVector<int64_t> numels;
  for (auto [index, type] : llvm::enumerate(grads)) {
    auto tensor = cast<RankedTensorType>(type);
    if (tensor.getElementType() != bucket.getElementType())
      return op->emitOpError("gradient #")
             << index << " has element type " << tensor.getElementType()
             << " but the bucket has " << bucket.getElementType();
    numels.push_back(tensor.getNumElements());
  }
  return verifyBucketExtents(
      op, numels, offsets, bucket.getNumElements(),
      [](size_t index) { return "gradient #" + std::to_string(index); });
}

static LogicalResult verifyLearningRate(Operation *op, double lr) {
  if (!(lr > 0.0) || !std::isfinite(lr))
    return op->emitOpError("needs a positive finite learning rate, got ")
           << formatDouble(lr);
  return success();
}

static LogicalResult verifyAdamHyperparameters(Operation *op, double beta1,
                                               double beta2, double eps) {
  for (auto [name, beta] :
       {std::pair<StringRef, double>{"beta1", beta1}, {"beta2", beta2}})
    if (!(beta >= 0.0 && beta < 1.0))
      return op->emitOpError()
             << name << " must be in [0, 1), got " << formatDouble(beta);
  if (!(eps > 0.0) || !std::isfinite(eps))
    return op->emitOpError("eps must be positive and finite, got ")
           << formatDouble(eps);
  return success();
}

LogicalResult BucketPackOp::verify() {
  return verifyBucketLayout(*this, getGrads().getTypes(), getOffsets(),
                            getBucket().getType());
}

LogicalResult BucketUnpackOp::verify() {
  return verifyBucketLayout(*this, getGrads().getTypes(), getOffsets(),
                            getBucket().getType());
}

LogicalResult CheckFiniteOp::verify() {
  if (getParams().empty())
    return emitOpError("needs at least one parameter");
  if (getParams().size() != getOffsets().size())
    return emitOpError("has ")
           << getParams().size() << " parameters but " << getOffsets().size()
           << " offsets; it needs one offset per parameter";
  // I64Attr reads back unsigned; the sign is in the attribute.
  if (int64_t index = getIndexAttr().getInt(); index < 0)
    return emitOpError("has negative bucket index ") << index;
  return success();
}

LogicalResult
CheckFiniteOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  SmallVector<int64_t> numels;
  for (Attribute name : getParams()) {
    FailureOr<ParamOp> param =
        lookupParam(*this, cast<FlatSymbolRefAttr>(name), symbolTable);
    if (failed(param))
      return failure();
    numels.push_back(param->getTensorType().getNumElements());
  }
  return verifyBucketExtents(
      *this, numels, getOffsets(), getBucket().getType().getNumElements(),
      [&](size_t index) {
        return "parameter @" +
               cast<FlatSymbolRefAttr>(getParams()[index]).getValue().str();
      });
}

LogicalResult SGDOp::verify() {
  return verifyLearningRate(*this, getLr().convertToDouble());
}

LogicalResult SGDOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParamShape(*this, getParamAttr(), getGrad().getType(),
                          "gradient", symbolTable);
}

LogicalResult AdamOp::verify() {
  if (failed(verifyLearningRate(*this, getLr().convertToDouble())))
    return failure();
  return verifyAdamHyperparameters(*this, getBeta1().convertToDouble(),
                                   getBeta2().convertToDouble(),
                                   getEps().convertToDouble());
}

LogicalResult AdamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParamShape(*this, getParamAttr(), getGrad().getType(),
                          "gradient", symbolTable);
}

//===----------------------------------------------------------------------===//
// Distributed optimizer
//===----------------------------------------------------------------------===//

/// One offset per parameter, and at least one parameter.
static LogicalResult verifyParamList(Operation *op, ArrayAttr params,
                                     ArrayRef<int64_t> offsets) {
  if (params.empty())
    return op->emitOpError("needs at least one parameter");
  if (params.size() != offsets.size())
    return op->emitOpError("has ")
           << params.size() << " parameters but " << offsets.size()
           << " offsets; it needs one offset per parameter";
  return success();
}

/// The parameters exist, have `elementType` and lie inside a bucket of
/// `bucketSize` elements without overlapping.
static LogicalResult verifyParamExtents(Operation *op, ArrayAttr params,
                                        ArrayRef<int64_t> offsets,
                                        Type elementType, int64_t bucketSize,
                                        SymbolTableCollection &symbolTable) {
  SmallVector<int64_t> numels;
  for (Attribute name : params) {
    auto symbol = cast<FlatSymbolRefAttr>(name);
    FailureOr<ParamOp> param = lookupParam(op, symbol, symbolTable);
    if (failed(param))
      return failure();
    Type paramElement = param->getTensorType().getElementType();
    if (paramElement != elementType)
      return op->emitOpError("parameter ")
             << symbol << " has element type " << paramElement << " but the "
             << "parameter values have " << elementType;
    numels.push_back(param->getTensorType().getNumElements());
  }
  return verifyBucketExtents(
      op, numels, offsets, bucketSize, [&](size_t index) {
        return "parameter @" +
               cast<FlatSymbolRefAttr>(params[index]).getValue().str();
      });
}

/// Checks that the bucket of which `shardType` is one rank's shard over the
/// group holds the parameters at their offsets.
template <typename ShardOp>
static LogicalResult verifyShardLayout(ShardOp op, RankedTensorType shardType,
                                       SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> groupSize =
      verifyGroup(op, op.getMeshAttr(), op.getAxesAttr(), symbolTable);
  if (failed(groupSize))
    return failure();
  int64_t shardSize = shardType.getNumElements();
  std::optional<int64_t> bucketSize = llvm::checkedMul(shardSize, *groupSize);
  if (!bucketSize)
    return op->emitOpError("shard of ")
           << shardSize << " elements over " << *groupSize
           << " ranks makes a bucket too large to address";
  return verifyParamExtents(op, op.getParams(), op.getOffsets(),
                            shardType.getElementType(), *bucketSize,
                            symbolTable);
}

template <typename ShardOp>
static LogicalResult verifyShardLayout(ShardOp op,
                                       SymbolTableCollection &symbolTable) {
  return verifyShardLayout(op, op.getResult().getType(), symbolTable);
}

template <typename ShardOp> static LogicalResult verifyShardShapes(ShardOp op) {
  if (failed(verifyParamList(op, op.getParams(), op.getOffsets())) ||
      failed(verifyLearningRate(op, op.getLr().convertToDouble())))
    return failure();
  if (op.getGrad().getType().getNumElements() !=
      op.getResult().getType().getNumElements())
    return op->emitOpError("has a gradient shard of ")
           << op.getGrad().getType().getNumElements()
           << " elements but a parameter shard of "
           << op.getResult().getType().getNumElements();
  return success();
}

LogicalResult ShardSGDOp::verify() { return verifyShardShapes(*this); }

LogicalResult ShardSGDOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShardLayout(*this, symbolTable);
}

LogicalResult ShardAdamOp::verify() {
  if (failed(verifyShardShapes(*this)))
    return failure();
  return verifyAdamHyperparameters(*this, getBeta1().convertToDouble(),
                                   getBeta2().convertToDouble(),
                                   getEps().convertToDouble());
}

LogicalResult
ShardAdamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShardLayout(*this, symbolTable);
}

LogicalResult SetParamsOp::verify() {
  return verifyParamList(*this, getParams(), getOffsets());
}

LogicalResult
SetParamsOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParamExtents(
      *this, getParams(), getOffsets(), getValues().getType().getElementType(),
      getValues().getType().getNumElements(), symbolTable);
}

LogicalResult GetParamShardOp::verify() {
  return verifyParamList(*this, getParams(), getOffsets());
}

LogicalResult
GetParamShardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShardLayout(*this, symbolTable);
}

LogicalResult SetParamShardOp::verify() {
  return verifyParamList(*this, getParams(), getOffsets());
}

LogicalResult
SetParamShardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShardLayout(*this, getShard().getType(), symbolTable);
}
