//===- HostKernels.cpp - Elementwise ops on the CPU -----------------------===//

#include "HostKernels.h"
#include "Seed.h"

#include <algorithm>
#include <vector>

using namespace ddprt;

template <typename T> static T *typed(void *data) {
  return static_cast<T *>(data);
}
template <typename T> static const T *typed(const void *data) {
  return static_cast<const T *>(data);
}

void host::fillSeeded(const Tensor &tensor, uint64_t key, bool fractions) {
  dispatchDType(tensor.dtype, [&](auto tag) {
    using T = decltype(tag);
    T *out = typed<T>(tensor.data);
    for (int64_t i = 0; i < tensor.numel; ++i)
      out[i] = storeAs<T>(fractions ? seededFraction(key, uint64_t(i))
                                    : float(seededValue(key, uint64_t(i))));
  });
}

/// The stand-in's sum, reading every input before writing the result: what
/// a result that aliases an input needs.
template <typename Acc>
static void computeWhole(const std::vector<Tensor> &inputs,
                         const Tensor &result,
                         std::optional<int64_t> boundedResult) {
  std::vector<Acc> sum(size_t(result.numel), Acc(0));
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Tensor &input = inputs[j];
    Acc weight = boundedResult ? standInWeight<Acc>(int64_t(j)) : Acc(1);
    dispatchDType(input.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T *in = typed<T>(input.data);
      for (int64_t i = 0; i < result.numel; ++i) {
        Acc value = loadAs<Acc>(in[i % input.numel]);
        // The first input is taken as it is, so -0 stays -0.
        sum[size_t(i)] = j == 0 ? value : sum[size_t(i)] + weight * value;
      }
    });
  }
  dispatchDType(result.dtype, [&](auto tag) {
    using T = decltype(tag);
    T *out = typed<T>(result.data);
    for (int64_t i = 0; i < result.numel; ++i)
      out[i] = storeAs<T>(boundedResult
                              ? boundStandIn(sum[size_t(i)], *boundedResult)
                              : sum[size_t(i)]);
  });
}

/// The same sums in cache-sized blocks, with no division per element: the
/// stand-in then costs about one pass over its operands, as the cost model
/// prices the kernel it stands for. Only for a result that shares no bytes
/// with an input.
template <typename Acc>
static void computeBlocked(const std::vector<Tensor> &inputs,
                           const Tensor &result,
                           std::optional<int64_t> boundedResult) {
  constexpr int64_t kBlock = 2048;
  Acc sum[kBlock];
  for (int64_t start = 0; start < result.numel; start += kBlock) {
    int64_t count = std::min(kBlock, result.numel - start);
    if (inputs.empty())
      std::fill(sum, sum + count, Acc(0));
    for (size_t j = 0; j < inputs.size(); ++j) {
      const Tensor &input = inputs[j];
      Acc weight = boundedResult ? standInWeight<Acc>(int64_t(j)) : Acc(1);
      dispatchDType(input.dtype, [&](auto tag) {
        using T = decltype(tag);
        const T *in = typed<T>(input.data);
        // Contiguous runs of the input, which the compiler vectorizes.
        int64_t position = start % input.numel;
        for (int64_t i = 0; i < count;) {
          int64_t run = std::min(count - i, input.numel - position);
          const T *from = in + position;
          Acc *into = sum + i;
          if (j == 0)
            for (int64_t k = 0; k < run; ++k)
              into[k] = loadAs<Acc>(from[k]);
          else if (!boundedResult)
            for (int64_t k = 0; k < run; ++k)
              into[k] += loadAs<Acc>(from[k]);
          else
            for (int64_t k = 0; k < run; ++k)
              into[k] += weight * loadAs<Acc>(from[k]);
          i += run;
          position = position + run == input.numel ? 0 : position + run;
        }
      });
    }
    if (boundedResult)
      for (int64_t i = 0; i < count; ++i)
        sum[i] = boundStandIn(sum[i], *boundedResult);
    dispatchDType(result.dtype, [&](auto tag) {
      using T = decltype(tag);
      T *out = typed<T>(result.data) + start;
      for (int64_t i = 0; i < count; ++i)
        out[i] = storeAs<T>(sum[i]);
    });
  }
}

template <typename Acc>
static void computeInto(const std::vector<Tensor> &inputs, const Tensor &result,
                        std::optional<int64_t> boundedResult) {
  int64_t resultBytes = result.numel * elementSize(result.dtype);
  for (const Tensor &input : inputs)
    if (overlaps(result.data, resultBytes, input.data,
                 input.numel * elementSize(input.dtype)))
      return computeWhole<Acc>(inputs, result, boundedResult);
  computeBlocked<Acc>(inputs, result, boundedResult);
}

void host::compute(const std::vector<Tensor> &inputs, const Tensor &result,
                   std::optional<int64_t> boundedResult) {
  if (result.dtype == DType::F64)
    computeInto<double>(inputs, result, boundedResult);
  else
    computeInto<float>(inputs, result, boundedResult);
}

void host::accumulate(const Tensor &lhs, const void *rhs, void *result) {
  dispatchDType(lhs.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *a = typed<T>(lhs.data);
    const T *b = typed<T>(rhs);
    T *out = typed<T>(result);
    for (int64_t i = 0; i < lhs.numel; ++i)
      out[i] = accumulateElement(a[i], b[i]);
  });
}

void host::scale(const Tensor &input, double factor, void *result) {
  dispatchDType(input.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *in = typed<T>(input.data);
    T *out = typed<T>(result);
    for (int64_t i = 0; i < input.numel; ++i)
      out[i] = scaleElement(in[i], factor);
  });
}

void host::cast(const Tensor &input, DType resultType, void *result) {
  dispatchDType(input.dtype, [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatchDType(resultType, [&](auto toTag) {
      using To = decltype(toTag);
      const From *in = typed<From>(input.data);
      To *out = typed<To>(result);
      for (int64_t i = 0; i < input.numel; ++i)
        out[i] = convertElement<To>(in[i]);
    });
  });
}

template <typename Acc>
static void reduceByRankPairsAs(const Acc *gathered, int64_t numel,
                                int64_t ranks, bool max, Acc *out) {
  std::vector<Acc> level(static_cast<size_t>(ranks));
  for (int64_t i = 0; i < numel; ++i) {
    for (int64_t r = 0; r < ranks; ++r)
      level[size_t(r)] = gathered[r * numel + i];
    for (int64_t count = ranks; count > 1; count = (count + 1) / 2) {
      for (int64_t pair = 0; pair < count / 2; ++pair) {
        Acc a = level[size_t(2 * pair)], b = level[size_t(2 * pair + 1)];
        level[size_t(pair)] = max ? std::max(a, b) : a + b;
      }
      if (count % 2 != 0)
        level[size_t(count / 2)] = level[size_t(count - 1)];
    }
    out[i] = level[0];
  }
}

void host::reduceByRankPairs(const void *gathered, DType accType,
                             int64_t numel, int64_t ranks, int32_t reduction,
                             void *out) {
  bool max = reduction == DDPRT_REDUCTION_MAX;
  if (accType == DType::F64)
    reduceByRankPairsAs(static_cast<const double *>(gathered), numel, ranks,
                        max, static_cast<double *>(out));
  else
    reduceByRankPairsAs(static_cast<const float *>(gathered), numel, ranks,
                        max, static_cast<float *>(out));
}

int64_t host::findNonFinite(const Tensor &tensor, double &value) {
  return dispatchDType(tensor.dtype, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    const T *data = typed<T>(tensor.data);
    for (int64_t i = 0; i < tensor.numel; ++i) {
      if (!isFiniteElement(data[i])) {
        value = ElementTraits<T>::toDouble(data[i]);
        return i;
      }
    }
    return -1;
  });
}

void host::sgd(const Tensor &param, const Tensor &grad, double lr) {
  dispatchDType(param.dtype, [&](auto paramTag) {
    using P = decltype(paramTag);
    dispatchDType(grad.dtype, [&](auto gradTag) {
      using G = decltype(gradTag);
      P *p = typed<P>(param.data);
      const G *g = typed<G>(grad.data);
      for (int64_t i = 0; i < param.numel; ++i)
        p[i] = sgdElement(p[i], g[i], lr);
    });
  });
}

void host::adam(const Tensor &param, const Tensor &grad, float *moments,
                const AdamScalars &scalars) {
  float *m = moments;
  float *v = moments + param.numel;
  dispatchDType(param.dtype, [&](auto paramTag) {
    using P = decltype(paramTag);
    dispatchDType(grad.dtype, [&](auto gradTag) {
      using G = decltype(gradTag);
      P *p = typed<P>(param.data);
      const G *g = typed<G>(grad.data);
      for (int64_t i = 0; i < param.numel; ++i)
        p[i] = adamElement(p[i], g[i], m[i], v[i], scalars);
    });
  });
}
