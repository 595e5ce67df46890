//===- CudaBackend.h - The NCCL + CUDA + cuBLAS backend ---------*- C++ -*-===//
//
// One compute stream (kernels, cuBLAS) and one communication stream (NCCL),
// ordered by CUDA events: a collective waits for an event recorded on the
// compute stream when it was issued, and its handle is an event recorded on
// the communication stream after it, which ddprt_wait makes the compute
// stream wait for. The host never blocks except to read data back.
//
// Memory and compute are in CudaBackend.cpp, the collectives in
// CudaCollectives.cpp; only createCudaBackend is seen outside them.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CUDA_CUDABACKEND_H
#define DDPRT_CUDA_CUDABACKEND_H

#include "../Backend.h"
#include "Kernels.h"
#include "../Mpi.h"
#include "../Trace.h"
#include "../Watchdog.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <deque>
#include <mutex>
#include <unordered_map>
#include <string>
#include <vector>

namespace ddprt::cuda {

Status checkCuda(cudaError_t error, const std::string &call);
Status checkNccl(ncclResult_t result, const std::string &call,
                 ncclComm_t comm = nullptr);
Status checkCublas(cublasStatus_t status, const std::string &call);

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
  Status orderCommunicationAfter() override;

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
  Status route(const RouteOp &op) override;
  Status compute(const std::string &kind, const ComputeCost &cost, const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &results) override;
  Status accumulate(const Tensor &lhs, const void *rhs, void *result) override;
  Status scale(const Tensor &input, double factor, void *result) override;
  Status cast(const Tensor &input, DType resultType, void *result) override;
  Status findNonFinite(const Tensor &tensor, int64_t &index,
                       double &value) override;
  Status sgd(const Tensor &param, const Tensor &grad, double lr) override;
  Status adam(const Tensor &param, const Tensor &grad, float *moments,
              const AdamHyper &hyper, const AdamScalars &scalars,
              const Tensor *rounded) override;

  Status collective(const CollectiveOp &op,
                    std::unique_ptr<AsyncOp> *async) override;
  Status synchronize() override;
  Status beginGraph() override;
  Status endGraph() override;
  Status launchGraph() override;
  Status shutdown() override;

  /// Makes the compute stream wait for `done` (recorded or about to be).
  Status waitOnCompute(cudaEvent_t done);
  /// Orders the communication stream after `done`: what is issued on it
  /// from now on starts after that event.
  Status waitOnComm(cudaEvent_t done);

private:
  /// Ends a recording still open, throwing its graph away.
  void dropRecording();
  /// An error naming `what` while a graph is being recorded, else ok.
  Status refuseWhileRecording(const char *what) const;
  /// Records the start of a traced span on `stream`; endSpan records its end.
  cudaEvent_t beginSpan(cudaStream_t stream);
  void endSpan(cudaEvent_t start, cudaStream_t stream, std::string name,
               TraceCategory category, int tid, std::string args);
  /// What a stand-in pays beyond its pass, to cost what the model prices it
  /// at (CudaStandIn.cpp); `moved` is the bytes its pass read and wrote.
  Status payCost(const ComputeCost &cost, int64_t moved);
  /// payCost's bf16 GEMMs on the scratch, `depth` deep, `count` of them.
  Status payFlops(int64_t count, int64_t depth);
  /// Allocates and fills payCost's scratch at its first need outside a
  /// recording, and measures standInFlopsPerByte (CudaStandIn.cpp).
  Status prepareCostScratch();
  Status measureStandInRates();
  /// Whether the one pass gives host::compute's bits for these operands.
  static bool onePassIsSafe(const std::vector<Tensor> &inputs,
                            const std::vector<Tensor> &results,
                            int64_t span);
  /// The compute stand-in in one pass (Kernels.h, standIn).
  Status standIn(const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &results);
  /// The same with one pass per input, for more operands than standIn takes.
  Status standInByInput(const std::string &kind,
                        const std::vector<Tensor> &inputs,
                        const std::vector<Tensor> &results);
  Status issueCollective(const CollectiveOp &op);
  Status allToAllV(const CollectiveOp &op, ncclComm_t comm,
                   const std::string &where);
  /// Whether `op` is over one rank and so only a copy (issueOnOneRank).
  static bool movesNothing(const CollectiveOp &op);
  Status issueOnOneRank(const CollectiveOp &op);
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
  static constexpr int64_t cublasWorkspaceBytes = int64_t(32) << 20;
  void *cublasWorkspace = nullptr;
  unsigned long long *standInSink = nullptr;
  /// What payCost reads and multiplies, allocated at its first need.
  void *costScratch = nullptr;
  /// The FLOPs of payCost's GEMMs that take as long on this GPU as one
  /// byte of its stream, measured when the scratch is allocated: what a
  /// compute-bound stand-in's pass already paid for.
  double standInFlopsPerByte = 0;
  /// Adam's powers on the device, by moments buffer (adam()).
  std::unordered_map<const float *, cuda::AdamDeviceState *> adamStates;
  /// Whether the streams are being captured into a CUDA graph
  /// (CudaGraph.cpp), and the graph recorded last.
  bool capturing = false;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
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

} // namespace ddprt::cuda

#endif // DDPRT_CUDA_CUDABACKEND_H
