//===- ApiMemory.cpp - Buffers and parameters -----------------------------===//
//
// Device buffers (allocation, copies, seeded inputs) and the registered
// parameters, whose storage the optimizer steps update in place.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include "Seed.h"

using namespace ddprt;

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
    isParam |= param.ownsStorage && param.data == data;
  if (found == context->buffers.end() || isParam)
    return context->report(invalid(
        __func__, concat(data, " is not a buffer from ddprt_alloc (or was "
                               "freed already)")));
  // The compute stream may still use it.
  DDPRT_REPORT_IF_ERROR(context, context->backend->synchronize());
  // Parameters stored in it go with it.
  for (Param &param : context->params)
    if (!param.ownsStorage &&
        rangesOverlap(param.data, 1, data, found->second))
      param.data = nullptr;
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
  // The ranks of one pipeline, which differ only on the `pp` axis, see the
  // same microbatches: each reads the inputs its stage needs of them.
  int64_t dataRank = context->mpi.getRank();
  const std::vector<ddprt::MeshAxis> &axes = context->mesh.getAxes();
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == "pp") {
      std::vector<int64_t> coordinates = context->mesh.coordinatesOf(dataRank);
      coordinates[i] = 0;
      dataRank = context->mesh.rankAt(coordinates);
    }
  uint64_t key = seedKey(seed, inputStream(dataRank));
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
  return ddprt_param_register_in(context, name, dtype, numel, seed, nullptr,
                                 param);
}

/// Checks a new parameter's name, allocates its stored elements unless
/// `entry.data` is given, fills them from `seed` (each element the value of
/// its index in the whole parameter) and numbers the parameter.
static Status addParam(ddprt_context *context, const char *entryPoint,
                       const char *name, Param entry, uint64_t seed,
                       int32_t *param) {
  if (context->paramByName.count(name))
    return invalid(entryPoint,
                   concat("parameter '", name, "' is registered already"));
  int64_t bytes = entry.getStoredBytes();
  // A rank with none of a sharded parameter's elements allocates nothing.
  if (!entry.data && (bytes > 0 || !entry.storedShard)) {
    DDPRT_RETURN_IF_ERROR(context->backend->allocate(bytes, &entry.data));
    context->buffers.emplace(reinterpret_cast<uintptr_t>(entry.data), bytes);
  }
  // seededValue(key, i) is splitmix64(key + i): a slice starting at element
  // b is the stream from key + b.
  if (entry.storedNumel > 0)
    DDPRT_RETURN_IF_ERROR(context->backend->fillSeeded(
        {entry.data, entry.dtype, entry.storedNumel},
        seedKey(seed, paramStream(name)) + uint64_t(entry.storedBegin)));
  *param = int32_t(context->params.size());
  context->paramByName.emplace(name, *param);
  context->params.push_back(std::move(entry));
  return Status::ok();
}

/// The checks every registration makes of its arguments.
static Status checkNewParam(const char *entryPoint, const char *name,
                            int32_t dtype, int64_t numel, int32_t *param) {
  DDPRT_RETURN_IF_ERROR(checkOutput(entryPoint, "param", param));
  DDPRT_RETURN_IF_ERROR(checkString(entryPoint, "name", name));
  DDPRT_RETURN_IF_ERROR(checkDType(entryPoint, "dtype", dtype));
  return checkCount(entryPoint, "numel", numel);
}

extern "C" ddprt_status
ddprt_param_register_in(ddprt_context *context, const char *name,
                        int32_t dtype, int64_t numel, uint64_t seed,
                        void *storage, int32_t *param) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context,
                        checkNewParam(__func__, name, dtype, numel, param));
  Param entry{name, DType(dtype), numel, storage};
  entry.storedNumel = numel;
  if (storage) {
    int64_t bytes = entry.getStoredBytes();
    DDPRT_REPORT_IF_ERROR(
        context, checkBuffer(context, __func__, "storage", storage, bytes));
    for (const Param &other : context->params)
      if (rangesOverlap(storage, bytes, other.data, other.getStoredBytes()))
        return context->report(invalid(
            __func__, concat("the storage of parameter '", name,
                             "' overlaps parameter '", other.name, "'")));
    entry.ownsStorage = false;
  }
  return context->report(
      addParam(context, __func__, name, std::move(entry), seed, param));
}

extern "C" ddprt_status
ddprt_param_register_shard(ddprt_context *context, const char *name,
                           int32_t dtype, int64_t numel, uint64_t seed,
                           int32_t group, int64_t offset, int64_t shardNumel,
                           int32_t *param) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context,
                        checkNewParam(__func__, name, dtype, numel, param));
  Param entry{name, DType(dtype), numel, nullptr};
  Param::BucketLayout layout{group, offset, shardNumel};
  ShardSlice slice;
  DDPRT_REPORT_IF_ERROR(
      context, getShardSlice(context, __func__, entry, layout, slice));
  entry.storedShard = layout;
  entry.storedBegin = slice.begin;
  entry.storedNumel = slice.numel;
  return context->report(
      addParam(context, __func__, name, std::move(entry), seed, param));
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
  DDPRT_REPORT_IF_ERROR(context, checkWholeParam(context, __func__, param));
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "data", data));
  *data = context->params[size_t(param)].data;
  return DDPRT_OK;
}

extern "C" ddprt_status ddprt_param_read(ddprt_context *context, int32_t param,
                                         void *hostDst, int64_t bytes) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkWholeParam(context, __func__, param));
  const Param &entry = context->params[size_t(param)];
  DDPRT_REPORT_IF_ERROR(context, checkParamBytes(__func__, entry, bytes));
  if (bytes == 0)
    return DDPRT_OK;
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "host_dst", hostDst));
  return context->report(context->backend->read(hostDst, entry.data, bytes));
}

extern "C" ddprt_status ddprt_param_write(ddprt_context *context,
                                          int32_t param, const void *hostSrc,
                                          int64_t bytes) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  const Param &entry = context->params[size_t(param)];
  DDPRT_REPORT_IF_ERROR(context, checkParamBytes(__func__, entry, bytes));
  if (entry.storedNumel == 0)
    return DDPRT_OK;
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "host_src", hostSrc));
  return context->report(context->backend->write(
      entry.data,
      static_cast<const char *>(hostSrc) +
          entry.storedBegin * int64_t(elementSize(entry.dtype)),
      entry.getStoredBytes()));
}

extern "C" ddprt_status ddprt_param_stored(ddprt_context *context,
                                           int32_t param, int32_t *group,
                                           int64_t *begin, int64_t *numel) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  const Param &entry = context->params[size_t(param)];
  if (group)
    *group = entry.storedShard ? entry.storedShard->group : -1;
  if (begin)
    *begin = entry.storedBegin;
  if (numel)
    *numel = entry.storedNumel;
  return DDPRT_OK;
}
