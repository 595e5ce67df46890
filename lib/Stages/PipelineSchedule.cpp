//===- PipelineSchedule.cpp - Megatron's per-stage compute order ----------===//
//
// Each rule follows Megatron-Core's megatron/core/pipeline_parallel/
// schedules.py; docs/Pipeline.md quotes the lines.
//
//===----------------------------------------------------------------------===//

#include "ddp/Stages/PipelineSchedule.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace ddp;

std::optional<PipelineScheduleKind>
ddp::parsePipelineScheduleKind(StringRef name) {
  return StringSwitch<std::optional<PipelineScheduleKind>>(name)
      .Case("1f1b", PipelineScheduleKind::OneFOneB)
      .Case("interleaved", PipelineScheduleKind::Interleaved)
      .Case("gpipe", PipelineScheduleKind::GPipe)
      .Case("zb-h1", PipelineScheduleKind::ZeroBubbleH1)
      .Default(std::nullopt);
}

StringRef ddp::stringifyPipelineScheduleKind(PipelineScheduleKind kind) {
  switch (kind) {
  case PipelineScheduleKind::OneFOneB:
    return "1f1b";
  case PipelineScheduleKind::Interleaved:
    return "interleaved";
  case PipelineScheduleKind::GPipe:
    return "gpipe";
  case PipelineScheduleKind::ZeroBubbleH1:
    return "zb-h1";
  }
  return "";
}

std::string PipelineTask::str() const {
  char letter = phase == Phase::Forward    ? 'F'
                : phase == Phase::Backward ? 'B'
                                           : 'W';
  // Built by hand: formatv parses its format string on every call, and
  // every op of a pipelined step is tagged with one of these.
  return letter + std::to_string(microbatch) + '.' + std::to_string(chunk);
}

std::optional<PipelineTask> PipelineTask::parse(StringRef text) {
  if (text.empty())
    return std::nullopt;
  PipelineTask task;
  switch (text.front()) {
  case 'F':
    task.phase = Phase::Forward;
    break;
  case 'B':
    task.phase = Phase::Backward;
    break;
  case 'W':
    task.phase = Phase::WeightGrad;
    break;
  default:
    return std::nullopt;
  }
  auto [microbatch, chunk] = text.drop_front().split('.');
  // getAsInteger accepts a sign and other radixes; the form is plain digits.
  auto isNumber = [](StringRef digits) {
    return !digits.empty() && digits.size() <= 18 &&
           llvm::all_of(digits, [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!isNumber(microbatch) || !isNumber(chunk))
    return std::nullopt;
  microbatch.getAsInteger(10, task.microbatch);
  chunk.getAsInteger(10, task.chunk);
  return task;
}

static Error scheduleError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

Error ddp::checkPipelineSchedule(PipelineScheduleKind kind,
                                 const PipelineShape &shape) {
  if (shape.stages < 1 || shape.virtualStages < 1 || shape.microbatches < 1 ||
      shape.microbatchGroupSize < 0)
    return scheduleError(formatv(
        "a pipeline needs at least 1 stage, 1 model chunk per stage and 1 "
        "microbatch (pipeline_model_parallel_size {0}, "
        "virtual_pipeline_model_parallel_size {1}, num_microbatches {2})",
        shape.stages, shape.virtualStages, shape.microbatches));
  StringRef name = stringifyPipelineScheduleKind(kind);
  // TransformerConfig asserts a virtual size with pipeline stages
  // (transformer_config.py L3008-3012 at d98e8a6): only the interleaved
  // schedule has a combined path.
  if (shape.combined && kind != PipelineScheduleKind::Interleaved)
    return scheduleError(formatv(
        "overlap-moe-expert-parallel-comm with pipeline stages runs "
        "Megatron's combined_1f1b_schedule_for_interleaved_pipelining, but "
        "the schedule is {0}; Megatron requires "
        "virtual_pipeline_model_parallel_size with it: use the interleaved "
        "schedule",
        name));
  if (kind != PipelineScheduleKind::Interleaved) {
    if (shape.virtualStages != 1)
      return scheduleError(
          formatv("the {0} schedule runs one model chunk per stage, but "
                  "virtual_pipeline_model_parallel_size is {1}; use the "
                  "interleaved schedule, or a virtual size of 1",
                  name, shape.virtualStages));
    // Only the interleaved schedule groups microbatches; a group given to
    // another would be ignored without a word.
    if (shape.microbatchGroupSize > 0)
      return scheduleError(formatv(
          "microbatch_group_size_per_vp_stage ({0}) groups the microbatches "
          "of the interleaved schedule's model chunks, and the {1} schedule "
          "has one chunk per stage; drop it (microbatch-group-size), or "
          "use the interleaved schedule",
          shape.microbatchGroupSize, name));
    // pipeline_scheduler_ZBH1's _create_job_list asserts it: the warmup
    // and the late W passes each take up to a stage's worth.
    if (kind == PipelineScheduleKind::ZeroBubbleH1 &&
        shape.microbatches < shape.stages)
      return scheduleError(formatv(
          "the zb-h1 schedule needs at least as many microbatches as "
          "stages, but num_microbatches is {0} and "
          "pipeline_model_parallel_size {1}; raise num_microbatches, or use "
          "the 1f1b schedule",
          shape.microbatches, shape.stages));
    return Error::success();
  }
  // Megatron runs the interleaved schedule only with a virtual size
  // (get_forward_backward_func picks it when
  // virtual_pipeline_model_parallel_size is set), and its argument checks
  // want more than one stage for it.
  if (shape.virtualStages < 2)
    return scheduleError(
        "the interleaved schedule needs virtual_pipeline_model_parallel_size "
        "of 2 or more (the model chunks per stage); use the 1f1b "
        "schedule for one chunk per stage");
  if (shape.stages < 2)
    return scheduleError("the interleaved schedule needs "
                         "pipeline_model_parallel_size of 2 or more");
  // forward_backward_pipelining_with_interleaving (schedules.py L1160-1168
  // at d98e8a6): the group of contiguous microbatches per chunk lies
  // between PP and M, so M < PP has no group.
  if (shape.microbatches < shape.stages)
    return scheduleError(formatv(
        "the interleaved schedule needs at least as many microbatches as "
        "pipeline stages, but num_microbatches is {0} and "
        "pipeline_model_parallel_size {1}; raise num_microbatches (the "
        "global batch over micro_batch_size x data_parallel_size), or use "
        "fewer stages or the 1f1b schedule",
        shape.microbatches, shape.stages));
  int64_t group = shape.getMicrobatchGroupSize();
  if (group > shape.microbatches || group < shape.stages)
    return scheduleError(formatv(
        "microbatch_group_size_per_vp_stage is {0}, but the interleaved "
        "schedule runs between pipeline_model_parallel_size ({1}) and "
        "num_microbatches ({2}) contiguous microbatches per model chunk; "
        "set it in [{1}, {2}]",
        group, shape.stages, shape.microbatches));
  // The same function: a ragged last group smaller than PP would make its
  // microbatches wait on each other.
  int64_t remainder = shape.microbatches % group;
  if (remainder > 0 && remainder < shape.stages)
    return scheduleError(formatv(
        "num_microbatches ({0}) leaves a last group of {1} microbatches "
        "after groups of microbatch_group_size_per_vp_stage ({2}); "
        "Megatron wants that remainder to be 0 or at least "
        "pipeline_model_parallel_size ({3}), as a smaller group stalls the "
        "pipeline; change either size",
        shape.microbatches, remainder, group, shape.stages));
  return Error::success();
}

std::vector<std::pair<int64_t, int64_t>>
ddp::getScheduleTable(int64_t microbatches, int64_t chunks,
                      int64_t groupSize) {
  std::vector<std::pair<int64_t, int64_t>> table;
  table.reserve(microbatches * chunks);
  for (int64_t first = 0; first < microbatches; first += groupSize) {
    // The last group takes every microbatch left, however many.
    int64_t end = first + groupSize >= microbatches ? microbatches
                                                    : first + groupSize;
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t microbatch = first; microbatch < end; ++microbatch)
        table.push_back({microbatch, chunk});
  }
  return table;
}

int64_t ddp::getWarmupCount(PipelineScheduleKind kind,
                            const PipelineShape &shape, int64_t rank) {
  int64_t total = shape.microbatches * shape.virtualStages;
  int64_t warmup = 0;
  switch (kind) {
  case PipelineScheduleKind::GPipe:
    warmup = total;
    break;
  case PipelineScheduleKind::OneFOneB:
    warmup = shape.stages - rank - 1;
    break;
  case PipelineScheduleKind::ZeroBubbleH1:
    warmup = shape.stages - rank;
    break;
  case PipelineScheduleKind::Interleaved:
    warmup = (shape.stages - rank - 1) * 2 +
             (shape.virtualStages - 1) * shape.getMicrobatchGroupSize();
    // One extra forward before the steady state, so that each combined
    // step's forward and backward are independent (L965-970).
    if (shape.combined)
      ++warmup;
    break;
  }
  return std::min(warmup, total);
}

/// ZB-H1 on pipeline rank `rank` (0-based) of p, m >= p microbatches, in
/// the order of PaddlePaddle's pipeline_scheduler_ZBH1 (_create_job_list in
/// python/paddle/distributed/passes/pipeline_scheduler_pass/
/// pipeline_zero_bubble.py): p - rank forwards; then `rank` times a B alone
/// and a forward; m - p times a whole backward (B, then its W) and a
/// forward; the remaining backwards whole; last the W passes of the first
/// `rank` microbatches, in microbatch order. The first `rank` microbatches'
/// W passes fill the bubble at the end, and each rank holds as many
/// forwards in flight as under 1F1B. With uniform passes its bubble is the
/// paper's (p - 1)(T_F + T_B - T_W), against 1F1B's (p - 1)(T_F + T_B +
/// T_W) (PipelineSimulatorTest).
static std::vector<PipelineTask> getZeroBubbleH1Order(const PipelineShape &shape,
                                                      int64_t rank) {
  using Phase = PipelineTask::Phase;
  int64_t p = shape.stages, m = shape.microbatches;
  std::vector<PipelineTask> order;
  order.reserve(3 * m);
  int64_t forward = 0, backward = 0;
  auto addForward = [&] { order.push_back({Phase::Forward, forward++, 0}); };
  auto addBackward = [&](bool withW) {
    order.push_back({Phase::Backward, backward, 0});
    if (withW)
      order.push_back({Phase::WeightGrad, backward, 0});
    ++backward;
  };
  for (int64_t i = 0; i < p - rank; ++i)
    addForward();
  for (int64_t i = 0; i < rank; ++i) {
    addBackward(/*withW=*/false);
    addForward();
  }
  for (int64_t i = 0; i < m - p; ++i) {
    addBackward(/*withW=*/true);
    addForward();
  }
  while (backward < m)
    addBackward(/*withW=*/true);
  for (int64_t i = 0; i < rank; ++i)
    order.push_back({Phase::WeightGrad, i, 0});
  return order;
}

std::vector<PipelineTask> ddp::getStageOrder(PipelineScheduleKind kind,
                                             const PipelineShape &shape,
                                             int64_t rank) {
  using Phase = PipelineTask::Phase;
  if (kind == PipelineScheduleKind::ZeroBubbleH1)
    return getZeroBubbleH1Order(shape, rank);
  int64_t chunks = shape.virtualStages;
  int64_t total = shape.microbatches * chunks;
  std::vector<std::pair<int64_t, int64_t>> table =
      kind == PipelineScheduleKind::Interleaved
          ? getScheduleTable(shape.microbatches, chunks,
                             shape.getMicrobatchGroupSize())
          : getScheduleTable(shape.microbatches, 1, shape.microbatches);
  // Virtual microbatch k runs forward through table[k]'s chunk and backward
  // through the mirrored chunk, so the last chunk's backward comes first
  // (get_model_chunk_id with forward=False).
  auto forward = [&](int64_t k) {
    return PipelineTask{Phase::Forward, table[k].first, table[k].second};
  };
  auto backward = [&](int64_t k) {
    return PipelineTask{Phase::Backward, table[k].first,
                        chunks - 1 - table[k].second};
  };

  int64_t warmup = getWarmupCount(kind, shape, rank);
  int64_t remaining = total - warmup;
  std::vector<PipelineTask> order;
  order.reserve(2 * total);
  for (int64_t k = 0; k < warmup; ++k)
    order.push_back(forward(k));
  // The steady 1F1B phase: the forward of virtual microbatch k + warmup,
  // then the backward of virtual microbatch k.
  for (int64_t k = 0; k < remaining; ++k) {
    order.push_back(forward(k + warmup));
    order.push_back(backward(k));
  }
  for (int64_t k = remaining; k < total; ++k)
    order.push_back(backward(k));
  return order;
}

std::vector<size_t> ddp::getCombinedPairs(PipelineScheduleKind kind,
                                          const PipelineShape &shape,
                                          int64_t rank) {
  std::vector<size_t> pairs;
  if (!shape.combined || kind != PipelineScheduleKind::Interleaved)
    return pairs;
  int64_t total = shape.microbatches * shape.virtualStages;
  int64_t warmup = getWarmupCount(kind, shape, rank);
  for (int64_t k = 0; k < total - warmup; ++k)
    pairs.push_back(static_cast<size_t>(warmup + 2 * k));
  return pairs;
}
