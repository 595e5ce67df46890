//===- PipelineOrderCheck.cpp - No pipeline rank can hang -----------------===//
//
// Part of ddp-verify-collective-order. The stage programs of a pipeline
// differ from rank to rank, so the sends and receives over `pp` cannot be
// checked one function at a time as PointToPointPairing.cpp checks an SPMD
// function: this runs the programs together.
//
// The model assumes nothing is buffered, as NCCL does not buffer: the
// sends and receives a rank issues back to back form one batch, issued at
// the next wait, other collective or synchronous send or receive (as the
// CUDA backend issues them in one ncclGroupStart/End); a rank's batches
// complete in issue order, on its communication stream; an op completes
// once the op it pairs with has been issued in its rank's oldest unfinished
// batch. A synchronous receive blocks its rank until its batch completes, a
// wait until its op's batch does, and the end of the program until every
// batch has. The i-th send from rank a to rank b pairs with the i-th receive
// at b from a (MPI and NCCL match in issue order). If the ranks reach a
// state where none can move while some are unfinished, the pipeline hangs;
// the error names where each rank waits. Each run of the check is linear in
// the number of sends and receives.
//
//===----------------------------------------------------------------------===//

#include "PointToPointPairing.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"

#include "llvm/ADT/DenseMap.h"

#include <deque>
#include <map>

using namespace mlir;
using namespace ddp;

namespace {

/// A send or receive over `pp` in one rank's program.
struct Message {
  Operation *op;
  int64_t peer;
  bool isSend;
  /// Index of its batch on its rank.
  size_t batch = 0;
  /// The op it pairs with on the peer, once the pairing is known.
  Message *partner = nullptr;
  bool done = false;
};

/// What a rank's program does, in order.
struct Event {
  enum Kind { Issue, BlockOnBatch, BlockOnAll } kind;
  /// For BlockOnBatch: the batch that must complete.
  size_t batch = 0;
  Operation *op = nullptr;
};

struct RankProgram {
  func::FuncOp func;
  std::deque<Message> messages;
  /// batches[i]: the messages issued together.
  std::vector<std::vector<Message *>> batches;
  std::vector<Event> events;
  size_t next = 0;          // next event
  size_t issued = 0;        // batches issued so far
  size_t completed = 0;     // batches completed so far (in order)
};

bool isOverPipeline(Operation *op) {
  auto collective = dyn_cast<CollectiveOpInterface>(op);
  return collective && llvm::any_of(collective.getAxesAttr(), [](Attribute a) {
           return cast<StringAttr>(a).getValue() == "pp";
         });
}

/// "rank 1's 'ddp.recv' from -1 (in B3.0)".
std::string describe(int64_t rank, Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "rank " << rank << "'s '" << op->getName() << "'";
  // The offset accessors return the attribute's bits unsigned.
  if (auto send = dyn_cast<SendOp>(op))
    os << " to " << static_cast<int64_t>(send.getOffset());
  else if (auto recv = dyn_cast<RecvOp>(op))
    os << " from " << static_cast<int64_t>(recv.getOffset());
  if (std::optional<PipelineTask> task = getPipelineTask(op))
    os << " (in " << task->str() << ")";
  return text;
}

} // namespace

/// Reads rank `rank`'s program; fails on a collective over `pp` other
/// than a send or receive over exactly [pp], on a collective over another
/// mesh than `mesh` (its ranks are not the pipeline's), and on a call that
/// `callsCollectives` (the check follows no calls: what the callee sends
/// would be unseen, and a collective in it ends a batch unseen).
static LogicalResult
readProgram(RankProgram &program, int64_t rank, int64_t stages, MeshOp mesh,
            function_ref<bool(Operation *)> callsCollectives) {
  std::vector<Message *> open;
  auto issue = [&](Operation *at) {
    if (open.empty())
      return;
    for (Message *message : open)
      message->batch = program.batches.size();
    program.batches.push_back(std::move(open));
    open.clear();
    program.events.push_back({Event::Issue, 0, at});
  };
  DenseMap<Value, Message *> byToken;
  for (Operation &op : program.func.getBody().front()) {
    if (auto collective = dyn_cast<CollectiveOpInterface>(op))
      if (collective.getMeshAttr().getAttr() != mesh.getSymNameAttr())
        return op.emitError("a pipeline stage program communicates over the "
                            "mesh @")
               << mesh.getSymName()
               << " alone, whose pp axis gives the stages' ranks; this op "
                  "is over @"
               << collective.getMeshAttr().getValue();
    if (callsCollectives(&op))
      return op.emitError("the pipeline order check follows no calls, and "
                          "this one's callee communicates; put its ops into "
                          "the stage program");
    if (isPipelineMessage(&op)) {
      if (cast<CollectiveOpInterface>(op).getAxesAttr().size() != 1)
        return op.emitError("a send or receive between pipeline ranks is "
                            "over [pp] alone");
      program.messages.push_back(
          {&op, getPipelinePeer(&op, rank, stages), isa<SendOp>(op)});
      Message *message = &program.messages.back();
      open.push_back(message);
      auto async = cast<AsyncOpInterface>(op);
      if (async.isAsync()) {
        byToken[async.getAsyncToken()] = message;
        continue;
      }
      issue(&op);
      program.events.push_back(
          {Event::BlockOnBatch, program.batches.size() - 1, &op});
      continue;
    }
    if (isOverPipeline(&op))
      return op.emitError("a pipeline stage program may only send and "
                          "receive over [pp]; other collectives over the "
                          "pipeline ranks are not modelled");
    if (auto wait = dyn_cast<WaitOp>(op)) {
      issue(&op);
      // A join waits for all it joins; only pipeline messages can block
      // on another rank.
      SmallVector<Value> worklist{wait.getToken()};
      while (!worklist.empty()) {
        Value token = worklist.pop_back_val();
        if (Message *message = byToken.lookup(token))
          program.events.push_back(
              {Event::BlockOnBatch, message->batch, &op});
        else if (auto join = token.getDefiningOp<JoinOp>())
          worklist.append(join->operand_begin(), join->operand_end());
      }
      continue;
    }
    if (isa<CollectiveOpInterface, func::ReturnOp>(op))
      issue(&op);
  }
  program.events.push_back(
      {Event::BlockOnAll, 0, program.func.getBody().front().getTerminator()});
  return success();
}

LogicalResult
ddp::verifyPipelineOrder(ModuleOp module,
                         function_ref<bool(Operation *)> callsCollectives,
                         uint64_t &numPairs) {
  FailureOr<std::optional<PipelinePrograms>> found =
      getPipelinePrograms(module);
  if (failed(found))
    return failure();
  if (!*found)
    return success();
  int64_t stages = (*found)->stages;
  func::FuncOp first = (*found)->byRank.front();

  std::vector<RankProgram> programs(stages);
  for (int64_t rank = 0; rank < stages; ++rank) {
    programs[rank].func = (*found)->byRank[rank];
    if (failed(readProgram(programs[rank], rank, stages, (*found)->mesh,
                           callsCollectives)))
      return failure();
  }

  // Pair the i-th send from a to b with the i-th receive at b from a.
  std::map<std::pair<int64_t, int64_t>, std::vector<Message *>> sends, recvs;
  for (int64_t rank = 0; rank < stages; ++rank)
    for (Message &message : programs[rank].messages)
      (message.isSend ? sends[{rank, message.peer}]
                      : recvs[{message.peer, rank}])
          .push_back(&message);
  for (auto &[channel, sent] : sends) {
    std::vector<Message *> &received = recvs[channel];
    for (auto [send, recv] : llvm::zip(sent, received)) {
      send->partner = recv;
      recv->partner = send;
      // The runtime moves elements: a reshape between the two is fine.
      auto sentType =
          cast<ShapedType>(cast<SendOp>(send->op).getInput().getType());
      auto receivedType =
          cast<ShapedType>(cast<RecvOp>(recv->op).getResult().getType());
      if (sentType.getElementType() != receivedType.getElementType() ||
          sentType.getNumElements() != receivedType.getNumElements()) {
        InFlightDiagnostic diag =
            recv->op->emitError("this receive pairs with ")
            << describe(channel.first, send->op) << ", which sends "
            << sentType << ", not " << receivedType
            << "; the i-th send between two ranks meets the i-th receive";
        diag.attachNote(send->op->getLoc()) << "the send";
        return diag;
      }
      ++numPairs;
    }
  }
  for (auto *table : {&sends, &recvs})
    for (auto &[channel, messages] : *table)
      for (Message *message : messages)
        if (!message->partner) {
          auto [from, to] = channel;
          return message->op->emitError()
                 << describe(message->isSend ? from : to, message->op)
                 << " has no partner: rank " << from << " sends "
                 << sends[channel].size() << " time(s) to rank " << to
                 << ", which receives " << recvs[channel].size()
                 << " time(s) from it";
        }

  // Run the programs together until all end or none can move.
  auto isActive = [&](const Message *message, int64_t rank) {
    const RankProgram &program = programs[rank];
    return message->batch == program.completed &&
           message->batch < program.issued;
  };
  bool moved = true;
  while (moved) {
    moved = false;
    for (int64_t rank = 0; rank < stages; ++rank) {
      RankProgram &program = programs[rank];
      // Complete what can complete in this rank's oldest batch.
      while (program.completed < program.issued) {
        bool all = true;
        for (Message *message : program.batches[program.completed]) {
          if (!message->done && isActive(message->partner, message->peer)) {
            message->done = message->partner->done = true;
            moved = true;
          }
          all &= message->done;
        }
        if (!all)
          break;
        ++program.completed;
        moved = true;
      }
      // Run until the rank blocks.
      while (program.next < program.events.size()) {
        const Event &event = program.events[program.next];
        if (event.kind == Event::Issue)
          ++program.issued;
        else if (event.kind == Event::BlockOnBatch &&
                 program.completed <= event.batch)
          break;
        else if (event.kind == Event::BlockOnAll &&
                 program.completed < program.batches.size())
          break;
        ++program.next;
        moved = true;
      }
    }
  }
  if (llvm::all_of(programs, [](const RankProgram &program) {
        return program.next == program.events.size();
      }))
    return success();

  InFlightDiagnostic diag = first.emitError(
      "the pipeline stage programs can hang: no rank can move while");
  for (int64_t rank = 0; rank < stages; ++rank) {
    const RankProgram &program = programs[rank];
    if (program.next == program.events.size())
      continue;
    // The oldest unfinished message shows what the rank waits for.
    const Message *waiting = nullptr;
    if (program.completed < program.batches.size())
      for (Message *message : program.batches[program.completed])
        if (!message->done) {
          waiting = message;
          break;
        }
    Diagnostic &note = diag.attachNote(
        waiting ? waiting->op->getLoc()
                : program.events[program.next].op->getLoc());
    note << "rank " << rank << " waits";
    if (waiting)
      note << " in " << describe(rank, waiting->op) << ", which pairs with "
           << describe(waiting->peer, waiting->partner->op)
           << (waiting->partner->batch < programs[waiting->peer].issued
                   ? ", issued behind an unfinished batch"
                   : ", not yet issued");
  }
  return diag;
}
