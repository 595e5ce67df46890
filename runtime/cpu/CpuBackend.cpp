//===- CpuBackend.cpp - MPI + OpenBLAS backend ----------------------------===//
//
// Compute runs synchronously on the calling thread (the compute stream);
// every MPI call runs on the CommThread (the communication stream, trace
// stream 1). 16-bit reductions are done in f32, as MPI has no 16-bit float
// type: converted, reduced, rounded once. avg is a pre-multiplied sum: each
// rank's contribution is scaled by 1/n exactly as ddprt_scale does, then
// summed (docs/Runtime.md).
//
//===----------------------------------------------------------------------===//

#include "../Backend.h"
#include "../HostKernels.h"
#include "../Mpi.h"
#include "../Trace.h"
#include "../Watchdog.h"
#include "CommThread.h"

#include <cblas.h>

#include <climits>
#include <cstdlib>
#include <cstring>

using namespace ddprt;

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

bool is16Bit(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16;
}

bool overlaps(const void *a, int64_t aBytes, const void *b, int64_t bBytes) {
  auto aBegin = reinterpret_cast<uintptr_t>(a);
  auto bBegin = reinterpret_cast<uintptr_t>(b);
  return aBegin < bBegin + uint64_t(bBytes) &&
         bBegin < aBegin + uint64_t(aBytes);
}

std::string pointerText(const void *pointer) { return concat(pointer); }

/// A pending CPU collective: waiting blocks the compute thread.
class CpuAsyncOp final : public AsyncOp {
public:
  CpuAsyncOp(std::shared_ptr<Completion> completion, TraceRecorder &trace)
      : completion(std::move(completion)), trace(trace) {}
  Status wait() override {
    TraceSpan span(trace, "wait", TraceCategory::Wait, 0);
    return completion->wait();
  }

private:
  std::shared_ptr<Completion> completion;
  TraceRecorder &trace;
};

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(BackendEnv env)
      : env(env), comm(env.trace, env.watchdog) {}
  ~CpuBackend() override;

  Status start();

  int32_t getKind() const override { return DDPRT_BACKEND_CPU; }
  int getNumCommStreams() const override { return 1; }
  Status createGroup(const GroupLayout &layout,
                     const std::string &name) override;

  Status allocate(int64_t bytes, void **data) override;
  void deallocate(void *data) override { std::free(data); }
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
  Status synchronize() override { return Status::ok(); }
  Status shutdown() override;

private:
  /// Runs `task` on the communication thread and waits for it.
  Status runOnCommThread(CommTask task);

  BackendEnv env;
  CommThread comm;
  /// Written by the communication thread (group creation), read by it only.
  std::vector<MPI_Comm> groups;
  /// f32 copies of 16-bit GEMM operands and the f32 product, kept between
  /// calls (compute thread only): fresh ones cost a page fault per 4 KiB,
  /// which for a full-width vocabulary GEMM (half a GiB of f32) was most of
  /// a step's time.
  std::vector<float> gemmLhs, gemmRhs, gemmProduct;
};

} // namespace

std::unique_ptr<Backend> ddprt::createCpuBackend(BackendEnv env,
                                                 Status &status) {
  auto backend = std::make_unique<CpuBackend>(env);
  status = backend->start();
  if (!status.isOk())
    return nullptr;
  return backend;
}

CpuBackend::~CpuBackend() {
  comm.stop();
  for (MPI_Comm &group : groups)
    MPI_Comm_free(&group);
}

Status CpuBackend::runOnCommThread(CommTask task) {
  std::shared_ptr<Completion> completion = comm.submit(std::move(task));
  TraceSpan span(env.trace, "wait", TraceCategory::Wait, 0);
  return completion->wait();
}

Status CpuBackend::start() {
  // Lines the ranks' clocks up for the trace.
  MPI_Comm world = env.mpi.getWorld();
  CommTask barrier;
  barrier.description = "MPI_Barrier(world) in ddprt_init";
  barrier.start = [world](MPI_Request *) {
    return checkMpi(MPI_Barrier(world), "MPI_Barrier(world)");
  };
  DDPRT_RETURN_IF_ERROR(runOnCommThread(std::move(barrier)));
  env.trace.resetEpoch();
  return Status::ok();
}

Status CpuBackend::shutdown() {
  comm.stop();
  return Status::ok();
}

Status CpuBackend::createGroup(const GroupLayout &layout,
                               const std::string &name) {
  MPI_Comm world = env.mpi.getWorld();
  CommTask split;
  split.description = concat("MPI_Comm_split for group '", name, "'");
  split.start = [this, world, layout, name](MPI_Request *) -> Status {
    std::string call =
        concat("MPI_Comm_split(world, color=", layout.color,
               ", key=", layout.rank, ") for group '", name, "'");
    MPI_Comm group = MPI_COMM_NULL;
    DDPRT_RETURN_IF_ERROR(checkMpi(
        MPI_Comm_split(world, int(layout.color), int(layout.rank), &group),
        call));
    int rank = -1, size = -1;
    MPI_Comm_rank(group, &rank);
    MPI_Comm_size(group, &size);
    if (rank != layout.rank || size != layout.size) {
      MPI_Comm_free(&group);
      return makeError(DDPRT_ERROR_INTERNAL, call, " gave rank ", rank, " of ",
                       size, ", expected ", layout.rank, " of ", layout.size);
    }
    DDPRT_RETURN_IF_ERROR(
        checkMpi(MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN),
                 "MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN)"));
    groups.push_back(group);
    return Status::ok();
  };
  return runOnCommThread(std::move(split));
}

Status CpuBackend::allocate(int64_t bytes, void **data) {
  // Cache-line aligned and never empty, so every buffer has its own address.
  size_t size = (size_t(bytes) + 63) / 64 * 64;
  if (size == 0)
    size = 64;
  void *memory = std::aligned_alloc(64, size);
  if (!memory)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT, "aligned_alloc(64, ", size,
                     ") failed: out of host memory");
  std::memset(memory, 0, size);
  *data = memory;
  return Status::ok();
}

Status CpuBackend::copy(void *dst, const void *src, int64_t bytes) {
  TraceSpan span(env.trace, "copy", TraceCategory::Compute, 0);
  if (span.isActive())
    span.args().add("bytes", bytes);
  std::memmove(dst, src, size_t(bytes));
  return Status::ok();
}

Status CpuBackend::read(void *hostDst, const void *src, int64_t bytes) {
  std::memcpy(hostDst, src, size_t(bytes));
  return Status::ok();
}

Status CpuBackend::write(void *dst, const void *hostSrc, int64_t bytes) {
  std::memcpy(dst, hostSrc, size_t(bytes));
  return Status::ok();
}

static void addTensorArgs(TraceSpan &span, const Tensor &tensor) {
  if (span.isActive())
    span.args()
        .add("dtype", dtypeName(tensor.dtype))
        .add("numel", tensor.numel);
}

Status CpuBackend::fillSeeded(const Tensor &tensor, uint64_t key) {
  host::fillSeeded(tensor, key);
  return Status::ok();
}

Status CpuBackend::gemm(const GemmOp &op) {
  TraceSpan span(env.trace, op.label, TraceCategory::Compute, 0);
  if (span.isActive())
    span.args()
        .add("dtype", dtypeName(op.dtype))
        .add("m", op.m)
        .add("n", op.n)
        .add("k", op.k)
        .add("transpose_lhs", int64_t(op.transposeLhs))
        .add("transpose_rhs", int64_t(op.transposeRhs));
  if (op.m > INT_MAX || op.n > INT_MAX || op.k > INT_MAX)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT, "cblas gemm(m=", op.m,
                     ", n=", op.n, ", k=", op.k,
                     "): a dimension exceeds the BLAS int range");
  Tensor result{op.result, op.dtype, op.m * op.n};
  if (op.m == 0 || op.n == 0)
    return Status::ok();
  if (op.k == 0) { // BLAS rejects a zero leading dimension.
    std::memset(op.result, 0, size_t(result.bytes()));
    return Status::ok();
  }
  int m = int(op.m), n = int(op.n), k = int(op.k);
  CBLAS_TRANSPOSE transLhs = op.transposeLhs ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE transRhs = op.transposeRhs ? CblasTrans : CblasNoTrans;
  int lda = op.transposeLhs ? m : k;
  int ldb = op.transposeRhs ? k : n;
  switch (op.dtype) {
  case DType::F32:
    cblas_sgemm(CblasRowMajor, transLhs, transRhs, m, n, k, 1.0f,
                static_cast<const float *>(op.lhs), lda,
                static_cast<const float *>(op.rhs), ldb, 0.0f,
                static_cast<float *>(op.result), n);
    return Status::ok();
  case DType::F64:
    cblas_dgemm(CblasRowMajor, transLhs, transRhs, m, n, k, 1.0,
                static_cast<const double *>(op.lhs), lda,
                static_cast<const double *>(op.rhs), ldb, 0.0,
                static_cast<double *>(op.result), n);
    return Status::ok();
  case DType::F16:
  case DType::BF16:
    break;
  }
  // 16-bit: f32 products and sums, one rounding of the result.
  // resize() only grows them; every element used is written below.
  gemmLhs.resize(std::max(gemmLhs.size(), size_t(op.m * op.k)));
  gemmRhs.resize(std::max(gemmRhs.size(), size_t(op.k * op.n)));
  gemmProduct.resize(std::max(gemmProduct.size(), size_t(op.m * op.n)));
  host::cast({const_cast<void *>(op.lhs), op.dtype, op.m * op.k}, DType::F32,
             gemmLhs.data());
  host::cast({const_cast<void *>(op.rhs), op.dtype, op.k * op.n}, DType::F32,
             gemmRhs.data());
  cblas_sgemm(CblasRowMajor, transLhs, transRhs, m, n, k, 1.0f, gemmLhs.data(),
              lda, gemmRhs.data(), ldb, 0.0f, gemmProduct.data(), n);
  host::cast({gemmProduct.data(), DType::F32, op.m * op.n}, op.dtype,
             op.result);
  return Status::ok();
}

Status CpuBackend::compute(const std::string &kind,
                           const std::vector<Tensor> &inputs,
                           const std::vector<Tensor> &results) {
  TraceSpan span(env.trace, kind, TraceCategory::Compute, 0);
  if (span.isActive())
    span.args()
        .add("inputs", int64_t(inputs.size()))
        .add("results", int64_t(results.size()));
  for (const Tensor &result : results)
    host::compute(inputs, result);
  return Status::ok();
}

Status CpuBackend::accumulate(const Tensor &lhs, const void *rhs,
                              void *result) {
  TraceSpan span(env.trace, "accumulate", TraceCategory::Compute, 0);
  addTensorArgs(span, lhs);
  host::accumulate(lhs, rhs, result);
  return Status::ok();
}

Status CpuBackend::scale(const Tensor &input, double factor, void *result) {
  TraceSpan span(env.trace, "scale", TraceCategory::Compute, 0);
  addTensorArgs(span, input);
  host::scale(input, factor, result);
  return Status::ok();
}

Status CpuBackend::cast(const Tensor &input, DType resultType, void *result) {
  TraceSpan span(env.trace, "cast", TraceCategory::Compute, 0);
  addTensorArgs(span, input);
  host::cast(input, resultType, result);
  return Status::ok();
}

Status CpuBackend::findNonFinite(const Tensor &tensor, int64_t &index,
                                 double &value) {
  TraceSpan span(env.trace, "check_finite", TraceCategory::Compute, 0);
  addTensorArgs(span, tensor);
  index = host::findNonFinite(tensor, value);
  return Status::ok();
}

Status CpuBackend::sgd(const Tensor &param, const Tensor &grad, double lr) {
  TraceSpan span(env.trace, "sgd", TraceCategory::Compute, 0);
  addTensorArgs(span, param);
  host::sgd(param, grad, lr);
  return Status::ok();
}

Status CpuBackend::adam(const Tensor &param, const Tensor &grad, float *moments,
                        const AdamScalars &scalars) {
  TraceSpan span(env.trace, "adam", TraceCategory::Compute, 0);
  addTensorArgs(span, param);
  host::adam(param, grad, moments, scalars);
  return Status::ok();
}

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
  };
  std::shared_ptr<Scratch> scratch = std::make_shared<Scratch>();
  const void *send = nullptr;
  void *receive = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_FLOAT;
  const char *typeName = "MPI_FLOAT";
  /// DDPRT_FLAG_DETERMINISTIC_REDUCTIONS: MPI only moves the contributions
  /// (all-gather, all-to-all) and `finish` reduces them in rank order.
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
/// order, and is folded in that order, so the result does not depend on how
/// MPI would have split the message.
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
    host::reduceInRankOrder(keep->bytes.data(), accType, op.numel,
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
      return checkMpi(
          request ? MPI_Ialltoall(p.send, p.count, p.type, p.receive, p.count,
                                  p.type, group, request)
                  : MPI_Alltoall(p.send, p.count, p.type, p.receive, p.count,
                                 p.type, group),
          concat(request ? "MPI_Ialltoall" : "MPI_Alltoall",
                 "(sendbuf=", pointerText(p.send), ", count=", p.count,
                 ", recvbuf=", pointerText(p.receive),
                 ", datatype=", p.typeName, ", ", comm,
                 ") of a deterministic reduce_scatter"));
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
  }
  return makeError(DDPRT_ERROR_INTERNAL, "unknown collective");
}

Status CpuBackend::collective(const CollectiveOp &op,
                              std::unique_ptr<AsyncOp> *async) {
  CommTask task;
  task.traceName = collectiveName(op.kind);
  task.description = op.describe();
  if (env.trace.isEnabled()) {
    TraceArgs args;
    args.add("group", op.groupName)
        .add("dtype", dtypeName(op.dtype))
        .add("numel", op.numel)
        .add("bytes", op.numel * elementSize(op.dtype))
        .add("async", int64_t(async != nullptr));
    if (op.kind == CollectiveKind::Send || op.kind == CollectiveKind::Recv)
      args.add("peer", op.peer);
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
  int32_t groupIndex = op.group;
  task.start = [this, op, groupIndex, prepared,
                post](MPI_Request *request) -> Status {
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
    *async = std::make_unique<CpuAsyncOp>(std::move(completion), env.trace);
    return Status::ok();
  }
  TraceSpan span(env.trace, "wait", TraceCategory::Wait, 0);
  return completion->wait();
}
