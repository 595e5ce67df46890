//===- Backend.h - What a backend (CPU or CUDA) implements ------*- C++ -*-===//
//
// The C entry points (Api*.cpp) validate their arguments and keep the state
// both backends share (groups, parameters, buffers, handles); a Backend only
// executes. Arguments reaching a Backend are valid: pointers are non-null
// and inside buffers of the right size, dtypes and groups exist.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_BACKEND_H
#define DDPRT_BACKEND_H

#include "ddp/Runtime/CollectiveKind.h"

#include "Element.h"
#include "ElementOps.h"
#include "Mesh.h"
#include "Status.h"

#include <memory>
#include <string>
#include <vector>

namespace ddprt {

class MpiSession;
class TraceRecorder;
class Watchdog;

/// Whether the `aBytes` at `a` and the `bBytes` at `b` share an address;
/// meaningful for non-empty ranges (an empty one can still answer true).
inline bool overlaps(const void *a, int64_t aBytes, const void *b,
                     int64_t bBytes) {
  auto aBegin = reinterpret_cast<uintptr_t>(a);
  auto bBegin = reinterpret_cast<uintptr_t>(b);
  return aBegin < bBegin + uint64_t(bBytes) &&
         bBegin < aBegin + uint64_t(aBytes);
}

struct Tensor {
  void *data;
  DType dtype;
  int64_t numel;
  int64_t bytes() const { return numel * elementSize(dtype); }
};

/// What the compiler's cost model prices a ddp.compute at.
struct ComputeCost {
  double flops = 0, bytes = 0;
};

struct GemmOp {
  DType dtype;
  bool transposeLhs, transposeRhs;
  int64_t m, n, k;
  const void *lhs, *rhs;
  void *result;
  std::string label;
};

/// A routing kernel (ddprt_route), its dimensions checked against its
/// tensors by the entry point. Which of them a kernel uses is listed in
/// RuntimeFunctions.def.
struct RouteOp {
  int32_t kernel = DDPRT_ROUTE_GATHER;
  std::string kind;
  std::vector<Tensor> inputs, results;
  int64_t tokens = 0, experts = 0, topk = 0, capacity = 0;
  /// Rows of the slot side (GATHER's result, COMBINE's input) and the width
  /// of a row.
  int64_t slots = 0, width = 0;
  /// SORT_CHUNKS/UNSORT_CHUNKS: source ranks and local experts; the widths
  /// are those of the rank-ordered side, one per class of tensor.
  int64_t ranks = 0, localExperts = 0;
  std::vector<int64_t> widths;
};

/// "gather" for DDPRT_ROUTE_GATHER, ...; null for no kernel.
const char *routeKernelName(int32_t kernel);

/// The collectives of include/ddp/Runtime/Collectives.def, which the
/// compiler's cost model prices by the same enumerators.
using ddp::CollectiveKind;

/// "sum", "avg" or "max" for a DDPRT_REDUCTION_*.
const char *reductionName(int32_t reduction);

struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::AllReduce;
  int32_t group = 0;
  std::string groupName; // its axes, for messages and the trace
  int64_t groupSize = 1;
  int64_t groupRank = 0;
  int32_t reduction = DDPRT_REDUCTION_SUM; // all-reduce and reduce-scatter
  DType dtype = DType::F32;
  /// As the entry points define it: the result's count for reduce-scatter,
  /// the input's for all-gather.
  int64_t numel = 0;
  const void *input = nullptr;
  void *result = nullptr;
  int64_t peer = 0; // group rank of the peer of a send or recv
  int64_t root = 0; // group rank whose input a broadcast copies
  /// all_to_all_v: the sub-blocks of a block, the elements of a row, and the
  /// f32 row counts (in the backend's memory), group size x subBlocks each.
  int64_t subBlocks = 1, rowNumel = 1;
  const void *sendCounts = nullptr, *recvCounts = nullptr;

  /// all_to_all_v: the rows of a sub-block.
  int64_t subBlockRows() const {
    return numel / (groupSize * subBlocks * rowNumel);
  }
  /// "all_reduce(sum, 1024 x f32, group 'dp')", for messages.
  std::string describe() const;
};

/// all_to_all_v's counts as read into host memory (`counts`, group size x
/// sub-blocks f32): each a whole number of rows from 0 to the sub-block's,
/// or an error naming `which` ("send" or "receive") and the first bad one.
Status readRowCounts(const CollectiveOp &op, const float *counts,
                     const char *which, std::vector<int64_t> &rows);

/// An asynchronous op in flight, behind a ddprt_handle.
class AsyncOp {
public:
  virtual ~AsyncOp() = default;
  /// Orders the compute stream after the op (on the CPU: blocks until it has
  /// finished) and returns how it went.
  virtual Status wait() = 0;
  /// Orders the communication issued from now on after the op, without
  /// holding the compute stream (ddprt_comm_wait).
  virtual Status orderCommunicationAfter() = 0;
};

/// Shared by both backends: the job and where its events go.
struct BackendEnv {
  MpiSession &mpi;
  TraceRecorder &trace;
  Watchdog &watchdog;
  /// DDPRT_FLAG_DETERMINISTIC_REDUCTIONS.
  bool deterministicReductions = false;
  /// DDPRT_FLAG_FIXED_ORDER_GEMM.
  bool fixedOrderGemm = false;
  /// DDPRT_FLAG_FRACTIONAL_DATA.
  bool fractionalData = false;
  /// DDPRT_FLAG_BOUNDED_VALUES.
  bool boundedValues = false;
};

class Backend {
public:
  virtual ~Backend() = default;

  /// DDPRT_BACKEND_CPU or DDPRT_BACKEND_CUDA.
  virtual int32_t getKind() const = 0;
  virtual int getNumCommStreams() const = 0;

  /// Creates the next group's communicator (groups are numbered in creation
  /// order). Collective over the world.
  virtual Status createGroup(const GroupLayout &layout,
                             const std::string &name) = 0;

  virtual Status allocate(int64_t bytes, void **data) = 0;
  virtual void deallocate(void *data) = 0;
  virtual Status copy(void *dst, const void *src, int64_t bytes) = 0;
  virtual Status read(void *hostDst, const void *src, int64_t bytes) = 0;
  virtual Status write(void *dst, const void *hostSrc, int64_t bytes) = 0;

  /// Fills `tensor` with seededValue(key, i) (Seed.h).
  virtual Status fillSeeded(const Tensor &tensor, uint64_t key) = 0;
  virtual Status gemm(const GemmOp &op) = 0;
  virtual Status compute(const std::string &kind, const ComputeCost &cost,
                         const std::vector<Tensor> &inputs,
                         const std::vector<Tensor> &results) = 0;
  virtual Status route(const RouteOp &op) = 0;
  virtual Status accumulate(const Tensor &lhs, const void *rhs,
                            void *result) = 0;
  virtual Status scale(const Tensor &input, double factor, void *result) = 0;
  virtual Status cast(const Tensor &input, DType resultType, void *result) = 0;
  /// The index of the first NaN or Inf and its value, or -1.
  virtual Status findNonFinite(const Tensor &tensor, int64_t &index,
                               double &value) = 0;
  virtual Status sgd(const Tensor &param, const Tensor &grad, double lr) = 0;
  /// One Adam step. `moments` holds m then v, 2 * param.numel floats.
  /// `scalars` are this step's, from the powers the runtime keeps on the
  /// host; a backend may keep its own copy of the powers and advance it with
  /// `hyper` (ElementOps.h, advanceAdam), to the same bits: the CUDA backend
  /// does so on the device, so that a step replayed as a CUDA graph takes
  /// each replay's step. `rounded`, if not null, is a 16-bit parameter that
  /// receives `param` (its f32 main copy) rounded.
  virtual Status adam(const Tensor &param, const Tensor &grad, float *moments,
                      const AdamHyper &hyper, const AdamScalars &scalars,
                      const Tensor *rounded) = 0;

  /// Issues a collective; synchronous when `async` is null, else it stores
  /// the op in flight there.
  virtual Status collective(const CollectiveOp &op,
                            std::unique_ptr<AsyncOp> *async) = 0;

  /// Waits for everything issued on the compute stream.
  virtual Status synchronize() = 0;

  /// ddprt_graph_begin/end/launch; a backend without graphs refuses them.
  virtual Status beginGraph() { return noGraphs("ddprt_graph_begin"); }
  virtual Status endGraph() { return noGraphs("ddprt_graph_end"); }
  virtual Status launchGraph() { return noGraphs("ddprt_graph_launch"); }

  /// Drains all work and stops the backend's threads; records the last
  /// trace events. The communicators stay until destruction.
  virtual Status shutdown() = 0;

protected:
  static Status noGraphs(const char *entry) {
    return makeError(DDPRT_ERROR_UNAVAILABLE, entry,
                     ": CUDA graphs need the CUDA backend; this context "
                     "runs each call as it is made");
  }
};

std::unique_ptr<Backend> createCpuBackend(BackendEnv env, Status &status);

/// Whether the CUDA backend was built into this library.
bool isCudaBackendBuilt();
/// Whether a CUDA device is visible (false when the backend is not built).
bool isCudaDeviceAvailable(std::string &why);
std::unique_ptr<Backend> createCudaBackend(BackendEnv env, Status &status);

} // namespace ddprt

#endif // DDPRT_BACKEND_H
