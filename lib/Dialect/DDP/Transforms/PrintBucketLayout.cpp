//===- PrintBucketLayout.cpp - The bucket layout as JSON or a table -------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace ddp {
#define GEN_PASS_DEF_PRINTBUCKETLAYOUT
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;
namespace bk = ddp::bucketing;

namespace {

class PrintBucketLayoutPass
    : public ddp::impl::PrintBucketLayoutBase<PrintBucketLayoutPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

/// The layout recorded on `step` in the bucketing library's terms, checked
/// as ddp-bucketize checks it, so that the report shows only layouts that
/// can be materialised. With `sharded`, every bucket's group size must
/// divide its padded size.
static LogicalResult readLayout(func::FuncOp step, bool sharded,
                                std::vector<bk::Gradient> &gradients,
                                bk::BucketLayout &layout) {
  FailureOr<SmallVector<RecordedBucket>> recorded = readRecordedBuckets(step);
  if (failed(recorded))
    return failure();
  for (auto [index, entry] : llvm::enumerate(*recorded)) {
    FailureOr<int64_t> groupSize = checkBucketLayout(step, index, entry);
    if (failed(groupSize))
      return failure();
    const BucketSpec &spec = entry.spec;
    bk::Bucket bucket;
    bucket.type = *getElementTypeOf(spec.elementType);
    bucket.group = getGroupName(spec.axes);
    bucket.numel = spec.numel;
    bucket.paddedNumel = spec.paddedNumel;
    if (sharded) {
      bucket.groupSize = *groupSize;
      if (bucket.paddedNumel % bucket.groupSize != 0)
        return step.emitError("bucket ")
               << index << " of " << bucket.paddedNumel
               << " elements does not split over its " << bucket.groupSize
               << " ranks; lay it out with use-distributed-optimizer";
    }
    for (const BucketMember &member : entry.members) {
      GradReadyOp ready = member.ready;
      bk::Gradient gradient;
      gradient.name = ready.getParam().str();
      gradient.numel = ready.getType().getNumElements();
      bucket.entries.push_back({gradients.size(), member.offset});
      gradients.push_back(std::move(gradient));
    }
    layout.buckets.push_back(std::move(bucket));
  }
  return success();
}

void PrintBucketLayoutPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (format != "json" && format != "table") {
    module.emitError("ddp-print-bucket-layout: format '")
        << format << "' is neither json nor table";
    return signalPassFailure();
  }
  SmallVector<func::FuncOp> steps;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(kBucketsAttrName))
      steps.push_back(func);
  if (steps.size() > 1) {
    steps[1].emitError("the layout report covers one step, but this is the "
                       "second function with '")
        << kBucketsAttrName << "'";
    return signalPassFailure();
  }
  std::vector<bk::Gradient> gradients;
  bk::BucketLayout layout;
  if (!steps.empty() &&
      failed(readLayout(steps.front(), useDistributedOptimizer, gradients,
                        layout)))
    return signalPassFailure();

  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputPath, &error);
  if (!output) {
    module.emitError("cannot write the bucket layout: ") << error;
    return signalPassFailure();
  }
  if (format == "table") {
    bk::writeLayoutTable(output->os(), layout, gradients,
                         useDistributedOptimizer);
  } else {
    {
      llvm::json::OStream json(output->os(), /*IndentSize=*/2);
      bk::writeLayoutJSON(json, layout, gradients, useDistributedOptimizer);
    }
    output->os() << "\n";
  }
  if (llvm::Error writeError = finishOutputFile(*output, outputPath)) {
    module.emitError("cannot write the bucket layout to '")
        << outputPath
        << "': " << llvm::errorToErrorCode(std::move(writeError)).message();
    return signalPassFailure();
  }
  markAllAnalysesPreserved();
}
