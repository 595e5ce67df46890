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
                       bool fractions, cudaStream_t stream);
/// One step of the compute stand-in: accumulator[i] (f32, or f64 when
/// `doubleAccumulator`) = first ? input[i % inputNumel]
/// : accumulator[i] + weight * input[i % inputNumel] (standInWeight; 1
/// but for bounded values).
cudaError_t accumulateModulo(void *accumulator, bool doubleAccumulator,
                             int64_t numel, const void *input, DType inputType,
                             int64_t inputNumel, bool first, double weight,
                             cudaStream_t stream);
/// data[i] = boundStandIn(data[i], result) for f32 (f64 when
/// `doubleAccumulator`) sums: DDPRT_FLAG_BOUNDED_VALUES on the accumulator
/// of the op's result number `result`.
cudaError_t bound(void *data, bool doubleAccumulator, int64_t numel,
                  int64_t result, cudaStream_t stream);
/// The operands of the one-pass compute stand-in (standIn).
struct StandInTensor {
  const void *data;
  int64_t numel;
  DType dtype;
};
constexpr int maxStandInTensors = 8;
struct StandInArgs {
  StandInTensor inputs[maxStandInTensors];
  StandInTensor results[maxStandInTensors];
  int numInputs = 0, numResults = 0;
  /// The largest result's numel.
  int64_t span = 0;
  /// DDPRT_FLAG_BOUNDED_VALUES: each sum bounded before it is stored (by
  /// the element-wise pass; the faster ones do not bound), inputs weighed
  /// and each result offset by its index among the op's results
  /// (standInWeight, boundStandIn).
  bool bounded = false;
  int resultIndex[maxStandInTensors] = {};
};
/// The compute stand-in in one pass over its operands: result[i] (each
/// result, i below its numel) = input0[i % n0] + input1[i % n1] + ..., summed
/// in f32 (f64 when `doubleAccumulator`), bitwise as accumulateModulo and
/// cast compute it, in one pass that writes each result once.
cudaError_t standIn(const StandInArgs &args, bool doubleAccumulator,
                    cudaStream_t stream);
/// Reads `bytes` (in 16-byte vectors) from the `scratchBytes` at `scratch`,
/// cyclically; `sink` is device memory it may add to, never read. What a
/// memory-bound stand-in pays beyond its own pass (CudaStandIn.cpp).
cudaError_t streamRead(const void *scratch, int64_t scratchBytes,
                       int64_t bytes, unsigned long long *sink,
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
/// Adam's powers and the scalars of its last step, in device memory.
struct AdamDeviceState {
  AdamPowers powers;
  AdamScalars scalars;
};
/// Advances `state` by one step (one thread, advanceAdam), then updates
/// `param` with the new scalars; when `rounded` is not null, also writes
/// `param` (f32) rounded to `roundedType` there.
cudaError_t adam(void *param, DType paramType, const void *grad, DType gradType,
                 float *moments, int64_t numel, const AdamHyper &hyper,
                 AdamDeviceState *state, void *rounded, DType roundedType,
                 cudaStream_t stream);

/// result (m x n, row-major) = op(lhs) op(rhs) with every element one fma
/// chain in ascending k, as cpu/FixedOrderGemm.h computes it (16-bit
/// operands in f32, one rounding of the result): bitwise the CPU backend's
/// GEMM, at a fraction of cuBLAS's speed (DDPRT_FLAG_FIXED_ORDER_GEMM);
/// `bounded`: each sum bounded before its rounding (boundElement).
/// The most rows fixedOrderGemm takes (65535 blocks of 64 rows).
constexpr int64_t fixedOrderGemmMaxRows = int64_t(65535) * 64;
cudaError_t fixedOrderGemm(bool transposeLhs, bool transposeRhs, int64_t m,
                           int64_t n, int64_t k, const void *lhs,
                           const void *rhs, void *result, DType dtype,
                           bool bounded, cudaStream_t stream);

} // namespace ddprt::cuda

#endif // DDPRT_CUDA_KERNELS_H
