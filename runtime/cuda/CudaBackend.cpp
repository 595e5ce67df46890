//===- CudaBackend.cpp - NCCL + CUDA + cuBLAS backend ---------------------===//
//
// Setup, tracing, memory and compute of the CUDA backend (CudaBackend.h);
// its collectives are in CudaCollectives.cpp.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "Kernels.h"
#include "RoutingKernels.h"

#include <climits>
#include <cstring>

using namespace ddprt;
using namespace ddprt::cuda;

namespace ddprt::cuda {

Status checkCuda(cudaError_t error, const std::string &call) {
  if (error == cudaSuccess)
    return Status::ok();
  return makeError(DDPRT_ERROR_CUDA, call, " failed: ", cudaGetErrorName(error),
                   ": ", cudaGetErrorString(error));
}

Status checkNccl(ncclResult_t result, const std::string &call,
                 ncclComm_t comm) {
  if (result == ncclSuccess || result == ncclInProgress)
    return Status::ok();
  const char *detail = ncclGetLastError(comm);
  return makeError(DDPRT_ERROR_NCCL, call,
                   " failed: ", ncclGetErrorString(result),
                   detail && *detail ? concat(" (", detail, ")") : "");
}

Status checkCublas(cublasStatus_t status, const std::string &call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return makeError(DDPRT_ERROR_CUDA, call,
                   " failed: ", cublasGetStatusName(status), ": ",
                   cublasGetStatusString(status));
}

} // namespace ddprt::cuda

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
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaMalloc(reinterpret_cast<void **>(&standInSink),
                           sizeof(*standInSink)),
                "cudaMalloc(8, the compute stand-in's sink)"));
  DDPRT_RETURN_IF_ERROR(checkCublas(cublasSetStream(cublas, computeStream),
                                    "cublasSetStream(compute)"));
  // cuBLAS's own workspace. Without one, cuBLAS allocates a workspace per
  // GEMM from the stream's pool: inside a CUDA graph that is an allocation
  // and a free node around every GEMM, and a graph with them blocked the
  // next launch until the previous replay ended (docs/GpuCheck.md). 32 MiB
  // is what NVIDIA's cuBLAS documentation recommends for Hopper, and what
  // PyTorch gives it there.
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cudaMalloc(&cublasWorkspace, size_t(cublasWorkspaceBytes)),
      concat("cudaMalloc(", cublasWorkspaceBytes, ", cuBLAS's workspace)")));
  DDPRT_RETURN_IF_ERROR(checkCublas(
      cublasSetWorkspace(cublas, cublasWorkspace, size_t(cublasWorkspaceBytes)),
      "cublasSetWorkspace()"));

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
  // A recording still open (shutdown never ran) ends first: freeing memory
  // inside it would be an error.
  dropRecording();
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
  if (cublasWorkspace)
    cudaFree(cublasWorkspace);
  if (standInSink)
    cudaFree(standInSink);
  if (costScratch)
    cudaFree(costScratch);
  for (auto &[moments, state] : adamStates)
    cudaFree(state);
  if (graphExec)
    cudaGraphExecDestroy(graphExec);
  if (graph)
    cudaGraphDestroy(graph);
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
  // A recording never ended (the program failed inside it) is dropped.
  dropRecording();
  DDPRT_RETURN_IF_ERROR(flushPointToPoint());
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize()"));
  pollCommunication();
  return resolveTrace();
}

Status CudaBackend::synchronize() {
  // ddprt_free waits here too before it frees.
  DDPRT_RETURN_IF_ERROR(
      refuseWhileRecording("waiting for the device (ddprt_synchronize, "
                           "ddprt_free)"));
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
  // A recorded graph would reuse the one buffer at every replay.
  DDPRT_RETURN_IF_ERROR(refuseWhileRecording("allocating device memory"));
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
  DDPRT_RETURN_IF_ERROR(refuseWhileRecording("reading device memory"));
  DDPRT_RETURN_IF_ERROR(synchronize());
  return checkCuda(
      cudaMemcpy(hostDst, src, size_t(bytes), cudaMemcpyDeviceToHost),
      concat("cudaMemcpy(", hostDst, ", ", src, ", ", bytes,
             ", DeviceToHost)"));
}

Status CudaBackend::write(void *dst, const void *hostSrc, int64_t bytes) {
  DDPRT_RETURN_IF_ERROR(refuseWhileRecording("writing device memory"));
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
                                    key, env.fractionalData, computeStream),
                   concat("fill kernel (", tensor.numel, " x ",
                          dtypeName(tensor.dtype), ")"));
}

Status CudaBackend::gemm(const GemmOp &op) {
  if (env.fixedOrderGemm && op.m > cuda::fixedOrderGemmMaxRows)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                     "fixed-order GEMM kernel (m=", op.m, ", n=", op.n,
                     ", k=", op.k, "): more rows than its grid takes (",
                     cuda::fixedOrderGemmMaxRows, ")");
  if (!env.fixedOrderGemm &&
      (op.m > INT_MAX || op.n > INT_MAX || op.k > INT_MAX))
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
  } else if (env.fixedOrderGemm) {
    status = checkCuda(cuda::fixedOrderGemm(op.transposeLhs, op.transposeRhs,
                                            op.m, op.n, op.k, op.lhs, op.rhs,
                                            op.result, op.dtype,
                                            env.boundedValues, computeStream),
                       concat("fixed-order GEMM kernel (m=", op.m, ", n=", op.n,
                              ", k=", op.k, ", ", dtypeName(op.dtype), ")"));
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
  DDPRT_RETURN_IF_ERROR(refuseWhileRecording("ddprt_check_finite"));
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

Status CudaBackend::route(const RouteOp &op) {
  cudaEvent_t span = beginSpan(computeStream);
  Status status = checkCuda(cuda::route(op, computeStream), "routing kernel");
  endSpan(span, computeStream, op.kind, TraceCategory::Compute, 0,
          TraceArgs().add("inputs", int64_t(op.inputs.size())).str());
  return status;
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
                         float *moments, const AdamHyper &hyper,
                         const AdamScalars &, const Tensor *rounded) {
  // The powers live on the device, one pair per moments buffer, set to 1 at
  // its first step (when the runtime allocates the buffer) and advanced by
  // a kernel at each step, so that a replayed graph advances them too.
  auto found = adamStates.find(moments);
  if (found == adamStates.end()) {
    if (capturing)
      return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                       "ddprt_adam: the first Adam step of a parameter is "
                       "being captured into a CUDA graph; run one step "
                       "before capturing");
    void *state = nullptr;
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cudaMalloc(&state, sizeof(cuda::AdamDeviceState)),
                  "cudaMalloc(Adam's powers)"));
    cuda::AdamDeviceState initial{};
    Status copied = checkCuda(
        cudaMemcpyAsync(state, &initial, sizeof(initial),
                        cudaMemcpyHostToDevice, computeStream),
        "cudaMemcpyAsync(Adam's powers)");
    if (!copied.isOk()) {
      cudaFree(state);
      return copied;
    }
    found = adamStates.emplace(moments, static_cast<cuda::AdamDeviceState *>(
                                            state)).first;
  }
  cudaEvent_t span = beginSpan(computeStream);
  Status status = checkCuda(
      cuda::adam(param.data, param.dtype, grad.data, grad.dtype, moments,
                 param.numel, hyper, found->second,
                 rounded ? rounded->data : nullptr,
                 rounded ? rounded->dtype : DType::F32, computeStream),
      "adam kernel");
  endSpan(span, computeStream, "adam", TraceCategory::Compute, 0,
          tensorArgs(param));
  return status;
}
