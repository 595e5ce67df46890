//===- HostKernels.h - Elementwise ops on the CPU ---------------*- C++ -*-===//
//
// Loops over ElementOps.h, used by the CPU backend for its compute stream
// and by its communication thread to reduce 16-bit types in f32.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_HOSTKERNELS_H
#define DDPRT_HOSTKERNELS_H

#include "Backend.h"

#include <optional>
#include <vector>

namespace ddprt::host {

/// Seed.h's values: small integers, or fractions (DDPRT_FLAG_FRACTIONAL_DATA).
void fillSeeded(const Tensor &tensor, uint64_t key, bool fractions);
/// The compute stand-in: result[i] = inputs[0][i % n0] + inputs[1][i % n1]
/// + ..., in the accumulation type. `boundedResult`: the result's index
/// among its op's, under DDPRT_FLAG_BOUNDED_VALUES (standInWeight,
/// boundStandIn in ElementOps.h).
void compute(const std::vector<Tensor> &inputs, const Tensor &result,
             std::optional<int64_t> boundedResult);
/// Not a bool or an int: `true` would be result 1 and `false` result 0,
/// both bounded (an int literal picks this overload too: pass an optional).
void compute(const std::vector<Tensor> &inputs, const Tensor &result,
             bool) = delete;
/// ddprt_route's kernels (HostRouting.cpp).
Status route(const RouteOp &op);
void accumulate(const Tensor &lhs, const void *rhs, void *result);
void scale(const Tensor &input, double factor, void *result);
void cast(const Tensor &input, DType resultType, void *result);
/// `out[i]` = the sum (or, for DDPRT_REDUCTION_MAX, the maximum) of
/// `gathered[r * numel + i]` over r = 0, 1, ..., ranks - 1, in `accType`
/// (f32 or f64), added in pairs of neighbours level by level (ranks 0+1,
/// 2+3, ..., an odd last one carried up, then the same on the sums). The
/// order does not depend on numel, and a group of k blocks of 2^j
/// consecutive ranks reduces as the k sums of its blocks would: the
/// reduce-scatter within distributed-optimizer instances followed by the
/// all-reduce across them gives the bits of one reduction over the group.
void reduceByRankPairs(const void *gathered, DType accType, int64_t numel,
                       int64_t ranks, int32_t reduction, void *out);
int64_t findNonFinite(const Tensor &tensor, double &value);
void sgd(const Tensor &param, const Tensor &grad, double lr);
void adam(const Tensor &param, const Tensor &grad, float *moments,
          const AdamScalars &scalars);

} // namespace ddprt::host

#endif // DDPRT_HOSTKERNELS_H
