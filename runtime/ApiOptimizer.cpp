//===- ApiOptimizer.cpp - SGD and Adam steps ------------------------------===//
//
// The optimizer steps, which update a registered parameter in place.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include <cmath>

using namespace ddprt;

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

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
  return context->report(context->backend->sgd(
      {entry.data, entry.dtype, entry.numel},
      {const_cast<void *>(grad), DType(gradDtype), entry.numel}, lr));
}

extern "C" ddprt_status ddprt_adam(ddprt_context *context, int32_t param,
                                   int32_t gradDtype, const void *grad,
                                   double lr, double beta1, double beta2,
                                   double eps) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(
      context, checkStep(context, __func__, param, gradDtype, grad, lr));
  Param &entry = context->params[size_t(param)];
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return context->report(
        invalid(__func__,
                concat("betas (", beta1, ", ", beta2, ") must lie in [0, 1)")));
  if (!(eps > 0) || !std::isfinite(eps))
    return context->report(
        invalid(__func__, concat("eps ", eps, " must be positive")));
  if (entry.numel == 0)
    return DDPRT_OK;
  if (!entry.moments) {
    void *moments = nullptr;
    DDPRT_REPORT_IF_ERROR(
        context, context->backend->allocate(
                     2 * entry.numel * int64_t(sizeof(float)), &moments));
    entry.moments = static_cast<float *>(moments);
  }
  double step = double(++entry.adamSteps);
  AdamScalars scalars;
  scalars.beta1 = float(beta1);
  scalars.oneMinusBeta1 = float(1.0 - beta1);
  scalars.beta2 = float(beta2);
  scalars.oneMinusBeta2 = float(1.0 - beta2);
  scalars.stepSize = float(lr / (1.0 - std::pow(beta1, step)));
  scalars.biasCorrection2Sqrt = float(std::sqrt(1.0 - std::pow(beta2, step)));
  scalars.eps = float(eps);
  return context->report(context->backend->adam(
      {entry.data, entry.dtype, entry.numel},
      {const_cast<void *>(grad), DType(gradDtype), entry.numel}, entry.moments,
      scalars));
}
