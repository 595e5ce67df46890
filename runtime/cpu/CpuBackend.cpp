//===- CpuBackend.cpp - MPI + CPU backend ---------------------------------===//
//
// Setup, memory and compute of the CPU backend (CpuBackend.h); its
// collectives are in CpuCollectives.cpp.
//
//===----------------------------------------------------------------------===//

#include "CpuBackend.h"
#include "BlasGemm.h"
#include "FixedOrderGemm.h"

#include <algorithm>
#include <climits>
#include <cstring>

using namespace ddprt;
using namespace ddprt::cpu;

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
  host::fillSeeded(tensor, key, env.fractionalData);
  return Status::ok();
}

namespace {
/// One product in f32 or f64, by the kernel the run asked for; bounded
/// (DDPRT_FLAG_BOUNDED_VALUES) before any rounding to a 16-bit result.
template <typename T>
void multiply(const BackendEnv &env, bool useBlas, const GemmOp &op,
              const T *lhs, const T *rhs, T *result) {
  if (useBlas)
    blasGemm(op.transposeLhs, op.transposeRhs, op.m, op.n, op.k, lhs, rhs,
             result);
  else
    fixedOrderGemm(op.transposeLhs, op.transposeRhs, op.m, op.n, op.k, lhs,
                   rhs, result);
  if (env.boundedValues)
    for (int64_t i = 0, e = op.m * op.n; i < e; ++i)
      result[i] = boundElement(result[i]);
}
} // namespace

Status CpuBackend::gemm(const GemmOp &op) {
  // The BLAS, unless the run compares programs bitwise: then every element
  // is one fma chain in ascending k (FixedOrderGemm.h), so a GEMM on a chunk
  // of rows equals those rows of the whole GEMM (BlasGemm.h).
  // A dimension beyond the BLAS's int goes to the kernel too.
  bool useBlas = haveBlas() && !env.fixedOrderGemm && op.m <= INT_MAX &&
                 op.n <= INT_MAX && op.k <= INT_MAX;
  TraceSpan span(env.trace, op.label, TraceCategory::Compute, 0);
  if (span.isActive())
    span.args()
        .add("dtype", dtypeName(op.dtype))
        .add("m", op.m)
        .add("n", op.n)
        .add("k", op.k)
        .add("transpose_lhs", int64_t(op.transposeLhs))
        .add("transpose_rhs", int64_t(op.transposeRhs))
        .add("kernel", useBlas ? blasName() : "fixed-order");
  switch (op.dtype) {
  case DType::F32:
    multiply(env, useBlas, op, static_cast<const float *>(op.lhs),
             static_cast<const float *>(op.rhs),
             static_cast<float *>(op.result));
    return Status::ok();
  case DType::F64:
    multiply(env, useBlas, op, static_cast<const double *>(op.lhs),
             static_cast<const double *>(op.rhs),
             static_cast<double *>(op.result));
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
  multiply(env, useBlas, op, gemmLhs.data(), gemmRhs.data(),
           gemmProduct.data());
  host::cast({gemmProduct.data(), DType::F32, op.m * op.n}, op.dtype,
             op.result);
  return Status::ok();
}

Status CpuBackend::compute(const std::string &kind, const ComputeCost &cost,
                           const std::vector<Tensor> &inputs,
                           const std::vector<Tensor> &results) {
  TraceSpan span(env.trace, kind, TraceCategory::Compute, 0);
  if (span.isActive())
    span.args()
        .add("inputs", int64_t(inputs.size()))
        .add("results", int64_t(results.size()))
        .add("flops", cost.flops)
        .add("bytes", cost.bytes);
  for (size_t r = 0; r < results.size(); ++r)
    host::compute(inputs, results[r],
                  env.boundedValues ? std::optional<int64_t>(r) : std::nullopt);
  return Status::ok();
}

Status CpuBackend::route(const RouteOp &op) {
  TraceSpan span(env.trace, op.kind, TraceCategory::Compute, 0);
  if (span.isActive())
    span.args()
        .add("inputs", int64_t(op.inputs.size()))
        .add("results", int64_t(op.results.size()));
  Status status = host::route(op);
  // The router's decisions, so that a trace shows the load each rank's
  // experts got: the tokens each expert kept, and the routes dropped.
  if (status.isOk() && span.isActive() && op.kernel == DDPRT_ROUTE_SELECT) {
    const auto *slotRows = static_cast<const float *>(op.results[1].data);
    const auto *tokenSlots = static_cast<const float *>(op.results[2].data);
    std::string kept;
    for (int64_t e = 0; e < op.experts; ++e) {
      int64_t count = 0;
      for (int64_t p = 0; p < op.capacity; ++p)
        count += slotRows[e * op.capacity + p] >= 0;
      kept += (e ? "," : "") + std::to_string(count);
    }
    int64_t dropped = 0;
    for (int64_t r = 0; r < op.tokens * op.topk; ++r)
      dropped += tokenSlots[r] < 0;
    span.args().add("kept", kept).add("dropped", dropped);
  }
  return status;
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
                        const AdamHyper &, const AdamScalars &scalars,
                        const Tensor *rounded) {
  TraceSpan span(env.trace, "adam", TraceCategory::Compute, 0);
  addTensorArgs(span, param);
  host::adam(param, grad, moments, scalars);
  if (rounded)
    host::cast(param, rounded->dtype, rounded->data);
  return Status::ok();
}
