//===- ApiCompute.cpp - GEMM, named compute, element-wise ops -------------===//
//
// The compute entry points: GEMMs, the named compute kernels, and the
// element-wise accumulate, scale, cast and finiteness check.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

#include <cmath>

using namespace ddprt;

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
                                      double flops, double bytes,
                                      const ddprt_tensor *inputs,
                                      int32_t numInputs,
                                      const ddprt_tensor *results,
                                      int32_t numResults) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkString(__func__, "kind", kind));
  // 1e18 is beyond any kernel's price, and what a stand-in can pay.
  for (auto [name, value] : {std::pair{"flops", flops}, {"bytes", bytes}})
    if (!(value >= 0 && value <= 1e18))
      return context->report(invalid(
          __func__, concat(name, " ", value, " is not from 0 to 1e18")));
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
  return context->report(context->backend->compute(
      kind, ComputeCost{flops, bytes}, inputTensors, resultTensors));
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
