//===- PipelineExchangePlacement.h - Where stages exchange ------*- C++ -*-===//
//
// Part of ddp-pipeline-stages: where each rank's program issues the sends
// and receives of the values that cross pipeline ranks, and where it waits
// for them. Two rules: Megatron's P2PCommunicator calls
// (PipelineExchange.h), and ddp's own for overlap-p2p-comm on schedules
// Megatron does not overlap (each value sent once computed, received early).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_PIPELINEEXCHANGEPLACEMENT_H
#define DDP_DIALECT_DDP_TRANSFORMS_PIPELINEEXCHANGEPLACEMENT_H

#include "ddp/Stages/PipelineExchange.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <tuple>
#include <vector>

namespace ddp::pipeline {

/// A value computed on rank `from` and first used on rank `to` by `user`.
struct Transfer {
  mlir::Value value;
  int64_t from, to;
  mlir::Operation *user;
  /// The signed distance it travels over `pp` (+ for activations).
  int64_t offset;
  /// The earliest index in the sender's order it can be sent before.
  size_t sendAt = 0;
};

/// Ordered tasks: phase, microbatch, chunk.
using TaskKey = std::tuple<int, int64_t, int64_t>;
inline TaskKey getKey(const PipelineTask &task) {
  return {static_cast<int>(task.phase), task.microbatch, task.chunk};
}

/// Each rank's ops in the order it runs them: the ops before the pipeline,
/// the schedule's tasks from `taskBegin`, the tasks that follow the
/// schedule (deferred weight gradients) from `taskEnd`, the ops after the
/// pipeline from `postStart`.
struct StageOrders {
  PipelineScheduleKind kind;
  PipelineShape shape;
  std::vector<std::vector<mlir::Operation *>> orders;
  std::vector<size_t> taskBegin, taskEnd, postStart;
  /// Per rank, for each backward run in a combined step, where that step's
  /// tail begins in the order: its calls go there.
  std::vector<std::map<TaskKey, size_t>> combinedTails;
  /// Where errors about the whole pipeline point.
  mlir::Location loc;
};

/// One send or receive of a transfer.
struct ExchangeOp {
  size_t transfer;
  bool isSend;
};

/// Before an op: issue `ops` together (and wait them all at once when
/// `blocking`), or wait for `ops` issued earlier.
struct ExchangeAction {
  bool isWait = false;
  bool blocking = false;
  llvm::SmallVector<ExchangeOp> ops;
};

/// Per rank, the actions before the op at each index of its order (the
/// order's size: after its last op). A receive not waited by an action is
/// waited right before its first use, and every operation not waited by
/// then at the end of the program.
using ExchangePlan = std::vector<std::map<size_t, std::vector<ExchangeAction>>>;

/// Megatron's calls (getStageExchanges) for the pipeline's transfers.
mlir::FailureOr<ExchangePlan>
placeAsMegatron(const StageOrders &stages,
                const std::vector<Transfer> &transfers,
                const PipelineExchangeOptions &options);

/// ddp's rule: each value sent once computed; each receive posted early,
/// at the first task by which its value has been sent in a run where a
/// forward takes one unit and a backward two. With `deallocate`
/// (deallocate_pipeline_outputs), each send of a forward's output is
/// waited before the sender's next forward.
mlir::FailureOr<ExchangePlan>
placeEarly(const StageOrders &stages, const std::vector<Transfer> &transfers,
           bool deallocate);

/// Fails, naming the two values, unless every receive gets the value it
/// was placed for: between two ranks, messages match in issue order (MPI
/// and NCCL without tags), whichever direction of the pipeline they serve.
/// `batchedTwoWay`: Megatron's batched calls on 2 ranks, whose ordering
/// Megatron refuses; the error then names the fix.
mlir::LogicalResult checkDelivery(const ExchangePlan &plan,
                                  const std::vector<Transfer> &transfers,
                                  llvm::StringRef schedule,
                                  bool batchedTwoWay);

} // namespace ddp::pipeline

#endif // DDP_DIALECT_DDP_TRANSFORMS_PIPELINEEXCHANGEPLACEMENT_H
