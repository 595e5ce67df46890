//===- PipelineSimulator.h - The stage programs of a pipeline ---*- C++ -*-===//
//
// Simulates the programs of every pipeline rank together (the functions
// ddp-pipeline-stages makes): each rank's program as simulateStep
// simulates a step, a receive over `pp` starting no earlier than the send
// it pairs with (the i-th send from rank a to rank b meets the i-th receive
// at b from a). The step ends when the last rank's does.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SIM_PIPELINESIMULATOR_H
#define DDP_SIM_PIPELINESIMULATOR_H

#include "ddp/Dialect/DDP/Analysis/ActivationMemory.h"
#include "ddp/Sim/Simulator.h"

namespace ddp::sim {

struct PipelineSimResult {
  /// Per pipeline rank, its program's simulation; stepTime is when that
  /// rank finishes.
  std::vector<SimResult> stages;
  /// When the last rank finishes.
  double stepTime = 0;
  /// No schedule of these programs ends sooner, communication free: for
  /// each rank r, the forwards of microbatch 0 through chunk 0 on the ranks
  /// before it (the fill), r's own pipeline tasks up to its last backward,
  /// the backwards of the last microbatch through chunk 0 on the ranks
  /// before it (the drain), then rank 0's compute after its last backward;
  /// and no rank's own bound (its compute, its busiest group's transfers).
  /// With uniform stages it is the ideal compute times 1 + (p - 1)/(v m),
  /// Narayanan et al.'s bubble; under ZB-H1, whose W passes after a rank's
  /// last backward run beside the drain, the ideal compute plus (p - 1)
  /// (T_F + T_B - T_W) (Qi et al.).
  double lowerBound = 0;
  /// Per pipeline rank, the model state its program keeps (the average
  /// over a sharding group's ranks, ModelState::getBytesPerRank).
  std::vector<double> modelStateBytes;
  /// Per pipeline rank, the activations it holds at its peak; empty when
  /// the module records no activation bytes (ddp.activation_bytes).
  std::vector<ActivationPeak> activations;
  /// What would lower a rank's memory (describeMemoryRemedies), for the
  /// summary's note when the peak does not fit the device.
  std::string memoryRemedies;

  /// Model state and activations at the peak of rank `rank`.
  double getMemoryBytes(size_t rank) const {
    return modelStateBytes[rank] +
           (activations.empty() ? 0 : double(activations[rank].bytes));
  }
  /// The rank that needs the most memory.
  size_t getMemoryPeakRank() const {
    size_t best = 0;
    for (size_t rank = 1; rank < modelStateBytes.size(); ++rank)
      if (getMemoryBytes(rank) > getMemoryBytes(best))
        best = rank;
    return best;
  }

  /// The time rank `rank`'s compute stream stands idle within the step:
  /// the pipeline's bubble and any communication it waits for.
  double getIdleTime(size_t rank) const {
    return stepTime - stages[rank].computeTime;
  }
  /// Of the idle time, what rank `rank` spends waiting for other ranks:
  /// for a peer's send before its receive's transfer starts, and after
  /// its own program until the last rank's ends. Megatron's pipeline
  /// bubble.
  double getBubbleTime(size_t rank) const {
    return stepTime - stages[rank].stepTime +
           stages[rank].pipelinePeerWaitTime;
  }
  /// Of the idle time, the stage-to-stage transfers the rank waits for.
  double getExposedP2PTime(size_t rank) const {
    return stages[rank].exposedPipelineTransferTime;
  }
  /// The rest of the idle time: the data- and tensor-parallel
  /// communication the rank waits for.
  double getOtherExposedCommTime(size_t rank) const {
    return std::max(0.0, getIdleTime(rank) - getBubbleTime(rank) -
                             getExposedP2PTime(rank));
  }
  /// The mean over ranks of getBubbleTime, getExposedP2PTime and
  /// getOtherExposedCommTime.
  double getMeanBubbleTime() const;
  double getMeanExposedP2PTime() const;
  double getMeanOtherExposedCommTime() const;

  /// Idle time over the rank's ideal compute (Megatron's bubble fraction
  /// when communication is free: (p - 1) / (v m)).
  double getIdleFraction(size_t rank) const {
    double ideal = stages[rank].idealComputeTime;
    return ideal > 0 ? getIdleTime(rank) / ideal : 0;
  }
};

/// Whether `module` holds pipeline stage programs.
bool hasPipelineStages(mlir::ModuleOp module);

/// Simulates the stage programs of `module`; fails with an error at the
/// module when it has none, a rank has none, or a rank's program waits for
/// a send that never comes. Each rank's events are recorded as
/// `options.recordEvents` says, on one clock for all ranks.
mlir::FailureOr<PipelineSimResult>
simulatePipeline(mlir::ModuleOp module, const timing::CostModel &model,
                 const SimOptions &options = {});

} // namespace ddp::sim

#endif // DDP_SIM_PIPELINESIMULATOR_H
