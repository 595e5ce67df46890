//===- PointToPointPairing.cpp - Pairing of sends and receives ------------===//
//
// Every rank runs the same straight-line function, and a send or receive
// names its peer by a static offset in its group, so on every rank `r` the
// sends to offset `d` over group G go to rank `r + d`, whose receives from
// `r` are its receives from offset `-d` over G (offsets taken modulo the
// group size). MPI and NCCL deliver the messages between two ranks of one
// communicator in issue order, so the i-th send to `d` meets the i-th
// receive from `-d`, on every rank alike: checking the function once checks
// every rank.
//
// No buffering is assumed: a send may block until its peer has issued the
// receive, and the other way round. The CUDA backend holds sends and
// receives issued back to back and issues them in one ncclGroupStart/End at
// the next wait or other collective; NCCL deadlocks on a pair split over two
// such batches. Requiring both halves of every pair in one batch, with the
// first asynchronous, makes the ring safe on both backends: every rank
// issues the same batches in the same order, and each batch holds the
// matching op of each of its ops.
//
//===----------------------------------------------------------------------===//

#include "PointToPointPairing.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace ddp;

namespace {

/// A send or receive and the batch it is issued in.
struct PointToPoint {
  Operation *op;
  unsigned batch;
};

/// The messages from each rank of a group to the rank `distance` places
/// further: the sends to that offset and the receives from its opposite.
struct Channel {
  int64_t distance;
  int64_t groupSize;
  SmallVector<PointToPoint> sends, recvs;
};

} // namespace

/// The offset of the peer of a send or receive.
static int64_t getPeerOffset(Operation *op) {
  if (auto send = dyn_cast<SendOp>(op))
    return send.getOffset();
  return cast<RecvOp>(op).getOffset();
}

/// "'ddp.send' to 1 over @world[tp]".
static std::string describe(Operation *op) {
  auto collective = cast<CollectiveOpInterface>(op);
  return ("'" + op->getName().getStringRef() + "' " +
          (isa<SendOp>(op) ? "to " : "from ") + Twine(getPeerOffset(op)) +
          " over @" + collective.getMeshAttr().getValue() + "[" +
          getGroupName(collective.getAxesAttr()) + "]")
      .str();
}

/// The element count and type of what the op sends or receives, as the
/// runtime transfers it: "32 x bf16".
static std::string describePayload(RankedTensorType type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type.getNumElements() << " x " << type.getElementType();
  return text;
}

/// `send` and `recv` meet on every rank: same payload, one batch.
static LogicalResult checkPair(PointToPoint send, PointToPoint recv,
                               ArrayRef<Operation *> batchEnds) {
  RankedTensorType sent = cast<SendOp>(send.op).getInput().getType();
  RankedTensorType received = cast<RecvOp>(recv.op).getResult().getType();
  if (sent.getNumElements() != received.getNumElements() ||
      sent.getElementType() != received.getElementType()) {
    InFlightDiagnostic diag = send.op->emitError("this ")
                              << describe(send.op) << " sends "
                              << describePayload(sent) << " but the "
                              << describe(recv.op) << " it pairs with receives "
                              << describePayload(received);
    diag.attachNote(recv.op->getLoc()) << "the receive it pairs with";
    return diag;
  }
  if (send.batch == recv.batch)
    return success();
  auto [first, second] = send.op->isBeforeInBlock(recv.op)
                             ? std::pair(send, recv)
                             : std::pair(recv, send);
  Operation *end = batchEnds[first.batch];
  if (end == first.op) {
    InFlightDiagnostic diag =
        first.op->emitError("this synchronous ")
        << describe(first.op) << " blocks until its peer issues the "
        << describe(second.op)
        << " it pairs with, which every rank issues only after it: every "
           "rank of the ring waits for the next; make it asynchronous";
    diag.attachNote(second.op->getLoc()) << "the op it pairs with";
    return diag;
  }
  InFlightDiagnostic diag =
      second.op->emitError("this ")
      << describe(second.op) << " is not issued together with the "
      << describe(first.op) << " it pairs with: '" << end->getName()
      << "' between them waits or communicates, so a rank can block there, "
         "or on NCCL in the first op, before its peer issues the second; "
         "only sends, receives and ops that neither wait nor communicate "
         "may come between the two";
  diag.attachNote(first.op->getLoc()) << "the op it pairs with";
  diag.attachNote(end->getLoc()) << "the op between them";
  return diag;
}

LogicalResult ddp::verifyPointToPointPairs(
    func::FuncOp func, llvm::function_ref<bool(Operation *)> callsCollectives,
    uint64_t &numPairs) {
  // Channels by group and distance, in the order they are first used so
  // that the diagnostics come in program order.
  llvm::MapVector<std::tuple<Attribute, Attribute, int64_t>, Channel> channels;
  // batchEnds[b] is the op after which batch `b` is issued.
  SmallVector<Operation *> batchEnds;
  bool isStage = getPipelineStage(func).has_value();
  for (Operation &op : func.getBody().front()) {
    if (isStage && isa<SendOp, RecvOp>(op) &&
        llvm::is_contained(
            cast<CollectiveOpInterface>(op).getAxesAttr().getAsValueRange<
                StringAttr>(),
            "pp")) {
      if (!cast<AsyncOpInterface>(op).isAsync())
        batchEnds.push_back(&op);
      continue;
    }
    if (!isa<SendOp, RecvOp>(op)) {
      if (isa<WaitOp, CollectiveOpInterface>(op) || callsCollectives(&op))
        batchEnds.push_back(&op);
      continue;
    }
    auto collective = cast<CollectiveOpInterface>(op);
    MeshOp mesh = lookupMesh(func, collective.getMeshAttr());
    // The op verifier has checked the mesh, the axes and that the offset
    // addresses another rank.
    int64_t groupSize = getGroupSize(mesh, collective.getAxesAttr());
    // Adding the group size only to a negative remainder: a positive one
    // plus a group of nearly 2^63 ranks would overflow.
    int64_t forward = getPeerOffset(&op) % groupSize;
    if (forward < 0)
      forward += groupSize;
    int64_t distance = isa<SendOp>(op) ? forward : groupSize - forward;
    Channel &channel = channels[{collective.getMeshAttr(),
                                 collective.getAxesAttr(), distance}];
    channel.distance = distance;
    channel.groupSize = groupSize;
    PointToPoint entry{&op, static_cast<unsigned>(batchEnds.size())};
    (isa<SendOp>(op) ? channel.sends : channel.recvs).push_back(entry);
    if (!cast<AsyncOpInterface>(op).isAsync())
      batchEnds.push_back(&op);
  }

  bool failed = false;
  struct Unpaired {
    Operation *op;
    const Channel *channel;
  };
  SmallVector<Unpaired> unpaired;
  for (auto &[key, channel] : channels) {
    size_t pairs = std::min(channel.sends.size(), channel.recvs.size());
    numPairs += pairs;
    for (size_t i = 0; i < pairs; ++i)
      if (mlir::failed(
              checkPair(channel.sends[i], channel.recvs[i], batchEnds)))
        failed = true;
    for (ArrayRef<PointToPoint> rest :
         {ArrayRef(channel.sends).drop_front(pairs),
          ArrayRef(channel.recvs).drop_front(pairs)})
      for (PointToPoint entry : rest)
        unpaired.push_back({entry.op, &channel});
  }
  for (const Unpaired &lone : unpaired) {
    failed = true;
    bool isSend = isa<SendOp>(lone.op);
    InFlightDiagnostic diag =
        lone.op->emitError("this ")
        << describe(lone.op) << " has no "
        << (isSend ? "'ddp.recv'" : "'ddp.send'")
        << " to pair with: from each rank to the rank "
        << lone.channel->distance << " places further in this group of "
        << lone.channel->groupSize << ", the function sends "
        << lone.channel->sends.size() << " time(s) and receives "
        << lone.channel->recvs.size()
        << " time(s); the i-th send pairs with the i-th receive over the same "
           "group from the opposite offset";
    // An unpaired op of the other kind is most likely the intended partner
    // over another group or offset.
    auto other = llvm::find_if(unpaired, [&](const Unpaired &candidate) {
      return isa<SendOp>(candidate.op) != isSend;
    });
    if (other != unpaired.end())
      diag.attachNote(other->op->getLoc())
          << "the " << describe(other->op) << " has no partner either";
  }
  return mlir::failure(failed);
}
