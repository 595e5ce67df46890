//===- PipelineExchange.cpp - Megatron's stage-to-stage calls -------------===//
//
// A transcription of the p2p calls in Megatron-Core's schedules.py
// (NVIDIA/Megatron-LM d98e8a64): forward_backward_pipelining_without_
// interleaving L2334-2478 and _with_interleaving L1541-2061. Each call
// names the P2PCommunicator method and the line that issues it; the
// methods skip the call on the first or last stage where the comments say
// so (p2p_communication.py L452-675). bench/sim/megatron_p2p_events.py
// runs Megatron's own functions with torch stubbed out and prints what
// they issue, in the form describeStageExchanges prints.
//
//===----------------------------------------------------------------------===//

#include "ddp/Stages/PipelineExchange.h"

#include "llvm/Support/FormatVariadic.h"

#include <deque>
#include <set>
#include <map>

using namespace llvm;
using namespace ddp;

Error ddp::checkPipelineExchange(PipelineScheduleKind kind,
                                 const PipelineExchangeOptions &options) {
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  // ModelParallelConfig.__post_init__ (model_parallel_config.py L570-575).
  if (options.warmupFlush && !options.overlap)
    return error("overlap-p2p-comm-warmup-flush overlaps the warmup and "
                 "flush as overlap-p2p-comm does the steady phase; set "
                 "overlap-p2p-comm=true too, or drop the warmup flush");
  if (options.warmupFlush && kind != PipelineScheduleKind::Interleaved)
    return error(formatv("overlap-p2p-comm-warmup-flush is a mode of the "
                         "interleaved schedule; the {0} schedule has no "
                         "such phase to overlap; drop it or use "
                         "pipeline-schedule=interleaved",
                         stringifyPipelineScheduleKind(kind)));
  return Error::success();
}

namespace {

using Phase = PipelineTask::Phase;
using Part = ExchangePart;

/// Builds one rank's event list; a call's handles are its event index and
/// part.
class Recorder {
public:
  std::vector<ExchangeEvent> events;

  void run(const PipelineTask &task) {
    ExchangeEvent event;
    event.task = task;
    events.push_back(event);
  }

  /// A call with the given parts; `sendNext`/`sendPrev` name the task whose
  /// output goes out (none: that part is absent). Returns its index, or
  /// nothing when it has no part (Megatron's call moves nothing).
  std::optional<size_t> call(std::optional<PipelineTask> sendNext,
                             std::optional<PipelineTask> sendPrev,
                             bool recvPrev, bool recvNext, bool blocking) {
    if (!sendNext && !sendPrev && !recvPrev && !recvNext)
      return std::nullopt;
    ExchangeEvent event;
    event.kind = ExchangeEvent::Kind::Call;
    event.blocking = blocking;
    auto set = [&](Part part, bool present) {
      event.parts[size_t(part)] = present;
    };
    set(Part::SendNext, sendNext.has_value());
    set(Part::SendPrev, sendPrev.has_value());
    set(Part::RecvPrev, recvPrev);
    set(Part::RecvNext, recvNext);
    if (sendNext)
      event.sent[size_t(Part::SendNext)] = *sendNext;
    if (sendPrev)
      event.sent[size_t(Part::SendPrev)] = *sendPrev;
    events.push_back(event);
    return events.size() - 1;
  }

  /// A handle: a part of an async call.
  using Handle = std::optional<std::pair<size_t, Part>>;

  Handle handle(std::optional<size_t> call, Part part) const {
    if (call && events[*call].has(part))
      return std::make_pair(*call, part);
    return std::nullopt;
  }

  /// Megatron waits some handles twice; the second wait does nothing.
  void wait(const Handle &h) {
    if (!h || !waited.insert(*h).second)
      return;
    ExchangeEvent event;
    event.kind = ExchangeEvent::Kind::Wait;
    event.call = h->first;
    event.parts[size_t(h->second)] = true;
    events.push_back(event);
  }

private:
  std::set<std::pair<size_t, Part>> waited;
};

/// forward_backward_pipelining_without_interleaving (L2334-2478): every
/// call blocks. GPipe is the same loops with every microbatch in warmup.
void recordOneFOneB(Recorder &rec, const PipelineShape &shape, int64_t rank,
                    int64_t warmup) {
  bool first = rank == 0, last = rank == shape.stages - 1;
  int64_t remaining = shape.microbatches - warmup;
  auto forward = [](int64_t m) { return PipelineTask{Phase::Forward, m, 0}; };
  auto backward = [](int64_t m) {
    return PipelineTask{Phase::Backward, m, 0};
  };
  auto maybe = [](bool present, PipelineTask task) {
    return present ? std::optional<PipelineTask>(task) : std::nullopt;
  };
  for (int64_t i = 0; i < warmup; ++i) {
    // recv_forward; send_forward (L2344, L2362).
    rec.call(std::nullopt, std::nullopt, !first, false, true);
    rec.run(forward(i));
    rec.call(maybe(!last, forward(i)), std::nullopt, false, false, true);
  }
  // recv_forward (L2374).
  if (remaining > 0)
    rec.call(std::nullopt, std::nullopt, !first, false, true);
  for (int64_t i = 0; i < remaining; ++i) {
    bool lastIteration = i == remaining - 1;
    rec.run(forward(i + warmup));
    // send_forward_recv_backward (L2416), skipped on the last stage.
    if (!last)
      rec.call(forward(i + warmup), std::nullopt, false, true, true);
    rec.run(backward(i));
    // send_backward (L2442) or send_backward_recv_forward (L2446), skipped
    // on the first stage.
    if (!first)
      rec.call(std::nullopt, backward(i), !lastIteration, false, true);
  }
  for (int64_t i = 0; i < warmup; ++i) {
    // recv_backward, send_backward (L2466, L2474).
    rec.call(std::nullopt, std::nullopt, false, !last, true);
    rec.run(backward(remaining + i));
    rec.call(std::nullopt, maybe(!first, backward(remaining + i)), false,
             false, true);
  }
}

/// forward_backward_pipelining_with_interleaving (L1541-2061).
class Interleaved {
public:
  Interleaved(Recorder &rec, const PipelineShape &shape,
              const PipelineExchangeOptions &options, int64_t rank)
      : rec(rec), options(options), stages(shape.stages),
        chunks(shape.virtualStages), total(shape.microbatches * chunks),
        first(rank == 0), last(rank == shape.stages - 1),
        table(getScheduleTable(shape.microbatches, chunks,
                               shape.getMicrobatchGroupSize())),
        warmup(getWarmupCount(PipelineScheduleKind::Interleaved, shape,
                              rank)),
        remaining(total - warmup), allWarmup(warmup == total),
        combined(shape.combined) {}

  void record();

private:
  int64_t chunkOf(int64_t k, bool forward) const {
    int64_t chunk = table[k % total].second;
    return forward ? chunk : chunks - 1 - chunk;
  }
  PipelineTask task(int64_t k, bool forward) const {
    return {forward ? Phase::Forward : Phase::Backward, table[k].first,
            chunkOf(k, forward)};
  }
  /// recv_tensor_from_previous_stage (L1285-1331): whether the call after
  /// virtual microbatch k receives.
  bool receives(int64_t k, bool forward) const {
    bool leading = forward ? first : last;
    if (!leading)
      return true;
    int64_t lastChunk = forward ? chunks - 1 : 0;
    if (k < stages - 1)
      return false;
    return chunkOf(k - (stages - 1), forward) != lastChunk;
  }
  /// Whether the task's output leaves the rank: not the first chunk's
  /// input gradient on the first rank, nor the last chunk's output on the
  /// last.
  bool sends(int64_t k, bool forward) const {
    int64_t chunk = chunkOf(k, forward);
    return forward ? !(chunk == chunks - 1 && last) : !(chunk == 0 && first);
  }
  std::optional<PipelineTask> output(int64_t k, bool forward) const {
    if (!sends(k, forward))
      return std::nullopt;
    return task(k, forward);
  }
  /// An async call's handles: waits the previous send of that direction
  /// (L1677, L1802; L1870, L2037) and queues the receive; with
  /// deallocate_pipeline_outputs, waits a forward's send too.
  void keepHandles(std::optional<size_t> call, bool forward) {
    Part send = forward ? Part::SendNext : Part::SendPrev;
    Recorder::Handle &pending = forward ? sendNext : sendPrev;
    rec.wait(pending);
    if (!call)
      return;
    pending = rec.handle(call, send);
    queueReceive(call, forward);
    // A forward's output is freed once sent, so its send is waited at
    // once (L1686, L1813).
    if (forward && options.deallocate) {
      rec.wait(pending);
      pending.reset();
    }
  }
  /// A prefetching call (warmup flush) only queues its receive.
  void queueReceive(std::optional<size_t> call, bool forward) {
    Part recv = forward ? Part::RecvPrev : Part::RecvNext;
    if (Recorder::Handle h = rec.handle(call, recv))
      (forward ? recvPrevs : recvNexts).push_back(*h);
  }
  /// The wait before a task for its received input, if any is queued
  /// (L1588, L1762-1766; L1840-1844, L1983-1987; with the warmup flush
  /// Megatron asserts that one is).
  void waitReceived(bool forward) {
    std::deque<std::pair<size_t, Part>> &queue =
        forward ? recvPrevs : recvNexts;
    if (queue.empty())
      return;
    rec.wait(queue.front());
    queue.pop_front();
  }

  void recordWarmup();
  void recordSteady();
  void recordCooldown();

  Recorder &rec;
  const PipelineExchangeOptions &options;
  int64_t stages, chunks, total;
  bool first, last;
  std::vector<std::pair<int64_t, int64_t>> table;
  int64_t warmup, remaining;
  bool allWarmup;
  /// overlap_moe_expert_parallel_comm: each steady step is one combined
  /// forward and backward.
  bool combined;
  Recorder::Handle sendNext, sendPrev;
  std::deque<std::pair<size_t, Part>> recvPrevs, recvNexts;
};

void Interleaved::record() {
  // recv_forward for the first forward (L1545).
  rec.call(std::nullopt, std::nullopt, !first, false, true);
  recordWarmup();
  recordSteady();
  recordCooldown();
  // The last send of a gradient (L2061).
  rec.wait(sendPrev);
}

void Interleaved::recordWarmup() {
  bool flush = options.warmupFlush;
  for (int64_t k = 0; k < warmup; ++k) {
    if (flush && !(chunkOf(k, true) == 0 && first) && k != 0)
      waitReceived(true);
    bool recvPrev = receives(k, true) && k != total - 1;
    // The prefetched receive for k + 1 (L1602).
    if (flush && !first)
      queueReceive(rec.call(std::nullopt, std::nullopt, recvPrev, false,
                            false),
                   true);
    rec.run(task(k, true));
    if (!flush) {
      if (k == warmup - 1 && !options.overlap && !allWarmup) {
        // send_forward_backward_recv_forward_backward (L1645).
        rec.call(output(k, true), std::nullopt, recvPrev, !last, true);
      } else {
        // send_forward_recv_forward, blocking (L1655).
        rec.call(output(k, true), std::nullopt, recvPrev, false, true);
      }
    } else {
      // send_forward_recv_forward, async; the first rank receives here
      // (L1664, L1669).
      keepHandles(rec.call(output(k, true), std::nullopt, first && recvPrev,
                           false, false),
                  true);
    }
    if (options.overlap && k == warmup - 1 && !allWarmup) {
      // send_backward_recv_backward prefetching the first gradient
      // (L1709).
      keepHandles(rec.call(std::nullopt, std::nullopt, false, !last, false),
                  false);
    }
  }
}

void Interleaved::recordSteady() {
  for (int64_t k = 0; k < remaining; ++k) {
    int64_t forwardK = k + warmup, backwardK = k;
    bool recvPrev = receives(forwardK, true) && k != remaining - 1;
    bool recvNext = receives(backwardK, false);
    if (options.overlap && combined) {
      // The combined step (TransformerModelChunkSchedulePlan.run,
      // model_chunk_schedule_plan.py L535-607): pp_pre_forward before the
      // forward's first node, pp_pre_backward before the backward's, both
      // passes node by node, then pp_post_forward's call and
      // pp_post_backward's.
      if (!(chunkOf(forwardK, true) == 0 && first))
        waitReceived(true);
      rec.run(task(forwardK, true));
      if (!(chunkOf(backwardK, false) == chunks - 1 && last))
        waitReceived(false);
      rec.run(task(backwardK, false));
      keepHandles(rec.call(output(forwardK, true), std::nullopt, recvPrev,
                           false, false),
                  true);
      keepHandles(rec.call(std::nullopt, output(backwardK, false), false,
                           recvNext, false),
                  false);
    } else if (options.overlap) {
      // pp_pre_forward, forward, pp_post_forward's call (L1794), then
      // the same for the backward (L1862).
      if (!(chunkOf(forwardK, true) == 0 && first))
        waitReceived(true);
      rec.run(task(forwardK, true));
      keepHandles(rec.call(output(forwardK, true), std::nullopt, recvPrev,
                           false, false),
                  true);
      if (!(chunkOf(backwardK, false) == chunks - 1 && last))
        waitReceived(false);
      rec.run(task(backwardK, false));
      keepHandles(rec.call(std::nullopt, output(backwardK, false), false,
                           recvNext, false),
                  false);
    } else {
      // Both tasks, then send_forward_backward_recv_forward_backward
      // (L1935).
      rec.run(task(forwardK, true));
      rec.run(task(backwardK, false));
      rec.call(output(forwardK, true), output(backwardK, false), recvPrev,
               recvNext, true);
    }
  }
}

void Interleaved::recordCooldown() {
  bool flush = options.warmupFlush;
  // recv_backward when no backward ran in the steady phase (L1964).
  if (allWarmup)
    rec.call(std::nullopt, std::nullopt, false, !last, true);
  for (int64_t k = remaining; k < total; ++k) {
    if (!(chunkOf(k, false) == chunks - 1 && last) && k != 0)
      waitReceived(false);
    bool recvNext = receives(k, false) && k != total - 1;
    // The prefetched receive for k + 1 (L2001).
    if (flush && !last)
      queueReceive(rec.call(std::nullopt, std::nullopt, false, recvNext,
                            false),
                   false);
    rec.run(task(k, false));
    if (flush) {
      // send_backward_recv_backward, async; the last rank receives here
      // (L2020, L2028).
      keepHandles(rec.call(std::nullopt, output(k, false), false,
                           last && recvNext, false),
                  false);
    } else {
      // send_backward_recv_backward, blocking (L2053).
      rec.call(std::nullopt, output(k, false), false, recvNext, true);
    }
  }
}

} // namespace

std::vector<ExchangeEvent>
ddp::getStageExchanges(PipelineScheduleKind kind, const PipelineShape &shape,
                       const PipelineExchangeOptions &options, int64_t rank) {
  Recorder rec;
  switch (kind) {
  case PipelineScheduleKind::OneFOneB:
    recordOneFOneB(rec, shape, rank,
                   getWarmupCount(kind, shape, rank));
    break;
  case PipelineScheduleKind::GPipe:
    recordOneFOneB(rec, shape, rank, shape.microbatches);
    break;
  case PipelineScheduleKind::Interleaved:
    Interleaved(rec, shape, options, rank).record();
    break;
  case PipelineScheduleKind::ZeroBubbleH1:
    // No Megatron calls: ddp-pipeline-stages sends each value once
    // computed and receives it early (as overlap-p2p-comm on 1f1b).
    for (const PipelineTask &task : getStageOrder(kind, shape, rank))
      rec.run(task);
    break;
  }
  return std::move(rec.events);
}

std::vector<std::vector<std::string>>
ddp::describeStageExchanges(PipelineScheduleKind kind,
                            const PipelineShape &shape,
                            const PipelineExchangeOptions &options) {
  int64_t stages = shape.stages;
  std::vector<std::vector<ExchangeEvent>> events;
  for (int64_t rank = 0; rank < stages; ++rank)
    events.push_back(getStageExchanges(kind, shape, options, rank));

  // What each receive receives: the i-th receive from a neighbour is the
  // i-th send to it. The consumer of a forward's output is the same
  // (microbatch, chunk) on the next rank, or the next chunk on rank 0; of
  // a backward's, the previous rank, or the previous chunk on the last.
  std::map<std::pair<int64_t, bool>, std::deque<PipelineTask>> channels;
  for (int64_t rank = 0; rank < stages; ++rank)
    for (const ExchangeEvent &event : events[rank]) {
      if (event.kind != ExchangeEvent::Kind::Call)
        continue;
      if (event.has(Part::SendNext)) {
        PipelineTask consumer = event.sent[size_t(Part::SendNext)];
        if (rank == stages - 1)
          ++consumer.chunk;
        channels[{(rank + 1) % stages, true}].push_back(consumer);
      }
      if (event.has(Part::SendPrev)) {
        PipelineTask consumer = event.sent[size_t(Part::SendPrev)];
        if (rank == 0)
          --consumer.chunk;
        channels[{(rank + stages - 1) % stages, false}].push_back(consumer);
      }
    }

  std::vector<std::vector<std::string>> result(stages);
  static const char *names[] = {"sn", "rp", "sp", "rn"};
  for (int64_t rank = 0; rank < stages; ++rank) {
    // Each part's text, per call.
    std::map<std::pair<size_t, size_t>, std::string> partText;
    for (auto [index, event] : llvm::enumerate(events[rank])) {
      if (event.kind != ExchangeEvent::Kind::Call)
        continue;
      for (size_t part = 0; part < kNumExchangeParts; ++part) {
        if (!event.parts[part])
          continue;
        std::string task;
        if (part == size_t(Part::SendNext) || part == size_t(Part::SendPrev)) {
          task = event.sent[part].str();
        } else {
          std::deque<PipelineTask> &queue =
              channels[{rank, part == size_t(Part::RecvPrev)}];
          if (queue.empty()) {
            task = "?";
          } else {
            task = queue.front().str();
            queue.pop_front();
          }
        }
        partText[{index, part}] = std::string(names[part]) + "=" + task;
      }
    }
    for (auto [index, event] : llvm::enumerate(events[rank])) {
      switch (event.kind) {
      case ExchangeEvent::Kind::Run:
        result[rank].push_back(event.task.str());
        break;
      case ExchangeEvent::Kind::Call: {
        std::string text = "C(";
        bool any = false;
        for (Part part :
             {Part::SendNext, Part::SendPrev, Part::RecvPrev, Part::RecvNext})
          if (event.has(part)) {
            text += (any ? "," : "") + partText[{index, size_t(part)}];
            any = true;
          }
        text += event.blocking ? ";wait)" : ";async)";
        result[rank].push_back(text);
        break;
      }
      case ExchangeEvent::Kind::Wait:
        for (size_t part = 0; part < kNumExchangeParts; ++part)
          if (event.parts[part])
            result[rank].push_back("W(" + partText[{event.call, part}] + ")");
        break;
      }
    }
  }
  return result;
}
