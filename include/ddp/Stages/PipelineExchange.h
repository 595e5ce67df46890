//===- PipelineExchange.h - Megatron's stage-to-stage calls -----*- C++ -*-===//
//
// Where each pipeline rank exchanges activations and their gradients with
// its neighbours, and when it waits for them, as Megatron-Core's
// schedules.py issues its P2PCommunicator calls: one call sends the output
// of the task just run and receives the input of a later one; a call is
// waited inside (blocking) or returns handles the schedule waits later
// (overlap_p2p_comm, interleaved only). docs/Pipeline.md cites the lines.
//
// Plain C++ on LLVM Support, beside the compute order (PipelineSchedule.h):
// ddp-pipeline-stages places its sends and receives by it, and the tests
// compare it with what Megatron issues.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_STAGES_PIPELINEEXCHANGE_H
#define DDP_STAGES_PIPELINEEXCHANGE_H

#include "ddp/Stages/PipelineSchedule.h"

#include <array>

namespace ddp {

/// Megatron's ModelParallelConfig flags for stage-to-stage traffic.
struct PipelineExchangeOptions {
  /// batch_p2p_comm: a call's operations go in one batch_isend_irecv.
  /// Megatron refuses it with overlap (schedules.py L1086-1087), and its
  /// arguments set it to `!overlap` (argument_utils.py L307).
  bool batch = true;
  /// overlap_p2p_comm: calls return handles, each waited before its use.
  bool overlap = false;
  /// overlap_p2p_comm_warmup_flush: the warmup and flush phases overlap
  /// too, receiving one iteration ahead.
  bool warmupFlush = false;
  /// deallocate_pipeline_outputs: a forward's output is freed once sent,
  /// so an asynchronous send of it is waited right after it is issued
  /// (schedules.py L1686, L1813); ModelParallelConfig's default is off,
  /// Megatron-LM's training arguments turn it on (argument_utils.py L305).
  bool deallocate = false;
};

/// Megatron's check on the warmup flush (ModelParallelConfig.__post_init__),
/// with the option names of ddp-pipeline-stages. Overlap on 1F1B or GPipe,
/// which Megatron refuses, is ddp's own rule and not checked here.
llvm::Error checkPipelineExchange(PipelineScheduleKind kind,
                                  const PipelineExchangeOptions &options);

/// The four parts of a call, as `_p2p_ops` keys their handles.
enum class ExchangePart { SendNext, RecvPrev, SendPrev, RecvNext };
constexpr size_t kNumExchangeParts = 4;

/// One event of a rank's program: run a task, issue a call, or wait for
/// a part of an earlier call.
struct ExchangeEvent {
  enum class Kind { Run, Call, Wait } kind = Kind::Run;
  /// Run: the task. Call: for SendNext/SendPrev, the task whose output the
  /// part sends. Wait: unused.
  PipelineTask task;
  /// Call: which parts it has (a receive names no task: what arrives is
  /// the next message on its channel). Wait: the one part waited.
  std::array<bool, kNumExchangeParts> parts = {};
  /// Call: the task each send part sends the output of.
  std::array<PipelineTask, kNumExchangeParts> sent = {};
  /// Call: waited before the next event (every part); else its parts are
  /// waited by Wait events.
  bool blocking = true;
  /// Wait: the index of the call event in the rank's list.
  size_t call = 0;

  bool has(ExchangePart part) const { return parts[size_t(part)]; }
};

/// Rank `rank`'s tasks (in getStageOrder's order) with the calls and waits
/// Megatron issues among them. GPipe is run as Megatron's 1F1B loops with
/// every microbatch in the warmup. Calls with no part are left out.
/// Requires checkPipelineSchedule and checkPipelineExchange to pass.
std::vector<ExchangeEvent>
getStageExchanges(PipelineScheduleKind kind, const PipelineShape &shape,
                  const PipelineExchangeOptions &options, int64_t rank);

/// Every rank's events as text, with each receive resolved to the task
/// that consumes what it receives: `F0.0`, `C(sn=F0.0,rn=B0.0;wait)`,
/// `C(rp=F1.0;async)`, `W(rp=F1.0)`. Parts in the order sn, sp, rp, rn.
/// The form the tests compare with Megatron's.
std::vector<std::vector<std::string>>
describeStageExchanges(PipelineScheduleKind kind, const PipelineShape &shape,
                       const PipelineExchangeOptions &options);

} // namespace ddp

#endif // DDP_STAGES_PIPELINEEXCHANGE_H
