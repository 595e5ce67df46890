//===- ApiOptimizer.cpp - SGD and Adam steps ------------------------------===//
//
// The optimizer steps, which update a registered parameter in place (a
// 16-bit one through its fp32 main copy), and the distributed optimizer's
// steps on this rank's shard of a bucket.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include <cmath>

using namespace ddprt;

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

/// Applies `update` (an optimizer kernel on a parameter tensor) to the
/// `numel` parameter values at `values`, leaving the updated values at
/// `result` (which may be `values`). A 16-bit parameter is updated through
/// its fp32 main copy `main`, made from `values` at the first update, and
/// `result` receives the main copy rounded (Megatron's mixed-precision
/// optimizer); an f32 or f64 parameter is its own main copy and is updated
/// in `result`.
///
/// `update(target, rounded)` gets the 16-bit result to write the rounded
/// main copy to (else null); it returns whether it did, so that an update
/// that rounds in the same pass saves the separate cast.
template <typename Update>
static Status updateParam(ddprt_context *context, const void *values,
                          DType dtype, int64_t numel, float *&main,
                          void *result, Update update) {
  Backend &backend = *context->backend;
  bool rounded = false;
  if (!is16Bit(dtype)) {
    if (result != values)
      DDPRT_RETURN_IF_ERROR(
          backend.copy(result, values, numel * elementSize(dtype)));
    return update(Tensor{result, dtype, numel}, nullptr, rounded);
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
  Tensor resultTensor{result, dtype, numel};
  DDPRT_RETURN_IF_ERROR(update(mainTensor, &resultTensor, rounded));
  return rounded ? Status::ok() : backend.cast(mainTensor, dtype, result);
}

/// Adam's two f32 moments per element (m, then v), allocated by the
/// backend at the first step of `numel` elements and kept in `moments`.
static Status allocateMoments(ddprt_context *context, int64_t numel,
                              float *&moments) {
  if (moments)
    return Status::ok();
  void *allocated = nullptr;
  DDPRT_RETURN_IF_ERROR(context->backend->allocate(
      2 * numel * int64_t(sizeof(float)), &allocated));
  moments = static_cast<float *>(allocated);
  return Status::ok();
}

/// What both optimizer steps check first: the parameter exists, the gradient
/// matches it and lies inside a buffer, the learning rate is finite.
static Status checkStep(const ddprt_context *context, const char *entry,
                        int32_t param, int32_t gradDtype, const void *grad,
                        double lr) {
  DDPRT_RETURN_IF_ERROR(checkParam(context, entry, param));
  DDPRT_RETURN_IF_ERROR(checkTensor(context, entry, "grad", grad, gradDtype,
                                    context->params[size_t(param)].numel));
  if (!std::isfinite(lr))
    return invalid(entry, concat("lr ", lr, " is not finite"));
  return Status::ok();
}

extern "C" ddprt_status ddprt_sgd(ddprt_context *context, int32_t param,
                                  int32_t gradDtype, const void *grad,
                                  double lr) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(
      context, checkStep(context, __func__, param, gradDtype, grad, lr));
  Param &entry = context->params[size_t(param)];
  if (entry.numel == 0)
    return DDPRT_OK;
  Tensor gradient{const_cast<void *>(grad), DType(gradDtype), entry.numel};
  return context->report(updateParam(
      context, entry.data, entry.dtype, entry.numel, entry.main, entry.data,
      [&](const Tensor &target, const Tensor *, bool &) {
        return context->backend->sgd(target, gradient, lr);
      }));
}

extern "C" ddprt_status ddprt_adam(ddprt_context *context, int32_t param,
                                   int32_t gradDtype, const void *grad,
                                   double lr, double beta1, double beta2,
                                   double eps) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(
      context, checkStep(context, __func__, param, gradDtype, grad, lr));
  Param &entry = context->params[size_t(param)];
  DDPRT_REPORT_IF_ERROR(context,
                        checkAdamHyperparameters(__func__, lr, beta1, beta2, eps));
  if (entry.numel == 0)
    return DDPRT_OK;
  DDPRT_REPORT_IF_ERROR(
      context, allocateMoments(context, entry.numel, entry.moments));
  ++entry.adamSteps;
  AdamHyper hyper{lr, beta1, beta2, eps};
  AdamScalars scalars = advanceAdam(hyper, entry.adamPowers);
  Tensor gradient{const_cast<void *>(grad), DType(gradDtype), entry.numel};
  return context->report(updateParam(
      context, entry.data, entry.dtype, entry.numel, entry.main, entry.data,
      [&](const Tensor &target, const Tensor *rounded, bool &didRound) {
        didRound = rounded != nullptr;
        return context->backend->adam(target, gradient, entry.moments, hyper,
                                      scalars, rounded);
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
      [&](const Tensor &shard, const Tensor *, bool &) {
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
  DDPRT_REPORT_IF_ERROR(
      context, allocateMoments(context, slice.numel, target.shardMoments));
  ++target.shardAdamSteps;
  AdamHyper hyper{lr, beta1, beta2, eps};
  AdamScalars scalars = advanceAdam(hyper, target.shardAdamPowers);
  Tensor gradient =
      getShardView(const_cast<void *>(gradShard), DType(gradDtype), slice);
  return context->report(updateParam(
      context, getSliceValues(target, slice), target.dtype, slice.numel,
      target.shardMain, getShardView(paramShard, target.dtype, slice).data,
      [&](const Tensor &shard, const Tensor *rounded, bool &didRound) {
        didRound = rounded != nullptr;
        return context->backend->adam(shard, gradient, target.shardMoments,
                                      hyper, scalars, rounded);
      }));
}

//===----------------------------------------------------------------------===//
// Parameter shards (overlap-param-gather)
//===----------------------------------------------------------------------===//

/// Checks the arguments of the parameter-shard copies and finds the slice.
static Status prepareParamShard(const ddprt_context *context,
                                const char *entry, int32_t group,
                                int32_t param, int64_t offset,
                                int64_t shardNumel, const void *paramShard,
                                ShardSlice &slice) {
  DDPRT_RETURN_IF_ERROR(checkParam(context, entry, param));
  const Param &target = context->params[size_t(param)];
  DDPRT_RETURN_IF_ERROR(getShardSlice(context, entry, group, target, offset,
                                      shardNumel, slice));
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
  // A parameter with no element in this shard still waits for the others'.
  target.pendingGather = Param::PendingGather{group, offset, shardNumel};
  if (slice.numel == 0)
    return DDPRT_OK;
  // The shard optimizer updated a parameter stored in the gathered bucket
  // where it is.
  void *shardValues =
      getShardView(const_cast<void *>(paramShard), target.dtype, slice).data;
  if (shardValues == getSliceValues(target, slice))
    return DDPRT_OK;
  return context->report(context->backend->copy(
      const_cast<void *>(getSliceValues(target, slice)), shardValues,
      slice.numel * int64_t(elementSize(target.dtype))));
}

/// Gathers `param`'s bucket through buffers of its own and copies the
/// parameter out of it.
static ddprt_status gatherParam(ddprt_context *context, int32_t param) {
  const Param &target = context->params[size_t(param)];
  const Param::PendingGather &pending = *target.pendingGather;
  int32_t dtype = int32_t(target.dtype);
  int64_t groupSize = context->groups[size_t(pending.group)].layout.size;
  void *shard = nullptr, *bucket = nullptr;
  ddprt_status status =
      ddprt_alloc(context, dtype, pending.shardNumel, &shard);
  if (status == DDPRT_OK)
    status = ddprt_alloc(context, dtype, pending.shardNumel * groupSize,
                         &bucket);
  if (status == DDPRT_OK)
    status = ddprt_get_param_shard(context, pending.group, param,
                                   pending.offset, pending.shardNumel, shard);
  if (status == DDPRT_OK)
    status = ddprt_all_gather(context, pending.group, dtype,
                              pending.shardNumel, shard, bucket, nullptr);
  int64_t elementBytes = int64_t(elementSize(target.dtype));
  if (status == DDPRT_OK)
    status = ddprt_copy(context, target.data,
                        static_cast<char *>(bucket) +
                            pending.offset * elementBytes,
                        target.numel * elementBytes);
  // Freeing keeps the first error's message.
  ddprt_status freed = ddprt_free(context, bucket);
  ddprt_status freedShard = ddprt_free(context, shard);
  if (status == DDPRT_OK)
    status = freed != DDPRT_OK ? freed : freedShard;
  return status;
}

extern "C" ddprt_status ddprt_finish_param_sync(ddprt_context *context) {
  DDPRT_CHECK_CONTEXT(context);
  for (size_t param = 0; param < context->params.size(); ++param) {
    if (!context->params[param].pendingGather)
      continue;
    ddprt_status status = gatherParam(context, int32_t(param));
    if (status != DDPRT_OK)
      return status;
    context->params[param].pendingGather.reset();
  }
  return DDPRT_OK;
}
