//===- FsdpChoice.cpp - policy=auto's FSDP prefetch and resharding --------===//
//
// Every candidate is scheduled with every other decision of the pipeline
// and simulated, so the choice is made on the step time the finished
// schedule predicts; the live tensors are those of its final order
// (schedule::getLiveTensorPeak: a gathered unit lives from its all-gather
// to the last read of its parameters).
//
//===----------------------------------------------------------------------===//

#include "FsdpChoice.h"

#include "CandidateModule.h"

#include "ddp/ScheduleModel/ScheduleModel.h"
#include "ddp/Sim/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
using namespace ddp;

namespace {
struct Priced {
  double stepUs = 0;
  int64_t peakBytes = 0;
};
} // namespace

FailureOr<FsdpSchedule> ddp::chooseFsdpSchedule(
    ModuleOp module, const FsdpChoiceOptions &options,
    function_ref<LogicalResult(FsdpSchedule, ModuleOp)> schedule) {
  FailureOr<CandidatePricing> pricing = getCandidatePricing(
      module, options.hardware, options.dataParallelSize,
      options.moeImbalance);
  if (failed(pricing))
    return failure();
  auto price = [&](FsdpSchedule candidate) -> FailureOr<Priced> {
    ModuleOp copy = createCandidateModule(module);
    llvm::scope_exit erase([&] { copy.erase(); });
    if (failed(schedule(candidate, copy)))
      return failure();
    FailureOr<func::FuncOp> step = sim::findStepToSimulate(copy, "");
    if (failed(step))
      return failure();
    FailureOr<sim::SimResult> result =
        sim::simulateStep(*step, pricing->model, pricing->options);
    if (failed(result))
      return failure();
    return Priced{result->stepTime, schedule::getLiveTensorPeak(*step)};
  };

  unsigned givenKeep = options.keepLastUnits.value_or(0);
  FsdpSchedule baseline{options.prefetch.value_or(1),
                        options.reshardAfterForward.value_or(true), givenKeep};
  // Under a cap the defaults may fail (the compute schedule's own check of
  // the cap): the other candidates may fit.
  FailureOr<Priced> baselinePrice = price(baseline);
  if (failed(baselinePrice) && options.memoryCapBytes <= 0)
    return failure();
  int64_t cap = options.memoryCapBytes > 0 ? options.memoryCapBytes
                                           : baselinePrice->peakBytes;
  // The baseline first, so that it wins ties; where even it holds more
  // than the cap, a slower candidate that fits is better, and where none
  // fits the baseline stays (the cap's own check then reports).
  std::optional<FsdpSchedule> best;
  double bestUs = 0;
  auto consider = [&](FsdpSchedule candidate, const Priced &priced) {
    if (priced.peakBytes > cap || (best && priced.stepUs >= bestUs))
      return false;
    best = candidate;
    bestUs = priced.stepUs;
    return true;
  };
  auto fits = [&](FsdpSchedule candidate) -> std::optional<Priced> {
    FailureOr<Priced> priced = price(candidate);
    if (failed(priced) || priced->peakBytes > cap)
      return std::nullopt;
    return *priced;
  };
  // Where a candidate reshards, the most units fsdp-keep-last-units keeps
  // within the cap, all of them included (with resharding given, no
  // candidate without it keeps them all): keeping the last unit is what
  // resharding does anyway (nothing of another unit is read between its
  // forward and backward), so from 2 on; each kept unit holds its
  // parameters longer, so the peak grows with the count and a bisection
  // finds it. 2 first: where it does not fit (no cap: usually), one
  // schedule is all it costs.
  auto keepMost = [&](FsdpSchedule candidate) {
    if (options.keepLastUnits || !candidate.reshardAfterForward ||
        options.numUnits < 2)
      return;
    candidate.keepLastUnits = 2;
    std::optional<Priced> kept = fits(candidate);
    if (!kept)
      return;
    unsigned fitting = 2, exceeding = options.numUnits + 1;
    while (exceeding - fitting > 1) {
      candidate.keepLastUnits = fitting + (exceeding - fitting) / 2;
      if (std::optional<Priced> priced = fits(candidate)) {
        fitting = candidate.keepLastUnits;
        kept = priced;
      } else {
        exceeding = candidate.keepLastUnits;
      }
    }
    candidate.keepLastUnits = fitting;
    consider(candidate, *kept);
  };
  // Keeping units adds to a candidate's peak: only one that fits is tried
  // with them.
  if (succeeded(baselinePrice)) {
    consider(baseline, *baselinePrice);
    if (baselinePrice->peakBytes <= cap)
      keepMost(baseline);
  }
  SmallVector<unsigned> prefetches = {0, 1, 2};
  if (options.prefetch)
    prefetches = {*options.prefetch};
  SmallVector<bool> reshards = {true, false};
  if (options.reshardAfterForward)
    reshards = {*options.reshardAfterForward};
  for (bool reshard : reshards)
    for (unsigned prefetch : prefetches) {
      if (prefetch == baseline.prefetch &&
          reshard == baseline.reshardAfterForward)
        continue;
      // A candidate that fails is not chosen; the baseline reports.
      FsdpSchedule candidate{prefetch, reshard, givenKeep};
      FailureOr<Priced> priced = price(candidate);
      if (failed(priced))
        continue;
      consider(candidate, *priced);
      if (priced->peakBytes <= cap)
        keepMost(candidate);
    }
  if (!best && failed(baselinePrice))
    return failure();
  return best.value_or(baseline);
}
