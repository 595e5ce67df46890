//===- CudaBackend.cpp - NCCL + CUDA + cuBLAS backend ---------------------===//
//
// One compute stream (kernels, cuBLAS) and one communication stream (NCCL),
// ordered by CUDA events: a collective waits for an event recorded on the
// compute stream when it was issued, and its handle is an event recorded on
// the communication stream after it, which ddprt_wait makes the compute
// stream wait for. The host never blocks except to read data back.
//
// NCCL's unique id is broadcast over MPI (as nccl-tests does); the groups'
// communicators are split from the world's. Sends and receives issued back
// to back are held and issued together in one ncclGroupStart/End, because
// NCCL, unlike MPI, deadlocks on a ring exchange issued as separate calls.
//
//===----------------------------------------------------------------------===//

#include "../Backend.h"
#include "../Mpi.h"
#include "../Trace.h"
#include "../Watchdog.h"
#include "Kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <climits>
#include <cstring>
#include <deque>
#include <mutex>

using namespace ddprt;

namespace {

Status checkCuda(cudaError_t error, const std::string &call) {
  if (error == cudaSuccess)
    return Status::ok();
  return makeError(DDPRT_ERROR_CUDA, call, " failed: ", cudaGetErrorName(error),
                   ": ", cudaGetErrorString(error));
}

Status checkCublas(cublasStatus_t status, const std::string &call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return makeError(DDPRT_ERROR_CUDA, call,
                   " failed: ", cublasGetStatusName(status), ": ",
                   cublasGetStatusString(status));
}

Status checkNccl(ncclResult_t result, const std::string &call,
                 ncclComm_t comm = nullptr) {
  if (result == ncclSuccess || result == ncclInProgress)
    return Status::ok();
  const char *detail = ncclGetLastError(comm);
  return makeError(DDPRT_ERROR_NCCL, call,
                   " failed: ", ncclGetErrorString(result),
                   detail && *detail ? concat(" (", detail, ")") : "");
}

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

bool is16Bit(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16;
}

bool overlaps(const void *a, int64_t aBytes, const void *b, int64_t bBytes) {
  auto aBegin = reinterpret_cast<uintptr_t>(a);
  auto bBegin = reinterpret_cast<uintptr_t>(b);
  return aBegin < bBegin + uint64_t(bBytes) &&
         bBegin < aBegin + uint64_t(aBytes);
}

/// A span on a stream, timed by two events and resolved at shutdown.
struct PendingEvent {
  std::string name;
  TraceCategory category;
  int stream;
  cudaEvent_t start, end;
  std::string args;
};

class CudaBackend;

class CudaAsyncOp final : public AsyncOp {
public:
  CudaAsyncOp(CudaBackend &backend, cudaEvent_t done)
      : backend(backend), done(done) {}
  ~CudaAsyncOp() override { cudaEventDestroy(done); }
  Status wait() override;

private:
  CudaBackend &backend;
  cudaEvent_t done;
};

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(BackendEnv env) : env(env) {}
  ~CudaBackend() override;

  Status start();

  int32_t getKind() const override { return DDPRT_BACKEND_CUDA; }
  int getNumCommStreams() const override { return 1; }
  Status createGroup(const GroupLayout &layout,
                     const std::string &name) override;

  Status allocate(int64_t bytes, void **data) override;
  void deallocate(void *data) override { cudaFree(data); }
  Status copy(void *dst, const void *src, int64_t bytes) override;
  Status read(void *hostDst, const void *src, int64_t bytes) override;
  Status write(void *dst, const void *hostSrc, int64_t bytes) override;

  Status fillSeeded(const Tensor &tensor, uint64_t key) override;
  Status gemm(const GemmOp &op) override;
  Status compute(const std::string &kind, const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &results) override;
  Status accumulate(const Tensor &lhs, const void *rhs, void *result) override;
  Status scale(const Tensor &input, double factor, void *result) override;
  Status cast(const Tensor &input, DType resultType, void *result) override;
  Status findNonFinite(const Tensor &tensor, int64_t &index,
                       double &value) override;
  Status sgd(const Tensor &param, const Tensor &grad, double lr) override;
  Status adam(const Tensor &param, const Tensor &grad, float *moments,
              const AdamScalars &scalars) override;

  Status collective(const CollectiveOp &op,
                    std::unique_ptr<AsyncOp> *async) override;
  Status synchronize() override;
  Status shutdown() override;

  /// Makes the compute stream wait for `done` (recorded or about to be).
  Status waitOnCompute(cudaEvent_t done);

private:
  /// Records the start of a traced span on `stream`; endSpan records its end.
  cudaEvent_t beginSpan(cudaStream_t stream);
  void endSpan(cudaEvent_t start, cudaStream_t stream, std::string name,
               TraceCategory category, int tid, std::string args);
  Status issueCollective(const CollectiveOp &op);
  Status flushPointToPoint();
  /// Lets the watchdog time the op just issued on the communication stream.
  void watchCommStream(std::string description);
  std::string pollCommunication();
  Status resolveTrace();
  ncclComm_t commOf(const CollectiveOp &op) const {
    return groups[size_t(op.group)];
  }

  BackendEnv env;
  int device = 0;
  cudaStream_t computeStream = nullptr, commStream = nullptr;
  cublasHandle_t cublas = nullptr;
  ncclComm_t world = nullptr;
  std::vector<ncclComm_t> groups;
  cudaEvent_t traceBase = nullptr;
  double traceBaseUs = 0;
  std::vector<PendingEvent> traceEvents;
  /// Point-to-point ops issued asynchronously and not yet given to NCCL,
  /// with the events that will mark them done.
  std::vector<std::pair<CollectiveOp, cudaEvent_t>> heldPointToPoint;

  /// Collectives in flight on the communication stream, in stream order;
  /// shared with the watchdog thread, as are the communicators.
  struct InFlight {
    cudaEvent_t done;
    std::string description;
    uint64_t ticket;
  };
  std::mutex inFlightMutex;
  std::deque<InFlight> inFlight;
};

} // namespace

//===----------------------------------------------------------------------===//
// Setup and teardown
//===----------------------------------------------------------------------===//

bool ddprt::isCudaBackendBuilt() { return true; }

bool ddprt::isCudaDeviceAvailable(std::string &why) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    why = concat("no CUDA device: cudaGetDeviceCount failed: ",
                 cudaGetErrorName(error), ": ", cudaGetErrorString(error));
    return false;
  }
  if (count == 0) {
    why = "no CUDA device: cudaGetDeviceCount found none";
    return false;
  }
  return true;
}

std::unique_ptr<Backend> ddprt::createCudaBackend(BackendEnv env,
                                                  Status &status) {
  std::string why;
  if (!isCudaDeviceAvailable(why)) {
    status = makeError(DDPRT_ERROR_UNAVAILABLE, why);
    return nullptr;
  }
  auto backend = std::make_unique<CudaBackend>(env);
  status = backend->start();
  if (!status.isOk())
    return nullptr;
  return backend;
}

Status CudaBackend::start() {
  MPI_Comm world = env.mpi.getWorld();
  // One device per rank of a node.
  MPI_Comm node = MPI_COMM_NULL;
  DDPRT_RETURN_IF_ERROR(
      checkMpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED,
                                   env.mpi.getRank(), MPI_INFO_NULL, &node),
               "MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED)"));
  int localRank = 0;
  MPI_Comm_rank(node, &localRank);
  MPI_Comm_free(&node);
  int count = 0;
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount()"));
  device = localRank % count;
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaSetDevice(device), concat("cudaSetDevice(", device, ")")));
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cudaStreamCreateWithFlags(&computeStream, cudaStreamNonBlocking),
      "cudaStreamCreateWithFlags(compute, cudaStreamNonBlocking)"));
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaStreamCreateWithFlags(&commStream, cudaStreamNonBlocking),
                "cudaStreamCreateWithFlags(comm, cudaStreamNonBlocking)"));
  DDPRT_RETURN_IF_ERROR(checkCublas(cublasCreate(&cublas), "cublasCreate()"));
  DDPRT_RETURN_IF_ERROR(checkCublas(cublasSetStream(cublas, computeStream),
                                    "cublasSetStream(compute)"));

  ncclUniqueId id;
  if (env.mpi.getRank() == 0)
    DDPRT_RETURN_IF_ERROR(checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId()"));
  uint64_t ticket = env.watchdog.begin("broadcasting NCCL's unique id");
  Status broadcast =
      checkMpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, world),
               concat("MPI_Bcast(ncclUniqueId, ", sizeof(id), " bytes)"));
  env.watchdog.end(ticket);
  DDPRT_RETURN_IF_ERROR(broadcast);
  ticket = env.watchdog.begin("ncclCommInitRank(world)");
  Status init = checkNccl(
      ncclCommInitRank(&this->world, env.mpi.getSize(), id, env.mpi.getRank()),
      concat("ncclCommInitRank(nranks=", env.mpi.getSize(),
             ", rank=", env.mpi.getRank(), ")"));
  env.watchdog.end(ticket);
  DDPRT_RETURN_IF_ERROR(init);

  env.watchdog.setPoll([this] { return pollCommunication(); });
  env.watchdog.setBeforeAbort([this] {
    for (ncclComm_t group : groups)
      ncclCommAbort(group);
    if (this->world)
      ncclCommAbort(this->world);
    groups.clear();
    this->world = nullptr;
  });

  // Lines the ranks' clocks up, then ties GPU time to host time.
  DDPRT_RETURN_IF_ERROR(checkMpi(MPI_Barrier(world), "MPI_Barrier(world)"));
  env.trace.resetEpoch();
  if (env.trace.isEnabled()) {
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cudaEventCreate(&traceBase), "cudaEventCreate(trace base)"));
    DDPRT_RETURN_IF_ERROR(checkCuda(cudaEventRecord(traceBase, computeStream),
                                    "cudaEventRecord(trace base)"));
    DDPRT_RETURN_IF_ERROR(checkCuda(cudaEventSynchronize(traceBase),
                                    "cudaEventSynchronize(trace base)"));
    traceBaseUs = env.trace.nowUs();
  }
  return Status::ok();
}

CudaBackend::~CudaBackend() {
  env.watchdog.setPoll(nullptr);
  env.watchdog.setBeforeAbort(nullptr);
  for (ncclComm_t group : groups)
    ncclCommDestroy(group);
  if (world)
    ncclCommDestroy(world);
  for (PendingEvent &event : traceEvents) {
    cudaEventDestroy(event.start);
    cudaEventDestroy(event.end);
  }
  for (InFlight &op : inFlight)
    cudaEventDestroy(op.done);
  for (auto &[op, done] : heldPointToPoint)
    cudaEventDestroy(done);
  if (traceBase)
    cudaEventDestroy(traceBase);
  if (cublas)
    cublasDestroy(cublas);
  if (computeStream)
    cudaStreamDestroy(computeStream);
  if (commStream)
    cudaStreamDestroy(commStream);
}

Status CudaBackend::createGroup(const GroupLayout &layout,
                                const std::string &name) {
  ncclComm_t group = nullptr;
  std::string call = concat("ncclCommSplit(world, color=", layout.color,
                            ", key=", layout.rank, ") for group '", name, "'");
  uint64_t ticket = env.watchdog.begin(call);
  Status status = checkNccl(ncclCommSplit(world, int(layout.color),
                                          int(layout.rank), &group, nullptr),
                            call, world);
  env.watchdog.end(ticket);
  DDPRT_RETURN_IF_ERROR(status);
  int rank = -1, size = -1;
  ncclCommUserRank(group, &rank);
  ncclCommCount(group, &size);
  if (rank != layout.rank || size != layout.size) {
    ncclCommDestroy(group);
    return makeError(DDPRT_ERROR_INTERNAL, call, " gave rank ", rank, " of ",
                     size, ", expected ", layout.rank, " of ", layout.size);
  }
  std::lock_guard<std::mutex> lock(inFlightMutex);
  groups.push_back(group);
  return Status::ok();
}

Status CudaBackend::shutdown() {
  DDPRT_RETURN_IF_ERROR(flushPointToPoint());
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize()"));
  pollCommunication();
  return resolveTrace();
}

Status CudaBackend::synchronize() {
  DDPRT_RETURN_IF_ERROR(flushPointToPoint());
  return checkCuda(cudaStreamSynchronize(computeStream),
                   "cudaStreamSynchronize(compute)");
}

//===----------------------------------------------------------------------===//
// Tracing
//===----------------------------------------------------------------------===//

cudaEvent_t CudaBackend::beginSpan(cudaStream_t stream) {
  if (!env.trace.isEnabled())
    return nullptr;
  cudaEvent_t start = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess)
    return nullptr;
  cudaEventRecord(start, stream);
  return start;
}

void CudaBackend::endSpan(cudaEvent_t start, cudaStream_t stream,
                          std::string name, TraceCategory category, int tid,
                          std::string args) {
  if (!start)
    return;
  cudaEvent_t end = nullptr;
  if (cudaEventCreate(&end) != cudaSuccess) {
    cudaEventDestroy(start);
    return;
  }
  cudaEventRecord(end, stream);
  traceEvents.push_back(
      {std::move(name), category, tid, start, end, std::move(args)});
}

Status CudaBackend::resolveTrace() {
  for (PendingEvent &event : traceEvents) {
    float startMs = 0, endMs = 0;
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cudaEventElapsedTime(&startMs, traceBase, event.start),
                  concat("cudaEventElapsedTime(trace of ", event.name, ")")));
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cudaEventElapsedTime(&endMs, traceBase, event.end),
                  concat("cudaEventElapsedTime(trace of ", event.name, ")")));
    env.trace.record({event.name, event.category, event.stream,
                      traceBaseUs + startMs * 1000.0,
                      double(endMs - startMs) * 1000.0, event.args});
    cudaEventDestroy(event.start);
    cudaEventDestroy(event.end);
  }
  traceEvents.clear();
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Memory and compute
//===----------------------------------------------------------------------===//

Status CudaBackend::allocate(int64_t bytes, void **data) {
  size_t size = bytes > 0 ? size_t(bytes) : 1;
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaMalloc(data, size), concat("cudaMalloc(", size, ")")));
  // On the compute stream: a plain cudaMemset runs on the legacy stream,
  // which the (non-blocking) compute stream does not wait for.
  return checkCuda(
      cudaMemsetAsync(*data, 0, size, computeStream),
      concat("cudaMemsetAsync(", *data, ", 0, ", size, ", compute)"));
}

Status CudaBackend::copy(void *dst, const void *src, int64_t bytes) {
  cudaEvent_t span = beginSpan(computeStream);
  Status status =
      checkCuda(cudaMemcpyAsync(dst, src, size_t(bytes),
                                cudaMemcpyDeviceToDevice, computeStream),
                concat("cudaMemcpyAsync(", dst, ", ", src, ", ", bytes,
                       ", DeviceToDevice, compute)"));
  endSpan(span, computeStream, "copy", TraceCategory::Compute, 0,
          TraceArgs().add("bytes", bytes).str());
  return status;
}

Status CudaBackend::read(void *hostDst, const void *src, int64_t bytes) {
  DDPRT_RETURN_IF_ERROR(synchronize());
  return checkCuda(
      cudaMemcpy(hostDst, src, size_t(bytes), cudaMemcpyDeviceToHost),
      concat("cudaMemcpy(", hostDst, ", ", src, ", ", bytes,
             ", DeviceToHost)"));
}

Status CudaBackend::write(void *dst, const void *hostSrc, int64_t bytes) {
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpyAsync(dst, hostSrc, size_t(bytes),
                                cudaMemcpyHostToDevice, computeStream),
                concat("cudaMemcpyAsync(", dst, ", ", hostSrc, ", ", bytes,
                       ", HostToDevice, compute)")));
  // The host buffer may be reused as soon as this returns.
  return checkCuda(cudaStreamSynchronize(computeStream),
                   "cudaStreamSynchronize(compute)");
}

static std::string tensorArgs(const Tensor &tensor) {
  return TraceArgs()
      .add("dtype", dtypeName(tensor.dtype))
      .add("numel", tensor.numel)
      .str();
}

Status CudaBackend::fillSeeded(const Tensor &tensor, uint64_t key) {
  return checkCuda(cuda::fillSeeded(tensor.data, tensor.dtype, tensor.numel,
                                    key, computeStream),
                   concat("fill kernel (", tensor.numel, " x ",
                          dtypeName(tensor.dtype), ")"));
}

Status CudaBackend::gemm(const GemmOp &op) {
  if (op.m > INT_MAX || op.n > INT_MAX || op.k > INT_MAX)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT, "cublasGemmEx(m=", op.m,
                     ", n=", op.n, ", k=", op.k,
                     "): a dimension exceeds cuBLAS's int range");
  if (op.m == 0 || op.n == 0)
    return Status::ok();
  cudaEvent_t span = beginSpan(computeStream);
  Status status;
  if (op.k == 0) {
    status =
        checkCuda(cudaMemsetAsync(op.result, 0,
                                  size_t(op.m * op.n * elementSize(op.dtype)),
                                  computeStream),
                  "cudaMemsetAsync(gemm result with k = 0)");
  } else {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
    int m = int(op.m), n = int(op.n), k = int(op.k);
    cublasOperation_t opLhs = op.transposeLhs ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opRhs = op.transposeRhs ? CUBLAS_OP_T : CUBLAS_OP_N;
    int lda = op.transposeLhs ? m : k;
    int ldb = op.transposeRhs ? k : n;
    cudaDataType_t type = CUDA_R_32F;
    cublasComputeType_t computeType = CUBLAS_COMPUTE_32F;
    float oneF = 1.0f, zeroF = 0.0f;
    double oneD = 1.0, zeroD = 0.0;
    const void *alpha = &oneF, *beta = &zeroF;
    switch (op.dtype) {
    case DType::F16:
      type = CUDA_R_16F;
      break;
    case DType::BF16:
      type = CUDA_R_16BF;
      break;
    case DType::F32:
      // No TF32: full f32 products, as the CPU backend computes them.
      computeType = CUBLAS_COMPUTE_32F_PEDANTIC;
      break;
    case DType::F64:
      type = CUDA_R_64F;
      computeType = CUBLAS_COMPUTE_64F;
      alpha = &oneD;
      beta = &zeroD;
      break;
    }
    status = checkCublas(
        cublasGemmEx(cublas, opRhs, opLhs, n, m, k, alpha, op.rhs, type, ldb,
                     op.lhs, type, lda, beta, op.result, type, n, computeType,
                     CUBLAS_GEMM_DEFAULT),
        concat("cublasGemmEx(", op.transposeRhs ? "T" : "N", ", ",
               op.transposeLhs ? "T" : "N", ", m=", n, ", n=", m, ", k=", k,
               ", B=", op.rhs, ", ldb=", ldb, ", A=", op.lhs, ", lda=", lda,
               ", C=", op.result, ", ldc=", n, ", ", dtypeName(op.dtype), ")"));
  }
  endSpan(span, computeStream, op.label, TraceCategory::Compute, 0,
          TraceArgs()
              .add("dtype", dtypeName(op.dtype))
              .add("m", op.m)
              .add("n", op.n)
              .add("k", op.k)
              .str());
  return status;
}

Status CudaBackend::compute(const std::string &kind,
                            const std::vector<Tensor> &inputs,
                            const std::vector<Tensor> &results) {
  cudaEvent_t span = beginSpan(computeStream);
  Status status;
  for (const Tensor &result : results) {
    if (result.numel == 0)
      continue;
    bool wide = result.dtype == DType::F64;
    int64_t bytes = result.numel * (wide ? 8 : 4);
    void *sum = nullptr;
    status = checkCuda(cudaMallocAsync(&sum, size_t(bytes), computeStream),
                       concat("cudaMallocAsync(", bytes, ")"));
    if (!status.isOk())
      break;
    if (inputs.empty())
      status = checkCuda(cudaMemsetAsync(sum, 0, size_t(bytes), computeStream),
                         "cudaMemsetAsync(compute stand-in)");
    for (size_t j = 0; j < inputs.size() && status.isOk(); ++j)
      status = checkCuda(
          cuda::accumulateModulo(sum, wide, result.numel, inputs[j].data,
                                 inputs[j].dtype, inputs[j].numel, j == 0,
                                 computeStream),
          concat("compute stand-in kernel '", kind, "' input #", j));
    if (status.isOk())
      status =
          checkCuda(cuda::cast(sum, wide ? DType::F64 : DType::F32, result.data,
                               result.dtype, result.numel, computeStream),
                    concat("compute stand-in kernel '", kind, "' result"));
    cudaFreeAsync(sum, computeStream);
    if (!status.isOk())
      break;
  }
  endSpan(span, computeStream, kind, TraceCategory::Compute, 0,
          TraceArgs().add("inputs", int64_t(inputs.size())).str());
  return status;
}

Status CudaBackend::accumulate(const Tensor &lhs, const void *rhs,
                               void *result) {
  cudaEvent_t span = beginSpan(computeStream);
  Status status = checkCuda(cuda::accumulate(lhs.data, rhs, result, lhs.dtype,
                                             lhs.numel, computeStream),
                            "accumulate kernel");
  endSpan(span, computeStream, "accumulate", TraceCategory::Compute, 0,
          tensorArgs(lhs));
  return status;
}

Status CudaBackend::scale(const Tensor &input, double factor, void *result) {
  cudaEvent_t span = beginSpan(computeStream);
  Status status = checkCuda(cuda::scale(input.data, result, input.dtype,
                                        input.numel, factor, computeStream),
                            "scale kernel");
  endSpan(span, computeStream, "scale", TraceCategory::Compute, 0,
          tensorArgs(input));
  return status;
}

Status CudaBackend::cast(const Tensor &input, DType resultType, void *result) {
  cudaEvent_t span = beginSpan(computeStream);
  Status status = checkCuda(cuda::cast(input.data, input.dtype, result,
                                       resultType, input.numel, computeStream),
                            "cast kernel");
  endSpan(span, computeStream, "cast", TraceCategory::Compute, 0,
          tensorArgs(input));
  return status;
}

Status CudaBackend::findNonFinite(const Tensor &tensor, int64_t &index,
                                  double &value) {
  index = -1;
  unsigned long long *first = nullptr;
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaMallocAsync(reinterpret_cast<void **>(&first),
                                sizeof(*first), computeStream),
                "cudaMallocAsync(8)"));
  unsigned long long none = ~0ull;
  unsigned long long found = none;
  Status status =
      checkCuda(cudaMemcpyAsync(first, &none, sizeof(none),
                                cudaMemcpyHostToDevice, computeStream),
                "cudaMemcpyAsync(check_finite index)");
  if (status.isOk())
    status = checkCuda(cuda::findNonFinite(tensor.data, tensor.dtype,
                                           tensor.numel, first, computeStream),
                       "check_finite kernel");
  if (status.isOk())
    status = checkCuda(cudaMemcpyAsync(&found, first, sizeof(found),
                                       cudaMemcpyDeviceToHost, computeStream),
                       "cudaMemcpyAsync(check_finite index)");
  cudaFreeAsync(first, computeStream);
  if (status.isOk())
    status = checkCuda(cudaStreamSynchronize(computeStream),
                       "cudaStreamSynchronize(compute)");
  DDPRT_RETURN_IF_ERROR(status);
  if (found == none)
    return Status::ok();
  index = int64_t(found);
  // Read the bad element itself to name its value.
  double wide = 0;
  int64_t size = elementSize(tensor.dtype);
  std::vector<char> bytes(static_cast<size_t>(size));
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cudaMemcpy(bytes.data(), static_cast<char *>(tensor.data) + index * size,
                 size_t(size), cudaMemcpyDeviceToHost),
      "cudaMemcpy(non-finite element)"));
  dispatchDType(tensor.dtype, [&](auto tag) {
    using T = decltype(tag);
    T element;
    std::memcpy(&element, bytes.data(), sizeof(T));
    wide = ElementTraits<T>::toDouble(element);
  });
  value = wide;
  return Status::ok();
}

Status CudaBackend::sgd(const Tensor &param, const Tensor &grad, double lr) {
  cudaEvent_t span = beginSpan(computeStream);
  Status status =
      checkCuda(cuda::sgd(param.data, param.dtype, grad.data, grad.dtype,
                          param.numel, lr, computeStream),
                "sgd kernel");
  endSpan(span, computeStream, "sgd", TraceCategory::Compute, 0,
          tensorArgs(param));
  return status;
}

Status CudaBackend::adam(const Tensor &param, const Tensor &grad,
                         float *moments, const AdamScalars &scalars) {
  cudaEvent_t span = beginSpan(computeStream);
  Status status =
      checkCuda(cuda::adam(param.data, param.dtype, grad.data, grad.dtype,
                           moments, param.numel, scalars, computeStream),
                "adam kernel");
  endSpan(span, computeStream, "adam", TraceCategory::Compute, 0,
          tensorArgs(param));
  return status;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

Status CudaAsyncOp::wait() { return backend.waitOnCompute(done); }

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

Status CudaBackend::issueCollective(const CollectiveOp &op) {
  ncclComm_t comm = commOf(op);
  int64_t elementBytes = elementSize(op.dtype);
  std::string where = concat(", comm=group '", op.groupName, "', stream=comm)");
  auto scratch = [&](int64_t bytes, void **data) {
    return checkCuda(cudaMallocAsync(data, size_t(bytes), commStream),
                     concat("cudaMallocAsync(", bytes, ", comm)"));
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
    const void *send = op.input;
    const char *ownSlot =
        static_cast<const char *>(op.result) + op.groupRank * bytes;
    void *copyOfInput = nullptr;
    if (op.input != ownSlot &&
        overlaps(op.input, bytes, op.result, bytes * op.groupSize)) {
      DDPRT_RETURN_IF_ERROR(scratch(bytes, &copyOfInput));
      DDPRT_RETURN_IF_ERROR(
          checkCuda(cudaMemcpyAsync(copyOfInput, op.input, size_t(bytes),
                                    cudaMemcpyDeviceToDevice, commStream),
                    "cudaMemcpyAsync(all_gather overlapping input)"));
      send = copyOfInput;
    }
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
  }
  return makeError(DDPRT_ERROR_INTERNAL, "unknown collective");
}

static std::string collectiveArgs(const CollectiveOp &op, bool async) {
  return TraceArgs()
      .add("group", op.groupName)
      .add("dtype", dtypeName(op.dtype))
      .add("numel", op.numel)
      .add("bytes", op.numel * elementSize(op.dtype))
      .add("async", int64_t(async))
      .str();
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
    names += (names.empty() ? "" : "+") + std::string(collectiveName(op.kind));
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
      endSpan(span, commStream, collectiveName(op.kind), TraceCategory::Comm, 1,
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
