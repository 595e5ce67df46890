//===- ApiLifetime.cpp - ddprt_init, ddprt_finalize, queries, groups ------===//
//
// Creating and ending a context, what it can be asked (rank, backend,
// last error), and the process groups the collectives run over.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <system_error>

using namespace ddprt;

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
  BackendEnv env{context.mpi,
                 context.trace,
                 *context.watchdog,
                 (flags & DDPRT_FLAG_DETERMINISTIC_REDUCTIONS) != 0,
                 (flags & DDPRT_FLAG_FIXED_ORDER_GEMM) != 0,
                 (flags & DDPRT_FLAG_FRACTIONAL_DATA) != 0,
                 (flags & DDPRT_FLAG_BOUNDED_VALUES) != 0};
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
      DDPRT_FLAG_RETURN_ERRORS | DDPRT_FLAG_DETERMINISTIC_REDUCTIONS |
      DDPRT_FLAG_FIXED_ORDER_GEMM | DDPRT_FLAG_FRACTIONAL_DATA |
      DDPRT_FLAG_BOUNDED_VALUES;
  if (flags & ~knownFlags)
    return fail(invalid("ddprt_init", concat("unknown flags 0x", std::hex,
                                             flags & ~knownFlags)));
  if ((flags & DDPRT_FLAG_BOUNDED_VALUES) &&
      !(flags & DDPRT_FLAG_FIXED_ORDER_GEMM))
    return fail(invalid("ddprt_init",
                        "DDPRT_FLAG_BOUNDED_VALUES needs "
                        "DDPRT_FLAG_FIXED_ORDER_GEMM: a library GEMM rounds "
                        "a 16-bit result before it could be bounded"));
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

  status =
      initialize(*created, mesh, backend, flags, timeoutSeconds, tracePath);
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
  auto cannotWrite = [&](int error) {
    return makeError(
        DDPRT_ERROR_INVALID_ARGUMENT,
        "ddprt_finalize: cannot write the trace to '", context.tracePath,
        "': ", std::error_code(error, std::generic_category()).message());
  };
  std::FILE *file = std::fopen(context.tracePath.c_str(), "w");
  if (!file)
    return cannotWrite(errno);
  std::string text = TraceRecorder::mergeRanks(all);
  // A full disk may show only at fclose, when stdio writes its buffer.
  if (std::fwrite(text.data(), 1, text.size(), file) != text.size()) {
    int error = errno;
    std::fclose(file);
    return cannotWrite(error);
  }
  if (std::fclose(file) != 0)
    return cannotWrite(errno);
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

extern "C" ddprt_status ddprt_graph_begin(ddprt_context *context) {
  DDPRT_CHECK_CONTEXT(context);
  return context->report(context->backend->beginGraph());
}

extern "C" ddprt_status ddprt_graph_end(ddprt_context *context) {
  DDPRT_CHECK_CONTEXT(context);
  return context->report(context->backend->endGraph());
}

extern "C" ddprt_status ddprt_graph_launch(ddprt_context *context) {
  DDPRT_CHECK_CONTEXT(context);
  return context->report(context->backend->launchGraph());
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
