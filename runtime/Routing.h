//===- Routing.h - The routing kernels' math, host and device ---*- C++ -*-===//
//
// What ddprt_route computes (RuntimeFunctions.def), per token, per expert
// and per row, shared by the CPU loops (HostRouting.cpp) and the CUDA
// kernels (cuda/RoutingKernels.cu) so that both give the same bits. These
// kernels are real, not stand-ins: which rows go where depends on the data,
// and that is what a schedule of routed tokens must preserve.
//
// The router is Megatron-Core's default TopKRouter (moe_router_pre_softmax
// false, moe_token_drop_policy "probs"; megatron/core/transformer/moe/
// moe_utils.py, topk_softmax_with_capacity): each token's top k logits, a
// softmax over those k, then each expert keeps at most `capacity` of its
// tokens, the highest probabilities. Ties go to the lower index; NaN ranks
// below every number.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_ROUTING_H
#define DDPRT_ROUTING_H

#include "Element.h"

namespace ddprt::routing {

/// The most experts a token may be routed to (the per-token arrays below
/// live on the stack, also in a CUDA thread).
constexpr int kMaxTopK = DDPRT_ROUTE_MAX_TOPK;

/// e^x for x <= 0 (or NaN): Cody-Waite reduction by ln 2 and a degree-13
/// Taylor polynomial, in f64 with no FMA (both backends are compiled without
/// contraction). std::exp and CUDA's exp each round well but need not agree;
/// this gives the same bits everywhere, within 2 ulp (RoutingTest).
DDPRT_HOST_DEVICE inline double expNonPositive(double x) {
  if (x != x)
    return x;
  if (x < -745.0)
    return 0.0;
  const double log2e = 1.4426950408889634;
  const double ln2Hi = 6.93147180369123816490e-01;
  const double ln2Lo = 1.90821492927058770002e-10;
  // The nearest integer to x / ln 2 (x <= 0; truncation is toward zero).
  double n = double(int64_t(x * log2e - 0.5));
  double r = (x - n * ln2Hi) - n * ln2Lo; // |r| <= ln2/2 + a little
  // 1/i! for i = 13 down to 0, by Horner's rule: the small terms first.
  const double inverseFactorials[14] = {
      1.6059043836821613e-10, 2.08767569878681e-09, 2.505210838544172e-08,
      2.755731922398589e-07,  2.7557319223985893e-06, 2.48015873015873e-05,
      0.0001984126984126984,  0.001388888888888889, 0.008333333333333333,
      0.041666666666666664,   0.16666666666666666,  0.5,
      1.0,                    1.0};
  double sum = inverseFactorials[0];
  for (int i = 1; i < 14; ++i)
    sum = sum * r + inverseFactorials[i];
  // sum * 2^n, in two steps so that 2^n never underflows on its own.
  int64_t e = int64_t(n);
  int64_t half = e / 2;
  double scaleA = bitCast<double>(uint64_t(1023 + half) << 52);
  double scaleB = bitCast<double>(uint64_t(1023 + (e - half)) << 52);
  return sum * scaleA * scaleB;
}

/// Whether logit (or probability) `a` of index `ia` ranks before `b` of
/// index `ib`: larger first, NaN last, ties to the lower index.
DDPRT_HOST_DEVICE inline bool ranksBefore(double a, int64_t ia, double b,
                                          int64_t ib) {
  bool aNan = a != a, bNan = b != b;
  if (aNan || bNan)
    return aNan == bNan ? ia < ib : bNan;
  if (a != b)
    return a > b;
  return ia < ib;
}

template <typename T>
DDPRT_HOST_DEVICE inline double loadDouble(const T *data, int64_t i) {
  return ElementTraits<T>::toDouble(data[i]);
}

/// The softmax over a token's chosen logits (in f64; NaN in, NaN out): the
/// probabilities of its routes, the same bits wherever they are computed.
template <typename T>
DDPRT_HOST_DEVICE inline void softmaxChosen(const T *logits,
                                            const int64_t *chosen,
                                            int64_t topk, double *probs) {
  double top = loadDouble(logits, chosen[0]);
  bool anyNan = top != top;
  for (int64_t j = 1; j < topk; ++j) {
    double value = loadDouble(logits, chosen[j]);
    anyNan = anyNan || value != value;
    top = value > top ? value : top;
  }
  double sum = 0;
  for (int64_t j = 0; j < topk; ++j) {
    double value = loadDouble(logits, chosen[j]);
    // An infinite logit makes the difference NaN, as in torch.softmax.
    probs[j] = anyNan ? value : expNonPositive(value - top);
    sum = sum + probs[j];
  }
  for (int64_t j = 0; j < topk; ++j)
    probs[j] = probs[j] / sum;
}

/// One token's routes: its top `topk` experts in ascending expert order,
/// and their probabilities (the softmax over the chosen logits, in f64).
template <typename T>
DDPRT_HOST_DEVICE inline void selectToken(const T *logits, int64_t experts,
                                          int64_t topk, int64_t *chosen,
                                          double *probs) {
  for (int64_t j = 0; j < topk; ++j) {
    int64_t best = -1;
    double bestValue = 0;
    for (int64_t e = 0; e < experts; ++e) {
      bool taken = false;
      for (int64_t i = 0; i < j; ++i)
        taken = taken || chosen[i] == e;
      if (taken)
        continue;
      double value = loadDouble(logits, e);
      if (best < 0 || ranksBefore(value, e, bestValue, best)) {
        best = e;
        bestValue = value;
      }
    }
    chosen[j] = best;
  }
  // Ascending expert order: the order in which the combine adds a token's
  // expert outputs (slot order).
  for (int64_t j = 1; j < topk; ++j)
    for (int64_t i = j; i > 0 && chosen[i - 1] > chosen[i]; --i) {
      int64_t swap = chosen[i];
      chosen[i] = chosen[i - 1];
      chosen[i - 1] = swap;
    }
  softmaxChosen(logits, chosen, topk, probs);
}

/// A map entry (an f32 holding a row index, or -1 for none) as an index in
/// [0, bound), or -1 when it is none, out of range or not a whole number.
DDPRT_HOST_DEVICE inline int64_t mapIndex(float value, int64_t bound) {
  if (!(value >= 0.0f) || !(double(value) < double(bound)) ||
      float(int64_t(value)) != value)
    return -1;
  return int64_t(value);
}

/// The gradient of one token's `experts` logits (`result`) from the
/// gradients of its route probabilities (`routeGrads`, 0 for a dropped
/// route): the softmax's backward over the chosen k, zero elsewhere.
template <typename T>
DDPRT_HOST_DEVICE inline void selectTokenGrad(const T *logits, int64_t experts,
                                              int64_t topk,
                                              const double *routeGrads,
                                              T *result) {
  int64_t chosen[kMaxTopK];
  double probs[kMaxTopK];
  selectToken(logits, experts, topk, chosen, probs);
  double dot = 0;
  for (int64_t j = 0; j < topk; ++j)
    dot = dot + probs[j] * routeGrads[j];
  for (int64_t e = 0; e < experts; ++e)
    result[e] = ElementTraits<T>::fromDouble(0.0);
  for (int64_t j = 0; j < topk; ++j)
    result[chosen[j]] =
        ElementTraits<T>::fromDouble(probs[j] * (routeGrads[j] - dot));
}

} // namespace ddprt::routing

#endif // DDPRT_ROUTING_H
