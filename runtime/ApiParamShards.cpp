//===- ApiParamShards.cpp - Parameters by shards --------------------------===//
//
// The copies between a parameter and this rank's shard of its bucket
// (overlap-param-gather, FSDP's units), the gathers that make a sharded
// parameter whole again, and parameters stored as their shard only.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include <algorithm>

using namespace ddprt;

/// Checks the arguments of the parameter-shard copies and finds the slice.
static Status prepareParamShard(const ddprt_context *context,
                                const char *entry, int32_t group,
                                int32_t param, int64_t offset,
                                int64_t shardNumel, const void *paramShard,
                                ShardSlice &slice) {
  DDPRT_RETURN_IF_ERROR(checkParam(context, entry, param));
  const Param &target = context->params[size_t(param)];
  DDPRT_RETURN_IF_ERROR(getShardSlice(
      context, entry, target, {group, offset, shardNumel}, slice));
  return checkTensor(context, entry, "param_shard", paramShard,
                     int32_t(target.dtype), shardNumel);
}

extern "C" ddprt_status ddprt_get_param_shard(ddprt_context *context,
                                              int32_t group, int32_t param,
                                              int64_t offset,
                                              int64_t shardNumel,
                                              void *paramShard) {
  DDPRT_CHECK_CONTEXT(context);
  ShardSlice slice;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareParamShard(context, __func__, group, param,
                                          offset, shardNumel, paramShard,
                                          slice));
  if (slice.numel == 0)
    return DDPRT_OK;
  const Param &source = context->params[size_t(param)];
  // A parameter stored in the gathered bucket is its own shard already.
  void *shardValues = getShardView(paramShard, source.dtype, slice).data;
  if (shardValues == getSliceValues(source, slice))
    return DDPRT_OK;
  return context->report(context->backend->copy(
      shardValues, getSliceValues(source, slice),
      slice.numel * int64_t(elementSize(source.dtype))));
}

extern "C" ddprt_status ddprt_set_param_shard(ddprt_context *context,
                                              int32_t group, int32_t param,
                                              int64_t offset,
                                              int64_t shardNumel,
                                              const void *paramShard) {
  DDPRT_CHECK_CONTEXT(context);
  ShardSlice slice;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareParamShard(context, __func__, group, param,
                                          offset, shardNumel, paramShard,
                                          slice));
  Param &target = context->params[size_t(param)];
  // A parameter with no element in this shard still waits for the others';
  // one stored sharded holds all it keeps.
  if (!target.storedShard)
    target.pendingGather = Param::BucketLayout{group, offset, shardNumel};
  if (slice.numel == 0)
    return DDPRT_OK;
  // The shard optimizer updated a parameter stored in the gathered bucket
  // where it is.
  void *shardValues =
      getShardView(const_cast<void *>(paramShard), target.dtype, slice).data;
  if (shardValues == getSliceValues(target, slice))
    return DDPRT_OK;
  return context->report(context->backend->copy(
      getSliceValues(target, slice), shardValues,
      slice.numel * int64_t(elementSize(target.dtype))));
}

/// All-gathers the elements of `param` that the ranks of `layout`'s group
/// hold, each rank's slice at the front of a chunk as large as the largest
/// slice (the collective moves the parameter's chunks, not its whole bucket
/// once per parameter of it), and hands `place(first, source, bytes)` each
/// rank's slice: its first element in the parameter and where it lies
/// gathered. Every rank of the group must call it.
template <typename Place>
static ddprt_status gatherParam(ddprt_context *context, const char *entry,
                                int32_t param,
                                const Param::BucketLayout &layout,
                                Place place) {
  const Param &target = context->params[size_t(param)];
  if (target.numel == 0)
    return DDPRT_OK;
  ShardSlice slice;
  DDPRT_REPORT_IF_ERROR(context,
                        getShardSlice(context, entry, target, layout, slice));
  int32_t dtype = int32_t(target.dtype);
  int64_t elementBytes = int64_t(elementSize(target.dtype));
  int64_t groupSize = context->groups[size_t(layout.group)].layout.size;
  int64_t chunk = std::min(target.numel, layout.shardNumel);
  void *own = nullptr, *chunks = nullptr;
  ddprt_status status = ddprt_alloc(context, dtype, chunk, &own);
  if (status == DDPRT_OK)
    status = ddprt_alloc(context, dtype, chunk * groupSize, &chunks);
  if (status == DDPRT_OK && slice.numel > 0)
    status = context->report(context->backend->copy(
        own, getSliceValues(target, slice), slice.numel * elementBytes));
  if (status == DDPRT_OK)
    status = ddprt_all_gather(context, layout.group, dtype, chunk, own, chunks,
                              nullptr);
  // The ranks whose shards hold some of the parameter, in order.
  int64_t end = layout.offset + target.numel;
  for (int64_t rank = layout.offset / layout.shardNumel;
       status == DDPRT_OK && rank * layout.shardNumel < end; ++rank) {
    int64_t begin = std::max(layout.offset, rank * layout.shardNumel);
    int64_t last = std::min(end, (rank + 1) * layout.shardNumel);
    status = place(begin - layout.offset,
                   static_cast<const char *>(chunks) +
                       rank * chunk * elementBytes,
                   (last - begin) * elementBytes);
  }
  // Freeing keeps the first error's message.
  ddprt_status freed = ddprt_free(context, chunks);
  ddprt_status freedOwn = ddprt_free(context, own);
  if (status == DDPRT_OK)
    status = freed != DDPRT_OK ? freed : freedOwn;
  return status;
}

extern "C" ddprt_status ddprt_finish_param_sync(ddprt_context *context) {
  DDPRT_CHECK_CONTEXT(context);
  for (size_t index = 0; index < context->params.size(); ++index) {
    Param &param = context->params[index];
    if (!param.pendingGather)
      continue;
    int64_t elementBytes = int64_t(elementSize(param.dtype));
    ddprt_status status = gatherParam(
        context, __func__, int32_t(index), *param.pendingGather,
        [&](int64_t first, const void *source, int64_t bytes) {
          return ddprt_copy(context,
                            static_cast<char *>(param.data) +
                                first * elementBytes,
                            source, bytes);
        });
    if (status != DDPRT_OK)
      return status;
    param.pendingGather.reset();
  }
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_param_gather(ddprt_context *context,
                                           int32_t param, void *hostDst,
                                           int64_t bytes) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  const Param &entry = context->params[size_t(param)];
  if (!entry.storedShard)
    return ddprt_param_read(context, param, hostDst, bytes);
  DDPRT_REPORT_IF_ERROR(context, checkParamBytes(__func__, entry, bytes));
  if (bytes == 0)
    return DDPRT_OK;
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "host_dst", hostDst));
  int64_t elementBytes = int64_t(elementSize(entry.dtype));
  return gatherParam(context, __func__, param, *entry.storedShard,
                     [&](int64_t first, const void *source, int64_t count) {
                       return ddprt_read(context,
                                         static_cast<char *>(hostDst) +
                                             first * elementBytes,
                                         source, count);
                     });
}
