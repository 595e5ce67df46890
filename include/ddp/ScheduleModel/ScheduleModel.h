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
#include "llvm/Support/MathExtras.h"

#include <optional>

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

} // namespace ddp::schedule

#endif // DDP_SCHEDULEMODEL_SCHEDULEMODEL_H
