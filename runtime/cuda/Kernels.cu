//===- Kernels.cu - The CUDA backend's elementwise kernels ----------------===//
//
// Grid-stride loops over ElementOps.h. Compiled with --fmad=false (see
// runtime/CMakeLists.txt) so that no multiply-add is fused: the results
// match the CPU backend bitwise.
//
//===----------------------------------------------------------------------===//

#include "../Seed.h"
#include "KernelSupport.cuh"
#include "Kernels.h"

#include <type_traits>

using namespace ddprt;
using cuda::blocksFor;
using cuda::isAligned;
using cuda::threadsPerBlock;

namespace {

template <typename T>
__global__ void fillSeededKernel(T *data, int64_t numel, uint64_t key,
                                 bool fractions) {
  DDPRT_GRID_STRIDE(i, numel)
  data[i] = storeAs<T>(fractions ? seededFraction(key, uint64_t(i))
                                 : float(seededValue(key, uint64_t(i))));
}

template <typename Acc, typename T>
__global__ void accumulateModuloKernel(Acc *accumulator, int64_t numel,
                                       const T *input, int64_t inputNumel,
                                       bool first, Acc weight) {
  DDPRT_GRID_STRIDE(i, numel) {
    Acc value = loadAs<Acc>(input[i % inputNumel]);
    accumulator[i] = first ? value : accumulator[i] + weight * value;
  }
}

template <typename Acc>
__global__ void boundKernel(Acc *data, int64_t numel, int64_t result) {
  DDPRT_GRID_STRIDE(i, numel) { data[i] = boundStandIn(data[i], result); }
}

/// N elements loaded and stored as one vector instruction: a kernel
/// streams at HBM's rate only in vectors of 8 or 16 bytes per thread, not
/// in 2-byte elements (docs/GpuCheck.md).
template <typename T, int N> struct alignas(N * sizeof(T)) Vector {
  T e[N];
};
template <typename T> using Quad = Vector<T, 4>;


template <typename T>
__global__ void accumulateKernel(const T *lhs, const T *rhs, T *result,
                                 int64_t numel) {
  DDPRT_GRID_STRIDE(i, numel)
  result[i] = accumulateElement(lhs[i], rhs[i]);
}

/// accumulateKernel on 16 bytes of each operand at a time.
template <typename T>
__global__ void accumulateVectorKernel(const T *lhs, const T *rhs, T *result,
                                       int64_t numel) {
  constexpr int N = 16 / sizeof(T);
  using V = Vector<T, N>;
  DDPRT_GRID_STRIDE(i, numel / N) {
    V a = reinterpret_cast<const V *>(lhs)[i];
    V b = reinterpret_cast<const V *>(rhs)[i];
#pragma unroll
    for (int k = 0; k < N; ++k)
      a.e[k] = accumulateElement(a.e[k], b.e[k]);
    reinterpret_cast<V *>(result)[i] = a;
  }
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

__global__ void advanceAdamKernel(AdamHyper hyper,
                                  cuda::AdamDeviceState *state) {
  state->scalars = advanceAdam(hyper, state->powers);
}

/// R is the type of the rounded copy (P itself for none).
template <typename P, typename G, typename R>
__global__ void adamKernel(P *param, const G *grad, float *moments,
                           int64_t numel,
                           const cuda::AdamDeviceState *state, R *rounded) {
  AdamScalars scalars = state->scalars;
  DDPRT_GRID_STRIDE(i, numel) {
    float m = moments[i], v = moments[numel + i];
    P updated = adamElement(param[i], grad[i], m, v, scalars);
    param[i] = updated;
    moments[i] = m;
    moments[numel + i] = v;
    if (rounded)
      rounded[i] = convertElement<R>(updated);
  }
}

/// adamKernel for an f32 parameter (a 16-bit one's main copy) whose numel
/// is a multiple of 4 and whose arrays are aligned to their Quad: the same
/// adamElement on each element.
template <typename G, typename R>
__global__ void adamQuadKernel(float *param, const G *grad, float *moments,
                               int64_t numel,
                               const cuda::AdamDeviceState *state,
                               R *rounded) {
  AdamScalars scalars = state->scalars;
  auto *params = reinterpret_cast<Quad<float> *>(param);
  auto *grads = reinterpret_cast<const Quad<G> *>(grad);
  auto *firsts = reinterpret_cast<Quad<float> *>(moments);
  auto *seconds = reinterpret_cast<Quad<float> *>(moments + numel);
  auto *roundeds = reinterpret_cast<Quad<R> *>(rounded);
  DDPRT_GRID_STRIDE(q, numel / 4) {
    Quad<float> p = params[q], m = firsts[q], v = seconds[q];
    Quad<G> g = grads[q];
    Quad<R> r;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      p.e[k] = adamElement(p.e[k], g.e[k], m.e[k], v.e[k], scalars);
      r.e[k] = convertElement<R>(p.e[k]);
    }
    params[q] = p;
    firsts[q] = m;
    seconds[q] = v;
    if (rounded)
      roundeds[q] = r;
  }
}

template <typename T> T *typed(void *data) { return static_cast<T *>(data); }
template <typename T> const T *typed(const void *data) {
  return static_cast<const T *>(data);
}

/// Reads `count` 16-byte vectors, cycling over the `mask + 1` (a power of
/// two) at `data`; the XOR of what it read keeps the reads.
__global__ void streamReadKernel(const uint4 *data, uint64_t mask,
                                 int64_t count, unsigned long long *sink) {
  uint32_t acc = 0;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += int64_t(gridDim.x) * blockDim.x) {
    uint4 v = data[uint64_t(k) & mask];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u)
    atomicAdd(sink, 1ull);
}

} // namespace

// cudaGetLastError() also returns the error of an earlier call that failed
// and was reported then: clear it first, so that a launch reports its own.
#define DDPRT_LAUNCH(kernel, numel, stream, ...)                               \
  (cudaGetLastError(),                                                         \
   kernel<<<blocksFor(numel), threadsPerBlock, 0, stream>>>(__VA_ARGS__),      \
   cudaGetLastError())

cudaError_t cuda::fillSeeded(void *data, DType dtype, int64_t numel,
                             uint64_t key, bool fractions,
                             cudaStream_t stream) {
  return dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    return DDPRT_LAUNCH(fillSeededKernel<T>, numel, stream, typed<T>(data),
                        numel, key, fractions);
  });
}

cudaError_t cuda::accumulateModulo(void *accumulator, bool doubleAccumulator,
                                   int64_t numel, const void *input,
                                   DType inputType, int64_t inputNumel,
                                   bool first, double weight,
                                   cudaStream_t stream) {
  return dispatchDType(inputType, [&](auto tag) {
    using T = decltype(tag);
    if (doubleAccumulator)
      return DDPRT_LAUNCH((accumulateModuloKernel<double, T>), numel, stream,
                          typed<double>(accumulator), numel, typed<T>(input),
                          inputNumel, first, weight);
    return DDPRT_LAUNCH((accumulateModuloKernel<float, T>), numel, stream,
                        typed<float>(accumulator), numel, typed<T>(input),
                        inputNumel, first, float(weight));
  });
}

cudaError_t cuda::bound(void *data, bool doubleAccumulator, int64_t numel,
                        int64_t result, cudaStream_t stream) {
  if (doubleAccumulator)
    return DDPRT_LAUNCH(boundKernel<double>, numel, stream, typed<double>(data),
                        numel, result);
  return DDPRT_LAUNCH(boundKernel<float>, numel, stream, typed<float>(data),
                      numel, result);
}

cudaError_t cuda::accumulate(const void *lhs, const void *rhs, void *result,
                             DType dtype, int64_t numel, cudaStream_t stream) {
  return dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (numel % (16 / sizeof(T)) == 0 && isAligned(lhs, 16) &&
        isAligned(rhs, 16) && isAligned(result, 16))
      return DDPRT_LAUNCH(accumulateVectorKernel<T>,
                          numel / int64_t(16 / sizeof(T)), stream,
                          typed<T>(lhs), typed<T>(rhs), typed<T>(result),
                          numel);
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
                       const AdamHyper &hyper, AdamDeviceState *state,
                       void *rounded, DType roundedType, cudaStream_t stream) {
  cudaGetLastError(); // as DDPRT_LAUNCH
  advanceAdamKernel<<<1, 1, 0, stream>>>(hyper, state);
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return error;
  return dispatchDType(paramType, [&](auto paramTag) {
    using P = decltype(paramTag);
    return dispatchDType(gradType, [&](auto gradTag) {
      using G = decltype(gradTag);
      // Only an f32 main copy is ever rounded, to f16 or bf16.
      if constexpr (std::is_same_v<P, float>) {
        if (numel % 4 == 0 && isAligned(param, 16) && isAligned(moments, 16) &&
            isAligned(grad, 4 * sizeof(G)) &&
            (!rounded || isAligned(rounded, 4 * sizeof(Half)))) {
          if (rounded && roundedType == DType::F16)
            return DDPRT_LAUNCH((adamQuadKernel<G, Half>), numel / 4, stream,
                                typed<float>(param), typed<G>(grad), moments,
                                numel, state, typed<Half>(rounded));
          if (rounded && roundedType == DType::BF16)
            return DDPRT_LAUNCH((adamQuadKernel<G, BFloat16>), numel / 4,
                                stream, typed<float>(param), typed<G>(grad),
                                moments, numel, state,
                                typed<BFloat16>(rounded));
          return DDPRT_LAUNCH((adamQuadKernel<G, float>), numel / 4, stream,
                              typed<float>(param), typed<G>(grad), moments,
                              numel, state, static_cast<float *>(nullptr));
        }
      }
      if (rounded && roundedType == DType::F16)
        return DDPRT_LAUNCH((adamKernel<P, G, Half>), numel, stream,
                            typed<P>(param), typed<G>(grad), moments, numel,
                            state, typed<Half>(rounded));
      if (rounded && roundedType == DType::BF16)
        return DDPRT_LAUNCH((adamKernel<P, G, BFloat16>), numel, stream,
                            typed<P>(param), typed<G>(grad), moments, numel,
                            state, typed<BFloat16>(rounded));
      return DDPRT_LAUNCH((adamKernel<P, G, P>), numel, stream,
                          typed<P>(param), typed<G>(grad), moments, numel,
                          state, static_cast<P *>(nullptr));
    });
  });
}

//===----------------------------------------------------------------------===//
// GEMM in the CPU backend's order (cpu/FixedOrderGemm.h)
//===----------------------------------------------------------------------===//

namespace {

// A block computes a 64 x 64 tile of the result, each of its 16 x 16
// threads a 4 x 4 patch, from 16-deep slices of the operands staged in
// shared memory. The staging only decides which elements are computed
// together: every element is still one fma chain over k = 0, 1, ..., K-1
// from 0, as on the CPU. The last slice stops at K (no zero padding in k,
// which would turn an accumulated -0 into +0).
constexpr int gemmTile = 64, gemmDepth = 16, gemmThreads = 16,
              gemmPatch = gemmTile / gemmThreads;

template <typename T, typename Acc>
__global__ void fixedOrderGemmKernel(bool transposeLhs, bool transposeRhs,
                                     int64_t m, int64_t n, int64_t k,
                                     const T *lhs, const T *rhs, T *result,
                                     bool bounded) {
  __shared__ Acc a[gemmDepth][gemmTile], b[gemmDepth][gemmTile];
  int64_t row0 = int64_t(blockIdx.y) * gemmTile,
          col0 = int64_t(blockIdx.x) * gemmTile;
  int tx = threadIdx.x, ty = threadIdx.y, thread = ty * gemmThreads + tx;
  Acc acc[gemmPatch][gemmPatch];
  for (int r = 0; r < gemmPatch; ++r)
    for (int c = 0; c < gemmPatch; ++c)
      acc[r][c] = Acc(0);
  for (int64_t k0 = 0; k0 < k; k0 += gemmDepth) {
    int depth = int(k - k0 < gemmDepth ? k - k0 : gemmDepth);
    for (int e = thread; e < gemmDepth * gemmTile;
         e += gemmThreads * gemmThreads) {
      int kk = e / gemmTile, i = e % gemmTile;
      int64_t row = row0 + i, col = col0 + i, depthIndex = k0 + kk;
      bool inDepth = kk < depth;
      a[kk][i] = inDepth && row < m
                     ? loadAs<Acc>(transposeLhs ? lhs[depthIndex * m + row]
                                                : lhs[row * k + depthIndex])
                     : Acc(0);
      b[kk][i] = inDepth && col < n
                     ? loadAs<Acc>(transposeRhs ? rhs[col * k + depthIndex]
                                                : rhs[depthIndex * n + col])
                     : Acc(0);
    }
    __syncthreads();
    for (int kk = 0; kk < depth; ++kk)
      for (int r = 0; r < gemmPatch; ++r)
        for (int c = 0; c < gemmPatch; ++c)
          acc[r][c] = fma(a[kk][ty + r * gemmThreads],
                          b[kk][tx + c * gemmThreads], acc[r][c]);
    __syncthreads();
  }
  for (int r = 0; r < gemmPatch; ++r)
    for (int c = 0; c < gemmPatch; ++c) {
      int64_t row = row0 + ty + r * gemmThreads,
              col = col0 + tx + c * gemmThreads;
      if (row < m && col < n)
        result[row * n + col] =
            storeAs<T>(bounded ? boundElement(acc[r][c]) : acc[r][c]);
    }
}

} // namespace

cudaError_t cuda::fixedOrderGemm(bool transposeLhs, bool transposeRhs,
                                 int64_t m, int64_t n, int64_t k,
                                 const void *lhs, const void *rhs, void *result,
                                 DType dtype, bool bounded,
                                 cudaStream_t stream) {
  int64_t rowBlocks = (m + gemmTile - 1) / gemmTile,
          columnBlocks = (n + gemmTile - 1) / gemmTile;
  if (rowBlocks > 65535 || columnBlocks > INT32_MAX)
    return cudaErrorInvalidConfiguration;
  dim3 grid{unsigned(columnBlocks), unsigned(rowBlocks)};
  dim3 block{gemmThreads, gemmThreads};
  cudaGetLastError(); // as DDPRT_LAUNCH
  return dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    using Acc = typename ElementTraits<T>::Acc;
    fixedOrderGemmKernel<T, Acc><<<grid, block, 0, stream>>>(
        transposeLhs, transposeRhs, m, n, k, typed<T>(lhs), typed<T>(rhs),
        typed<T>(result), bounded);
    return cudaGetLastError();
  });
}

cudaError_t cuda::streamRead(const void *scratch, int64_t scratchBytes,
                             int64_t bytes, unsigned long long *sink,
                             cudaStream_t stream) {
  int64_t count = bytes / 16;
  if (count == 0)
    return cudaSuccess;
  // The largest power of two of vectors that the scratch holds.
  uint64_t vectors = 1;
  while (vectors * 2 * 16 <= uint64_t(scratchBytes))
    vectors *= 2;
  int64_t blocks = (count + threadsPerBlock - 1) / threadsPerBlock;
  cudaGetLastError(); // as DDPRT_LAUNCH
  streamReadKernel<<<unsigned(blocks > 2112 ? 2112 : blocks), threadsPerBlock,
                     0, stream>>>(static_cast<const uint4 *>(scratch),
                                  vectors - 1, count, sink);
  return cudaGetLastError();
}
