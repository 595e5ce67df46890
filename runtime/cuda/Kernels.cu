//===- Kernels.cu - The CUDA backend's elementwise kernels ----------------===//
//
// Grid-stride loops over ElementOps.h. Compiled with --fmad=false (see
// runtime/CMakeLists.txt) so that no multiply-add is fused: the results
// match the CPU backend bitwise.
//
//===----------------------------------------------------------------------===//

#include "../Seed.h"
#include "Kernels.h"

using namespace ddprt;

namespace {

constexpr int threadsPerBlock = 256;

unsigned blocksFor(int64_t numel) {
  int64_t blocks = (numel + threadsPerBlock - 1) / threadsPerBlock;
  return unsigned(blocks < 1 ? 1 : blocks > 8192 ? 8192 : blocks);
}

#define DDPRT_GRID_STRIDE(i, numel)                                            \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;             \
       i < (numel); i += int64_t(gridDim.x) * blockDim.x)

template <typename T>
__global__ void fillSeededKernel(T *data, int64_t numel, uint64_t key) {
  DDPRT_GRID_STRIDE(i, numel)
  data[i] = storeAs<T>(float(seededValue(key, uint64_t(i))));
}

template <typename Acc, typename T>
__global__ void accumulateModuloKernel(Acc *accumulator, int64_t numel,
                                       const T *input, int64_t inputNumel,
                                       bool first) {
  DDPRT_GRID_STRIDE(i, numel) {
    Acc value = loadAs<Acc>(input[i % inputNumel]);
    accumulator[i] = first ? value : accumulator[i] + value;
  }
}

template <typename T>
__global__ void accumulateKernel(const T *lhs, const T *rhs, T *result,
                                 int64_t numel) {
  DDPRT_GRID_STRIDE(i, numel)
  result[i] = accumulateElement(lhs[i], rhs[i]);
}

template <typename T>
__global__ void scaleKernel(const T *input, T *result, int64_t numel,
                            double factor) {
  DDPRT_GRID_STRIDE(i, numel)
  result[i] = scaleElement(input[i], factor);
}

template <typename To, typename From>
__global__ void castKernel(const From *input, To *result, int64_t numel) {
  DDPRT_GRID_STRIDE(i, numel)
  result[i] = convertElement<To>(input[i]);
}

template <typename T>
__global__ void findNonFiniteKernel(const T *data, int64_t numel,
                                    unsigned long long *firstIndex) {
  DDPRT_GRID_STRIDE(i, numel)
  if (!isFiniteElement(data[i]))
    atomicMin(firstIndex, (unsigned long long)i);
}

template <typename P, typename G>
__global__ void sgdKernel(P *param, const G *grad, int64_t numel, double lr) {
  DDPRT_GRID_STRIDE(i, numel)
  param[i] = sgdElement(param[i], grad[i], lr);
}

template <typename P, typename G>
__global__ void adamKernel(P *param, const G *grad, float *moments,
                           int64_t numel, AdamScalars scalars) {
  DDPRT_GRID_STRIDE(i, numel) {
    float m = moments[i], v = moments[numel + i];
    param[i] = adamElement(param[i], grad[i], m, v, scalars);
    moments[i] = m;
    moments[numel + i] = v;
  }
}

template <typename T> T *typed(void *data) { return static_cast<T *>(data); }
template <typename T> const T *typed(const void *data) {
  return static_cast<const T *>(data);
}

} // namespace

#define DDPRT_LAUNCH(kernel, numel, stream, ...)                               \
  (kernel<<<blocksFor(numel), threadsPerBlock, 0, stream>>>(__VA_ARGS__),      \
   cudaGetLastError())

cudaError_t cuda::fillSeeded(void *data, DType dtype, int64_t numel,
                             uint64_t key, cudaStream_t stream) {
  return dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    return DDPRT_LAUNCH(fillSeededKernel<T>, numel, stream, typed<T>(data),
                        numel, key);
  });
}

cudaError_t cuda::accumulateModulo(void *accumulator, bool doubleAccumulator,
                                   int64_t numel, const void *input,
                                   DType inputType, int64_t inputNumel,
                                   bool first, cudaStream_t stream) {
  return dispatchDType(inputType, [&](auto tag) {
    using T = decltype(tag);
    if (doubleAccumulator)
      return DDPRT_LAUNCH((accumulateModuloKernel<double, T>), numel, stream,
                          typed<double>(accumulator), numel, typed<T>(input),
                          inputNumel, first);
    return DDPRT_LAUNCH((accumulateModuloKernel<float, T>), numel, stream,
                        typed<float>(accumulator), numel, typed<T>(input),
                        inputNumel, first);
  });
}

cudaError_t cuda::accumulate(const void *lhs, const void *rhs, void *result,
                             DType dtype, int64_t numel, cudaStream_t stream) {
  return dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    return DDPRT_LAUNCH(accumulateKernel<T>, numel, stream, typed<T>(lhs),
                        typed<T>(rhs), typed<T>(result), numel);
  });
}

cudaError_t cuda::scale(const void *input, void *result, DType dtype,
                        int64_t numel, double factor, cudaStream_t stream) {
  return dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    return DDPRT_LAUNCH(scaleKernel<T>, numel, stream, typed<T>(input),
                        typed<T>(result), numel, factor);
  });
}

cudaError_t cuda::cast(const void *input, DType inputType, void *result,
                       DType resultType, int64_t numel, cudaStream_t stream) {
  return dispatchDType(inputType, [&](auto fromTag) {
    using From = decltype(fromTag);
    return dispatchDType(resultType, [&](auto toTag) {
      using To = decltype(toTag);
      return DDPRT_LAUNCH((castKernel<To, From>), numel, stream,
                          typed<From>(input), typed<To>(result), numel);
    });
  });
}

cudaError_t cuda::findNonFinite(const void *data, DType dtype, int64_t numel,
                                unsigned long long *firstIndex,
                                cudaStream_t stream) {
  return dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    return DDPRT_LAUNCH(findNonFiniteKernel<T>, numel, stream, typed<T>(data),
                        numel, firstIndex);
  });
}

cudaError_t cuda::sgd(void *param, DType paramType, const void *grad,
                      DType gradType, int64_t numel, double lr,
                      cudaStream_t stream) {
  return dispatchDType(paramType, [&](auto paramTag) {
    using P = decltype(paramTag);
    return dispatchDType(gradType, [&](auto gradTag) {
      using G = decltype(gradTag);
      return DDPRT_LAUNCH((sgdKernel<P, G>), numel, stream, typed<P>(param),
                          typed<G>(grad), numel, lr);
    });
  });
}

cudaError_t cuda::adam(void *param, DType paramType, const void *grad,
                       DType gradType, float *moments, int64_t numel,
                       const AdamScalars &scalars, cudaStream_t stream) {
  return dispatchDType(paramType, [&](auto paramTag) {
    using P = decltype(paramTag);
    return dispatchDType(gradType, [&](auto gradTag) {
      using G = decltype(gradTag);
      return DDPRT_LAUNCH((adamKernel<P, G>), numel, stream, typed<P>(param),
                          typed<G>(grad), moments, numel, scalars);
    });
  });
}
