//===- Api.cpp - The C entry points of libddprt ---------------------------===//
//
// Validates every argument (a bad one is an error with a message naming the
// entry point and the argument, never a crash), keeps what both backends
// share (groups, parameters, buffers, handles) and dispatches to the
// backend. Errors end all ranks unless DDPRT_FLAG_RETURN_ERRORS is set.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Mesh.h"
#include "Mpi.h"
#include "Seed.h"
#include "Trace.h"
#include "Watchdog.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <unordered_map>

using namespace ddprt;

namespace {

/// A handle made by ddprt_join: waits for each joined op in turn.
class JoinedOp final : public AsyncOp {
public:
  explicit JoinedOp(std::vector<std::unique_ptr<AsyncOp>> ops)
      : ops(std::move(ops)) {}
  Status wait() override {
    Status first;
    for (std::unique_ptr<AsyncOp> &op : ops) {
      Status status = op->wait();
      if (first.isOk())
        first = std::move(status);
    }
    return first;
  }

private:
  std::vector<std::unique_ptr<AsyncOp>> ops;
};

struct Group {
  std::string axes;
  GroupLayout layout;
};

struct Param {
  std::string name;
  DType dtype;
  int64_t numel;
  void *data;
  /// Adam's m and v, allocated at the first Adam step.
  float *moments = nullptr;
  int64_t adamSteps = 0;
  /// The fp32 main copy of a 16-bit parameter, made at its first update.
  float *main = nullptr;
  /// The shard optimizers' state for the parameter's elements
  /// [shardBegin, shardBegin + shardNumel) in this rank's shard: Adam's m
  /// and v, and the main copy of a 16-bit parameter.
  float *shardMoments = nullptr;
  float *shardMain = nullptr;
  int64_t shardBegin = 0, shardNumel = 0, shardAdamSteps = 0;
};

/// The last ddprt_init or ddprt_finalize failure of this thread, for
/// ddprt_last_error(NULL).
thread_local std::string lastContextlessError;

} // namespace

struct ddprt_context {
  int32_t flags = 0;
  MpiSession mpi;
  Mesh mesh;
  TraceRecorder trace;
  std::string tracePath;
  std::unique_ptr<Watchdog> watchdog;
  std::unique_ptr<Backend> backend;

  std::vector<Group> groups;
  std::vector<Param> params;
  std::map<std::string, int32_t> paramByName;
  /// Every buffer from ddprt_alloc and every parameter's storage, by
  /// address, with its size in bytes.
  std::map<uintptr_t, int64_t> buffers;
  std::unordered_map<ddprt_handle, std::unique_ptr<AsyncOp>> handles;
  ddprt_handle nextHandle = 1;
  std::string lastError;

  /// Records a failed status (and, unless errors are returned, ends the job).
  ddprt_status report(const Status &status) {
    if (status.isOk())
      return DDPRT_OK;
    lastError =
        concat("ddprt: rank ", mpi.getRank(), ": ", status.getMessage());
    if (!(flags & DDPRT_FLAG_RETURN_ERRORS))
      fatalError(lastError);
    return status.getCode();
  }

  ddprt_handle addHandle(std::unique_ptr<AsyncOp> op) {
    ddprt_handle handle = nextHandle++;
    handles.emplace(handle, std::move(op));
    return handle;
  }

  /// Releases every buffer and parameter; the backend must be idle.
  void freeMemory() {
    for (Param &param : params) {
      if (param.moments)
        backend->deallocate(param.moments);
      for (float *state : {param.shardMoments, param.main, param.shardMain})
        if (state)
          backend->deallocate(state);
    }
    for (const auto &[address, bytes] : buffers)
      backend->deallocate(reinterpret_cast<void *>(address));
    buffers.clear();
    params.clear();
  }
};

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

static Status invalid(const char *entry, const std::string &what) {
  return makeError(DDPRT_ERROR_INVALID_ARGUMENT, entry, ": ", what);
}

static ddprt_status nullContext(const char *entry) {
  lastContextlessError =
      concat("ddprt: ", entry, ": the context is NULL (call ddprt_init first)");
  std::fprintf(stderr, "%s\n", lastContextlessError.c_str());
  return DDPRT_ERROR_INVALID_ARGUMENT;
}

#define DDPRT_CHECK_CONTEXT(context)                                           \
  do {                                                                         \
    if (!(context))                                                            \
      return nullContext(__func__);                                            \
  } while (false)

/// Returns the status of `expr` through the context's report when it fails.
#define DDPRT_REPORT_IF_ERROR(context, expr)                                   \
  do {                                                                         \
    ::ddprt::Status ddprtStatus_ = (expr);                                     \
    if (!ddprtStatus_.isOk())                                                  \
      return (context)->report(ddprtStatus_);                                  \
  } while (false)

static Status checkDType(const char *entry, const char *what, int32_t dtype) {
  if (!isValidDType(dtype))
    return invalid(entry, concat(what, " ", dtype,
                                 " is not a DDPRT_DTYPE_* (1 f16, 2 bf16, "
                                 "3 f32, 4 f64)"));
  return Status::ok();
}

static Status checkCount(const char *entry, const char *what, int64_t count) {
  if (count < 0)
    return invalid(entry, concat(what, " is negative (", count, ")"));
  if (count > (int64_t(1) << 48))
    return invalid(entry, concat(what, " ", count, " is implausibly large"));
  return Status::ok();
}

/// `a * b` elements, which must not overflow nor pass checkCount's bound.
static Status checkProduct(const char *entry, const char *what, int64_t a,
                           int64_t b, int64_t &product) {
  if (__builtin_mul_overflow(a, b, &product))
    return invalid(entry, concat(what, " = ", a, " x ", b, " overflows"));
  return checkCount(entry, what, product);
}

static Status checkOutput(const char *entry, const char *what,
                          const void *pointer) {
  if (!pointer)
    return invalid(entry, concat("output pointer '", what, "' is NULL"));
  return Status::ok();
}

static Status checkString(const char *entry, const char *what,
                          const char *text) {
  if (!text)
    return invalid(entry, concat("'", what, "' is NULL"));
  if (!*text)
    return invalid(entry, concat("'", what, "' is empty"));
  return Status::ok();
}

/// `bytes` at `data` must lie inside one buffer of the runtime: this catches
/// a wrong size or offset in generated code before it corrupts memory.
static Status checkBuffer(const ddprt_context *context, const char *entry,
                          const char *what, const void *data, int64_t bytes) {
  if (bytes == 0)
    return Status::ok();
  if (!data)
    return invalid(entry, concat("'", what, "' is NULL"));
  auto address = reinterpret_cast<uintptr_t>(data);
  auto next = context->buffers.upper_bound(address);
  if (next == context->buffers.begin())
    return invalid(entry, concat("'", what, "' (", data, ", ", bytes,
                                 " bytes) is not inside a buffer from "
                                 "ddprt_alloc or a parameter"));
  auto buffer = std::prev(next);
  uintptr_t end = buffer->first + uintptr_t(buffer->second);
  if (address >= end)
    return invalid(entry, concat("'", what, "' (", data, ", ", bytes,
                                 " bytes) is not inside a buffer from "
                                 "ddprt_alloc or a parameter"));
  if (address + uintptr_t(bytes) > end)
    return invalid(entry,
                   concat("'", what, "' (", data, ", ", bytes, " bytes) runs ",
                          address + uintptr_t(bytes) - end,
                          " bytes past the end of its buffer (",
                          reinterpret_cast<void *>(buffer->first), ", ",
                          buffer->second, " bytes)"));
  return Status::ok();
}

static Status checkTensor(const ddprt_context *context, const char *entry,
                          const char *what, const void *data, int32_t dtype,
                          int64_t numel) {
  DDPRT_RETURN_IF_ERROR(
      checkDType(entry, concat(what, "'s dtype").c_str(), dtype));
  DDPRT_RETURN_IF_ERROR(
      checkCount(entry, concat(what, "'s numel").c_str(), numel));
  return checkBuffer(context, entry, what, data,
                     numel * elementSize(DType(dtype)));
}

static Status checkGroup(const ddprt_context *context, const char *entry,
                         int32_t group) {
  if (group < 0 || size_t(group) >= context->groups.size())
    return invalid(entry, concat("group ", group, " does not exist (",
                                 context->groups.size(),
                                 " created with ddprt_group_create)"));
  return Status::ok();
}

static Status checkParam(const ddprt_context *context, const char *entry,
                         int32_t param) {
  if (param < 0 || size_t(param) >= context->params.size())
    return invalid(entry, concat("parameter ", param, " does not exist (",
                                 context->params.size(), " registered)"));
  return Status::ok();
}

static bool rangesOverlap(const void *a, int64_t aBytes, const void *b,
                          int64_t bBytes) {
  auto aBegin = reinterpret_cast<uintptr_t>(a);
  auto bBegin = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && aBegin < bBegin + uint64_t(bBytes) &&
         bBegin < aBegin + uint64_t(aBytes);
}

//===----------------------------------------------------------------------===//
// Lifetime
//===----------------------------------------------------------------------===//

static Status initialize(ddprt_context &context, const char *mesh,
                         int32_t backend, int32_t flags, double timeoutSeconds,
                         const char *tracePath) {
  // The watchdog comes first: MPI_Comm_dup of the world is collective too.
  context.watchdog = std::make_unique<Watchdog>(timeoutSeconds);
  DDPRT_RETURN_IF_ERROR(context.mpi.start(*context.watchdog));
  if (context.mesh.getNumRanks() != context.mpi.getSize())
    return invalid("ddprt_init",
                   concat("mesh '", mesh, "' has ", context.mesh.getNumRanks(),
                          " ranks but the job has ", context.mpi.getSize(),
                          " (MPI_COMM_WORLD); launch with mpirun -np ",
                          context.mesh.getNumRanks()));
  const char *path = tracePath ? tracePath : std::getenv("DDPRT_TRACE");
  if (path && *path) {
    context.tracePath = path;
    context.trace.enable();
  }
  BackendEnv env{context.mpi, context.trace, *context.watchdog,
                 (flags & DDPRT_FLAG_DETERMINISTIC_REDUCTIONS) != 0};
  std::string noDevice;
  bool useCuda =
      backend == DDPRT_BACKEND_CUDA ||
      (backend == DDPRT_BACKEND_AUTO && isCudaDeviceAvailable(noDevice));
  if (useCuda && env.deterministicReductions)
    return invalid("ddprt_init", "DDPRT_FLAG_DETERMINISTIC_REDUCTIONS is "
                                 "implemented by the CPU backend only");
  Status status;
  // Both backends start with collectives (a barrier, NCCL's bootstrap).
  uint64_t ticket = context.watchdog->begin(concat(
      "starting the ", useCuda ? "CUDA" : "CPU", " backend in ddprt_init"));
  context.backend =
      useCuda ? createCudaBackend(env, status) : createCpuBackend(env, status);
  context.watchdog->end(ticket);
  if (!status.isOk())
    return makeError(status.getCode(), "ddprt_init: ", status.getMessage());
  return Status::ok();
}

extern "C" ddprt_status ddprt_init(int32_t abiVersion, const char *mesh,
                                   int32_t backend, int32_t flags,
                                   int32_t timeoutMs, const char *tracePath,
                                   ddprt_context **context) {
  bool returnErrors = flags & DDPRT_FLAG_RETURN_ERRORS;
  auto fail = [&](const Status &status) {
    lastContextlessError = "ddprt: " + status.getMessage();
    if (!returnErrors)
      fatalError(lastContextlessError);
    return status.getCode();
  };
  if (!context)
    return fail(invalid("ddprt_init", "output pointer 'context' is NULL"));
  *context = nullptr;
  if (abiVersion != DDPRT_ABI_VERSION)
    return fail(makeError(DDPRT_ERROR_ABI_MISMATCH,
                          "ddprt_init: the caller was built for ABI "
                          "version ",
                          abiVersion, " but this libddprt implements version ",
                          DDPRT_ABI_VERSION,
                          "; rebuild the program (or the compiler that "
                          "generated it) against this library's ddprt.h"));
  const int32_t knownFlags =
      DDPRT_FLAG_RETURN_ERRORS | DDPRT_FLAG_DETERMINISTIC_REDUCTIONS;
  if (flags & ~knownFlags)
    return fail(invalid("ddprt_init", concat("unknown flags 0x", std::hex,
                                             flags & ~knownFlags)));
  if (backend < DDPRT_BACKEND_AUTO || backend > DDPRT_BACKEND_CUDA)
    return fail(invalid("ddprt_init",
                        concat("backend ", backend,
                               " is not a DDPRT_BACKEND_* (0 auto, 1 cpu, "
                               "2 cuda)")));
  if (timeoutMs < 0)
    return fail(invalid("ddprt_init",
                        concat("timeout_ms is negative (", timeoutMs, ")")));
  if (!mesh)
    return fail(invalid("ddprt_init", "'mesh' is NULL"));

  auto created = std::make_unique<ddprt_context>();
  created->flags = flags;
  Status status = Mesh::parse(mesh, created->mesh);
  if (!status.isOk())
    return fail(
        makeError(status.getCode(), "ddprt_init: ", status.getMessage()));
  std::string timeoutError;
  double timeoutSeconds = resolveTimeoutSeconds(timeoutMs, timeoutError);
  if (!timeoutError.empty())
    return fail(invalid("ddprt_init", timeoutError));

  status = initialize(*created, mesh, backend, flags, timeoutSeconds, tracePath);
  if (!status.isOk()) {
    std::string message =
        concat("rank ", created->mpi.getRank(), ": ", status.getMessage());
    created->backend.reset();
    created->watchdog.reset();
    created->mpi.stop();
    return fail(Status(status.getCode(), message));
  }
  *context = created.release();
  return DDPRT_OK;
}

/// Drains the handles nobody waited for: the ops may still be writing.
static Status drainHandles(ddprt_context &context) {
  if (context.handles.empty())
    return Status::ok();
  std::map<ddprt_handle, std::unique_ptr<AsyncOp>> sorted;
  for (auto &[handle, op] : context.handles)
    sorted.emplace(handle, std::move(op));
  context.handles.clear();
  std::string list;
  for (auto &[handle, op] : sorted) {
    (void)op->wait();
    list += (list.empty() ? "" : ", ") + std::to_string(handle);
  }
  return makeError(DDPRT_ERROR_BAD_HANDLE, "ddprt_finalize: ", sorted.size(),
                   " handle(s) were never waited or joined: ", list);
}

static Status writeTrace(ddprt_context &context) {
  if (!context.trace.isEnabled())
    return Status::ok();
  std::string mine = context.trace.serialize(
      context.mpi.getRank(), context.backend->getNumCommStreams());
  std::vector<std::string> all;
  uint64_t ticket = context.watchdog->begin("gathering the trace on rank 0");
  Status status = context.mpi.gatherStrings(mine, all);
  context.watchdog->end(ticket);
  DDPRT_RETURN_IF_ERROR(status);
  if (context.mpi.getRank() != 0)
    return Status::ok();
  std::FILE *file = std::fopen(context.tracePath.c_str(), "w");
  if (!file)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                     "ddprt_finalize: cannot write the trace to '",
                     context.tracePath, "'");
  std::string text = TraceRecorder::mergeRanks(all);
  bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  written = std::fclose(file) == 0 && written;
  if (!written)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                     "ddprt_finalize: writing the trace to '",
                     context.tracePath, "' failed");
  return Status::ok();
}

extern "C" ddprt_status ddprt_finalize(ddprt_context *context) {
  DDPRT_CHECK_CONTEXT(context);
  std::unique_ptr<ddprt_context> owned(context);
  Status first = drainHandles(*context);
  auto keep = [&](Status status) {
    if (first.isOk())
      first = std::move(status);
  };
  keep(context->backend->synchronize());
  keep(context->backend->shutdown());
  keep(writeTrace(*context));
  context->freeMemory();
  context->backend.reset();
  context->watchdog.reset();
  int rank = context->mpi.getRank();
  context->mpi.stop();
  if (first.isOk())
    return DDPRT_OK;
  lastContextlessError = concat("ddprt: rank ", rank, ": ", first.getMessage());
  if (!(context->flags & DDPRT_FLAG_RETURN_ERRORS))
    fatalError(lastContextlessError);
  return first.getCode();
}

extern "C" const char *ddprt_last_error(ddprt_context *context) {
  return context ? context->lastError.c_str() : lastContextlessError.c_str();
}

extern "C" ddprt_status ddprt_get_rank(ddprt_context *context, int32_t *rank,
                                       int32_t *size) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "rank", rank));
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "size", size));
  *rank = context->mpi.getRank();
  *size = context->mpi.getSize();
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_get_backend(ddprt_context *context,
                                          int32_t *backend) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "backend", backend));
  *backend = context->backend->getKind();
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_synchronize(ddprt_context *context) {
  DDPRT_CHECK_CONTEXT(context);
  return context->report(context->backend->synchronize());
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

extern "C" ddprt_status ddprt_group_create(ddprt_context *context,
                                           const char *axes, int32_t *group) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "group", group));
  DDPRT_REPORT_IF_ERROR(context, checkString(__func__, "axes", axes));
  std::vector<int> axisIndices;
  Status status = context->mesh.parseGroupAxes(axes, axisIndices);
  if (!status.isOk())
    return context->report(
        makeError(status.getCode(), __func__, ": ", status.getMessage()));
  std::string name;
  for (int index : axisIndices)
    name += (name.empty() ? "" : ",") + context->mesh.getAxes()[index].name;
  for (size_t i = 0; i < context->groups.size(); ++i) {
    if (context->groups[i].axes == name) {
      *group = int32_t(i);
      return DDPRT_OK;
    }
  }
  GroupLayout layout =
      context->mesh.layoutGroup(axisIndices, context->mpi.getRank());
  DDPRT_REPORT_IF_ERROR(context, context->backend->createGroup(layout, name));
  context->groups.push_back({name, layout});
  *group = int32_t(context->groups.size() - 1);
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_group_info(ddprt_context *context, int32_t group,
                                         int32_t *rank, int32_t *size) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkGroup(context, __func__, group));
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "rank", rank));
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "size", size));
  *rank = int32_t(context->groups[size_t(group)].layout.rank);
  *size = int32_t(context->groups[size_t(group)].layout.size);
  return DDPRT_OK;
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

extern "C" ddprt_status ddprt_alloc(ddprt_context *context, int32_t dtype,
                                    int64_t numel, void **data) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "data", data));
  *data = nullptr;
  DDPRT_REPORT_IF_ERROR(context, checkDType(__func__, "dtype", dtype));
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "numel", numel));
  int64_t bytes = numel * elementSize(DType(dtype));
  DDPRT_REPORT_IF_ERROR(context, context->backend->allocate(bytes, data));
  context->buffers.emplace(reinterpret_cast<uintptr_t>(*data), bytes);
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_free(ddprt_context *context, void *data) {
  DDPRT_CHECK_CONTEXT(context);
  if (!data)
    return DDPRT_OK;
  auto found = context->buffers.find(reinterpret_cast<uintptr_t>(data));
  bool isParam = false;
  for (const Param &param : context->params)
    isParam |= param.data == data;
  if (found == context->buffers.end() || isParam)
    return context->report(invalid(
        __func__, concat(data, " is not a buffer from ddprt_alloc (or was "
                               "freed already)")));
  // The compute stream may still use it.
  DDPRT_REPORT_IF_ERROR(context, context->backend->synchronize());
  context->backend->deallocate(data);
  context->buffers.erase(found);
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_copy(ddprt_context *context, void *dst,
                                   const void *src, int64_t bytes) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "bytes", bytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "dst", dst, bytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "src", src, bytes));
  if (bytes == 0)
    return DDPRT_OK;
  return context->report(context->backend->copy(dst, src, bytes));
}

extern "C" ddprt_status ddprt_read(ddprt_context *context, void *hostDst,
                                   const void *src, int64_t bytes) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "bytes", bytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "src", src, bytes));
  if (bytes == 0)
    return DDPRT_OK;
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "host_dst", hostDst));
  return context->report(context->backend->read(hostDst, src, bytes));
}

extern "C" ddprt_status ddprt_write(ddprt_context *context, void *dst,
                                    const void *hostSrc, int64_t bytes) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "bytes", bytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "dst", dst, bytes));
  if (bytes == 0)
    return DDPRT_OK;
  if (!hostSrc)
    return context->report(invalid(__func__, "'host_src' is NULL"));
  return context->report(context->backend->write(dst, hostSrc, bytes));
}

extern "C" ddprt_status ddprt_fill_input(ddprt_context *context, void *data,
                                         int32_t dtype, int64_t numel,
                                         uint64_t seed) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(
      context, checkTensor(context, __func__, "data", data, dtype, numel));
  if (numel == 0)
    return DDPRT_OK;
  uint64_t key = seedKey(seed, inputStream(context->mpi.getRank()));
  return context->report(
      context->backend->fillSeeded({data, DType(dtype), numel}, key));
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

extern "C" ddprt_status ddprt_param_register(ddprt_context *context,
                                             const char *name, int32_t dtype,
                                             int64_t numel, uint64_t seed,
                                             int32_t *param) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "param", param));
  DDPRT_REPORT_IF_ERROR(context, checkString(__func__, "name", name));
  DDPRT_REPORT_IF_ERROR(context, checkDType(__func__, "dtype", dtype));
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "numel", numel));
  if (context->paramByName.count(name))
    return context->report(invalid(
        __func__, concat("parameter '", name, "' is registered already")));
  Param entry{name, DType(dtype), numel, nullptr};
  int64_t bytes = numel * elementSize(entry.dtype);
  DDPRT_REPORT_IF_ERROR(context,
                        context->backend->allocate(bytes, &entry.data));
  context->buffers.emplace(reinterpret_cast<uintptr_t>(entry.data), bytes);
  if (numel > 0)
    DDPRT_REPORT_IF_ERROR(context, context->backend->fillSeeded(
                                       {entry.data, entry.dtype, numel},
                                       seedKey(seed, paramStream(name))));
  *param = int32_t(context->params.size());
  context->paramByName.emplace(name, *param);
  context->params.push_back(std::move(entry));
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_param_lookup(ddprt_context *context,
                                           const char *name, int32_t *param) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "param", param));
  DDPRT_REPORT_IF_ERROR(context, checkString(__func__, "name", name));
  auto found = context->paramByName.find(name);
  if (found == context->paramByName.end())
    return context->report(
        invalid(__func__, concat("no parameter is named '", name, "'")));
  *param = found->second;
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_param_count(ddprt_context *context,
                                          int32_t *count) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "count", count));
  *count = int32_t(context->params.size());
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_param_info(ddprt_context *context, int32_t param,
                                         const char **name, int32_t *dtype,
                                         int64_t *numel) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  const Param &entry = context->params[size_t(param)];
  if (name)
    *name = entry.name.c_str();
  if (dtype)
    *dtype = int32_t(entry.dtype);
  if (numel)
    *numel = entry.numel;
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_param_data(ddprt_context *context, int32_t param,
                                         void **data) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "data", data));
  *data = context->params[size_t(param)].data;
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_param_read(ddprt_context *context, int32_t param,
                                         void *hostDst, int64_t bytes) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  const Param &entry = context->params[size_t(param)];
  int64_t expected = entry.numel * elementSize(entry.dtype);
  if (bytes != expected)
    return context->report(invalid(
        __func__, concat("bytes is ", bytes, " but parameter '", entry.name,
                         "' has ", expected, " (", entry.numel, " x ",
                         dtypeName(entry.dtype), ")")));
  if (bytes == 0)
    return DDPRT_OK;
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "host_dst", hostDst));
  return context->report(context->backend->read(hostDst, entry.data, bytes));
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

extern "C" ddprt_status ddprt_gemm(ddprt_context *context, int32_t dtype,
                                   int32_t transposeLhs, int32_t transposeRhs,
                                   int64_t m, int64_t n, int64_t k,
                                   const void *lhs, const void *rhs,
                                   void *result, const char *label) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkDType(__func__, "dtype", dtype));
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "m", m));
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "n", n));
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "k", k));
  if ((transposeLhs != 0 && transposeLhs != 1) ||
      (transposeRhs != 0 && transposeRhs != 1))
    return context->report(
        invalid(__func__, "transpose_lhs and transpose_rhs must be 0 or 1"));
  int64_t size = elementSize(DType(dtype));
  int64_t lhsNumel = 0, rhsNumel = 0, resultNumel = 0;
  DDPRT_REPORT_IF_ERROR(context,
                        checkProduct(__func__, "m x k", m, k, lhsNumel));
  DDPRT_REPORT_IF_ERROR(context,
                        checkProduct(__func__, "k x n", k, n, rhsNumel));
  DDPRT_REPORT_IF_ERROR(context,
                        checkProduct(__func__, "m x n", m, n, resultNumel));
  int64_t lhsBytes = lhsNumel * size, rhsBytes = rhsNumel * size,
          resultBytes = resultNumel * size;
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "lhs", lhs, lhsBytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "rhs", rhs, rhsBytes));
  DDPRT_REPORT_IF_ERROR(
      context, checkBuffer(context, __func__, "result", result, resultBytes));
  if (rangesOverlap(result, resultBytes, lhs, lhsBytes) ||
      rangesOverlap(result, resultBytes, rhs, rhsBytes))
    return context->report(invalid(__func__, "result overlaps an operand"));
  GemmOp op{
      DType(dtype), transposeLhs == 1,     transposeRhs == 1, m, n, k, lhs, rhs,
      result,       label ? label : "gemm"};
  return context->report(context->backend->gemm(op));
}

extern "C" ddprt_status ddprt_compute(ddprt_context *context, const char *kind,
                                      const ddprt_tensor *inputs,
                                      int32_t numInputs,
                                      const ddprt_tensor *results,
                                      int32_t numResults) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkString(__func__, "kind", kind));
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "num_inputs", numInputs));
  DDPRT_REPORT_IF_ERROR(context,
                        checkCount(__func__, "num_results", numResults));
  if (numInputs > 0 && !inputs)
    return context->report(invalid(__func__, "'inputs' is NULL"));
  if (numResults > 0 && !results)
    return context->report(invalid(__func__, "'results' is NULL"));
  auto collect = [&](const ddprt_tensor *tensors, int32_t count,
                     const char *what, std::vector<Tensor> &out) -> Status {
    for (int32_t i = 0; i < count; ++i) {
      const ddprt_tensor &tensor = tensors[i];
      std::string name = concat(what, " #", i);
      if (tensor.reserved != 0)
        return invalid(__func__, name + ": 'reserved' must be 0");
      DDPRT_RETURN_IF_ERROR(checkTensor(context, __func__, name.c_str(),
                                        tensor.data, tensor.dtype,
                                        tensor.numel));
      out.push_back({tensor.data, DType(tensor.dtype), tensor.numel});
    }
    return Status::ok();
  };
  std::vector<Tensor> inputTensors, resultTensors;
  DDPRT_REPORT_IF_ERROR(context,
                        collect(inputs, numInputs, "input", inputTensors));
  DDPRT_REPORT_IF_ERROR(context,
                        collect(results, numResults, "result", resultTensors));
  bool anyResultElements = false;
  for (const Tensor &result : resultTensors)
    anyResultElements |= result.numel > 0;
  for (size_t i = 0; i < inputTensors.size(); ++i)
    if (inputTensors[i].numel == 0 && anyResultElements)
      return context->report(invalid(
          __func__, concat("input #", i, " has no elements to repeat")));
  return context->report(
      context->backend->compute(kind, inputTensors, resultTensors));
}

extern "C" ddprt_status ddprt_accumulate(ddprt_context *context, int32_t dtype,
                                         int64_t numel, const void *lhs,
                                         const void *rhs, void *result) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(
      context, checkTensor(context, __func__, "lhs", lhs, dtype, numel));
  DDPRT_REPORT_IF_ERROR(
      context, checkTensor(context, __func__, "rhs", rhs, dtype, numel));
  DDPRT_REPORT_IF_ERROR(
      context, checkTensor(context, __func__, "result", result, dtype, numel));
  if (numel == 0)
    return DDPRT_OK;
  return context->report(context->backend->accumulate(
      {const_cast<void *>(lhs), DType(dtype), numel}, rhs, result));
}

extern "C" ddprt_status ddprt_scale(ddprt_context *context, int32_t dtype,
                                    int64_t numel, const void *input,
                                    double factor, void *result) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(
      context, checkTensor(context, __func__, "input", input, dtype, numel));
  DDPRT_REPORT_IF_ERROR(
      context, checkTensor(context, __func__, "result", result, dtype, numel));
  if (!std::isfinite(factor))
    return context->report(
        invalid(__func__, concat("factor ", factor, " is not finite")));
  if (numel == 0)
    return DDPRT_OK;
  return context->report(context->backend->scale(
      {const_cast<void *>(input), DType(dtype), numel}, factor, result));
}

extern "C" ddprt_status ddprt_cast(ddprt_context *context, int32_t srcDtype,
                                   const void *input, int32_t dstDtype,
                                   void *result, int64_t numel) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(
      context, checkTensor(context, __func__, "input", input, srcDtype, numel));
  DDPRT_REPORT_IF_ERROR(context, checkTensor(context, __func__, "result",
                                             result, dstDtype, numel));
  if (input != result &&
      rangesOverlap(input, numel * elementSize(DType(srcDtype)), result,
                    numel * elementSize(DType(dstDtype))))
    return context->report(
        invalid(__func__, "result overlaps input without being it"));
  if (input == result &&
      elementSize(DType(srcDtype)) != elementSize(DType(dstDtype)))
    return context->report(
        invalid(__func__, "a cast in place needs types of the same size"));
  if (numel == 0)
    return DDPRT_OK;
  return context->report(context->backend->cast(
      {const_cast<void *>(input), DType(srcDtype), numel}, DType(dstDtype),
      result));
}

extern "C" ddprt_status ddprt_check_finite(ddprt_context *context,
                                           int32_t dtype, int64_t numel,
                                           const void *data,
                                           const char *bufferName,
                                           const char *paramNames) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(
      context, checkTensor(context, __func__, "data", data, dtype, numel));
  DDPRT_REPORT_IF_ERROR(context,
                        checkString(__func__, "buffer_name", bufferName));
  if (numel == 0)
    return DDPRT_OK;
  int64_t index = -1;
  double value = 0;
  DDPRT_REPORT_IF_ERROR(
      context,
      context->backend->findNonFinite(
          {const_cast<void *>(data), DType(dtype), numel}, index, value));
  if (index < 0)
    return DDPRT_OK;
  std::string params = paramNames && *paramNames
                           ? concat("; parameters: ", paramNames)
                           : std::string();
  return context->report(makeError(DDPRT_ERROR_NONFINITE, "non-finite value ",
                                   value, " at element ", index, " of buffer '",
                                   bufferName, "' (", numel, " x ",
                                   dtypeName(DType(dtype)), params, ")"));
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Checks what every collective shares and fills in the op's group fields.
static Status prepareCollective(const ddprt_context *context, const char *entry,
                                CollectiveOp &op, int32_t dtype,
                                int64_t numel) {
  DDPRT_RETURN_IF_ERROR(checkGroup(context, entry, op.group));
  DDPRT_RETURN_IF_ERROR(checkDType(entry, "dtype", dtype));
  DDPRT_RETURN_IF_ERROR(checkCount(entry, "numel", numel));
  const Group &group = context->groups[size_t(op.group)];
  op.groupName = group.axes;
  op.groupSize = group.layout.size;
  op.groupRank = group.layout.rank;
  op.dtype = DType(dtype);
  op.numel = numel;
  // What reduce-scatter reads and all-gather writes.
  int64_t total = 0;
  return checkProduct(entry, "numel x group size", numel, op.groupSize, total);
}

static Status checkReduction(const char *entry, int32_t reduction) {
  if (reduction != DDPRT_REDUCTION_SUM && reduction != DDPRT_REDUCTION_AVG &&
      reduction != DDPRT_REDUCTION_MAX)
    return invalid(entry,
                   concat("reduction ", reduction,
                          " is not a DDPRT_REDUCTION_* (0 sum, 1 avg, 2 max)"));
  return Status::ok();
}

static ddprt_status issueCollective(ddprt_context *context,
                                    const CollectiveOp &op,
                                    ddprt_handle *handle) {
  if (!handle)
    return context->report(context->backend->collective(op, nullptr));
  *handle = 0;
  std::unique_ptr<AsyncOp> async;
  DDPRT_REPORT_IF_ERROR(context, context->backend->collective(op, &async));
  *handle = context->addHandle(std::move(async));
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_all_reduce(ddprt_context *context, int32_t group,
                                         int32_t reduction, int32_t dtype,
                                         int64_t numel, const void *input,
                                         void *result, ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::AllReduce;
  op.group = group;
  op.reduction = reduction;
  op.input = input;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  DDPRT_REPORT_IF_ERROR(context, checkReduction(__func__, reduction));
  int64_t bytes = numel * elementSize(op.dtype);
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "input", input, bytes));
  DDPRT_REPORT_IF_ERROR(
      context, checkBuffer(context, __func__, "result", result, bytes));
  return issueCollective(context, op, handle);
}

extern "C" ddprt_status ddprt_reduce_scatter(ddprt_context *context,
                                             int32_t group, int32_t reduction,
                                             int32_t dtype, int64_t numel,
                                             const void *input, void *result,
                                             ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::ReduceScatter;
  op.group = group;
  op.reduction = reduction;
  op.input = input;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  DDPRT_REPORT_IF_ERROR(context, checkReduction(__func__, reduction));
  int64_t bytes = numel * elementSize(op.dtype);
  DDPRT_REPORT_IF_ERROR(context, checkBuffer(context, __func__, "input", input,
                                             bytes * op.groupSize));
  DDPRT_REPORT_IF_ERROR(
      context, checkBuffer(context, __func__, "result", result, bytes));
  return issueCollective(context, op, handle);
}

extern "C" ddprt_status ddprt_all_gather(ddprt_context *context, int32_t group,
                                         int32_t dtype, int64_t numel,
                                         const void *input, void *result,
                                         ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::AllGather;
  op.group = group;
  op.input = input;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  int64_t bytes = numel * elementSize(op.dtype);
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "input", input, bytes));
  DDPRT_REPORT_IF_ERROR(context, checkBuffer(context, __func__, "result",
                                             result, bytes * op.groupSize));
  return issueCollective(context, op, handle);
}

/// The group rank `offset` places from this one; it must be another rank.
static Status resolvePeer(const char *entry, CollectiveOp &op, int64_t offset) {
  int64_t size = op.groupSize;
  if (size < 2 || offset % size == 0)
    return invalid(entry, concat("offset ", offset,
                                 " addresses this rank itself in group '",
                                 op.groupName, "' of ", size, " rank(s)"));
  op.peer = ((op.groupRank + offset) % size + size) % size;
  return Status::ok();
}

extern "C" ddprt_status ddprt_send(ddprt_context *context, int32_t group,
                                   int64_t offset, int32_t dtype, int64_t numel,
                                   const void *input, ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::Send;
  op.group = group;
  op.input = input;
  op.result = nullptr;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  DDPRT_REPORT_IF_ERROR(context, resolvePeer(__func__, op, offset));
  DDPRT_REPORT_IF_ERROR(context, checkBuffer(context, __func__, "input", input,
                                             numel * elementSize(op.dtype)));
  return issueCollective(context, op, handle);
}

extern "C" ddprt_status ddprt_recv(ddprt_context *context, int32_t group,
                                   int64_t offset, int32_t dtype, int64_t numel,
                                   void *result, ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::Recv;
  op.group = group;
  op.input = nullptr;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  DDPRT_REPORT_IF_ERROR(context, resolvePeer(__func__, op, offset));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "result", result,
                                    numel * elementSize(op.dtype)));
  return issueCollective(context, op, handle);
}

static Status takeHandle(ddprt_context *context, const char *entry,
                         ddprt_handle handle, std::unique_ptr<AsyncOp> &op) {
  auto found = context->handles.find(handle);
  if (found == context->handles.end())
    return makeError(DDPRT_ERROR_BAD_HANDLE, entry, ": handle ", handle,
                     handle == 0 || handle >= context->nextHandle
                         ? " was never issued"
                         : " was already waited or joined");
  op = std::move(found->second);
  context->handles.erase(found);
  return Status::ok();
}

extern "C" ddprt_status ddprt_wait(ddprt_context *context,
                                   ddprt_handle handle) {
  DDPRT_CHECK_CONTEXT(context);
  std::unique_ptr<AsyncOp> op;
  DDPRT_REPORT_IF_ERROR(context, takeHandle(context, __func__, handle, op));
  return context->report(op->wait());
}

extern "C" ddprt_status ddprt_join(ddprt_context *context,
                                   const ddprt_handle *handles, int32_t count,
                                   ddprt_handle *joined) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "joined", joined));
  *joined = 0;
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "count", count));
  if (count > 0 && !handles)
    return context->report(invalid(__func__, "'handles' is NULL"));
  // Check all before consuming any, so that a failed join changes nothing.
  for (int32_t i = 0; i < count; ++i) {
    if (!context->handles.count(handles[i]))
      return context->report(makeError(
          DDPRT_ERROR_BAD_HANDLE, __func__, ": handle #", i, " (", handles[i],
          ") is not outstanding (never issued, or waited or joined already)"));
    for (int32_t j = 0; j < i; ++j)
      if (handles[j] == handles[i])
        return context->report(
            makeError(DDPRT_ERROR_BAD_HANDLE, __func__, ": handle ", handles[i],
                      " is joined twice (#", j, " and #", i, ")"));
  }
  std::vector<std::unique_ptr<AsyncOp>> ops;
  for (int32_t i = 0; i < count; ++i) {
    std::unique_ptr<AsyncOp> op;
    DDPRT_REPORT_IF_ERROR(context,
                          takeHandle(context, __func__, handles[i], op));
    ops.push_back(std::move(op));
  }
  *joined = context->addHandle(std::make_unique<JoinedOp>(std::move(ops)));
  return DDPRT_OK;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

static Status checkAdamHyperparameters(const char *entry, double lr,
                                      double beta1, double beta2, double eps) {
  if (!std::isfinite(lr))
    return invalid(entry, concat("lr ", lr, " is not finite"));
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return invalid(entry,
                   concat("betas (", beta1, ", ", beta2, ") must lie in [0, 1)"));
  if (!(eps > 0) || !std::isfinite(eps))
    return invalid(entry, concat("eps ", eps, " must be positive"));
  return Status::ok();
}

/// The scalars of Adam step `step` (counted from 1), on the host in f64.
static AdamScalars getAdamScalars(int64_t step, double lr, double beta1,
                                  double beta2, double eps) {
  AdamScalars scalars;
  scalars.beta1 = float(beta1);
  scalars.oneMinusBeta1 = float(1.0 - beta1);
  scalars.beta2 = float(beta2);
  scalars.oneMinusBeta2 = float(1.0 - beta2);
  scalars.stepSize = float(lr / (1.0 - std::pow(beta1, double(step))));
  scalars.biasCorrection2Sqrt =
      float(std::sqrt(1.0 - std::pow(beta2, double(step))));
  scalars.eps = float(eps);
  return scalars;
}

static Status checkGradient(const ddprt_context *context, const char *entry,
                            const Param &param, int32_t gradDtype,
                            const void *grad) {
  return checkTensor(context, entry, "grad", grad, gradDtype, param.numel);
}

static bool isSixteenBit(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16;
}

/// Applies `update` (an optimizer kernel on a parameter tensor) to the
/// `numel` parameter values at `values`, leaving the updated values at
/// `result` (which may be `values`). A 16-bit parameter is updated through
/// its fp32 main copy `main`, made from `values` at the first update, and
/// `result` receives the main copy rounded (Megatron's mixed-precision
/// optimizer); an f32 or f64 parameter is its own main copy and is updated
/// in `result`.
template <typename Update>
static Status updateParam(ddprt_context *context, const void *values,
                          DType dtype, int64_t numel, float *&main,
                          void *result, Update update) {
  Backend &backend = *context->backend;
  if (!isSixteenBit(dtype)) {
    if (result != values)
      DDPRT_RETURN_IF_ERROR(
          backend.copy(result, values, numel * elementSize(dtype)));
    return update(Tensor{result, dtype, numel});
  }
  if (!main) {
    void *allocated = nullptr;
    DDPRT_RETURN_IF_ERROR(
        backend.allocate(numel * int64_t(sizeof(float)), &allocated));
    main = static_cast<float *>(allocated);
    DDPRT_RETURN_IF_ERROR(backend.cast(
        Tensor{const_cast<void *>(values), dtype, numel}, DType::F32, main));
  }
  Tensor mainTensor{main, DType::F32, numel};
  DDPRT_RETURN_IF_ERROR(update(mainTensor));
  return backend.cast(mainTensor, dtype, result);
}

extern "C" ddprt_status ddprt_sgd(ddprt_context *context, int32_t param,
                                  int32_t gradDtype, const void *grad,
                                  double lr) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  Param &entry = context->params[size_t(param)];
  DDPRT_REPORT_IF_ERROR(
      context, checkGradient(context, __func__, entry, gradDtype, grad));
  if (!std::isfinite(lr))
    return context->report(
        invalid(__func__, concat("lr ", lr, " is not finite")));
  if (entry.numel == 0)
    return DDPRT_OK;
  Tensor gradient{const_cast<void *>(grad), DType(gradDtype), entry.numel};
  return context->report(updateParam(
      context, entry.data, entry.dtype, entry.numel, entry.main, entry.data,
      [&](const Tensor &target) {
        return context->backend->sgd(target, gradient, lr);
      }));
}

extern "C" ddprt_status ddprt_adam(ddprt_context *context, int32_t param,
                                   int32_t gradDtype, const void *grad,
                                   double lr, double beta1, double beta2,
                                   double eps) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  Param &entry = context->params[size_t(param)];
  DDPRT_REPORT_IF_ERROR(
      context, checkGradient(context, __func__, entry, gradDtype, grad));
  DDPRT_REPORT_IF_ERROR(context,
                        checkAdamHyperparameters(__func__, lr, beta1, beta2, eps));
  if (entry.numel == 0)
    return DDPRT_OK;
  if (!entry.moments) {
    void *moments = nullptr;
    DDPRT_REPORT_IF_ERROR(
        context, context->backend->allocate(
                     2 * entry.numel * int64_t(sizeof(float)), &moments));
    entry.moments = static_cast<float *>(moments);
  }
  AdamScalars scalars =
      getAdamScalars(++entry.adamSteps, lr, beta1, beta2, eps);
  Tensor gradient{const_cast<void *>(grad), DType(gradDtype), entry.numel};
  return context->report(updateParam(
      context, entry.data, entry.dtype, entry.numel, entry.main, entry.data,
      [&](const Tensor &target) {
        return context->backend->adam(target, gradient, entry.moments,
                                      scalars);
      }));
}

/// The part of parameter `entry` inside this rank's shard of its bucket, as
/// element indices of the parameter ([begin, begin + numel)) and of the
/// shard (shardIndex).
struct ShardSlice {
  int64_t begin = 0, numel = 0, shardIndex = 0;
};

static Status getShardSlice(const ddprt_context *context, const char *entry,
                            int32_t group, const Param &param, int64_t offset,
                            int64_t shardNumel, ShardSlice &slice) {
  DDPRT_RETURN_IF_ERROR(checkGroup(context, entry, group));
  DDPRT_RETURN_IF_ERROR(checkCount(entry, "shard_numel", shardNumel));
  const GroupLayout &layout = context->groups[size_t(group)].layout;
  int64_t shardBegin = 0, bucketNumel = 0, paramEnd = 0;
  if (offset < 0 || __builtin_add_overflow(offset, param.numel, &paramEnd) ||
      __builtin_mul_overflow(shardNumel, int64_t(layout.size), &bucketNumel) ||
      paramEnd > bucketNumel)
    return invalid(entry, concat("parameter '", param.name, "' (", param.numel,
                                 " elements at offset ", offset,
                                 ") does not lie in a bucket of ", shardNumel,
                                 " x ", layout.size, " elements"));
  shardBegin = shardNumel * layout.rank;
  int64_t begin = std::max(offset, shardBegin);
  int64_t end = std::min(paramEnd, shardBegin + shardNumel);
  slice.begin = begin - offset;
  slice.numel = std::max<int64_t>(end - begin, 0);
  slice.shardIndex = begin - shardBegin;
  return Status::ok();
}

/// Checks the arguments both shard optimizers share and finds the slice;
/// `slice.numel` is 0 when the parameter has no element in the shard.
static Status prepareShardUpdate(const ddprt_context *context,
                                 const char *entry, int32_t group,
                                 int32_t param, int64_t offset,
                                 int32_t gradDtype, const void *gradShard,
                                 int64_t shardNumel, void *paramShard,
                                 ShardSlice &slice) {
  DDPRT_RETURN_IF_ERROR(checkParam(context, entry, param));
  const Param &target = context->params[size_t(param)];
  DDPRT_RETURN_IF_ERROR(getShardSlice(context, entry, group, target, offset,
                                      shardNumel, slice));
  DDPRT_RETURN_IF_ERROR(checkTensor(context, entry, "grad_shard", gradShard,
                                    gradDtype, shardNumel));
  return checkTensor(context, entry, "param_shard", paramShard,
                     int32_t(target.dtype), shardNumel);
}

/// The parameter's values of the slice.
static const void *getSliceValues(const Param &target,
                                  const ShardSlice &slice) {
  return static_cast<const char *>(target.data) +
         slice.begin * elementSize(target.dtype);
}

/// The shard state of a parameter covers one slice: the first shard update
/// fixes it, and a later one with another slice is an error.
static Status checkShardState(const char *entry, Param &target,
                              const ShardSlice &slice) {
  if (target.shardNumel == 0) {
    target.shardBegin = slice.begin;
    target.shardNumel = slice.numel;
    return Status::ok();
  }
  if (target.shardBegin == slice.begin && target.shardNumel == slice.numel)
    return Status::ok();
  return invalid(entry, concat("parameter '", target.name,
                               "' has shard state for its elements [",
                               target.shardBegin, ", ",
                               target.shardBegin + target.shardNumel,
                               ") but this shard holds [", slice.begin, ", ",
                               slice.begin + slice.numel, ")"));
}

static Tensor getShardView(void *shard, DType dtype, const ShardSlice &slice) {
  return {static_cast<char *>(shard) + slice.shardIndex * elementSize(dtype),
          dtype, slice.numel};
}

extern "C" ddprt_status ddprt_shard_sgd(ddprt_context *context, int32_t group,
                                        int32_t param, int64_t offset,
                                        int32_t gradDtype,
                                        const void *gradShard,
                                        int64_t shardNumel, void *paramShard,
                                        double lr) {
  DDPRT_CHECK_CONTEXT(context);
  ShardSlice slice;
  DDPRT_REPORT_IF_ERROR(
      context, prepareShardUpdate(context, __func__, group, param, offset,
                                  gradDtype, gradShard, shardNumel, paramShard,
                                  slice));
  if (!std::isfinite(lr))
    return context->report(
        invalid(__func__, concat("lr ", lr, " is not finite")));
  if (slice.numel == 0)
    return DDPRT_OK;
  Param &target = context->params[size_t(param)];
  DDPRT_REPORT_IF_ERROR(context, checkShardState(__func__, target, slice));
  Tensor gradient =
      getShardView(const_cast<void *>(gradShard), DType(gradDtype), slice);
  return context->report(updateParam(
      context, getSliceValues(target, slice), target.dtype, slice.numel,
      target.shardMain, getShardView(paramShard, target.dtype, slice).data,
      [&](const Tensor &shard) {
        return context->backend->sgd(shard, gradient, lr);
      }));
}

extern "C" ddprt_status
ddprt_shard_adam(ddprt_context *context, int32_t group, int32_t param,
                 int64_t offset, int32_t gradDtype, const void *gradShard,
                 int64_t shardNumel, void *paramShard, double lr, double beta1,
                 double beta2, double eps) {
  DDPRT_CHECK_CONTEXT(context);
  ShardSlice slice;
  DDPRT_REPORT_IF_ERROR(
      context, prepareShardUpdate(context, __func__, group, param, offset,
                                  gradDtype, gradShard, shardNumel, paramShard,
                                  slice));
  DDPRT_REPORT_IF_ERROR(context,
                        checkAdamHyperparameters(__func__, lr, beta1, beta2, eps));
  if (slice.numel == 0)
    return DDPRT_OK;
  Param &target = context->params[size_t(param)];
  DDPRT_REPORT_IF_ERROR(context, checkShardState(__func__, target, slice));
  if (!target.shardMoments) {
    void *moments = nullptr;
    DDPRT_REPORT_IF_ERROR(
        context, context->backend->allocate(
                     2 * slice.numel * int64_t(sizeof(float)), &moments));
    target.shardMoments = static_cast<float *>(moments);
  }
  AdamScalars scalars =
      getAdamScalars(++target.shardAdamSteps, lr, beta1, beta2, eps);
  Tensor gradient =
      getShardView(const_cast<void *>(gradShard), DType(gradDtype), slice);
  return context->report(updateParam(
      context, getSliceValues(target, slice), target.dtype, slice.numel,
      target.shardMain, getShardView(paramShard, target.dtype, slice).data,
      [&](const Tensor &shard) {
        return context->backend->adam(shard, gradient, target.shardMoments,
                                      scalars);
      }));
}
