//===- ScheduleModel.h - The step as the schedulers price it ----*- C++ -*-===//
//
// What the scheduling passes decide on, shared so that each pass reads
// decide -> record -> rewrite: the unscheduled step turned into the timeline
// the `auto` bucketing policy searches (buildBucketModel), and the search of
// the tensor-parallel split counts on the simulator's clock
// (searchTpSplits). Both price the IR with the simulator (lib/Sim), so that
// ddp-simulate of the rewritten step predicts what was chosen on. Nothing
// here changes the IR; errors are emitted on the ops that cause them.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SCHEDULEMODEL_SCHEDULEMODEL_H
#define DDP_SCHEDULEMODEL_SCHEDULEMODEL_H

#include "ddp/Bucketing/StepTimeline.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

#include <optional>
#include <vector>

namespace ddp::schedule {

//===----------------------------------------------------------------------===//
// Bucketing: the unscheduled step as a StepTimeline
//===----------------------------------------------------------------------===//

/// A gradient of the unscheduled step and the synchronous all-reduce that
/// reduces it (what bucketing replaces).
struct GradientReduction {
  GradReadyOp ready;
  AllReduceOp allReduce;
};

/// The bucketing options that change how the step is replayed.
struct BucketModelOptions {
  /// The hardware profile that prices the step.
  std::string hardware;
  /// The `dp` option: the data-parallel size simulated (0: the IR's).
  int64_t dataParallelSize = 0;
  bool useDistributedOptimizer = false;
  bool overlapParamGather = false;
  bool alignParamGather = false;
  int64_t numDistributedOptimizerInstances = 1;
  bool averageInCollective = false;
};

/// The step as the auto policy replays it, and what its buckets cost.
struct BucketModel {
  bucketing::StepTimeline timeline;
  bucketing::BucketCosts costs;
};

/// Simulates the unscheduled `step` and records its ops, in block order, as
/// the timeline of `gradients` (one per entry of `reductions`, in ready
/// order). Fails, with an error on the op, where the step is not in the
/// form the replay models.
mlir::FailureOr<BucketModel>
buildBucketModel(mlir::func::FuncOp step,
                 llvm::ArrayRef<GradientReduction> reductions,
                 llvm::ArrayRef<bucketing::Gradient> gradients,
                 const BucketModelOptions &options);

//===----------------------------------------------------------------------===//
// Tensor-parallel overlap: the split count of each GEMM
//===----------------------------------------------------------------------===//

/// A GEMM whose result one synchronous collective reduces, or whose lhs one
/// synchronous all-gather gathers (for it, and for readers after it).
struct TpSplitCandidate {
  GemmOp gemm;
  /// A ddp.reduce_scatter or ddp.all_reduce after the GEMM, or a
  /// ddp.all_gather before it.
  CollectiveOpInterface collective;
  /// The rows of a chunk interleave over the group for a reduce-scatter or
  /// an all-gather (the group's size), and are contiguous for an all-reduce
  /// (1).
  int64_t interleave = 1;
  /// Whether ops after the GEMM read the gathered tensor whole: the
  /// gathered chunks are then stacked back for them, a copy.
  bool gatherReadAfter = false;
  /// The decision; 1 leaves the GEMM whole.
  int64_t splits = 1;
  /// Whether the split count is given (by the IR or tp-comm-num-splits)
  /// rather than searched.
  bool fixed = false;

  bool allows(int64_t count) {
    // A user's count can be anything up to INT64_MAX: count x interleave
    // must not wrap into a product that happens to divide the rows.
    int64_t parts = 0;
    return !llvm::MulOverflow(count, interleave, parts) &&
           gemm.getM() % parts == 0;
  }
  bool gathersInput() const { return llvm::isa<AllGatherOp>(collective); }
};

/// Sets the split count of every candidate that is not fixed: op by op on
/// the simulator's clock, the count the rows allow whose region frees the
/// compute stream soonest, with the collectives of `bulk` issued
/// asynchronously and waited before their first reader. Returns the
/// predicted step time in seconds, or nullopt when no count was searched.
mlir::FailureOr<std::optional<double>>
searchTpSplits(mlir::func::FuncOp step,
               llvm::MutableArrayRef<TpSplitCandidate> candidates,
               llvm::ArrayRef<mlir::Operation *> bulk, llvm::StringRef hardware,
               int64_t dataParallelSize);

//===----------------------------------------------------------------------===//
// Compute order: weight gradients delayed into the communication after them
//===----------------------------------------------------------------------===//

/// How ddp-schedule-compute orders the weight-gradient GEMMs.
struct WgradScheduleOptions {
  /// The hardware profile that prices the step.
  std::string hardware;
  /// The `dp` option: the data-parallel size simulated (0: the IR's).
  int64_t dataParallelSize = 0;
  /// Delay only the layers where delaying fills a wait, and only when that
  /// ends the simulated step sooner (auto); otherwise every layer's.
  bool choosePerLayer = false;
  /// The most bytes of tensors the step may hold live at once
  /// (getLiveTensorPeak); 0: no cap.
  int64_t memoryCapBytes = 0;
};

/// The order scheduleWgrads chose, and what it predicts.
struct WgradSchedule {
  /// Every op of the step's block, in the new order.
  std::vector<mlir::Operation *> order;
  /// The wgrad GEMMs that run later than they did.
  llvm::DenseSet<mlir::Operation *> delayed;
  /// The simulated step time of `order`.
  double predictedSeconds = 0;
  /// getLiveTensorPeak of `order`, and of the block as it was.
  int64_t peakBytes = 0;
  int64_t inPlacePeakBytes = 0;
};

/// The step's wgrad GEMMs of transformer layers, each delayed into the
/// waits that follow it as long as it may stay behind
/// (docs/ComputeScheduling.md): a list scheduler on the simulator's clock
/// that keeps every other op in its order. Fails, with an error on the op,
/// where the simulator cannot price the step or the cap is below what the
/// step needs in its own order.
mlir::FailureOr<WgradSchedule>
scheduleWgrads(mlir::func::FuncOp step, const WgradScheduleOptions &options);

/// The most bytes the tensors an order of ops makes are live at once, each
/// from the op that makes it to its last reader (views, parameters and the
/// step's arguments not counted): the memory a reordering can change.
int64_t getLiveTensorPeak(llvm::ArrayRef<mlir::Operation *> order);
/// getLiveTensorPeak of `step`'s body in its order.
int64_t getLiveTensorPeak(mlir::func::FuncOp step);

} // namespace ddp::schedule

#endif // DDP_SCHEDULEMODEL_SCHEDULEMODEL_H
