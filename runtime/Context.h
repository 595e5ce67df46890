//===- Context.h - The context and argument checks of the C API -*- C++ -*-===//
//
// What the C entry points (Api*.cpp) share: the context behind the opaque
// ddprt_context (groups, parameters, buffers, handles, the backend) and the
// argument checks, whose errors name the entry point and the argument.
// Errors end all ranks unless DDPRT_FLAG_RETURN_ERRORS is set.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CONTEXT_H
#define DDPRT_CONTEXT_H

#include "Backend.h"
#include "Mesh.h"
#include "Mpi.h"
#include "Trace.h"
#include "Watchdog.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ddprt {

struct Group {
  std::string axes;
  GroupLayout layout;
};

struct Param {
  std::string name;
  DType dtype;
  int64_t numel;
  void *data;
  /// Whether the runtime allocated `data` for the parameter (it is in
  /// `buffers`); else it is a slice of a buffer from ddprt_alloc, and null
  /// once ddprt_free released that buffer.
  bool ownsStorage = true;
  /// Adam's m and v, allocated at the first Adam step.
  float *moments = nullptr;
  int64_t adamSteps = 0;
  /// beta1^t and beta2^t (ElementOps.h, advanceAdam).
  AdamPowers adamPowers;
  /// The fp32 main copy of a 16-bit parameter, made at its first update.
  float *main = nullptr;
  /// The shard optimizers' state for the parameter's elements
  /// [shardBegin, shardBegin + shardNumel) in this rank's shard: Adam's m
  /// and v, and the main copy of a 16-bit parameter.
  float *shardMoments = nullptr;
  float *shardMain = nullptr;
  int64_t shardBegin = 0, shardNumel = 0, shardAdamSteps = 0;
  AdamPowers shardAdamPowers;
  /// A bucket layout: the parameter's elements start at `offset` of a
  /// bucket of shardNumel x the group's size elements, sharded over `group`.
  struct BucketLayout {
    int32_t group;
    int64_t offset, shardNumel;
  };
  /// The layout of the last ddprt_set_param_shard, while the other ranks'
  /// elements are still to be gathered (ddprt_finish_param_sync).
  std::optional<BucketLayout> pendingGather;
  /// A parameter registered with ddprt_param_register_shard keeps only the
  /// elements of this rank's shard of `storedShard`, as FSDP keeps it
  /// between steps: `data` holds [storedBegin, storedBegin + storedNumel).
  /// One stored whole holds [0, numel).
  std::optional<BucketLayout> storedShard;
  int64_t storedBegin = 0, storedNumel = 0;

  int64_t getStoredBytes() const {
    return storedNumel * int64_t(elementSize(dtype));
  }
};

/// The part of a parameter inside this rank's shard of its bucket, as
/// element indices of the parameter ([begin, begin + numel)) and of the
/// shard (shardIndex).
struct ShardSlice {
  int64_t begin = 0, numel = 0, shardIndex = 0;
};

/// The last ddprt_init or ddprt_finalize failure of this thread, for
/// ddprt_last_error(NULL).
extern thread_local std::string lastContextlessError;

} // namespace ddprt

/// What the C API's opaque ddprt_context stands for.
struct ddprt_context {
  int32_t flags = 0;
  ddprt::MpiSession mpi;
  ddprt::Mesh mesh;
  ddprt::TraceRecorder trace;
  std::string tracePath;
  std::unique_ptr<ddprt::Watchdog> watchdog;
  std::unique_ptr<ddprt::Backend> backend;

  std::vector<ddprt::Group> groups;
  std::vector<ddprt::Param> params;
  std::map<std::string, int32_t> paramByName;
  /// Every buffer from ddprt_alloc and every parameter's storage, by
  /// address, with its size in bytes.
  std::map<uintptr_t, int64_t> buffers;
  std::unordered_map<ddprt_handle, std::unique_ptr<ddprt::AsyncOp>> handles;
  ddprt_handle nextHandle = 1;
  std::string lastError;

  /// Records a failed status (and, unless errors are returned, ends the job).
  ddprt_status report(const ddprt::Status &status) {
    if (status.isOk())
      return DDPRT_OK;
    lastError =
        ddprt::concat("ddprt: rank ", mpi.getRank(), ": ", status.getMessage());
    if (!(flags & DDPRT_FLAG_RETURN_ERRORS))
      ddprt::fatalError(lastError);
    return status.getCode();
  }

  ddprt_handle addHandle(std::unique_ptr<ddprt::AsyncOp> op) {
    ddprt_handle handle = nextHandle++;
    handles.emplace(handle, std::move(op));
    return handle;
  }

  /// Releases every buffer and parameter; the backend must be idle.
  void freeMemory() {
    for (ddprt::Param &param : params) {
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

namespace ddprt {

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

Status invalid(const char *entry, const std::string &what);

/// Reports a NULL context of `entry` (there is no context to record it in).
ddprt_status nullContext(const char *entry);

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

Status checkDType(const char *entry, const char *what, int32_t dtype);
Status checkCount(const char *entry, const char *what, int64_t count);
/// `a * b` elements, which must not overflow nor pass checkCount's bound.
Status checkProduct(const char *entry, const char *what, int64_t a, int64_t b,
                    int64_t &product);
Status checkOutput(const char *entry, const char *what, const void *pointer);
Status checkString(const char *entry, const char *what, const char *text);
/// `bytes` at `data` must lie inside one buffer of the runtime: this catches
/// a wrong size or offset in generated code before it corrupts memory.
Status checkBuffer(const ddprt_context *context, const char *entry,
                   const char *what, const void *data, int64_t bytes);
Status checkTensor(const ddprt_context *context, const char *entry,
                   const char *what, const void *data, int32_t dtype,
                   int64_t numel);
Status checkGroup(const ddprt_context *context, const char *entry,
                  int32_t group);
Status checkParam(const ddprt_context *context, const char *entry,
                  int32_t param);
/// `bytes` must be the parameter's whole size.
Status checkParamBytes(const char *entry, const Param &param, int64_t bytes);
/// checkParam, and the parameter must be stored whole: what reads or
/// updates all of its elements where they are.
Status checkWholeParam(const ddprt_context *context, const char *entry,
                       int32_t param);
/// The slice of `param` in this rank's shard of the bucket `layout`; an
/// error when the parameter does not lie in the bucket or, for a parameter
/// stored sharded, when `layout` is not the one it was registered with.
Status getShardSlice(const ddprt_context *context, const char *entry,
                     const Param &param, const Param::BucketLayout &layout,
                     ShardSlice &slice);
/// Where the parameter's stored values of `slice` are.
void *getSliceValues(const Param &param, const ShardSlice &slice);
/// The slice's elements in a shard of the bucket.
Tensor getShardView(void *shard, DType dtype, const ShardSlice &slice);
/// overlaps() for ranges that may be empty: an empty one overlaps nothing.
bool rangesOverlap(const void *a, int64_t aBytes, const void *b,
                   int64_t bBytes);

} // namespace ddprt

#endif // DDPRT_CONTEXT_H
