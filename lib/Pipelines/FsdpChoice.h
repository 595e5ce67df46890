//===- FsdpChoice.h - policy=auto's FSDP prefetch and resharding -*- C++ -*-===//
//
// How far ahead ddp-shard-params gathers each unit (fsdp-prefetch) and
// whether it frees a unit's parameters after its forward
// (reshard-after-forward), when policy=auto runs
// data-parallel-sharding-strategy=optim_grads_params: each candidate
// scheduled whole and simulated; the fastest kept among those that hold no
// more live tensors than FSDP2's defaults (or than memory-cap-gib).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_PIPELINES_FSDPCHOICE_H
#define DDP_LIB_PIPELINES_FSDPCHOICE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ddp {

/// One candidate: fsdp-prefetch, reshard-after-forward,
/// fsdp-keep-last-units, and fsdp-unit-prefetch's depths (none: prefetch
/// for every unit).
struct FsdpSchedule {
  unsigned prefetch = 1;
  bool reshardAfterForward = true;
  unsigned keepLastUnits = 0;
  llvm::SmallVector<unsigned> unitPrefetch;
};

/// What auto compares the candidates with.
struct FsdpChoiceOptions {
  /// The hardware profile, data-parallel size and routing imbalance the
  /// candidates are priced with (getCandidatePricing).
  llvm::StringRef hardware;
  int64_t dataParallelSize = 0;
  double moeImbalance = 1;
  /// The most bytes of live tensors a candidate may hold; 0: no more than
  /// the baseline.
  int64_t memoryCapBytes = 0;
  /// The values given or recorded, which auto keeps; a depth per unit is
  /// chosen only where neither prefetch nor unitPrefetch is.
  std::optional<unsigned> prefetch;
  bool unitPrefetchGiven = false;
  std::optional<bool> reshardAfterForward;
  std::optional<unsigned> keepLastUnits;
};

/// The fastest candidate on the simulated step time, among FSDP2's defaults
/// (prefetch 1, resharding) with the given values over them, and prefetch
/// 0, 1 and 2 with and without resharding, where what the options fix is
/// fixed; `schedule(candidate, copy)` schedules `copy`, a copy of `module`
/// nested in it for the time of the call. Holding more live tensors than
/// the cap (without one: than the defaults) rules a candidate out; where
/// every candidate does, the defaults stay. Each candidate that reshards
/// is also tried with the most units fsdp-keep-last-units can keep within
/// the cap (by bisection: each kept unit holds its parameters longer).
/// Then, unless a depth is given, the depths per unit: where the chosen
/// schedule's compute waits for a unit's gathers, that unit is gathered one
/// run further ahead, round after round while the step gets faster within
/// the cap; then the units whose gathers never held compute up are
/// gathered one run later, where that is no slower and holds less.
/// Values the options fix stay fixed. Fails when no candidate can be
/// scheduled and priced within the cap (without one: when the defaults
/// cannot).
mlir::FailureOr<FsdpSchedule> chooseFsdpSchedule(
    mlir::ModuleOp module, const FsdpChoiceOptions &options,
    llvm::function_ref<mlir::LogicalResult(FsdpSchedule, mlir::ModuleOp)>
        schedule);

} // namespace ddp

#endif // DDP_LIB_PIPELINES_FSDPCHOICE_H
