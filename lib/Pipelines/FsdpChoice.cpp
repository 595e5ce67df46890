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

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
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
  /// Seconds the compute stream waited on each unit's gathers (by
  /// ddp.fsdp_unit), when the events were recorded.
  llvm::SmallVector<double> exposedByUnit;
  /// The step's units (one more than the largest ddp.fsdp_unit).
  unsigned numUnits = 0;
};
} // namespace

/// The compute stream's waits on the gathers ddp-shard-params issued, by
/// the unit each gathers (the ddp.fsdp_unit of its shard).
static llvm::SmallVector<double>
getExposureByUnit(const sim::SimResult &result) {
  llvm::SmallVector<double> byUnit;
  for (const sim::TimelineEvent &event : result.events) {
    auto wait = dyn_cast_or_null<WaitOp>(event.op);
    if (event.category != sim::EventCategory::Wait || event.stream != 0 ||
        !wait)
      continue;
    auto gather = wait.getToken().getDefiningOp<AllGatherOp>();
    auto shard = gather ? gather.getInput().getDefiningOp<GetParamShardOp>()
                        : GetParamShardOp();
    std::optional<int64_t> unit = shard ? getFsdpUnit(shard) : std::nullopt;
    if (!unit)
      continue;
    if (byUnit.size() <= size_t(*unit))
      byUnit.resize(size_t(*unit) + 1, 0);
    byUnit[size_t(*unit)] += event.duration;
  }
  return byUnit;
}

/// The units' count: one more than the largest ddp.fsdp_unit.
static unsigned countUnits(func::FuncOp step) {
  unsigned count = 0;
  step.walk([&](GetParamShardOp shard) {
    if (std::optional<int64_t> unit = getFsdpUnit(shard))
      count = std::max(count, unsigned(*unit) + 1);
  });
  return count;
}

/// The least a round of deeper gathers must gain, as a fraction of the
/// step.
static constexpr double kMinGain = 1e-3;

/// The depths per unit from `chosen`'s single depth, priced `chosenPrice`
/// (see the header). `price(candidate)` schedules and simulates.
template <typename Price>
static FsdpSchedule refineUnitPrefetch(FsdpSchedule chosen,
                                       const Priced &chosenPrice, int64_t cap,
                                       Price &price) {
  unsigned numUnits = chosenPrice.numUnits;
  if (numUnits == 0)
    return chosen;
  FailureOr<Priced> current = chosenPrice;
  FsdpSchedule best = chosen;
  best.unitPrefetch.assign(numUnits, chosen.prefetch);
  // A wait shorter than this is the simulator's rounding, not a unit's
  // gather holding compute up.
  auto exposed = [&](const Priced &priced, unsigned unit) {
    return unit < priced.exposedByUnit.size() &&
           priced.exposedByUnit[unit] > 1e-6;
  };
  // Deeper where compute waits, one run per round, six rounds at most
  // (each costs schedules and simulations). Where deepening every such
  // unit holds more than the cap, the most of them that fit are deepened,
  // the longest waits first and, among equal ones, the earliest units in
  // forward order: their runs are gathered when fewer activations are
  // live (the peak is at the turn from the last forward to the first
  // backward), so they add least to it. A bisection on the count, as
  // gathering more units ahead holds more at once. The unit whose
  // deepening crossed the cap is left out of the later rounds, which try
  // the others.
  SmallVector<bool> blocked(numUnits, false);
  for (unsigned round = 0; round < 6; ++round) {
    SmallVector<unsigned> waiting;
    for (unsigned unit = 0; unit < numUnits; ++unit)
      if (exposed(*current, unit) && !blocked[unit])
        waiting.push_back(unit);
    if (waiting.empty())
      break;
    llvm::stable_sort(waiting, [&](unsigned a, unsigned b) {
      return current->exposedByUnit[a] > current->exposedByUnit[b];
    });
    auto deepen = [&](size_t count) {
      FsdpSchedule deeper = best;
      for (size_t index = 0; index < count; ++index)
        ++deeper.unitPrefetch[waiting[index]];
      return deeper;
    };
    // A round is worth its schedules only where it gains at least 0.1 %
    // of the step: on a step whose communication exceeds its compute
    // every unit waits, and gathering further ahead gains next to
    // nothing (gpt3-175b at dp 64: 5 of 16766 ms, for 3 s of scheduling).
    auto gains = [&](const FailureOr<Priced> &priced) {
      return succeeded(priced) &&
             priced->stepUs < current->stepUs * (1 - kMinGain);
    };
    FsdpSchedule deeper = deepen(waiting.size());
    FailureOr<Priced> priced = price(deeper);
    // Deepening fewer units gains less than deepening them all.
    if (!gains(priced))
      break;
    if (priced->peakBytes > cap) {
      // The largest count that fits: [fitting, exceeding).
      size_t fitting = 0, exceeding = waiting.size();
      FailureOr<Priced> fitted = failure();
      while (exceeding - fitting > 1) {
        size_t count = fitting + (exceeding - fitting) / 2;
        FailureOr<Priced> probe = price(deepen(count));
        if (succeeded(probe) && probe->peakBytes <= cap) {
          fitting = count;
          fitted = std::move(probe);
        } else {
          exceeding = count;
        }
      }
      // The unit that crossed the cap sits out the later rounds, which may
      // still gain with the others (llama2-70b at dp 8: 5832.67 -> 5784.52
      // ms over rounds whose first fits gained too little).
      blocked[waiting[fitting]] = true;
      deeper = deepen(fitting);
      priced = std::move(fitted);
    }
    if (succeeded(priced) && gains(priced) && priced->peakBytes <= cap) {
      best = std::move(deeper);
      current = std::move(priced);
    }
  }
  // Shallower where compute never waited: fewer units gathered at once,
  // kept only where the step is no slower and holds less.
  FsdpSchedule shallower = best;
  bool changed = false;
  for (unsigned unit = 0; unit < numUnits; ++unit)
    if (!exposed(*current, unit) && shallower.unitPrefetch[unit] > 0) {
      --shallower.unitPrefetch[unit];
      changed = true;
    }
  if (changed) {
    FailureOr<Priced> priced = price(shallower);
    if (succeeded(priced) && priced->stepUs <= current->stepUs &&
        priced->peakBytes < current->peakBytes)
      best = std::move(shallower);
  }
  // One depth for every unit is fsdp-prefetch's.
  if (llvm::all_equal(best.unitPrefetch)) {
    best.prefetch = best.unitPrefetch.front();
    best.unitPrefetch.clear();
  }
  return best;
}

FailureOr<FsdpSchedule> ddp::chooseFsdpSchedule(
    ModuleOp module, const FsdpChoiceOptions &options,
    function_ref<LogicalResult(FsdpSchedule, ModuleOp)> schedule) {
  FailureOr<CandidatePricing> pricing = getCandidatePricing(
      module, options.hardware, options.dataParallelSize,
      options.moeImbalance);
  if (failed(pricing))
    return failure();
  // Each with the waits on each unit's gathers, which the depths per unit
  // are chosen by.
  auto price = [&](const FsdpSchedule &candidate) -> FailureOr<Priced> {
    ModuleOp copy = createCandidateModule(module);
    llvm::scope_exit erase([&] { copy.erase(); });
    if (failed(schedule(candidate, copy)))
      return failure();
    FailureOr<func::FuncOp> step = sim::findStepToSimulate(copy, "");
    if (failed(step))
      return failure();
    sim::SimOptions simOptions = pricing->options;
    simOptions.recordEvents = true;
    FailureOr<sim::SimResult> result =
        sim::simulateStep(*step, pricing->model, simOptions);
    if (failed(result))
      return failure();
    return Priced{result->stepTime, schedule::getLiveTensorPeak(*step),
                  getExposureByUnit(*result), countUnits(*step)};
  };

  unsigned givenKeep = options.keepLastUnits.value_or(0);
  FsdpSchedule baseline{options.prefetch.value_or(1),
                        options.reshardAfterForward.value_or(true), givenKeep,
                        {}};
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
  std::optional<Priced> bestPrice;
  auto consider = [&](FsdpSchedule candidate, const Priced &priced) {
    if (priced.peakBytes > cap ||
        (best && priced.stepUs >= bestPrice->stepUs))
      return false;
    best = candidate;
    bestPrice = priced;
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
  auto keepMost = [&](FsdpSchedule candidate, unsigned numUnits) {
    if (options.keepLastUnits || !candidate.reshardAfterForward ||
        numUnits < 2)
      return;
    candidate.keepLastUnits = 2;
    std::optional<Priced> kept = fits(candidate);
    if (!kept)
      return;
    unsigned fitting = 2, exceeding = numUnits + 1;
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
      keepMost(baseline, baselinePrice->numUnits);
  }
  SmallVector<unsigned> prefetches = {0, 1, 2};
  // A given depth per unit replaces fsdp-prefetch: one value is all.
  if (options.prefetch || options.unitPrefetchGiven)
    prefetches = {baseline.prefetch};
  SmallVector<bool> reshards = {true, false};
  if (options.reshardAfterForward)
    reshards = {*options.reshardAfterForward};
  for (bool reshard : reshards)
    for (unsigned prefetch : prefetches) {
      if (prefetch == baseline.prefetch &&
          reshard == baseline.reshardAfterForward)
        continue;
      // A candidate that fails is not chosen; the baseline reports.
      FsdpSchedule candidate{prefetch, reshard, givenKeep, {}};
      FailureOr<Priced> priced = price(candidate);
      if (failed(priced))
        continue;
      consider(candidate, *priced);
      if (priced->peakBytes <= cap)
        keepMost(candidate, priced->numUnits);
    }
  if (!best && failed(baselinePrice))
    return failure();
  FsdpSchedule chosen = best.value_or(baseline);
  if (options.prefetch || options.unitPrefetchGiven)
    return chosen;
  return refineUnitPrefetch(chosen, best ? *bestPrice : *baselinePrice, cap,
                            price);
}
