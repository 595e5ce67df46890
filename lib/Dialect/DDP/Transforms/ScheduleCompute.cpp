//===- ScheduleCompute.cpp - Move compute next to the communication ------===//
//
// ddp-schedule-compute: the weight-gradient GEMMs of the transformer layers
// held back into the waits after them (Megatron's delay_wgrad_compute, as a
// rule or chosen per layer). The order is decided first, by the list
// scheduler of ddp/ScheduleModel on the simulator's clock, so that the
// simulation of the result predicts what was chosen on; then the ops are
// moved and the decisions recorded. docs/Scheduling.md has the design.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/ScheduleModel/ScheduleModel.h"
#include "ddp/Support/FormatNumber.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

namespace ddp {
#define GEN_PASS_DEF_SCHEDULECOMPUTE
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {
class ScheduleComputePass
    : public ddp::impl::ScheduleComputeBase<ScheduleComputePass> {
public:
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;
};
} // namespace

/// GiB to bytes, for the cap.
static constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

llvm::Error ddp::checkMemoryCapGib(double gib) {
  // 8e9 GiB is under 2^63 bytes, the most a cap in int64 holds.
  if (std::isfinite(gib) && gib >= 0 && gib <= 8e9)
    return llvm::Error::success();
  return llvm::createStringError(
      "memory-cap-gib must be a number of GiB from 0 (no cap) to 8e9, got " +
      formatShortest(gib));
}

LogicalResult ScheduleComputePass::initialize(MLIRContext *context) {
  if (llvm::Error error = checkMemoryCapGib(memoryCapGib))
    return emitError(UnknownLoc::get(context))
           << "ddp-schedule-compute: " << llvm::toString(std::move(error));
  return success();
}

void ScheduleComputePass::runOnOperation() {
  func::FuncOp step = getOperation();
  if (wgradSchedule == WgradSchedule::InPlace || step.isExternal() ||
      !step.getBody().hasOneBlock())
    return;
  schedule::WgradScheduleOptions options;
  options.hardware = hardware;
  options.dataParallelSize = dataParallelSize;
  options.choosePerLayer = wgradSchedule == WgradSchedule::Auto;
  // A cap under one byte is still a cap.
  if (memoryCapGib > 0)
    options.memoryCapBytes = std::max<int64_t>(
        1, static_cast<int64_t>(memoryCapGib * kBytesPerGiB));
  FailureOr<schedule::WgradSchedule> chosen =
      schedule::scheduleWgrads(step, options);
  if (failed(chosen))
    return signalPassFailure();
  // The block in the chosen order: each op moved to the end, in turn.
  Block &body = step.getBody().front();
  if (chosen->order.size() != body.getOperations().size()) {
    step.emitError("ddp-schedule-compute: internal error: the order holds ")
        << chosen->order.size() << " of the step's "
        << body.getOperations().size() << " ops; please report it";
    return signalPassFailure();
  }
  for (Operation *op : chosen->order)
    op->moveBefore(&body, body.end());
  for (Operation *gemm : chosen->delayed)
    setDelayedWgrad(gemm);
  numDelayed += chosen->delayed.size();
  livePeakKiB += chosen->peakBytes / 1024;
  inPlaceLivePeakKiB += chosen->inPlacePeakBytes / 1024;
  setComputePredictedStepUs(step, chosen->predictedSeconds * 1e6);
}
