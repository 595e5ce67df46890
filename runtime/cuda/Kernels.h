//===- Kernels.h - The CUDA backend's elementwise kernels -------*- C++ -*-===//
//
// Launchers for the kernels in Kernels.cu, each on the given stream. They
// apply the per-element math of ElementOps.h, so they match the CPU backend
// bitwise.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CUDA_KERNELS_H
#define DDPRT_CUDA_KERNELS_H

#include "../Element.h"
#include "../ElementOps.h"

#include <cuda_runtime.h>

namespace ddprt::cuda {

cudaError_t fillSeeded(void *data, DType dtype, int64_t numel, uint64_t key,
                       cudaStream_t stream);
/// One step of the compute stand-in: accumulator[i] (f32, or f64 when
/// `doubleAccumulator`) = (first ? 0 : accumulator[i]) + input[i % inputNumel].
cudaError_t accumulateModulo(void *accumulator, bool doubleAccumulator,
                             int64_t numel, const void *input, DType inputType,
                             int64_t inputNumel, bool first,
                             cudaStream_t stream);
cudaError_t accumulate(const void *lhs, const void *rhs, void *result,
                       DType dtype, int64_t numel, cudaStream_t stream);
cudaError_t scale(const void *input, void *result, DType dtype, int64_t numel,
                  double factor, cudaStream_t stream);
cudaError_t cast(const void *input, DType inputType, void *result,
                 DType resultType, int64_t numel, cudaStream_t stream);
/// Lowers *firstIndex (device memory, preset to INT64_MAX as unsigned) to
/// the index of the first NaN or Inf.
cudaError_t findNonFinite(const void *data, DType dtype, int64_t numel,
                          unsigned long long *firstIndex, cudaStream_t stream);
cudaError_t sgd(void *param, DType paramType, const void *grad, DType gradType,
                int64_t numel, double lr, cudaStream_t stream);
cudaError_t adam(void *param, DType paramType, const void *grad, DType gradType,
                 float *moments, int64_t numel, const AdamScalars &scalars,
                 cudaStream_t stream);

/// result (m x n, row-major) = op(lhs) op(rhs) with every element one fma
/// chain in ascending k, as cpu/FixedOrderGemm.h computes it (16-bit
/// operands in f32, one rounding of the result): bitwise the CPU backend's
/// GEMM, at a fraction of cuBLAS's speed (DDPRT_FLAG_FIXED_ORDER_GEMM).
cudaError_t fixedOrderGemm(bool transposeLhs, bool transposeRhs, int64_t m,
                           int64_t n, int64_t k, const void *lhs,
                           const void *rhs, void *result, DType dtype,
                           cudaStream_t stream);

} // namespace ddprt::cuda

#endif // DDPRT_CUDA_KERNELS_H
