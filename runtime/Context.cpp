//===- Context.cpp - The argument checks of the C API ---------------------===//
//
// The checks every entry point runs before it reaches the backend
// (Context.h).
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include <algorithm>
#include <cstdio>

namespace ddprt {

thread_local std::string lastContextlessError;

Status invalid(const char *entry, const std::string &what) {
  return makeError(DDPRT_ERROR_INVALID_ARGUMENT, entry, ": ", what);
}

ddprt_status nullContext(const char *entry) {
  lastContextlessError =
      concat("ddprt: ", entry, ": the context is NULL (call ddprt_init first)");
  std::fprintf(stderr, "%s\n", lastContextlessError.c_str());
  return DDPRT_ERROR_INVALID_ARGUMENT;
}

Status checkDType(const char *entry, const char *what, int32_t dtype) {
  if (!isValidDType(dtype))
    return invalid(entry, concat(what, " ", dtype,
                                 " is not a DDPRT_DTYPE_* (1 f16, 2 bf16, "
                                 "3 f32, 4 f64)"));
  return Status::ok();
}

Status checkCount(const char *entry, const char *what, int64_t count) {
  if (count < 0)
    return invalid(entry, concat(what, " is negative (", count, ")"));
  if (count > (int64_t(1) << 48))
    return invalid(entry, concat(what, " ", count, " is implausibly large"));
  return Status::ok();
}

/// `a * b` elements, which must not overflow nor pass checkCount's bound.
Status checkProduct(const char *entry, const char *what, int64_t a, int64_t b,
                    int64_t &product) {
  if (__builtin_mul_overflow(a, b, &product))
    return invalid(entry, concat(what, " = ", a, " x ", b, " overflows"));
  return checkCount(entry, what, product);
}

Status checkOutput(const char *entry, const char *what, const void *pointer) {
  if (!pointer)
    return invalid(entry, concat("output pointer '", what, "' is NULL"));
  return Status::ok();
}

Status checkString(const char *entry, const char *what, const char *text) {
  if (!text)
    return invalid(entry, concat("'", what, "' is NULL"));
  if (!*text)
    return invalid(entry, concat("'", what, "' is empty"));
  return Status::ok();
}

/// `bytes` at `data` must lie inside one buffer of the runtime: this catches
/// a wrong size or offset in generated code before it corrupts memory.
Status checkBuffer(const ddprt_context *context, const char *entry,
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

Status checkTensor(const ddprt_context *context, const char *entry,
                   const char *what, const void *data, int32_t dtype,
                   int64_t numel) {
  DDPRT_RETURN_IF_ERROR(
      checkDType(entry, concat(what, "'s dtype").c_str(), dtype));
  DDPRT_RETURN_IF_ERROR(
      checkCount(entry, concat(what, "'s numel").c_str(), numel));
  return checkBuffer(context, entry, what, data,
                     numel * elementSize(DType(dtype)));
}

Status checkGroup(const ddprt_context *context, const char *entry,
                  int32_t group) {
  if (group < 0 || size_t(group) >= context->groups.size())
    return invalid(entry, concat("group ", group, " does not exist (",
                                 context->groups.size(),
                                 " created with ddprt_group_create)"));
  return Status::ok();
}

Status checkParam(const ddprt_context *context, const char *entry,
                  int32_t param) {
  if (param < 0 || size_t(param) >= context->params.size())
    return invalid(entry, concat("parameter ", param, " does not exist (",
                                 context->params.size(), " registered)"));
  const Param &target = context->params[size_t(param)];
  if (!target.data && target.storedNumel > 0)
    return invalid(entry, concat("parameter '", target.name,
                                 "' was stored in a buffer that ddprt_free "
                                 "released"));
  return Status::ok();
}

Status checkParamBytes(const char *entry, const Param &param, int64_t bytes) {
  int64_t expected = param.numel * int64_t(elementSize(param.dtype));
  if (bytes == expected)
    return Status::ok();
  return invalid(entry, concat("bytes is ", bytes, " but parameter '",
                               param.name, "' has ", expected, " (",
                               param.numel, " x ", dtypeName(param.dtype), ")"));
}

Status checkWholeParam(const ddprt_context *context, const char *entry,
                       int32_t param) {
  DDPRT_RETURN_IF_ERROR(checkParam(context, entry, param));
  const Param &target = context->params[size_t(param)];
  if (!target.storedShard)
    return Status::ok();
  return invalid(
      entry, concat("parameter '", target.name, "' is stored sharded over '",
                    context->groups[size_t(target.storedShard->group)].axes,
                    "' (this rank holds its elements [", target.storedBegin,
                    ", ", target.storedBegin + target.storedNumel, ") of ",
                    target.numel, "): ddprt_param_gather reads it whole, "
                    "ddprt_get_param_shard and the shard optimizers use it"));
}

Status getShardSlice(const ddprt_context *context, const char *entry,
                     const Param &param, const Param::BucketLayout &layout,
                     ShardSlice &slice) {
  DDPRT_RETURN_IF_ERROR(checkGroup(context, entry, layout.group));
  DDPRT_RETURN_IF_ERROR(checkCount(entry, "shard_numel", layout.shardNumel));
  const GroupLayout &group = context->groups[size_t(layout.group)].layout;
  int64_t bucketNumel = 0, paramEnd = 0;
  if (layout.offset < 0 ||
      __builtin_add_overflow(layout.offset, param.numel, &paramEnd) ||
      __builtin_mul_overflow(layout.shardNumel, int64_t(group.size),
                             &bucketNumel) ||
      paramEnd > bucketNumel)
    return invalid(entry, concat("parameter '", param.name, "' (", param.numel,
                                 " elements at offset ", layout.offset,
                                 ") does not lie in a bucket of ",
                                 layout.shardNumel, " x ", group.size,
                                 " elements"));
  if (const std::optional<Param::BucketLayout> &stored = param.storedShard)
    if (stored->group != layout.group || stored->offset != layout.offset ||
        stored->shardNumel != layout.shardNumel)
      return invalid(
          entry,
          concat("parameter '", param.name, "' is stored as its shard of a "
                 "bucket of ", stored->shardNumel, " elements per rank at "
                 "offset ", stored->offset, " over '",
                 context->groups[size_t(stored->group)].axes, "', not of ",
                 layout.shardNumel, " at offset ", layout.offset, " over '",
                 context->groups[size_t(layout.group)].axes, "'"));
  int64_t shardBegin = layout.shardNumel * group.rank;
  int64_t begin = std::max(layout.offset, shardBegin);
  int64_t end = std::min(paramEnd, shardBegin + layout.shardNumel);
  slice.begin = begin - layout.offset;
  slice.numel = std::max<int64_t>(end - begin, 0);
  slice.shardIndex = begin - shardBegin;
  return Status::ok();
}

void *getSliceValues(const Param &param, const ShardSlice &slice) {
  // A parameter stored sharded holds exactly the slice of its layout
  // (getShardSlice rejects another).
  return static_cast<char *>(param.data) +
         (slice.begin - param.storedBegin) * int64_t(elementSize(param.dtype));
}

Tensor getShardView(void *shard, DType dtype, const ShardSlice &slice) {
  return {static_cast<char *>(shard) + slice.shardIndex * elementSize(dtype),
          dtype, slice.numel};
}

bool rangesOverlap(const void *a, int64_t aBytes, const void *b,
                   int64_t bBytes) {
  return aBytes > 0 && bBytes > 0 && overlaps(a, aBytes, b, bBytes);
}

} // namespace ddprt
