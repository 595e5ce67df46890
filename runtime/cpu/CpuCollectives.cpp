//===- CpuCollectives.cpp - Collectives of the CPU backend ----------------===//
//
// Every MPI call runs on the CommThread (the communication stream, trace
// stream 1); a collective's handle waits for its completion. 16-bit data is
// reduced in f32 and rounded once; avg is a sum of contributions pre-scaled
// by 1/n (docs/Runtime.md).
//
//===----------------------------------------------------------------------===//

#include "CpuBackend.h"

#include <climits>
#include <cstring>

using namespace ddprt;
using namespace ddprt::cpu;

namespace {

MPI_Datatype mpiType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::F64:
    return MPI_DOUBLE;
  case DType::F16:
  case DType::BF16:
    break;
  }
  // Moved, never reduced, as 16-bit words.
  return MPI_UINT16_T;
}

const char *mpiTypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "MPI_FLOAT";
  case DType::F64:
    return "MPI_DOUBLE";
  case DType::F16:
  case DType::BF16:
    break;
  }
  return "MPI_UINT16_T";
}

std::string pointerText(const void *pointer) { return concat(pointer); }

/// A pending CPU collective: waiting blocks the compute thread.
class CpuAsyncOp final : public AsyncOp {
public:
  CpuAsyncOp(std::shared_ptr<Completion> completion, CommThread &comm,
             TraceRecorder &trace)
      : completion(std::move(completion)), comm(comm), trace(trace) {}
  Status wait() override {
    TraceSpan span(trace, "wait", TraceCategory::Wait, 0);
    return completion->wait();
  }
  Status orderCommunicationAfter() override {
    comm.submitAfter(completion);
    return Status::ok();
  }

private:
  std::shared_ptr<Completion> completion;
  CommThread &comm;
  TraceRecorder &trace;
};

} // namespace

//===----------------------------------------------------------------------===//
// Collectives, on the communication thread
//===----------------------------------------------------------------------===//

namespace {

/// A collective ready for MPI: the buffers MPI sees (f32 copies of 16-bit
/// data, copies that break an aliasing MPI forbids) and the work left once
/// MPI is done. The scratch lives as long as `finish` does.
struct PreparedCollective {
  struct Scratch {
    std::vector<float> wideInput, wideResult;
    std::vector<char> bytes;
    /// The contribution of an avg, scaled by 1/n.
    std::vector<char> preScaled;
    /// all_to_all_v: the counted rows received, packed; MPI_Alltoallv's
    /// counts and displacements (elements); the counts as rows.
    std::vector<char> packedReceive;
    std::vector<int> sendCounts, sendDispls, recvCounts, recvDispls;
    std::vector<int64_t> sendRows, recvRows;
  };
  std::shared_ptr<Scratch> scratch = std::make_shared<Scratch>();
  const void *send = nullptr;
  void *receive = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_FLOAT;
  const char *typeName = "MPI_FLOAT";
  /// DDPRT_FLAG_DETERMINISTIC_REDUCTIONS: MPI only moves the contributions
  /// (all-gather, all-to-all) and `finish` reduces them in pairs of ranks.
  bool gatherThenReduce = false;
  std::function<Status()> finish = [] { return Status::ok(); };
};

} // namespace

static Status checkCount(const CollectiveOp &op, int64_t count) {
  if (count > INT_MAX)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT, op.describe(), ": ", count,
                     " elements exceed MPI's int count");
  return Status::ok();
}

static std::string bufferText(const void *buffer) {
  return buffer == MPI_IN_PLACE ? "MPI_IN_PLACE" : pointerText(buffer);
}

/// The sum left in `sum` (f32 or f64) is rounded into the op's result if it
/// is a 16-bit copy.
static std::function<Status()> finishReduction(const CollectiveOp &op,
                                               const Tensor &sum) {
  return [op, sum] {
    if (sum.data != op.result)
      host::cast(sum, op.dtype, op.result);
    return Status::ok();
  };
}

/// An avg as the sum it is defined to be: the contribution (`inputNumel`
/// elements) scaled by 1/n into `preScaled` by ddprt_scale's kernel, in the
/// element type and with the factor as a double, so that avg equals
/// ddp.scale(1/n) followed by a sum for every group size and element type.
static CollectiveOp preScaleAverage(const CollectiveOp &op, int64_t inputNumel,
                                    std::vector<char> &preScaled) {
  preScaled.resize(size_t(inputNumel * elementSize(op.dtype)));
  host::scale({const_cast<void *>(op.input), op.dtype, inputNumel},
              1.0 / double(op.groupSize), preScaled.data());
  CollectiveOp sum = op;
  sum.input = preScaled.data();
  sum.reduction = DDPRT_REDUCTION_SUM;
  return sum;
}

static Status prepareAllReduce(const CollectiveOp &op,
                               PreparedCollective &prepared) {
  DDPRT_RETURN_IF_ERROR(checkCount(op, op.numel));
  prepared.count = int(op.numel);
  if (is16Bit(op.dtype)) {
    std::vector<float> &sum = prepared.scratch->wideResult;
    sum.resize(size_t(op.numel));
    host::cast({const_cast<void *>(op.input), op.dtype, op.numel}, DType::F32,
               sum.data());
    prepared.send = MPI_IN_PLACE;
    prepared.receive = sum.data();
    prepared.finish = finishReduction(op, {sum.data(), DType::F32, op.numel});
    return Status::ok();
  }
  int64_t bytes = op.numel * elementSize(op.dtype);
  prepared.type = mpiType(op.dtype);
  prepared.typeName = mpiTypeName(op.dtype);
  prepared.send = op.input;
  prepared.receive = op.result;
  if (op.input == op.result) {
    prepared.send = MPI_IN_PLACE;
  } else if (overlaps(op.input, bytes, op.result, bytes)) {
    std::vector<char> &copy = prepared.scratch->bytes;
    copy.assign(static_cast<const char *>(op.input),
                static_cast<const char *>(op.input) + bytes);
    prepared.send = copy.data();
  }
  prepared.finish = finishReduction(op, {op.result, op.dtype, op.numel});
  return Status::ok();
}

static Status prepareReduceScatter(const CollectiveOp &op,
                                   PreparedCollective &prepared) {
  int64_t inputNumel = op.numel * op.groupSize;
  DDPRT_RETURN_IF_ERROR(checkCount(op, inputNumel));
  prepared.count = int(op.numel);
  if (is16Bit(op.dtype)) {
    std::vector<float> &input = prepared.scratch->wideInput;
    std::vector<float> &slice = prepared.scratch->wideResult;
    input.resize(size_t(inputNumel));
    slice.resize(size_t(op.numel));
    host::cast({const_cast<void *>(op.input), op.dtype, inputNumel}, DType::F32,
               input.data());
    prepared.send = input.data();
    prepared.receive = slice.data();
    prepared.finish = finishReduction(op, {slice.data(), DType::F32, op.numel});
    return Status::ok();
  }
  int64_t elementBytes = elementSize(op.dtype);
  prepared.type = mpiType(op.dtype);
  prepared.typeName = mpiTypeName(op.dtype);
  prepared.send = op.input;
  prepared.receive = op.result;
  Tensor sum{op.result, op.dtype, op.numel};
  // MPI forbids aliasing the buffers; the result is often a view into the
  // input (this rank's slice of the bucket), so reduce into a scratch then.
  if (overlaps(op.input, inputNumel * elementBytes, op.result,
               op.numel * elementBytes)) {
    std::vector<char> &scratch = prepared.scratch->bytes;
    scratch.resize(size_t(op.numel * elementBytes));
    prepared.receive = scratch.data();
    std::function<Status()> reduce = finishReduction(op, sum);
    prepared.finish = [op, scratch = prepared.scratch, reduce] {
      std::memcpy(op.result, scratch->bytes.data(), scratch->bytes.size());
      return reduce();
    };
    return Status::ok();
  }
  prepared.finish = finishReduction(op, sum);
  return Status::ok();
}

/// An all-reduce or reduce-scatter under DDPRT_FLAG_DETERMINISTIC_REDUCTIONS:
/// every rank's contribution (to the all-reduce; to this rank's slice, for
/// reduce-scatter) arrives in the accumulation type, gathered in group-rank
/// order, and is added in pairs of neighbouring ranks (reduceByRankPairs),
/// so the result does not depend on how MPI would have split the message.
static Status prepareGatherThenReduce(const CollectiveOp &op,
                                      PreparedCollective &prepared) {
  int64_t ranks = op.groupSize;
  int64_t inputNumel =
      op.kind == CollectiveKind::ReduceScatter ? op.numel * ranks : op.numel;
  // ddprt_all_reduce/reduce_scatter checked that this cannot overflow.
  int64_t gatheredNumel = op.numel * ranks;
  DDPRT_RETURN_IF_ERROR(checkCount(op, gatheredNumel));
  DType accType = op.dtype == DType::F64 ? DType::F64 : DType::F32;
  PreparedCollective::Scratch &scratch = *prepared.scratch;
  const void *contribution = op.input;
  if (accType != op.dtype) {
    scratch.wideInput.resize(size_t(inputNumel));
    host::cast({const_cast<void *>(op.input), op.dtype, inputNumel}, accType,
               scratch.wideInput.data());
    contribution = scratch.wideInput.data();
  }
  scratch.bytes.resize(size_t(gatheredNumel * elementSize(accType)));
  prepared.gatherThenReduce = true;
  prepared.count = int(op.numel);
  prepared.type = mpiType(accType);
  prepared.typeName = mpiTypeName(accType);
  prepared.send = contribution;
  prepared.receive = scratch.bytes.data();
  prepared.finish = [op, accType, keep = prepared.scratch] {
    void *folded = op.result;
    if (accType != op.dtype) {
      keep->wideResult.resize(size_t(op.numel));
      folded = keep->wideResult.data();
    }
    host::reduceByRankPairs(keep->bytes.data(), accType, op.numel,
                            op.groupSize, op.reduction, folded);
    return finishReduction(op, {folded, accType, op.numel})();
  };
  return Status::ok();
}

static Status prepareAllGather(const CollectiveOp &op,
                               PreparedCollective &prepared) {
  DDPRT_RETURN_IF_ERROR(checkCount(op, op.numel * op.groupSize));
  prepared.count = int(op.numel);
  prepared.type = mpiType(op.dtype);
  prepared.typeName = mpiTypeName(op.dtype);
  int64_t bytes = op.numel * elementSize(op.dtype);
  prepared.send = op.input;
  prepared.receive = op.result;
  const char *ownSlot =
      static_cast<const char *>(op.result) + op.groupRank * bytes;
  if (op.input == ownSlot) {
    prepared.send = MPI_IN_PLACE;
  } else if (overlaps(op.input, bytes, op.result, bytes * op.groupSize)) {
    std::vector<char> &copy = prepared.scratch->bytes;
    copy.assign(static_cast<const char *>(op.input),
                static_cast<const char *>(op.input) + bytes);
    prepared.send = copy.data();
  }
  return Status::ok();
}

/// MPI broadcasts in place: the root first copies its input into the result,
/// which every rank then receives into.
static Status prepareBroadcast(const CollectiveOp &op,
                               PreparedCollective &prepared) {
  DDPRT_RETURN_IF_ERROR(checkCount(op, op.numel));
  prepared.count = int(op.numel);
  prepared.type = mpiType(op.dtype);
  prepared.typeName = mpiTypeName(op.dtype);
  prepared.receive = op.result;
  if (op.groupRank == op.root && op.input != op.result)
    std::memmove(op.result, op.input, size_t(op.numel * elementSize(op.dtype)));
  return Status::ok();
}

/// MPI forbids aliasing the buffers: an input that overlaps the result is
/// sent from a copy.
static Status prepareAllToAll(const CollectiveOp &op,
                              PreparedCollective &prepared) {
  DDPRT_RETURN_IF_ERROR(checkCount(op, op.numel / op.groupSize));
  prepared.count = int(op.numel / op.groupSize);
  prepared.type = mpiType(op.dtype);
  prepared.typeName = mpiTypeName(op.dtype);
  int64_t bytes = op.numel * elementSize(op.dtype);
  prepared.send = op.input;
  prepared.receive = op.result;
  if (overlaps(op.input, bytes, op.result, bytes)) {
    std::vector<char> &copy = prepared.scratch->bytes;
    copy.assign(static_cast<const char *>(op.input),
                static_cast<const char *>(op.input) + bytes);
    prepared.send = copy.data();
  }
  return Status::ok();
}

/// all_to_all_v packs each peer's counted rows (MPI_Alltoallv takes one
/// contiguous range per peer, and a block has a range per sub-block), and
/// `finish` places the received ones at the start of their sub-blocks over
/// a zeroed result. The counts are read here, on the communication thread,
/// after every op this one was ordered after.
static Status prepareAllToAllV(const CollectiveOp &op,
                               PreparedCollective &prepared) {
  PreparedCollective::Scratch &scratch = *prepared.scratch;
  DDPRT_RETURN_IF_ERROR(readRowCounts(
      op, static_cast<const float *>(op.sendCounts), "send", scratch.sendRows));
  DDPRT_RETURN_IF_ERROR(readRowCounts(op,
                                      static_cast<const float *>(op.recvCounts),
                                      "receive", scratch.recvRows));
  int64_t rowBytes = op.rowNumel * elementSize(op.dtype);
  int64_t subBlockBytes = op.subBlockRows() * rowBytes;
  int64_t n = op.groupSize, subBlocks = op.subBlocks;
  // Counts and displacements in elements, each within MPI's int.
  auto layOut = [&](const std::vector<int64_t> &rows, std::vector<int> &counts,
                    std::vector<int> &displs, int64_t &total) -> Status {
    counts.assign(size_t(n), 0);
    displs.assign(size_t(n), 0);
    total = 0;
    for (int64_t peer = 0; peer < n; ++peer) {
      int64_t peerRows = 0;
      for (int64_t sub = 0; sub < subBlocks; ++sub)
        peerRows += rows[size_t(peer * subBlocks + sub)];
      DDPRT_RETURN_IF_ERROR(checkCount(op, total + peerRows * op.rowNumel));
      displs[size_t(peer)] = int(total);
      counts[size_t(peer)] = int(peerRows * op.rowNumel);
      total += peerRows * op.rowNumel;
    }
    return Status::ok();
  };
  int64_t sendTotal = 0, recvTotal = 0;
  DDPRT_RETURN_IF_ERROR(layOut(scratch.sendRows, scratch.sendCounts,
                               scratch.sendDispls, sendTotal));
  DDPRT_RETURN_IF_ERROR(layOut(scratch.recvRows, scratch.recvCounts,
                               scratch.recvDispls, recvTotal));
  int64_t elementBytes = elementSize(op.dtype);
  scratch.bytes.resize(size_t(std::max<int64_t>(sendTotal, 1) * elementBytes));
  scratch.packedReceive.resize(
      size_t(std::max<int64_t>(recvTotal, 1) * elementBytes));
  char *packed = scratch.bytes.data();
  const auto *input = static_cast<const char *>(op.input);
  for (int64_t i = 0; i < n * subBlocks; ++i) {
    int64_t bytes = scratch.sendRows[size_t(i)] * rowBytes;
    std::memcpy(packed, input + i * subBlockBytes, size_t(bytes));
    packed += bytes;
  }
  prepared.type = mpiType(op.dtype);
  prepared.typeName = mpiTypeName(op.dtype);
  prepared.send = scratch.bytes.data();
  prepared.receive = scratch.packedReceive.data();
  prepared.finish = [op, rowBytes, subBlockBytes, keep = prepared.scratch] {
    auto *result = static_cast<char *>(op.result);
    // All-zero bits are +0 in every dtype.
    std::memset(result, 0, size_t(op.numel * elementSize(op.dtype)));
    const char *from = keep->packedReceive.data();
    for (int64_t i = 0; i < op.groupSize * op.subBlocks; ++i) {
      int64_t bytes = keep->recvRows[size_t(i)] * rowBytes;
      std::memcpy(result + i * subBlockBytes, from, size_t(bytes));
      from += bytes;
    }
    return Status::ok();
  };
  return Status::ok();
}

/// MPI_Alltoall (MPI_Ialltoall when `request` is set) of `p`'s blocks of
/// p.count elements: an all-to-all's, and the exchange of a deterministic
/// reduce-scatter (`purpose` ends its message).
static Status allToAll(const PreparedCollective &p, MPI_Comm group,
                       MPI_Request *request, const std::string &comm,
                       const char *purpose) {
  return checkMpi(
      request ? MPI_Ialltoall(p.send, p.count, p.type, p.receive, p.count,
                              p.type, group, request)
              : MPI_Alltoall(p.send, p.count, p.type, p.receive, p.count,
                             p.type, group),
      concat(request ? "MPI_Ialltoall" : "MPI_Alltoall",
             "(sendbuf=", pointerText(p.send), ", sendcount=", p.count,
             ", recvbuf=", pointerText(p.receive), ", recvcount=", p.count,
             ", datatype=", p.typeName, ", ", comm, ")", purpose));
}

/// Issues the op on `group`: blocking when `request` is null, else posted.
static Status issueOnCommThread(const CollectiveOp &op, MPI_Comm group,
                                PreparedCollective &prepared,
                                MPI_Request *request) {
  const PreparedCollective &p = prepared;
  std::string comm = concat("comm=group '", op.groupName, "'");
  int peer = int(op.peer);
  // avg arrives here pre-scaled, as a sum (preScaleAverage).
  MPI_Op reduce = op.reduction == DDPRT_REDUCTION_MAX ? MPI_MAX : MPI_SUM;
  const char *reduceName =
      op.reduction == DDPRT_REDUCTION_MAX ? "MPI_MAX" : "MPI_SUM";
  switch (op.kind) {
  case CollectiveKind::AllReduce:
    if (p.gatherThenReduce)
      return checkMpi(
          request ? MPI_Iallgather(p.send, p.count, p.type, p.receive, p.count,
                                   p.type, group, request)
                  : MPI_Allgather(p.send, p.count, p.type, p.receive, p.count,
                                  p.type, group),
          concat(request ? "MPI_Iallgather" : "MPI_Allgather",
                 "(sendbuf=", pointerText(p.send), ", count=", p.count,
                 ", recvbuf=", pointerText(p.receive),
                 ", datatype=", p.typeName, ", ", comm,
                 ") of a deterministic all_reduce"));
    return checkMpi(
        request
            ? MPI_Iallreduce(p.send, p.receive, p.count, p.type, reduce, group,
                             request)
            : MPI_Allreduce(p.send, p.receive, p.count, p.type, reduce, group),
        concat(request ? "MPI_Iallreduce" : "MPI_Allreduce",
               "(sendbuf=", bufferText(p.send),
               ", recvbuf=", pointerText(p.receive), ", count=", p.count,
               ", datatype=", p.typeName, ", op=", reduceName, ", ", comm,
               ")"));
  case CollectiveKind::ReduceScatter:
    if (p.gatherThenReduce)
      return allToAll(p, group, request, comm,
                      " of a deterministic reduce_scatter");
    return checkMpi(
        request ? MPI_Ireduce_scatter_block(p.send, p.receive, p.count, p.type,
                                            reduce, group, request)
                : MPI_Reduce_scatter_block(p.send, p.receive, p.count, p.type,
                                           reduce, group),
        concat(request ? "MPI_Ireduce_scatter_block"
                       : "MPI_Reduce_scatter_block",
               "(sendbuf=", bufferText(p.send),
               ", recvbuf=", pointerText(p.receive), ", recvcount=", p.count,
               ", datatype=", p.typeName, ", op=", reduceName, ", ", comm,
               ")"));
  case CollectiveKind::AllGather:
    return checkMpi(
        request ? MPI_Iallgather(p.send, p.count, p.type, p.receive, p.count,
                                 p.type, group, request)
                : MPI_Allgather(p.send, p.count, p.type, p.receive, p.count,
                                p.type, group),
        concat(request ? "MPI_Iallgather" : "MPI_Allgather",
               "(sendbuf=", bufferText(p.send), ", sendcount=", p.count,
               ", recvbuf=", pointerText(p.receive), ", recvcount=", p.count,
               ", datatype=", p.typeName, ", ", comm, ")"));
  case CollectiveKind::Send:
    return checkMpi(
        MPI_Isend(op.input, p.count, p.type, peer, 0, group, request),
        concat("MPI_Isend(buf=", pointerText(op.input), ", count=", p.count,
               ", datatype=", p.typeName, ", dest=", peer, ", tag=0, ", comm,
               ")"));
  case CollectiveKind::Recv:
    return checkMpi(
        MPI_Irecv(op.result, p.count, p.type, peer, 0, group, request),
        concat("MPI_Irecv(buf=", pointerText(op.result), ", count=", p.count,
               ", datatype=", p.typeName, ", source=", peer, ", tag=0, ", comm,
               ")"));
  case CollectiveKind::Broadcast:
    return checkMpi(
        request ? MPI_Ibcast(p.receive, p.count, p.type, int(op.root), group,
                             request)
                : MPI_Bcast(p.receive, p.count, p.type, int(op.root), group),
        concat(request ? "MPI_Ibcast" : "MPI_Bcast",
               "(buffer=", pointerText(p.receive), ", count=", p.count,
               ", datatype=", p.typeName, ", root=", op.root, ", ", comm,
               ")"));
  case CollectiveKind::AllToAll:
    return allToAll(p, group, request, comm, "");
  case CollectiveKind::AllToAllV: {
    const PreparedCollective::Scratch &v = *p.scratch;
    return checkMpi(
        request ? MPI_Ialltoallv(p.send, v.sendCounts.data(),
                                 v.sendDispls.data(), p.type, p.receive,
                                 v.recvCounts.data(), v.recvDispls.data(),
                                 p.type, group, request)
                : MPI_Alltoallv(p.send, v.sendCounts.data(),
                                v.sendDispls.data(), p.type, p.receive,
                                v.recvCounts.data(), v.recvDispls.data(),
                                p.type, group),
        concat(request ? "MPI_Ialltoallv" : "MPI_Alltoallv",
               "(sendbuf=", pointerText(p.send),
               ", recvbuf=", pointerText(p.receive),
               ", datatype=", p.typeName, ", ", comm, ")"));
  }
  }
  return makeError(DDPRT_ERROR_INTERNAL, "unknown collective");
}

/// A collective over a group of one rank that MPI need not see: any but a
/// send or receive, with a result that is the input or apart from it.
static bool movesNothing(const CollectiveOp &op) {
  int64_t bytes = op.numel * elementSize(op.dtype);
  // A counted all-to-all zeroes the rows past its counts even on one rank.
  return op.groupSize == 1 && op.kind != CollectiveKind::Send &&
         op.kind != CollectiveKind::Recv &&
         op.kind != CollectiveKind::AllToAllV &&
         (op.input == op.result ||
          !overlaps(op.input, bytes, op.result, bytes));
}

/// Leaves the input in the result, as the CUDA backend does for a group of
/// one rank: a copy, or nothing in place (an avg too: its scale by 1/1 gives
/// every value back but a signalling NaN, which no arithmetic makes).
/// Through MPI, a 16-bit reduce-scatter went through an f32 copy of the
/// whole input: 16 s a step for a llama2-7b layer's 227M bf16 gradients on
/// one rank.
static Status issueOnOneRank(const CollectiveOp &op) {
  if (op.input != op.result)
    std::memcpy(op.result, op.input, size_t(op.numel * elementSize(op.dtype)));
  return Status::ok();
}

Status CpuBackend::collective(const CollectiveOp &op,
                              std::unique_ptr<AsyncOp> *async) {
  CommTask task;
  task.traceName = ddp::getCollectiveName(op.kind);
  task.description = op.describe();
  TraceArgs traceArgs;
  if (env.trace.isEnabled()) {
    TraceArgs &args = traceArgs;
    args.add("group", op.groupName)
        .add("dtype", dtypeName(op.dtype))
        .add("numel", op.numel)
        .add("bytes", op.numel * elementSize(op.dtype))
        .add("async", int64_t(async != nullptr));
    if (op.kind == CollectiveKind::Send || op.kind == CollectiveKind::Recv)
      args.add("peer", op.peer);
    if (op.kind == CollectiveKind::Broadcast)
      args.add("root", op.root);
    if (op.kind == CollectiveKind::AllToAllV)
      args.add("rows", op.numel / op.rowNumel);
    task.traceArgs = args.str();
  }
  // Synchronous collectives block the communication thread (the compute
  // thread waits anyway). Asynchronous ones are posted and polled, so the
  // communication thread does not spin on a core the GEMMs need; sends and
  // receives are always posted, so that a ring exchange cannot deadlock.
  bool pointToPoint =
      op.kind == CollectiveKind::Send || op.kind == CollectiveKind::Recv;
  bool post = async != nullptr || pointToPoint;
  auto prepared = std::make_shared<PreparedCollective>();
  // A counted all-to-all's trace event says how many rows it moved.
  if (env.trace.isEnabled() && op.kind == CollectiveKind::AllToAllV)
    task.traceArgsAtEnd = [args = traceArgs, prepared]() mutable {
      const PreparedCollective::Scratch &v = *prepared->scratch;
      int64_t sent = 0, received = 0;
      for (int64_t rows : v.sendRows)
        sent += rows;
      for (int64_t rows : v.recvRows)
        received += rows;
      return args.add("sent_rows", sent).add("received_rows", received).str();
    };
  int32_t groupIndex = op.group;
  task.start = [this, op, groupIndex, prepared,
                post](MPI_Request *request) -> Status {
    if (movesNothing(op))
      return issueOnOneRank(op);
    std::vector<char> &preScaled = prepared->scratch->preScaled;
    switch (op.kind) {
    case CollectiveKind::AllReduce: {
      CollectiveOp sum = op.reduction == DDPRT_REDUCTION_AVG
                             ? preScaleAverage(op, op.numel, preScaled)
                             : op;
      DDPRT_RETURN_IF_ERROR(env.deterministicReductions
                                ? prepareGatherThenReduce(sum, *prepared)
                                : prepareAllReduce(sum, *prepared));
      break;
    }
    case CollectiveKind::ReduceScatter: {
      // ddprt_reduce_scatter checked that numel x group size fits.
      CollectiveOp sum =
          op.reduction == DDPRT_REDUCTION_AVG
              ? preScaleAverage(op, op.numel * op.groupSize, preScaled)
              : op;
      DDPRT_RETURN_IF_ERROR(env.deterministicReductions
                                ? prepareGatherThenReduce(sum, *prepared)
                                : prepareReduceScatter(sum, *prepared));
      break;
    }
    case CollectiveKind::AllGather:
      DDPRT_RETURN_IF_ERROR(prepareAllGather(op, *prepared));
      break;
    case CollectiveKind::Broadcast:
      DDPRT_RETURN_IF_ERROR(prepareBroadcast(op, *prepared));
      break;
    case CollectiveKind::AllToAll:
      DDPRT_RETURN_IF_ERROR(prepareAllToAll(op, *prepared));
      break;
    case CollectiveKind::AllToAllV:
      DDPRT_RETURN_IF_ERROR(prepareAllToAllV(op, *prepared));
      break;
    case CollectiveKind::Send:
    case CollectiveKind::Recv:
      DDPRT_RETURN_IF_ERROR(checkCount(op, op.numel));
      prepared->count = int(op.numel);
      prepared->type = mpiType(op.dtype);
      prepared->typeName = mpiTypeName(op.dtype);
      break;
    }
    MPI_Comm group = groups[size_t(groupIndex)];
    DDPRT_RETURN_IF_ERROR(
        issueOnCommThread(op, group, *prepared, post ? request : nullptr));
    return post ? Status::ok() : prepared->finish();
  };
  task.finish = [op, prepared](const MPI_Status &status) -> Status {
    if (op.kind == CollectiveKind::Recv) {
      int received = 0;
      MPI_Get_count(&status, mpiType(op.dtype), &received);
      if (received != op.numel)
        return makeError(DDPRT_ERROR_MPI, op.describe(), ": received ",
                         received, " elements, expected ", op.numel,
                         " (the peer sent a different size)");
    }
    return prepared->finish();
  };
  std::shared_ptr<Completion> completion = comm.submit(std::move(task));
  if (async) {
    *async =
        std::make_unique<CpuAsyncOp>(std::move(completion), comm, env.trace);
    return Status::ok();
  }
  TraceSpan span(env.trace, "wait", TraceCategory::Wait, 0);
  return completion->wait();
}
