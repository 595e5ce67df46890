//===- ElementOps.h - The arithmetic of one element -------------*- C++ -*-===//
//
// The per-element math of the elementwise ops and the optimizers, shared by
// the CPU loops (HostKernels.cpp) and the CUDA kernels (cuda/Kernels.cu) so
// that both backends compute bitwise the same thing. The order of operations
// written here is the definition; both are compiled without contracting a
// multiply and an add into an FMA.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_ELEMENTOPS_H
#define DDPRT_ELEMENTOPS_H

#include "Element.h"

#include <cmath>

namespace ddprt {

/// DDPRT_FLAG_BOUNDED_VALUES: `value` less the nearest multiple of 8 (ties
/// to even), in [-4, 4], applied to a GEMM's or a stand-in's sum in its
/// accumulation type before the result's rounding. Exact for every finite
/// value: value / 8 is exact, rint is, and so are 8 n and the difference
/// (Sterbenz). So seeded integers stay integers below 5 in magnitude at any
/// depth, and a GEMM's sums of them stay exact up to k = 2^20. -0 becomes
/// +0 (-0 - 8 * -0), on both backends.
template <typename Acc> DDPRT_HOST_DEVICE inline Acc boundElement(Acc value) {
#ifdef __CUDA_ARCH__
  Acc multiple = rint(value * Acc(0.125));
#else
  Acc multiple = std::rint(value * Acc(0.125));
#endif
  return value - Acc(8) * multiple;
}

/// Under DDPRT_FLAG_BOUNDED_VALUES the compute stand-in also weighs input j
/// by j + 1 and adds r to its result r before the bound: a plain sum gives
/// every result the same values and does not see its inputs' order, so a
/// schedule that swapped a layer norm's weight and bias gradients (equal
/// sums) verified. Small integers times j + 1 stay exact.
template <typename Acc>
DDPRT_HOST_DEVICE inline Acc standInWeight(int64_t input) {
  return Acc(input + 1);
}
template <typename Acc>
DDPRT_HOST_DEVICE inline Acc boundStandIn(Acc sum, int64_t result) {
  return boundElement(sum + Acc(result));
}

template <typename T>
DDPRT_HOST_DEVICE inline T accumulateElement(T lhs, T rhs) {
  using Acc = typename ElementTraits<T>::Acc;
  return storeAs<T>(loadAs<Acc>(lhs) + loadAs<Acc>(rhs));
}

/// The factor is rounded to the accumulation type first (f32 but for f64),
/// as PyTorch does for a Python scalar. Also the pre-scaling of an avg
/// reduction (factor 1/n), so that avg and ddp.scale + sum agree bitwise.
template <typename T>
DDPRT_HOST_DEVICE inline T scaleElement(T input, double factor) {
  using Acc = typename ElementTraits<T>::Acc;
  return storeAs<T>(loadAs<Acc>(input) * Acc(factor));
}

template <typename P, typename G>
DDPRT_HOST_DEVICE inline P sgdElement(P param, G grad, double lr) {
  using Acc = typename ElementTraits<P>::Acc;
  Acc step = Acc(lr) * loadAs<Acc>(grad);
  return storeAs<P>(loadAs<Acc>(param) - step);
}

/// The scalars of one Adam step, computed once per step in f64 and rounded
/// to f32.
struct AdamScalars {
  float beta1, oneMinusBeta1;
  float beta2, oneMinusBeta2;
  float stepSize;            // lr / (1 - beta1^t)
  float biasCorrection2Sqrt; // sqrt(1 - beta2^t)
  float eps;
};

/// Adam's hyperparameters, as the entry points take them.
struct AdamHyper {
  double lr, beta1, beta2, eps;
};

/// beta1^t and beta2^t after step t, by repeated multiplication from 1: one
/// correctly rounded f64 multiply per step, so that the host and a GPU (which
/// keeps its own copy, for CUDA graphs) reach the same bits, which pow()
/// does not promise.
struct AdamPowers {
  double beta1Power = 1.0, beta2Power = 1.0;
};

/// Advances `powers` by one step and returns that step's scalars. Only
/// correctly rounded f64 operations (multiply, subtract, divide, sqrt), each
/// rounded once to f32: the same bits on the host and on a GPU.
DDPRT_HOST_DEVICE inline AdamScalars advanceAdam(const AdamHyper &hyper,
                                                 AdamPowers &powers) {
  powers.beta1Power = powers.beta1Power * hyper.beta1;
  powers.beta2Power = powers.beta2Power * hyper.beta2;
  AdamScalars scalars;
  scalars.beta1 = float(hyper.beta1);
  scalars.oneMinusBeta1 = float(1.0 - hyper.beta1);
  scalars.beta2 = float(hyper.beta2);
  scalars.oneMinusBeta2 = float(1.0 - hyper.beta2);
  scalars.stepSize = float(hyper.lr / (1.0 - powers.beta1Power));
#ifdef __CUDA_ARCH__
  scalars.biasCorrection2Sqrt = float(__dsqrt_rn(1.0 - powers.beta2Power));
#else
  scalars.biasCorrection2Sqrt = float(std::sqrt(1.0 - powers.beta2Power));
#endif
  scalars.eps = float(hyper.eps);
  return scalars;
}

DDPRT_HOST_DEVICE inline float squareRoot(float value) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(value);
#else
  return std::sqrt(value);
#endif
}

template <typename P, typename G>
DDPRT_HOST_DEVICE inline P adamElement(P param, G grad, float &m, float &v,
                                       const AdamScalars &s) {
  float g = loadAs<float>(grad);
  m = s.beta1 * m + s.oneMinusBeta1 * g;
  v = s.beta2 * v + s.oneMinusBeta2 * (g * g);
  float denominator = squareRoot(v) / s.biasCorrection2Sqrt + s.eps;
  float update = s.stepSize * (m / denominator);
  using Acc = typename ElementTraits<P>::Acc;
  return storeAs<P>(loadAs<Acc>(param) - Acc(update));
}

template <typename T> DDPRT_HOST_DEVICE inline bool isFiniteElement(T value) {
  double wide = ElementTraits<T>::toDouble(value);
  return wide - wide == 0.0; // NaN and +-Inf give NaN.
}

} // namespace ddprt

#endif // DDPRT_ELEMENTOPS_H
