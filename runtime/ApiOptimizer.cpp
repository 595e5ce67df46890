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
  DDPRT_RETURN_IF_ERROR(checkWholeParam(context, entry, param));
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
  DDPRT_RETURN_IF_ERROR(getShardSlice(
      context, entry, target, {group, offset, shardNumel}, slice));
  DDPRT_RETURN_IF_ERROR(checkTensor(context, entry, "grad_shard", gradShard,
                                    gradDtype, shardNumel));
  return checkTensor(context, entry, "param_shard", paramShard,
                     int32_t(target.dtype), shardNumel);
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
// Optimizer state
//===----------------------------------------------------------------------===//

extern "C" ddprt_status
ddprt_param_optimizer_state(ddprt_context *context, int32_t param,
                            int32_t state, int64_t *begin, int64_t *numel,
                            int64_t *adamSteps, float *hostDst, int64_t bytes) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkParam(context, __func__, param));
  if (state != DDPRT_OPTIMIZER_STATE_MAIN &&
      state != DDPRT_OPTIMIZER_STATE_ADAM_M &&
      state != DDPRT_OPTIMIZER_STATE_ADAM_V)
    return context->report(invalid(
        __func__,
        concat("state ", state,
               " is none of DDPRT_OPTIMIZER_STATE_MAIN, _ADAM_M, _ADAM_V")));
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "begin", begin));
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "numel", numel));
  DDPRT_REPORT_IF_ERROR(context,
                        checkOutput(__func__, "adam_steps", adamSteps));
  const Param &entry = context->params[size_t(param)];
  bool whole = entry.main || entry.moments;
  bool sharded = entry.shardMain || entry.shardMoments;
  if (whole && sharded)
    return context->report(
        invalid(__func__, concat("parameter '", entry.name,
                                 "' was updated both whole and by shards")));
  const float *main = whole ? entry.main : entry.shardMain;
  const float *moments = whole ? entry.moments : entry.shardMoments;
  int64_t count = whole ? entry.numel : entry.shardNumel;
  const float *source = state == DDPRT_OPTIMIZER_STATE_MAIN ? main
                        : !moments                          ? nullptr
                        : state == DDPRT_OPTIMIZER_STATE_ADAM_M
                            ? moments
                            : moments + count;
  *begin = source && sharded ? entry.shardBegin : 0;
  *numel = source ? count : 0;
  *adamSteps = whole ? entry.adamSteps : entry.shardAdamSteps;
  if (!hostDst || *numel == 0)
    return DDPRT_OK;
  int64_t needed = *numel * int64_t(sizeof(float));
  if (bytes < needed)
    return context->report(invalid(
        __func__, concat("bytes ", bytes, " is less than the ", needed,
                         " the state of parameter '", entry.name, "' takes")));
  return context->report(context->backend->read(hostDst, source, needed));
}
