//===- PipelineExchangePlacement.cpp - Where stages exchange --------------===//
//
// Part of ddp-pipeline-stages (PipelineExchangePlacement.h). The order
// check (ddp-verify-collective-order) proves afterwards that the programs
// cannot hang on ddp's runtime, whichever rule placed their traffic.
//
//===----------------------------------------------------------------------===//

#include "PipelineExchangePlacement.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <deque>
#include <tuple>

using namespace mlir;
using namespace ddp;
using namespace ddp::pipeline;


//===----------------------------------------------------------------------===//
// Megatron's calls
//===----------------------------------------------------------------------===//

/// The order of a call's operations: batch_isend_irecv's list
/// (`_batched_p2p_ops`, p2p_communication.py L20-55) when batched, else
/// `_p2p_ops`' (L58-131), which sends first on even ranks.
static SmallVector<ExchangePart> getPartOrder(bool batch, int64_t rank) {
  using Part = ExchangePart;
  if (batch)
    return {Part::SendPrev, Part::RecvPrev, Part::SendNext, Part::RecvNext};
  if (rank % 2 == 0)
    return {Part::SendNext, Part::RecvPrev, Part::SendPrev, Part::RecvNext};
  return {Part::RecvPrev, Part::SendNext, Part::RecvNext, Part::SendPrev};
}

/// Issues each of `indices`' transfers asynchronously: its send before the
/// sender's op at its sendAt, its receive before the receiver's op at
/// `recvAt(index)`; before an index the sends, then the receives, each in
/// the order the senders issue them (the order MPI and NCCL match in).
static void placeAsync(const std::vector<Transfer> &transfers,
                       ArrayRef<size_t> indices,
                       llvm::function_ref<size_t(size_t)> recvAt,
                       ExchangePlan &plan) {
  int64_t count = plan.size();
  SmallVector<size_t> sorted(indices);
  llvm::stable_sort(sorted, [&](size_t a, size_t b) {
    return std::tie(transfers[a].from, transfers[a].sendAt) <
           std::tie(transfers[b].from, transfers[b].sendAt);
  });
  std::vector<std::map<size_t, SmallVector<ExchangeOp>>> sends(count),
      recvs(count);
  for (size_t index : sorted) {
    const Transfer &transfer = transfers[index];
    sends[transfer.from][transfer.sendAt].push_back({index, true});
    recvs[transfer.to][recvAt(index)].push_back({index, false});
  }
  for (int64_t rank = 0; rank < count; ++rank)
    for (auto *perIndex : {&sends[rank], &recvs[rank]})
      for (auto &[index, ops] : *perIndex) {
        ExchangeAction action;
        action.ops = ops;
        plan[rank][index].push_back(std::move(action));
      }
}

/// The error for a value Megatron's calls cannot carry.
static InFlightDiagnostic notCarried(const Transfer &transfer,
                                     std::optional<PipelineTask> task,
                                     int64_t count) {
  std::optional<PipelineTask> userTask = getPipelineTask(transfer.user);
  InFlightDiagnostic diag =
      transfer.value.getDefiningOp()->emitError("pipeline rank ")
      << transfer.from << " computes this value in " << task->str()
      << " for " << userTask->str() << " on rank " << transfer.to;
  int64_t distance = transfer.offset < 0 ? -transfer.offset : transfer.offset;
  if (distance != 1 && distance != count - 1)
    diag << ", which is not its neighbour: Megatron's calls pass an "
            "activation through every rank between, and those hold none of "
            "this microbatch's ops (does the layer split leave them "
            "empty?); give every pipeline rank a layer";
  else
    diag << ", but Megatron's stage-to-stage calls carry only a forward's "
            "output to the next rank and a backward's to the previous one; "
            "let the value cross that way, or place it by ddp's own rule "
            "(overlap-p2p-comm on the 1f1b or gpipe schedule)";
  diag.attachNote(transfer.user->getLoc()) << "its use";
  return diag;
}

FailureOr<ExchangePlan>
ddp::pipeline::placeAsMegatron(const StageOrders &stages,
                               const std::vector<Transfer> &transfers,
                               const PipelineExchangeOptions &options) {
  using Part = ExchangePart;
  int64_t count = stages.orders.size();
  ExchangePlan plan(count);

  // The pipeline's transfers of each sending task, by direction; the
  // others cross outside the calls.
  std::vector<std::map<std::pair<TaskKey, bool>, SmallVector<size_t>>> unsent(
      count);
  SmallVector<size_t> beforePipeline, afterPipeline;
  for (auto [index, transfer] : llvm::enumerate(transfers)) {
    if (!getPipelineTask(transfer.user)) {
      afterPipeline.push_back(index);
      continue;
    }
    std::optional<PipelineTask> task =
        getPipelineTask(transfer.value.getDefiningOp());
    if (!task) {
      beforePipeline.push_back(index);
      continue;
    }
    bool forward = task->phase == PipelineTask::Phase::Forward;
    if (transfer.offset != (forward ? 1 : -1))
      return notCarried(transfer, task, count);
    unsent[transfer.from][{getKey(*task), forward}].push_back(index);
  }

  // What each call sends, by part, taken once; per channel (receiver,
  // forward?), what each send call carries, in order: the receiver's i-th
  // receive of that direction takes the i-th.
  std::map<std::pair<int64_t, bool>, std::deque<SmallVector<size_t>>>
      channels;
  std::vector<std::vector<ExchangeEvent>> events;
  std::vector<std::map<std::pair<size_t, size_t>, SmallVector<size_t>>>
      callSends(count);
  for (int64_t rank = 0; rank < count; ++rank) {
    events.push_back(
        getStageExchanges(stages.kind, stages.shape, options, rank));
    for (auto [index, event] : llvm::enumerate(events.back())) {
      if (event.kind != ExchangeEvent::Kind::Call)
        continue;
      for (bool forward : {true, false}) {
        Part part = forward ? Part::SendNext : Part::SendPrev;
        if (!event.has(part))
          continue;
        SmallVector<size_t> &carried = callSends[rank][{index, size_t(part)}];
        auto it =
            unsent[rank].find({getKey(event.sent[size_t(part)]), forward});
        if (it != unsent[rank].end()) {
          carried = std::move(it->second);
          unsent[rank].erase(it);
        }
        int64_t peer = (rank + (forward ? 1 : count - 1)) % count;
        channels[{peer, forward}].push_back(carried);
      }
    }
  }
  for (int64_t rank = 0; rank < count; ++rank)
    if (!unsent[rank].empty()) {
      const Transfer &transfer =
          transfers[unsent[rank].begin()->second.front()];
      return transfer.value.getDefiningOp()->emitError("pipeline rank ")
             << rank << " computes this value for rank " << transfer.to
             << ", but the " << stringifyPipelineScheduleKind(stages.kind)
             << " schedule sends nothing after the task that computes it";
    }

  for (int64_t rank = 0; rank < count; ++rank) {
    const std::vector<Operation *> &order = stages.orders[rank];
    std::map<TaskKey, size_t> taskStart;
    for (size_t index = 0; index < stages.taskEnd[rank]; ++index)
      if (std::optional<PipelineTask> task = getPipelineTask(order[index]))
        taskStart.try_emplace(getKey(*task), index);
    DenseMap<Operation *, size_t> position;
    for (auto [index, op] : llvm::enumerate(order))
      position[op] = index;

    // Events before the next task with ops go before its first op; those
    // after the last, right after the schedule's tasks. A combined step
    // interleaves its forward's ops with its backward's, so a task may
    // begin before the one the events run first: an event goes no later
    // than any after it.
    // A combined step's post hooks (its calls, and their waits for earlier
    // sends) go where its tail begins; the waits for a received input stay
    // before the task that uses it (the next step's pre hooks).
    std::vector<std::optional<size_t>> tailOf(events[rank].size());
    std::optional<size_t> tail;
    for (auto [index, event] : llvm::enumerate(events[rank])) {
      if (event.kind == ExchangeEvent::Kind::Run) {
        tail.reset();
        if (rank < int64_t(stages.combinedTails.size()))
          if (auto it = stages.combinedTails[rank].find(getKey(event.task));
              it != stages.combinedTails[rank].end())
            tail = it->second;
        continue;
      }
      bool receiveWait = event.kind == ExchangeEvent::Kind::Wait &&
                         (event.parts[size_t(Part::RecvPrev)] ||
                          event.parts[size_t(Part::RecvNext)]);
      if (!receiveWait)
        tailOf[index] = tail;
    }
    std::vector<size_t> at(events[rank].size(), stages.taskEnd[rank]);
    for (size_t index = events[rank].size(); index-- > 0;) {
      const ExchangeEvent &event = events[rank][index];
      size_t next =
          index + 1 < at.size() ? at[index + 1] : stages.taskEnd[rank];
      if (event.kind == ExchangeEvent::Kind::Run) {
        auto it = taskStart.find(getKey(event.task));
        at[index] = it == taskStart.end() ? next : std::min(it->second, next);
      } else {
        at[index] = tailOf[index] ? std::min(*tailOf[index], next) : next;
      }
    }

    // Each call's operations, by part, to wait for later.
    std::map<std::pair<size_t, size_t>, SmallVector<ExchangeOp>> byPart;
    SmallVector<Part> partOrder = getPartOrder(options.batch, rank);
    for (auto [index, event] : llvm::enumerate(events[rank])) {
      if (event.kind == ExchangeEvent::Kind::Run)
        continue;
      ExchangeAction action;
      if (event.kind == ExchangeEvent::Kind::Wait) {
        action.isWait = true;
        for (size_t part = 0; part < kNumExchangeParts; ++part)
          if (event.parts[part])
            action.ops.append(byPart[{event.call, part}]);
        if (!action.ops.empty())
          plan[rank][at[index]].push_back(std::move(action));
        continue;
      }
      action.blocking = event.blocking;
      for (Part part : partOrder) {
        if (!event.has(part))
          continue;
        SmallVector<ExchangeOp> &ops = byPart[{index, size_t(part)}];
        if (part == Part::SendNext || part == Part::SendPrev) {
          for (size_t transfer : callSends[rank][{index, size_t(part)}]) {
            // The events run the tasks in getStageOrder's order, which
            // the rank's order follows: a send comes after its value.
            Operation *producer = transfers[transfer].value.getDefiningOp();
            if (position.lookup(producer) >= at[index])
              return producer->emitError("pipeline rank ")
                     << rank << " would send this value before computing "
                        "it in the "
                     << stringifyPipelineScheduleKind(stages.kind)
                     << " schedule";
            ops.push_back({transfer, true});
          }
        } else {
          bool forward = part == Part::RecvPrev;
          std::deque<SmallVector<size_t>> &queue = channels[{rank, forward}];
          if (queue.empty())
            return mlir::emitError(stages.loc, "pipeline rank ")
                   << rank << " receives more often than its neighbour "
                      "sends in the "
                   << stringifyPipelineScheduleKind(stages.kind)
                   << " schedule";
          for (size_t transfer : queue.front()) {
            if (position.lookup(transfers[transfer].user) < at[index])
              return transfers[transfer].user->emitError("pipeline rank ")
                     << rank << " uses this value before the "
                     << stringifyPipelineScheduleKind(stages.kind)
                     << " schedule receives it";
            ops.push_back({transfer, false});
          }
          queue.pop_front();
        }
        action.ops.append(ops);
      }
      if (!action.ops.empty())
        plan[rank][at[index]].push_back(std::move(action));
    }
  }
  for (auto &[channel, queue] : channels)
    if (!queue.empty())
      return mlir::emitError(stages.loc, "pipeline rank ")
             << channel.first << " receives less often than its neighbour "
                "sends in the "
             << stringifyPipelineScheduleKind(stages.kind) << " schedule";

  // A value computed before the pipeline and used in it is received where
  // the receiver's tasks begin; one used after it (the tied embedding's
  // gradient), where the receiver's ops after the pipeline begin.
  placeAsync(
      transfers, beforePipeline,
      [&](size_t index) { return stages.taskBegin[transfers[index].to]; },
      plan);
  placeAsync(
      transfers, afterPipeline,
      [&](size_t index) { return stages.postStart[transfers[index].to]; },
      plan);
  return plan;
}

//===----------------------------------------------------------------------===//
// ddp's early receives
//===----------------------------------------------------------------------===//

/// deallocate_pipeline_outputs under ddp's rule: a forward's output is
/// freed before the rank's next forward allocates, so each send of one is
/// waited before the rank's next forward task (or after its tasks).
static void waitForwardSends(const StageOrders &stages,
                             const std::vector<Transfer> &transfers,
                             ExchangePlan &plan) {
  for (auto [index, transfer] : llvm::enumerate(transfers)) {
    std::optional<PipelineTask> task =
        getPipelineTask(transfer.value.getDefiningOp());
    if (!task || task->phase != PipelineTask::Phase::Forward ||
        !getPipelineTask(transfer.user))
      continue;
    const std::vector<Operation *> &order = stages.orders[transfer.from];
    size_t at = transfer.sendAt;
    size_t end = stages.taskEnd[transfer.from];
    for (; at < end; ++at) {
      std::optional<PipelineTask> next = getPipelineTask(order[at]);
      if (next && next->phase == PipelineTask::Phase::Forward &&
          getKey(*next) != getKey(*task))
        break;
    }
    ExchangeAction wait;
    wait.isWait = true;
    wait.ops.push_back({index, /*isSend=*/true});
    plan[transfer.from][at].push_back(std::move(wait));
  }
}

/// Posts each receive early, as Megatron posts a step's receives with its
/// sends: at the start of the receiving rank's first task by which the
/// value has been sent, in an execution where each rank starts a task as
/// soon as the values it needs have arrived, a forward taking one unit of
/// time and a backward two (Megatron's usual ratio). A rank's communication
/// completes in issue order, so a receive posted only at its first use
/// could hold up the sender's later traffic behind it: with interleaved
/// chunks on two ranks, rank 0 sends B0.1's gradient long before rank 1
/// runs B0.0. Receives from one rank are posted in the order it sent them,
/// the order MPI and NCCL match them in.
FailureOr<ExchangePlan>
ddp::pipeline::placeEarly(const StageOrders &stageOrders,
                          const std::vector<Transfer> &transferList,
                          bool deallocate) {
  const std::vector<std::vector<Operation *>> &orders = stageOrders.orders;
  const std::vector<size_t> &postStart = stageOrders.postStart;
  int64_t stages = orders.size();
  // The receive index of each transfer, as the rule finds it.
  struct Placed {
    size_t index;
    int64_t from, to;
    size_t sendAt, recvAt = 0;
    Operation *user;
  };
  std::vector<Placed> transfers;
  for (auto [index, transfer] : llvm::enumerate(transferList))
    transfers.push_back({index, transfer.from, transfer.to,
                         transfer.sendAt, 0, transfer.user});
  using Transfer = Placed;
  // Each rank's order as segments: its tasks, and the ops after them.
  struct Segment {
    size_t begin, end;
    double cost;
  };
  std::vector<std::vector<Segment>> segments(stages);
  for (int64_t rank = 0; rank < stages; ++rank) {
    const std::vector<Operation *> &order = orders[rank];
    for (size_t begin = 0; begin < order.size();) {
      std::optional<PipelineTask> task = getPipelineTask(order[begin]);
      size_t end = begin + 1;
      bool post = begin >= postStart[rank];
      while (end < order.size() && (post || end < postStart[rank]) &&
             (post ? end >= postStart[rank]
                   : getPipelineTask(order[end]) == task))
        ++end;
      double cost = !task || post ? 0.0
                    : task->phase == PipelineTask::Phase::Backward ? 2.0
                                                                   : 1.0;
      segments[rank].push_back({begin, end, cost});
      begin = end;
    }
  }

  DenseMap<Operation *, std::vector<Transfer *>> needs;
  for (Transfer &transfer : transfers)
    needs[transfer.user].push_back(&transfer);
  // Transfers in the order each sender issues them.
  std::vector<Transfer *> bySend;
  for (Transfer &transfer : transfers)
    bySend.push_back(&transfer);
  llvm::stable_sort(bySend, [](const Transfer *a, const Transfer *b) {
    return std::tie(a->from, a->sendAt) < std::tie(b->from, b->sendAt);
  });
  DenseMap<Transfer *, double> sentAt;
  DenseSet<Transfer *> posted;
  std::vector<size_t> next(stages, 0);
  std::vector<double> time(stages, 0.0);

  while (true) {
    int64_t best = -1;
    double bestStart = 0;
    for (int64_t rank = 0; rank < stages; ++rank) {
      if (next[rank] == segments[rank].size())
        continue;
      const Segment &segment = segments[rank][next[rank]];
      double start = time[rank];
      bool ready = true;
      for (size_t index = segment.begin; ready && index < segment.end; ++index)
        for (Transfer *transfer : needs.lookup(orders[rank][index])) {
          if (transfer->to != rank)
            continue;
          auto it = sentAt.find(transfer);
          if (it == sentAt.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
      if (ready && (best < 0 || start < bestStart)) {
        best = rank;
        bestStart = start;
      }
    }
    if (best < 0)
      break;
    const Segment &segment = segments[best][next[best]];
    // A value for after the pipeline is received after it too: posted
    // earlier, it would join a batch the pipeline waits on.
    bool inPipeline = segment.begin < postStart[best];
    for (Transfer *transfer : bySend) {
      auto it = sentAt.find(transfer);
      if (transfer->to != best || it == sentAt.end() ||
          it->second > bestStart ||
          (inPipeline && !getPipelineTask(transfer->user)))
        continue;
      if (posted.insert(transfer).second)
        transfer->recvAt = segment.begin;
    }
    time[best] = bestStart + segment.cost;
    for (Transfer *transfer : bySend)
      if (transfer->from == best && transfer->sendAt > segment.begin &&
          transfer->sendAt <= segment.end)
        sentAt[transfer] = time[best];
    ++next[best];
  }

  for (int64_t rank = 0; rank < stages; ++rank) {
    if (next[rank] == segments[rank].size())
      continue;
    Operation *op = orders[rank][segments[rank][next[rank]].begin];
    InFlightDiagnostic diag =
        op->emitError("the ")
        << stringifyPipelineScheduleKind(stageOrders.kind)
        << " schedule cannot run: pipeline rank " << rank
        << " waits here for a value that another rank computes only after "
           "waiting for this one";
    return diag;
  }
  ExchangePlan plan(stages);
  std::vector<size_t> recvAt(transferList.size()), all;
  for (const Transfer &transfer : transfers) {
    recvAt[transfer.index] = transfer.recvAt;
    all.push_back(transfer.index);
  }
  placeAsync(
      transferList, all, [&](size_t index) { return recvAt[index]; }, plan);
  if (deallocate)
    waitForwardSends(stageOrders, transferList, plan);
  return plan;
}
//===----------------------------------------------------------------------===//
// Delivery
//===----------------------------------------------------------------------===//

LogicalResult ddp::pipeline::checkDelivery(
    const ExchangePlan &plan, const std::vector<Transfer> &transfers,
    StringRef schedule, bool batchedTwoWay) {
  int64_t count = plan.size();
  // Per (sender, receiver): the transfers sent, and those received, in
  // issue order.
  std::map<std::pair<int64_t, int64_t>, SmallVector<size_t>> sent, received;
  for (int64_t rank = 0; rank < count; ++rank)
    for (const auto &[index, actions] : plan[rank])
      for (const ExchangeAction &action : actions) {
        if (action.isWait)
          continue;
        for (const ExchangeOp &op : action.ops) {
          const Transfer &transfer = transfers[op.transfer];
          (op.isSend ? sent : received)[{transfer.from, transfer.to}]
              .push_back(op.transfer);
        }
      }
  for (const auto &[channel, sends] : sent) {
    const SmallVector<size_t> &receives = received[channel];
    if (sends.size() != receives.size())
      return transfers[sends.front()].value.getDefiningOp()->emitError(
                 "pipeline rank ")
             << channel.first << " sends " << sends.size()
             << " values to rank " << channel.second << ", which receives "
             << receives.size();
    for (auto [send, receive] : llvm::zip(sends, receives)) {
      if (send == receive)
        continue;
      const Transfer &first = transfers[send];
      const Transfer &meant = transfers[receive];
      InFlightDiagnostic diag =
          first.value.getDefiningOp()->emitError("pipeline rank ")
          << channel.first << " sends this value to rank " << channel.second
          << " when that rank receives another one";
      Diagnostic &note = diag.attachNote(meant.value.getLoc())
                         << "the value rank " << channel.second
                         << " receives at that point; messages between two "
                            "ranks match in issue order, and the "
                         << schedule
                         << " schedule's calls order them differently on "
                            "the two ranks";
      if (batchedTwoWay)
        note << " (with 2 pipeline ranks, Megatron's batched calls send "
                "both directions to the same rank: Megatron refuses that "
                "unless overlap_p2p_comm, arguments.py L1000-1010); set "
                "overlap-p2p-comm=true or batch-p2p-comm=false";
      return diag;
    }
  }
  return success();
}
