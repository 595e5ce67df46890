//===- PipelinePlanner.h - auto's choice of a pipeline schedule -*- C++ -*-===//
//
// policy=auto for a pipelined model: the schedule (1F1B or interleaved),
// the virtual size (model chunks per stage), the microbatch group size and
// whether the p2p calls overlap, chosen so that the simulated step is the
// fastest within the device's memory. Each candidate is the model imported
// at that virtual size (the layers' split is the importer's), scheduled
// with the given ddp-schedule options and simulated with every pipeline
// rank (docs/Pipeline.md#auto).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_PLAN_PIPELINEPLANNER_H
#define DDP_PLAN_PIPELINEPLANNER_H

#include "ddp/Import/ModelConfig.h"
#include "ddp/Sim/PipelineSimulator.h"
#include "ddp/Stages/PipelineSchedule.h"

#include "llvm/ADT/FunctionExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class DictionaryAttr;
class MLIRContext;
} // namespace mlir

namespace ddp::plan {

/// One way to run a config's pipeline.
struct PipelineChoice {
  PipelineScheduleKind schedule = PipelineScheduleKind::OneFOneB;
  /// Model chunks per stage.
  int64_t virtualSize = 1;
  /// The interleaved schedule's microbatch_group_size_per_vp_stage; 0 on
  /// 1F1B.
  int64_t microbatchGroupSize = 0;
  /// Megatron's overlap_p2p_comm (on 1F1B, ddp's early receives).
  bool overlapP2PComm = false;

  /// `1f1b` or `interleaved v=<v> group=<g>` (another schedule with a
  /// virtual size: `gpipe v=<v>`), and `overlap-p2p-comm`.
  std::string describe() const;
  bool operator==(const PipelineChoice &other) const;
};

/// What one choice simulates to.
struct PipelineCandidate {
  PipelineChoice choice;
  /// Set when the candidate was imported, scheduled and simulated.
  std::optional<sim::PipelineSimResult> result;
  /// Why the importer or the schedule refused it, when they did.
  std::string refusal;
  /// The busiest rank's model state and activations, and whether that fits
  /// the profile's device memory (true when the profile gives none).
  double peakMemoryBytes = 0;
  bool fits = false;
};

struct PipelinePlan {
  std::vector<PipelineCandidate> candidates;
  /// The candidate of the config as given (Megatron's choice for it).
  size_t configured = 0;
  /// The fastest candidate that fits; when none fits, the one that needs
  /// the least memory. Unset when no candidate was simulated.
  std::optional<size_t> best;
};

/// The choice the config itself makes, as Megatron runs it.
PipelineChoice getConfiguredChoice(const ModelConfig &config);

/// The choices the search tries first: the configured one, 1F1B with and
/// without early receives, and the interleaved schedule (overlapped, the
/// group Megatron's default) at every virtual size that splits each stage's
/// layers evenly.
std::vector<PipelineChoice> getFirstPipelineChoices(const ModelConfig &config);

/// The choices around `best`: its p2p calls the other way, and other group
/// sizes (2 x PP and M) on the interleaved schedule.
std::vector<PipelineChoice> getRefinedPipelineChoices(const ModelConfig &config,
                                                      const PipelineChoice &best);

/// Plans the pipeline of `config` (pipelined, validated): for each choice,
/// imports the config with it, records `recordedOptions` (the user's
/// module's ddp.schedule_options) with the choice's options over them,
/// schedules with `scheduleOptions` (ddp-schedule options text, which hold
/// over both), simulates on `model`, then refines around the best.
/// `progress` is told of each candidate as it starts, in order, from any
/// thread but one at a time. The first candidate is the configured choice.
/// Each candidate is built in a context of its own, from `context`'s
/// dialect registry (what the caller loaded without registering, or allowed
/// there, does not carry over; the importer loads what it builds); where
/// `context` is multithreaded, the candidates of a round run at once on its
/// thread pool, as many as it has threads, with results equal to a serial
/// run's. Fails only when `scheduleOptions` do not parse or ask for an
/// output every candidate would write (print-bucket-layout).
llvm::Expected<PipelinePlan>
planPipeline(mlir::MLIRContext &context, const ModelConfig &config,
             mlir::DictionaryAttr recordedOptions,
             llvm::StringRef scheduleOptions, const timing::CostModel &model,
             llvm::function_ref<void(const llvm::Twine &)> progress);

} // namespace ddp::plan

#endif // DDP_PLAN_PIPELINEPLANNER_H
