//===- CudaCollectives.cpp - Collectives of the CUDA backend --------------===//
//
// NCCL's unique id is broadcast over MPI (as nccl-tests does); the groups'
// communicators are split from the world's. Sends and receives issued back
// to back are held and issued together in one ncclGroupStart/End, because
// NCCL, unlike MPI, deadlocks on a ring exchange issued as separate calls.
// A collective waits for an event recorded on the compute stream when it
// was issued; its handle is an event recorded on the communication stream.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "Kernels.h"

using namespace ddprt;
using namespace ddprt::cuda;

namespace {

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    break;
  }
  return ncclFloat64;
}

const char *ncclTypeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "ncclFloat16";
  case DType::BF16:
    return "ncclBfloat16";
  case DType::F32:
    return "ncclFloat32";
  case DType::F64:
    break;
  }
  return "ncclFloat64";
}

/// avg arrives pre-scaled, as a sum (issueCollective).
ncclRedOp_t ncclReduceOp(int32_t reduction) {
  return reduction == DDPRT_REDUCTION_MAX ? ncclMax : ncclSum;
}

const char *ncclReduceOpName(int32_t reduction) {
  return reduction == DDPRT_REDUCTION_MAX ? "ncclMax" : "ncclSum";
}

} // namespace

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

Status CudaAsyncOp::wait() { return backend.waitOnCompute(done); }

Status CudaAsyncOp::orderCommunicationAfter() {
  return backend.waitOnComm(done);
}

Status CudaBackend::waitOnComm(cudaEvent_t done) {
  // A held send or receive has no recorded event until it is issued.
  DDPRT_RETURN_IF_ERROR(flushPointToPoint());
  return checkCuda(cudaStreamWaitEvent(commStream, done, 0),
                   "cudaStreamWaitEvent(comm, done)");
}

Status CudaBackend::waitOnCompute(cudaEvent_t done) {
  // A held send or receive has no recorded event until it is issued.
  DDPRT_RETURN_IF_ERROR(flushPointToPoint());
  cudaEvent_t span = beginSpan(computeStream);
  Status status = checkCuda(cudaStreamWaitEvent(computeStream, done, 0),
                            "cudaStreamWaitEvent(compute, done)");
  endSpan(span, computeStream, "wait", TraceCategory::Wait, 0, "");
  return status;
}

void CudaBackend::watchCommStream(std::string description) {
  // While recording a graph nothing runs: there is nothing to time.
  if (capturing)
    return;
  // An event of the watchdog's own, so that the op's handle may be waited
  // and destroyed before the watchdog sees it complete.
  cudaEvent_t done = nullptr;
  if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess)
    return;
  cudaEventRecord(done, commStream);
  std::lock_guard<std::mutex> lock(inFlightMutex);
  // Only the oldest op is timed: the later ones queue behind it.
  uint64_t ticket =
      inFlight.empty() ? env.watchdog.begin(description) : uint64_t(0);
  inFlight.push_back({done, std::move(description), ticket});
}

std::string CudaBackend::pollCommunication() {
  // The watchdog thread's current device is not set by cudaSetDevice on the
  // program's thread.
  cudaSetDevice(device);
  std::lock_guard<std::mutex> lock(inFlightMutex);
  {
    while (!inFlight.empty() &&
           cudaEventQuery(inFlight.front().done) == cudaSuccess) {
      if (inFlight.front().ticket)
        env.watchdog.end(inFlight.front().ticket);
      cudaEventDestroy(inFlight.front().done);
      inFlight.pop_front();
      if (!inFlight.empty())
        inFlight.front().ticket =
            env.watchdog.begin(inFlight.front().description);
    }
  }
  std::vector<ncclComm_t> comms = groups;
  if (world)
    comms.push_back(world);
  for (ncclComm_t comm : comms) {
    ncclResult_t asyncError = ncclSuccess;
    ncclCommGetAsyncError(comm, &asyncError);
    if (asyncError != ncclSuccess && asyncError != ncclInProgress)
      return concat("NCCL reported an asynchronous error: ",
                    ncclGetErrorString(asyncError), " (",
                    ncclGetLastError(comm), ")");
  }
  return "";
}

bool CudaBackend::movesNothing(const CollectiveOp &op) {
  int64_t bytes = op.numel * elementSize(op.dtype);
  // A counted all-to-all zeroes the rows past its counts even on one rank.
  return op.groupSize == 1 && op.kind != CollectiveKind::Send &&
         op.kind != CollectiveKind::Recv &&
         op.kind != CollectiveKind::AllToAllV &&
         (op.input == op.result ||
          !overlaps(op.input, bytes, op.result, bytes));
}

Status CudaBackend::issueOnOneRank(const CollectiveOp &op) {
  // A group of one rank moves nothing: every collective but a send or
  // receive leaves its input in its result, by a copy on the communication
  // stream, or nothing in place. avg too: its scale by 1/1 (issueCollective's)
  // gives every value back but a signalling NaN, which no arithmetic makes;
  // in place it read and wrote all of llama2-7b's gradients, 1.6 ms of a
  // 56 ms step on an H100, that the simulator prices at nothing. NCCL would
  // take the 16-bit all-reduce's f32 round trip for the same bits. The
  // streams and events stay those of any collective, so that one GPU tests
  // how they order the work.
  if (op.input == op.result)
    return Status::ok();
  return checkCuda(cudaMemcpyAsync(op.result, op.input,
                                   size_t(op.numel * elementSize(op.dtype)),
                                   cudaMemcpyDeviceToDevice, commStream),
                   "cudaMemcpyAsync(collective over one rank)");
}

Status CudaBackend::issueCollective(const CollectiveOp &op) {
  if (movesNothing(op))
    return issueOnOneRank(op);
  ncclComm_t comm = commOf(op);
  int64_t elementBytes = elementSize(op.dtype);
  std::string where = concat(", comm=group '", op.groupName, "', stream=comm)");
  auto scratch = [&](int64_t bytes, void **data) {
    return checkCuda(cudaMallocAsync(data, size_t(bytes), commStream),
                     concat("cudaMallocAsync(", bytes, ", comm)"));
  };
  // What an all-gather or broadcast sends: NCCL reads sendbuff while it
  // writes the `resultBytes` of recvbuff, so an input that overlaps them
  // anywhere but at `inPlace` (NCCL's in-place layout) goes through a copy,
  // which the caller frees after the call.
  auto sendInput = [&](const void *inPlace, int64_t resultBytes,
                       const char *name, const void **send, void **copy) {
    int64_t bytes = op.numel * elementBytes;
    *send = op.input;
    *copy = nullptr;
    if (op.input == inPlace ||
        !overlaps(op.input, bytes, op.result, resultBytes))
      return Status::ok();
    DDPRT_RETURN_IF_ERROR(scratch(bytes, copy));
    *send = *copy;
    return checkCuda(cudaMemcpyAsync(*copy, op.input, size_t(bytes),
                                     cudaMemcpyDeviceToDevice, commStream),
                     concat("cudaMemcpyAsync(", name, " overlapping input)"));
  };
  // avg is a pre-multiplied sum: the contribution is scaled by 1/n with the
  // kernel of ddprt_scale (the factor as a double), then summed, so that avg
  // equals ddp.scale(1/n) + sum bitwise for every group size and dtype.
  const void *input = op.input;
  void *preScaled = nullptr;
  if (op.reduction == DDPRT_REDUCTION_AVG) {
    int64_t inputNumel = op.kind == CollectiveKind::ReduceScatter
                             ? op.numel * op.groupSize
                             : op.numel;
    DDPRT_RETURN_IF_ERROR(scratch(inputNumel * elementBytes, &preScaled));
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cuda::scale(op.input, preScaled, op.dtype, inputNumel,
                              1.0 / double(op.groupSize), commStream),
                  "scale kernel (pre-scaling an avg)"));
    input = preScaled;
  }
  switch (op.kind) {
  case CollectiveKind::AllReduce: {
    void *buffer = op.result;
    const void *send = input;
    DType reduceType = op.dtype;
    if (is16Bit(op.dtype)) {
      DDPRT_RETURN_IF_ERROR(scratch(op.numel * 4, &buffer));
      DDPRT_RETURN_IF_ERROR(checkCuda(
          cuda::cast(input, op.dtype, buffer, DType::F32, op.numel, commStream),
          "cast kernel (to f32 for all_reduce)"));
      send = buffer;
      reduceType = DType::F32;
    } else if (input != op.result &&
               overlaps(input, op.numel * elementBytes, op.result,
                        op.numel * elementBytes)) {
      DDPRT_RETURN_IF_ERROR(checkCuda(
          cudaMemcpyAsync(op.result, input, size_t(op.numel * elementBytes),
                          cudaMemcpyDeviceToDevice, commStream),
          "cudaMemcpyAsync(all_reduce overlapping input)"));
      send = op.result;
    }
    DDPRT_RETURN_IF_ERROR(checkNccl(
        ncclAllReduce(send, buffer, size_t(op.numel), ncclType(reduceType),
                      ncclReduceOp(op.reduction), comm, commStream),
        concat("ncclAllReduce(sendbuff=", send, ", recvbuff=", buffer,
               ", count=", op.numel, ", datatype=", ncclTypeName(reduceType),
               ", op=", ncclReduceOpName(op.reduction), where),
        comm));
    if (buffer != op.result) {
      DDPRT_RETURN_IF_ERROR(
          checkCuda(cuda::cast(buffer, DType::F32, op.result, op.dtype,
                               op.numel, commStream),
                    "cast kernel (from f32 all_reduce)"));
      cudaFreeAsync(buffer, commStream);
    }
    if (preScaled)
      cudaFreeAsync(preScaled, commStream);
    return Status::ok();
  }
  case CollectiveKind::ReduceScatter: {
    int64_t inputNumel = op.numel * op.groupSize;
    const void *send = input;
    void *receive = op.result;
    DType reduceType = op.dtype;
    void *wideInput = nullptr;
    if (is16Bit(op.dtype)) {
      DDPRT_RETURN_IF_ERROR(scratch(inputNumel * 4, &wideInput));
      DDPRT_RETURN_IF_ERROR(scratch(op.numel * 4, &receive));
      DDPRT_RETURN_IF_ERROR(
          checkCuda(cuda::cast(input, op.dtype, wideInput, DType::F32,
                               inputNumel, commStream),
                    "cast kernel (to f32 for reduce_scatter)"));
      send = wideInput;
      reduceType = DType::F32;
    } else {
      const char *ownSlice = static_cast<const char *>(input) +
                             op.groupRank * op.numel * elementBytes;
      if (op.result != ownSlice && overlaps(input, inputNumel * elementBytes,
                                            op.result, op.numel * elementBytes))
        DDPRT_RETURN_IF_ERROR(scratch(op.numel * elementBytes, &receive));
    }
    DDPRT_RETURN_IF_ERROR(checkNccl(
        ncclReduceScatter(send, receive, size_t(op.numel), ncclType(reduceType),
                          ncclReduceOp(op.reduction), comm, commStream),
        concat("ncclReduceScatter(sendbuff=", send, ", recvbuff=", receive,
               ", recvcount=", op.numel,
               ", datatype=", ncclTypeName(reduceType),
               ", op=", ncclReduceOpName(op.reduction), where),
        comm));
    if (receive != op.result) {
      DDPRT_RETURN_IF_ERROR(
          checkCuda(cuda::cast(receive, reduceType, op.result, op.dtype,
                               op.numel, commStream),
                    "cast kernel (reduce_scatter result)"));
      cudaFreeAsync(receive, commStream);
    }
    if (wideInput)
      cudaFreeAsync(wideInput, commStream);
    if (preScaled)
      cudaFreeAsync(preScaled, commStream);
    return Status::ok();
  }
  case CollectiveKind::AllGather: {
    int64_t bytes = op.numel * elementBytes;
    const char *ownSlot =
        static_cast<const char *>(op.result) + op.groupRank * bytes;
    const void *send;
    void *copyOfInput;
    DDPRT_RETURN_IF_ERROR(sendInput(ownSlot, bytes * op.groupSize, "all_gather",
                                    &send, &copyOfInput));
    // 16-bit elements are only moved: NCCL's own 16-bit types do.
    DDPRT_RETURN_IF_ERROR(
        checkNccl(ncclAllGather(send, op.result, size_t(op.numel),
                                ncclType(op.dtype), comm, commStream),
                  concat("ncclAllGather(sendbuff=", send,
                         ", recvbuff=", op.result, ", sendcount=", op.numel,
                         ", datatype=", ncclTypeName(op.dtype), where),
                  comm));
    if (copyOfInput)
      cudaFreeAsync(copyOfInput, commStream);
    return Status::ok();
  }
  case CollectiveKind::Send:
    return checkNccl(ncclSend(op.input, size_t(op.numel), ncclType(op.dtype),
                              int(op.peer), comm, commStream),
                     concat("ncclSend(sendbuff=", op.input, ", count=",
                            op.numel, ", datatype=", ncclTypeName(op.dtype),
                            ", peer=", op.peer, where),
                     comm);
  case CollectiveKind::Recv:
    return checkNccl(ncclRecv(op.result, size_t(op.numel), ncclType(op.dtype),
                              int(op.peer), comm, commStream),
                     concat("ncclRecv(recvbuff=", op.result, ", count=",
                            op.numel, ", datatype=", ncclTypeName(op.dtype),
                            ", peer=", op.peer, where),
                     comm);
  case CollectiveKind::Broadcast: {
    // NCCL reads sendbuff on the root only; in place is sendbuff ==
    // recvbuff.
    const void *send = op.result;
    void *copyOfInput = nullptr;
    if (op.groupRank == op.root)
      DDPRT_RETURN_IF_ERROR(sendInput(op.result, op.numel * elementBytes,
                                      "broadcast", &send, &copyOfInput));
    DDPRT_RETURN_IF_ERROR(checkNccl(
        ncclBroadcast(send, op.result, size_t(op.numel), ncclType(op.dtype),
                      int(op.root), comm, commStream),
        concat("ncclBroadcast(sendbuff=", send, ", recvbuff=", op.result,
               ", count=", op.numel, ", datatype=", ncclTypeName(op.dtype),
               ", root=", op.root, where),
        comm));
    if (copyOfInput)
      cudaFreeAsync(copyOfInput, commStream);
    return Status::ok();
  }
  case CollectiveKind::AllToAll: {
    // NCCL has no all-to-all: a send and a receive per peer in one group
    // (as nccl-tests' alltoall_perf), sent from a copy where the input
    // overlaps the result.
    int64_t blockBytes = op.numel / op.groupSize * elementBytes;
    int64_t bytes = op.numel * elementBytes;
    const char *send = static_cast<const char *>(op.input);
    void *copyOfInput = nullptr;
    if (overlaps(op.input, bytes, op.result, bytes)) {
      DDPRT_RETURN_IF_ERROR(scratch(bytes, &copyOfInput));
      DDPRT_RETURN_IF_ERROR(checkCuda(
          cudaMemcpyAsync(copyOfInput, op.input, size_t(bytes),
                          cudaMemcpyDeviceToDevice, commStream),
          "cudaMemcpyAsync(all_to_all overlapping input)"));
      send = static_cast<const char *>(copyOfInput);
    }
    char *receive = static_cast<char *>(op.result);
    Status status = checkNccl(ncclGroupStart(), "ncclGroupStart()", comm);
    for (int64_t peer = 0; peer < op.groupSize && status.isOk(); ++peer) {
      status = checkNccl(
          ncclSend(send + peer * blockBytes, size_t(blockBytes), ncclUint8,
                   int(peer), comm, commStream),
          concat("ncclSend(block ", peer, " of all_to_all, ", blockBytes,
                 " bytes", where),
          comm);
      if (status.isOk())
        status = checkNccl(
            ncclRecv(receive + peer * blockBytes, size_t(blockBytes),
                     ncclUint8, int(peer), comm, commStream),
            concat("ncclRecv(block ", peer, " of all_to_all, ", blockBytes,
                   " bytes", where),
            comm);
    }
    Status ended = checkNccl(ncclGroupEnd(), "ncclGroupEnd()", comm);
    if (copyOfInput)
      cudaFreeAsync(copyOfInput, commStream);
    return status.isOk() ? ended : status;
  }
  case CollectiveKind::AllToAllV:
    return allToAllV(op, comm, where);
  }
  return makeError(DDPRT_ERROR_INTERNAL, "unknown collective");
}

/// The counted all-to-all: the counts come to the host first (Megatron's
/// device-to-host sync after its all-to-all of counts), then a send and a
/// receive per peer and sub-block with rows, in one group, into a result
/// zeroed beforehand.
Status CudaBackend::allToAllV(const CollectiveOp &op, ncclComm_t comm,
                              const std::string &where) {
  int64_t n = op.groupSize * op.subBlocks;
  std::vector<float> counts(size_t(2 * n));
  size_t countBytes = size_t(n) * sizeof(float);
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cudaMemcpyAsync(counts.data(), op.sendCounts, countBytes,
                      cudaMemcpyDeviceToHost, commStream),
      "cudaMemcpyAsync(all_to_all_v send counts to the host)"));
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cudaMemcpyAsync(counts.data() + n, op.recvCounts, countBytes,
                      cudaMemcpyDeviceToHost, commStream),
      "cudaMemcpyAsync(all_to_all_v receive counts to the host)"));
  DDPRT_RETURN_IF_ERROR(checkCuda(cudaStreamSynchronize(commStream),
                                  "cudaStreamSynchronize(comm) for the "
                                  "all_to_all_v counts"));
  std::vector<int64_t> sendRows, recvRows;
  DDPRT_RETURN_IF_ERROR(readRowCounts(op, counts.data(), "send", sendRows));
  DDPRT_RETURN_IF_ERROR(
      readRowCounts(op, counts.data() + n, "receive", recvRows));
  int64_t elementBytes = elementSize(op.dtype);
  int64_t rowBytes = op.rowNumel * elementBytes;
  int64_t subBlockBytes = op.subBlockRows() * rowBytes;
  int64_t bytes = op.numel * elementBytes;
  const char *send = static_cast<const char *>(op.input);
  void *copyOfInput = nullptr;
  Status status = Status::ok();
  if (overlaps(op.input, bytes, op.result, bytes)) {
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cudaMallocAsync(&copyOfInput, size_t(bytes), commStream),
                  concat("cudaMallocAsync(", bytes, ", comm)")));
    status = checkCuda(cudaMemcpyAsync(copyOfInput, op.input, size_t(bytes),
                                       cudaMemcpyDeviceToDevice, commStream),
                       "cudaMemcpyAsync(all_to_all_v overlapping input)");
    send = static_cast<const char *>(copyOfInput);
  }
  char *receive = static_cast<char *>(op.result);
  // All-zero bits are +0 in every dtype.
  if (status.isOk())
    status = checkCuda(cudaMemsetAsync(receive, 0, size_t(bytes), commStream),
                       "cudaMemsetAsync(all_to_all_v result)");
  if (!status.isOk()) {
    if (copyOfInput)
      cudaFreeAsync(copyOfInput, commStream);
    return status;
  }
  status = checkNccl(ncclGroupStart(), "ncclGroupStart()", comm);
  for (int64_t i = 0; i < n && status.isOk(); ++i) {
    int peer = int(i / op.subBlocks);
    if (sendRows[size_t(i)] > 0)
      status = checkNccl(
          ncclSend(send + i * subBlockBytes,
                   size_t(sendRows[size_t(i)] * rowBytes), ncclUint8, peer,
                   comm, commStream),
          concat("ncclSend(", sendRows[size_t(i)], " rows of sub-block ", i,
                 " of all_to_all_v", where),
          comm);
    if (status.isOk() && recvRows[size_t(i)] > 0)
      status = checkNccl(
          ncclRecv(receive + i * subBlockBytes,
                   size_t(recvRows[size_t(i)] * rowBytes), ncclUint8, peer,
                   comm, commStream),
          concat("ncclRecv(", recvRows[size_t(i)], " rows of sub-block ", i,
                 " of all_to_all_v", where),
          comm);
  }
  Status ended = checkNccl(ncclGroupEnd(), "ncclGroupEnd()", comm);
  if (copyOfInput)
    cudaFreeAsync(copyOfInput, commStream);
  return status.isOk() ? ended : status;
}

static std::string collectiveArgs(const CollectiveOp &op, bool async) {
  TraceArgs args;
  args.add("group", op.groupName)
      .add("dtype", dtypeName(op.dtype))
      .add("numel", op.numel)
      .add("bytes", op.numel * elementSize(op.dtype))
      .add("async", int64_t(async));
  // As the CPU backend records them.
  if (op.kind == CollectiveKind::Send || op.kind == CollectiveKind::Recv)
    args.add("peer", op.peer);
  if (op.kind == CollectiveKind::Broadcast)
    args.add("root", op.root);
  return args.str();
}

Status CudaBackend::flushPointToPoint() {
  if (heldPointToPoint.empty())
    return Status::ok();
  std::vector<std::pair<CollectiveOp, cudaEvent_t>> held;
  held.swap(heldPointToPoint);
  cudaEvent_t ready = nullptr;
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming),
                "cudaEventCreateWithFlags(ready)"));
  cudaEventRecord(ready, computeStream);
  cudaStreamWaitEvent(commStream, ready, 0);
  cudaEventDestroy(ready);
  cudaEvent_t span = beginSpan(commStream);
  Status status = checkNccl(ncclGroupStart(), "ncclGroupStart()");
  for (auto &[op, done] : held)
    if (status.isOk())
      status = issueCollective(op);
  Status ended = checkNccl(ncclGroupEnd(), "ncclGroupEnd()");
  if (status.isOk())
    status = ended;
  std::string names;
  for (auto &[op, done] : held) {
    names += (names.empty() ? "" : "+") + std::string(ddp::getCollectiveName(op.kind));
    cudaEventRecord(done, commStream);
  }
  endSpan(span, commStream, names, TraceCategory::Comm, 1,
          collectiveArgs(held.front().first, true));
  watchCommStream(concat(held.size(), " point-to-point op(s), the first ",
                         held.front().first.describe()));
  return status;
}

Status CudaBackend::collective(const CollectiveOp &op,
                               std::unique_ptr<AsyncOp> *async) {
  // Before any stream joins a recording.
  if (op.kind == CollectiveKind::AllToAllV)
    DDPRT_RETURN_IF_ERROR(refuseWhileRecording(
        "a counted all_to_all (it reads its counts on the host)"));
  bool pointToPoint =
      op.kind == CollectiveKind::Send || op.kind == CollectiveKind::Recv;
  cudaEvent_t done = nullptr;
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                "cudaEventCreateWithFlags(done)"));
  if (pointToPoint) {
    heldPointToPoint.push_back({op, done});
    if (async) {
      *async = std::make_unique<CudaAsyncOp>(*this, done);
      return Status::ok();
    }
    Status status = waitOnCompute(done);
    cudaEventDestroy(done);
    return status;
  }
  Status status = flushPointToPoint();
  if (status.isOk()) {
    // The collective reads what the compute stream wrote before it.
    cudaEvent_t ready = nullptr;
    status = checkCuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming),
                       "cudaEventCreateWithFlags(ready)");
    if (status.isOk()) {
      cudaEventRecord(ready, computeStream);
      cudaStreamWaitEvent(commStream, ready, 0);
      cudaEventDestroy(ready);
      cudaEvent_t span = beginSpan(commStream);
      status = issueCollective(op);
      endSpan(span, commStream, ddp::getCollectiveName(op.kind), TraceCategory::Comm, 1,
              collectiveArgs(op, async != nullptr));
      cudaEventRecord(done, commStream);
      watchCommStream(op.describe());
    }
  }
  if (!status.isOk()) {
    cudaEventDestroy(done);
    return status;
  }
  if (async) {
    *async = std::make_unique<CudaAsyncOp>(*this, done);
    return Status::ok();
  }
  status = waitOnCompute(done);
  cudaEventDestroy(done);
  return status;
}
