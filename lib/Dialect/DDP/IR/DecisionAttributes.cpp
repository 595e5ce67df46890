//===- DecisionAttributes.cpp - The passes' per-op decisions --------------===//
//
// The discardable attributes DDPDialect.td declares: typed access, and the
// dialect's check of each wherever it appears, so that a pass reading one
// can take its value as it is.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace ddp;

/// An attribute's helper: the loaded dialect's, which holds the name (a
/// helper made per query uniques its name's StringAttr every time, a cost
/// that showed on the 900k-op steps of a pipeline); a new one where the
/// dialect is not loaded, since loading it here could race in a pass that
/// runs on several functions at once.
template <typename Helper>
static Helper attrHelper(Operation *op, Helper (DDPDialect::*get)()) {
  MLIRContext *context = op->getContext();
  if (auto *dialect = context->getLoadedDialect<DDPDialect>())
    return (dialect->*get)();
  return Helper(context);
}

std::optional<int64_t> ddp::getBucketIndex(Operation *op) {
  if (auto attr = attrHelper(op, &DDPDialect::getBucketAttrHelper).getAttr(op))
    return attr.getInt();
  return std::nullopt;
}

void ddp::setBucketIndex(Operation *op, int64_t index) {
  attrHelper(op, &DDPDialect::getBucketAttrHelper)
      .setAttr(op, Builder(op->getContext()).getI64IntegerAttr(index));
}

std::optional<int64_t> ddp::getBucketOffset(Operation *op) {
  if (auto attr =
          attrHelper(op, &DDPDialect::getBucketOffsetAttrHelper).getAttr(op))
    return attr.getInt();
  return std::nullopt;
}

void ddp::setBucketOffset(Operation *op, int64_t offset) {
  attrHelper(op, &DDPDialect::getBucketOffsetAttrHelper)
      .setAttr(op, Builder(op->getContext()).getI64IntegerAttr(offset));
}

std::optional<int64_t> ddp::getFsdpUnit(Operation *op) {
  if (auto attr =
          attrHelper(op, &DDPDialect::getFsdpUnitAttrHelper).getAttr(op))
    return attr.getInt();
  return std::nullopt;
}

void ddp::setFsdpUnit(Operation *op, int64_t unit) {
  attrHelper(op, &DDPDialect::getFsdpUnitAttrHelper)
      .setAttr(op, Builder(op->getContext()).getI64IntegerAttr(unit));
}

std::optional<int64_t> ddp::getTpCommSplits(Operation *op) {
  if (auto attr =
          attrHelper(op, &DDPDialect::getTpCommSplitsAttrHelper).getAttr(op))
    return attr.getInt();
  return std::nullopt;
}

void ddp::setTpCommSplits(Operation *op, int64_t splits) {
  attrHelper(op, &DDPDialect::getTpCommSplitsAttrHelper)
      .setAttr(op, Builder(op->getContext()).getI64IntegerAttr(splits));
}

bool ddp::isTpCommBulk(Operation *op) {
  return attrHelper(op, &DDPDialect::getTpCommBulkAttrHelper).isAttrPresent(op);
}

void ddp::setTpCommBulk(Operation *op) {
  attrHelper(op, &DDPDialect::getTpCommBulkAttrHelper)
      .setAttr(op, UnitAttr::get(op->getContext()));
}

bool ddp::keepsPipelineOutputs(Operation *func) {
  return attrHelper(func, &DDPDialect::getKeepsPipelineOutputsAttrHelper)
      .isAttrPresent(func);
}

void ddp::setKeepsPipelineOutputs(Operation *func) {
  attrHelper(func, &DDPDialect::getKeepsPipelineOutputsAttrHelper)
      .setAttr(func, UnitAttr::get(func->getContext()));
}

std::optional<double> ddp::getTpCommPredictedStepUs(Operation *op) {
  if (auto attr =
          attrHelper(op, &DDPDialect::getTpCommPredictedStepUsAttrHelper)
              .getAttr(op))
    return attr.getValueAsDouble();
  return std::nullopt;
}

void ddp::setTpCommPredictedStepUs(Operation *op, double microseconds) {
  MLIRContext *context = op->getContext();
  attrHelper(op, &DDPDialect::getTpCommPredictedStepUsAttrHelper)
      .setAttr(op, FloatAttr::get(Float64Type::get(context), microseconds));
}

bool ddp::isDelayedWgrad(Operation *op) {
  return attrHelper(op, &DDPDialect::getDelayedWgradAttrHelper)
      .isAttrPresent(op);
}

void ddp::setDelayedWgrad(Operation *op) {
  attrHelper(op, &DDPDialect::getDelayedWgradAttrHelper)
      .setAttr(op, UnitAttr::get(op->getContext()));
}

std::optional<double> ddp::getComputePredictedStepUs(Operation *op) {
  if (auto attr =
          attrHelper(op, &DDPDialect::getComputePredictedStepUsAttrHelper)
              .getAttr(op))
    return attr.getValueAsDouble();
  return std::nullopt;
}

void ddp::setComputePredictedStepUs(Operation *op, double microseconds) {
  MLIRContext *context = op->getContext();
  attrHelper(op, &DDPDialect::getComputePredictedStepUsAttrHelper)
      .setAttr(op, FloatAttr::get(Float64Type::get(context), microseconds));
}

void ddp::setBatchSplit(Operation *func, int64_t count) {
  attrHelper(func, &DDPDialect::getBatchSplitAttrHelper)
      .setAttr(func, Builder(func->getContext()).getI64IntegerAttr(count));
}

std::optional<int64_t> ddp::getBatchSplit(Operation *func) {
  if (auto attr =
          attrHelper(func, &DDPDialect::getBatchSplitAttrHelper).getAttr(func))
    return attr.getInt();
  return std::nullopt;
}

std::optional<int64_t> ddp::getPipelineStage(Operation *func) {
  if (auto attr = attrHelper(func, &DDPDialect::getPipelineStageAttrHelper)
                      .getAttr(func))
    return attr.getInt();
  return std::nullopt;
}

void ddp::setPipelineStage(Operation *func, int64_t stage) {
  attrHelper(func, &DDPDialect::getPipelineStageAttrHelper)
      .setAttr(func, Builder(func->getContext()).getI64IntegerAttr(stage));
}

std::optional<PipelineTask> ddp::getPipelineTask(Operation *op) {
  if (auto attr = attrHelper(op, &DDPDialect::getTaskAttrHelper).getAttr(op))
    return PipelineTask::parse(attr.getValue());
  return std::nullopt;
}

void ddp::setPipelineTask(Operation *op, const PipelineTask &task) {
  attrHelper(op, &DDPDialect::getTaskAttrHelper)
      .setAttr(op, StringAttr::get(op->getContext(), task.str()));
}

std::optional<ScheduleNode> ddp::getScheduleNode(Operation *op) {
  if (auto attr =
          attrHelper(op, &DDPDialect::getScheduleNodeAttrHelper).getAttr(op))
    return ScheduleNode::parse(attr.getValue());
  return std::nullopt;
}

void ddp::setScheduleNode(Operation *op, const ScheduleNode &node) {
  attrHelper(op, &DDPDialect::getScheduleNodeAttrHelper)
      .setAttr(op, StringAttr::get(op->getContext(), node.str()));
}

static constexpr llvm::StringLiteral kActivationKeys[] = {"layer", "embedding",
                                                         "output"};
/// Present only with recomputation: what each layer keeps.
static constexpr llvm::StringLiteral kPerLayerKey = "per_layer";

std::optional<ActivationBytes> ddp::getActivationBytes(Operation *module) {
  auto attr = attrHelper(module, &DDPDialect::getActivationBytesAttrHelper)
                  .getAttr(module);
  if (!attr)
    return std::nullopt;
  // Unverified IR may hold anything; a malformed one reads as absent.
  int64_t values[3];
  for (auto [key, value] : llvm::zip_equal(kActivationKeys, values)) {
    auto entry = dyn_cast_or_null<IntegerAttr>(attr.get(key));
    if (!entry)
      return std::nullopt;
    value = entry.getInt();
  }
  ActivationBytes bytes{values[0], values[1], values[2], {}};
  if (auto perLayer =
          dyn_cast_or_null<DenseI64ArrayAttr>(attr.get(kPerLayerKey)))
    bytes.perLayer.assign(perLayer.asArrayRef().begin(),
                          perLayer.asArrayRef().end());
  return bytes;
}

void ddp::setActivationBytes(Operation *module, const ActivationBytes &bytes) {
  Builder builder(module->getContext());
  int64_t values[] = {bytes.layer, bytes.embedding, bytes.output};
  SmallVector<NamedAttribute> entries;
  for (auto [key, value] : llvm::zip_equal(kActivationKeys, values))
    entries.push_back(
        builder.getNamedAttr(key, builder.getI64IntegerAttr(value)));
  if (!bytes.perLayer.empty())
    entries.push_back(builder.getNamedAttr(
        kPerLayerKey, builder.getDenseI64ArrayAttr(bytes.perLayer)));
  attrHelper(module, &DDPDialect::getActivationBytesAttrHelper)
      .setAttr(module, builder.getDictionaryAttr(entries));
}

std::optional<double> ddp::getRoutedLimit(Operation *op) {
  if (auto attr = attrHelper(op, &DDPDialect::getRoutedAttrHelper).getAttr(op))
    return attr.getValueAsDouble();
  return std::nullopt;
}

void ddp::setRoutedLimit(Operation *op, double limit) {
  attrHelper(op, &DDPDialect::getRoutedAttrHelper)
      .setAttr(op, Builder(op->getContext()).getF64FloatAttr(limit));
}

double ddp::getRoutedFill(Operation *op) {
  if (auto attr =
          attrHelper(op, &DDPDialect::getRoutedFillAttrHelper).getAttr(op))
    return attr.getValueAsDouble();
  return 1;
}

void ddp::setRoutedFill(Operation *op, double fill) {
  attrHelper(op, &DDPDialect::getRoutedFillAttrHelper)
      .setAttr(op, Builder(op->getContext()).getF64FloatAttr(fill));
}

double ddp::getRoutedImbalanceFactor(Operation *op, double imbalance) {
  std::optional<double> limit = getRoutedLimit(op);
  if (!limit || !(imbalance > 1))
    return 1;
  return *limit > 0 ? std::min(imbalance, *limit) : imbalance;
}

double ddp::getRoutedCostFactor(Operation *op, double imbalance) {
  return getRoutedFill(op) * getRoutedImbalanceFactor(op, imbalance);
}

std::array<int64_t, 3> ddp::getCostedGemmShape(GemmOp gemm) {
  std::array<int64_t, 3> shape{gemm.getM(), gemm.getN(), gemm.getK()};
  double fill = getRoutedFill(gemm);
  if (fill < 1) {
    // The routed rows are M, but K for a weight gradient (rows^T x rows).
    int64_t &rows = gemm.getPhase() == GemmPhase::Wgrad ? shape[2] : shape[0];
    rows = std::max<int64_t>(1, std::llround(double(rows) * fill));
  }
  return shape;
}

/// The i64 the passes write; `minimum` is 0 for an index, 1 for a count.
static bool isI64AtLeast(Attribute value, int64_t minimum) {
  auto integer = dyn_cast<IntegerAttr>(value);
  return integer && integer.getType().isSignlessInteger(64) &&
         integer.getInt() >= minimum;
}

LogicalResult DDPDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto error = [&]() -> InFlightDiagnostic {
    return op->emitError() << "'" << name << "' ";
  };
  auto bucket = BucketAttrHelper::getNameStr();
  auto offset = BucketOffsetAttrHelper::getNameStr();

  if (name == bucket || name == offset) {
    if (name == bucket && op->getDialect() != this)
      return error() << "is only for ops of the ddp dialect";
    if (name == offset && !isa<GradReadyOp>(op))
      return error() << "is only for a ddp.grad_ready";
    if (!isI64AtLeast(value, 0))
      return error() << "must be a non-negative i64, got " << value;
    // A gradient's slot is the pair; either alone places it nowhere.
    StringRef other = name == bucket ? offset : bucket;
    if (isa<GradReadyOp>(op) && !op->hasAttr(other))
      return error() << "on a ddp.grad_ready needs '" << other << "'";
    return success();
  }
  if (name == FsdpUnitAttrHelper::getNameStr()) {
    if (!isa<GetParamShardOp>(op))
      return error() << "is only for a ddp.get_param_shard";
    if (!isI64AtLeast(value, 0))
      return error() << "must be a non-negative i64, got " << value;
    return success();
  }
  if (name == TpCommSplitsAttrHelper::getNameStr()) {
    if (!isa<GemmOp>(op))
      return error() << "is only for a ddp.gemm";
    if (!isI64AtLeast(value, 1))
      return error() << "must be a positive i64, got " << value;
    return success();
  }
  if (name == TpCommBulkAttrHelper::getNameStr()) {
    auto async = dyn_cast<AsyncOpInterface>(op);
    if (!isa<CollectiveOpInterface>(op) || !async || !async.isAsync())
      return error() << "is only for an asynchronous collective";
    if (!isa<UnitAttr>(value))
      return error() << "must be a unit attribute, got " << value;
    return success();
  }
  if (name == BatchSplitAttrHelper::getNameStr()) {
    if (!isa<FunctionOpInterface>(op))
      return error() << "is only for a function";
    if (!isI64AtLeast(value, 1))
      return error() << "must be a positive i64, got " << value;
    return success();
  }
  if (name == DelayedWgradAttrHelper::getNameStr()) {
    auto gemm = dyn_cast<GemmOp>(op);
    if (!gemm || gemm.getPhase() != GemmPhase::Wgrad)
      return error() << "is only for a ddp.gemm wgrad";
    if (!isa<UnitAttr>(value))
      return error() << "must be a unit attribute, got " << value;
    return success();
  }
  if (name == TpCommPredictedStepUsAttrHelper::getNameStr() ||
      name == ComputePredictedStepUsAttrHelper::getNameStr()) {
    if (!isa<FunctionOpInterface>(op))
      return error() << "is only for a function";
    auto time = dyn_cast<FloatAttr>(value);
    double us = time ? time.getValueAsDouble() : -1;
    if (!time || !time.getType().isF64() || !std::isfinite(us) || us < 0)
      return error() << "must be a non-negative f64, got " << value;
    return success();
  }
  if (name == PipelineStageAttrHelper::getNameStr()) {
    if (!isa<FunctionOpInterface>(op) && op->getDialect() != this)
      return error() << "is only for a function or an op of the ddp dialect";
    if (!isI64AtLeast(value, 0))
      return error() << "must be a non-negative i64, got " << value;
    return success();
  }
  if (name == KeepsPipelineOutputsAttrHelper::getNameStr()) {
    if (!isa<FunctionOpInterface>(op))
      return error() << "is only for a function";
    if (!isa<UnitAttr>(value))
      return error() << "must be a unit attribute, got " << value;
    return success();
  }
  if (name == ProgramGroupsAttrHelper::getNameStr()) {
    if (!isa<ModuleOp>(op))
      return error() << "is only for a module";
    auto groups = dyn_cast<ArrayAttr>(value);
    if (!groups || !llvm::all_of(groups, [](Attribute group) {
          auto text = dyn_cast<StringAttr>(group);
          return text && !text.getValue().empty();
        }))
      return error() << "must be an array of non-empty strings, got "
                     << value;
    return success();
  }
  if (name == TaskAttrHelper::getNameStr()) {
    if (op->getDialect() != this)
      return error() << "is only for ops of the ddp dialect";
    auto text = dyn_cast<StringAttr>(value);
    if (!text || !PipelineTask::parse(text.getValue()))
      return error() << "must be a string F<microbatch>.<chunk>, "
                        "B<microbatch>.<chunk> or W<microbatch>.<chunk>, got "
                     << value;
    return success();
  }
  if (name == ScheduleNodeAttrHelper::getNameStr()) {
    if (op->getDialect() != this)
      return error() << "is only for ops of the ddp dialect";
    auto text = dyn_cast<StringAttr>(value);
    if (!text || !ScheduleNode::parse(text.getValue()))
      return error() << "must be a string F<microbatch>.pre_process, "
                        "F<microbatch>.L<layer>.attn (.dispatch, .mlp, "
                        ".combine) or F<microbatch>.post_process, or the "
                        "same with B, got "
                     << value;
    return success();
  }
  if (name == RoutedAttrHelper::getNameStr()) {
    if (!isa<GemmOp, ComputeOp, CollectiveOpInterface>(op))
      return error() << "is only for a ddp.gemm, a ddp.compute or a "
                        "collective";
    auto limit = dyn_cast<FloatAttr>(value);
    double cap = limit ? limit.getValueAsDouble() : -1;
    if (!limit || !limit.getType().isF64() || !std::isfinite(cap) ||
        (cap != 0 && cap <= 1))
      return error() << "must be an f64, 0 (no cap) or a cap above 1, got "
                     << value;
    return success();
  }
  if (name == RoutedFillAttrHelper::getNameStr()) {
    if (!isa<GemmOp, ComputeOp, CollectiveOpInterface>(op))
      return error() << "is only for a ddp.gemm, a ddp.compute or a "
                        "collective";
    auto fill = dyn_cast<FloatAttr>(value);
    double fraction = fill ? fill.getValueAsDouble() : -1;
    if (!fill || !fill.getType().isF64() || !(fraction > 0 && fraction <= 1))
      return error() << "must be an f64 in (0, 1], got " << value;
    return success();
  }
  if (name == ActivationBytesAttrHelper::getNameStr()) {
    if (!isa<ModuleOp>(op))
      return error() << "is only for a module";
    auto entries = dyn_cast<DictionaryAttr>(value);
    Attribute perLayer = entries ? entries.get(kPerLayerKey) : nullptr;
    auto perLayerArray = dyn_cast_or_null<DenseI64ArrayAttr>(perLayer);
    bool valid = entries &&
                 entries.size() ==
                     std::size(kActivationKeys) + (perLayer ? 1 : 0) &&
                 (!perLayer ||
                  (perLayerArray &&
                   llvm::all_of(perLayerArray.asArrayRef(),
                                [](int64_t bytes) { return bytes >= 0; }))) &&
                 llvm::all_of(kActivationKeys, [&](StringRef key) {
                   Attribute entry = entries.get(key);
                   return entry && isI64AtLeast(entry, 0);
                 });
    if (!valid)
      return error() << "must be a dictionary of exactly 'layer', "
                        "'embedding' and 'output', each a non-negative i64 "
                        "(bytes), and with recomputation 'per_layer', an "
                        "array<i64> of non-negative bytes, got "
                     << value;
    return success();
  }
  // The attributes the dialect does not declare (ddp.buckets and the
  // others with attribute types of their own) are not checked here.
  return success();
}
