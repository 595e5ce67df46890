//===- MoEOverlapChoice.h - policy=auto's batch-level MoE overlap -*- C++ -*-===//
//
// Whether ddp-schedule's auto policy runs Megatron's combined 1F1B
// (overlap-moe-expert-parallel-comm) and, within it, its delayed weight
// gradients (delay-wgrad-compute): the step scheduled with a flag and
// without it, each simulated, the faster kept.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_PIPELINES_MOEOVERLAPCHOICE_H
#define DDP_LIB_PIPELINES_MOEOVERLAPCHOICE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace ddp {

/// Whether Megatron would run its combined 1F1B on the module's step: some
/// op records its node (`ddp.schedule_node`, which ddp-combined-1f1b orders
/// by), the mesh's `ep` axis has more than one rank, and every parameter is
/// bf16 or f16 (TransformerConfig's asserts).
bool isBatchLevelOverlapCandidate(mlir::ModuleOp module);

/// The simulated step times of `module` scheduled without and with a
/// flag: `schedule(on, candidate)` schedules `candidate`, a copy of the
/// module nested in it for the time of the call. Priced with the hardware
/// profile `hardware` at data-parallel size `dataParallelSize` (0: the
/// mesh's) and routing imbalance `moeImbalance`. Fails when either
/// candidate fails.
struct FlagTimes {
  double withoutUs = 0;
  double withUs = 0;
};
mlir::FailureOr<FlagTimes> simulateFlagChoice(
    mlir::ModuleOp module, llvm::StringRef hardware, int64_t dataParallelSize,
    double moeImbalance,
    llvm::function_ref<mlir::LogicalResult(bool, mlir::ModuleOp)> schedule);

} // namespace ddp

#endif // DDP_LIB_PIPELINES_MOEOVERLAPCHOICE_H
