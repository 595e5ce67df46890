//===- PipelineSchedule.h - Megatron's per-stage compute order --*- C++ -*-===//
//
// The order in which each pipeline rank runs the forward and backward of
// every (microbatch, model chunk), as Megatron-Core's schedules.py runs it:
// 1F1B (forward_backward_pipelining_without_interleaving), interleaved
// (forward_backward_pipelining_with_interleaving, with the schedule table of
// microbatch_group_size_per_vp_stage), GPipe (all forwards, then all
// backwards, as torch.distributed.pipelining's ScheduleGPipe) and ZB-H1 (Qi
// et al., Zero Bubble Pipeline Parallelism, ICLR 2024: 1F1B with each
// backward split into B, the input's gradient, and W, the weights', some
// W passes run late to fill the bubble; the order of PaddlePaddle's
// pipeline_scheduler_ZBH1). docs/Pipeline.md cites the lines each rule
// comes from.
//
// Plain C++ on LLVM Support: the importer builds the stage programs in this
// order, and the tests compare it with what Megatron runs.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_STAGES_PIPELINESCHEDULE_H
#define DDP_STAGES_PIPELINESCHEDULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp {

enum class PipelineScheduleKind { OneFOneB, Interleaved, GPipe, ZeroBubbleH1 };

/// `1f1b`, `interleaved`, `gpipe`, `zb-h1`.
std::optional<PipelineScheduleKind> parsePipelineScheduleKind(llvm::StringRef);
llvm::StringRef stringifyPipelineScheduleKind(PipelineScheduleKind kind);

/// One unit of a stage's compute: the forward (`F`), the backward (`B`), or
/// a weight-gradient pass run apart from its backward (`W`) of one
/// microbatch through one of this rank's model chunks.
struct PipelineTask {
  enum class Phase { Forward, Backward, WeightGrad };
  Phase phase = Phase::Forward;
  int64_t microbatch = 0;
  /// The model chunk on this rank (0 .. virtual size - 1).
  int64_t chunk = 0;

  /// `F<microbatch>.<chunk>`, `B...`, `W...`: the form
  /// --ddp-print-pipeline-schedule prints and the IR's `ddp.task` holds.
  std::string str() const;
  /// The inverse of str(); nullopt for anything else.
  static std::optional<PipelineTask> parse(llvm::StringRef text);
  bool operator==(const PipelineTask &other) const {
    return phase == other.phase && microbatch == other.microbatch &&
           chunk == other.chunk;
  }
};

/// The size of a pipeline: Megatron's pipeline_model_parallel_size,
/// virtual_pipeline_model_parallel_size (the model chunks per rank),
/// num_microbatches and microbatch_group_size_per_vp_stage.
struct PipelineShape {
  int64_t stages = 1;
  int64_t virtualStages = 1;
  int64_t microbatches = 1;
  /// 0 means Megatron's default, pipeline_model_parallel_size.
  int64_t microbatchGroupSize = 0;
  /// Megatron's overlap_moe_expert_parallel_comm on the interleaved
  /// schedule (combined_1f1b_schedule_for_interleaved_pipelining): one more
  /// warmup forward, and each steady-state forward runs node by node beside
  /// the backward after it (getCombinedPairs).
  bool combined = false;

  int64_t getMicrobatchGroupSize() const {
    return microbatchGroupSize ? microbatchGroupSize : stages;
  }
};

/// The checks Megatron makes before it runs `kind` on `shape` (and that the
/// shape is positive), as an error that names the option to change.
llvm::Error checkPipelineSchedule(PipelineScheduleKind kind,
                                  const PipelineShape &shape);

/// Megatron's get_schedule_table: for each virtual microbatch of a rank, in
/// forward order, its (microbatch, model chunk).
std::vector<std::pair<int64_t, int64_t>>
getScheduleTable(int64_t microbatches, int64_t chunks, int64_t groupSize);

/// How many forwards pipeline rank `rank` runs before its first backward
/// (get_pp_rank_microbatches' num_warmup_microbatches, for a training step;
/// for ZB-H1 one more than 1F1B's, as its first backward's W runs late).
int64_t getWarmupCount(PipelineScheduleKind kind, const PipelineShape &shape,
                       int64_t rank);

/// Every task of pipeline rank `rank`, in the order it runs them. The shape
/// must pass checkPipelineSchedule. Only ZB-H1 has W tasks: every other
/// schedule runs a backward's weight gradients inside its B task.
std::vector<PipelineTask> getStageOrder(PipelineScheduleKind kind,
                                        const PipelineShape &shape,
                                        int64_t rank);

/// With `shape.combined`, the indices into getStageOrder's list of the
/// forward of each steady-state step; the backward it runs beside is the
/// task after it. Empty otherwise.
std::vector<size_t> getCombinedPairs(PipelineScheduleKind kind,
                                     const PipelineShape &shape, int64_t rank);

} // namespace ddp

#endif // DDP_STAGES_PIPELINESCHEDULE_H
