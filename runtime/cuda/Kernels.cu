//===- Kernels.cu - The CUDA backend's elementwise kernels ----------------===//
//
// Grid-stride loops over ElementOps.h. Compiled with --fmad=false (see
// runtime/CMakeLists.txt) so that no multiply-add is fused: the results
// match the CPU backend bitwise.
//
//===----------------------------------------------------------------------===//

#include "../Seed.h"
#include "Kernels.h"

#include <algorithm>
#include <type_traits>

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
__global__ void fillSeededKernel(T *data, int64_t numel, uint64_t key,
                                 bool fractions) {
  DDPRT_GRID_STRIDE(i, numel)
  data[i] = storeAs<T>(fractions ? seededFraction(key, uint64_t(i))
                                 : float(seededValue(key, uint64_t(i))));
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

/// N elements loaded and stored as one vector instruction: a kernel
/// streams at HBM's rate only in vectors of 8 or 16 bytes per thread, not
/// in 2-byte elements (docs/GpuCheck.md).
template <typename T, int N> struct alignas(N * sizeof(T)) Vector {
  T e[N];
};
template <typename T> using Quad = Vector<T, 4>;

inline bool isAligned(const void *data, size_t bytes) {
  return reinterpret_cast<uintptr_t>(data) % bytes == 0;
}

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
                                     const T *lhs, const T *rhs, T *result) {
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
        result[row * n + col] = storeAs<T>(acc[r][c]);
    }
}

} // namespace

cudaError_t cuda::fixedOrderGemm(bool transposeLhs, bool transposeRhs,
                                 int64_t m, int64_t n, int64_t k,
                                 const void *lhs, const void *rhs, void *result,
                                 DType dtype, cudaStream_t stream) {
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
        typed<T>(result));
    return cudaGetLastError();
  });
}

//===----------------------------------------------------------------------===//
// The compute stand-in in one pass
//===----------------------------------------------------------------------===//

namespace {

template <typename Acc>
__device__ Acc loadElement(const void *data, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F16:
    return loadAs<Acc>(static_cast<const Half *>(data)[i]);
  case DType::BF16:
    return loadAs<Acc>(static_cast<const BFloat16 *>(data)[i]);
  case DType::F32:
    return loadAs<Acc>(static_cast<const float *>(data)[i]);
  case DType::F64:
    break;
  }
  return loadAs<Acc>(static_cast<const double *>(data)[i]);
}

template <typename Acc>
__device__ void storeElement(void *data, DType dtype, int64_t i, Acc value) {
  switch (dtype) {
  case DType::F16:
    static_cast<Half *>(data)[i] = storeAs<Half>(value);
    return;
  case DType::BF16:
    static_cast<BFloat16 *>(data)[i] = storeAs<BFloat16>(value);
    return;
  case DType::F32:
    static_cast<float *>(data)[i] = storeAs<float>(value);
    return;
  case DType::F64:
    static_cast<double *>(data)[i] = storeAs<double>(value);
    return;
  }
}

constexpr int standInUnroll = 4;

/// i mod numel, for an i below `span`: no division where the input covers
/// the span, a 32-bit one where both fit (a 64-bit one is many times
/// slower on a GPU).
__device__ inline int64_t wrapIndex(int64_t i, int64_t numel, int64_t span) {
  if (numel >= span)
    return i;
  if (span <= INT32_MAX)
    return int64_t(uint32_t(i) % uint32_t(numel));
  return i % numel;
}

/// Element i of every result is (first input)[i % n0] + (second)[i % n1] +
/// ..., summed in Acc, as host::compute does. Each thread takes
/// standInUnroll elements a block apart and issues their loads of one input
/// together, so that enough loads are in flight to stream.
/// `args` is __grid_constant__: indexing its arrays with a loop variable
/// would otherwise make every thread copy the whole struct to local memory.
template <typename Acc>
__global__ void standInKernel(const __grid_constant__ cuda::StandInArgs args) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x * standInUnroll;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x * standInUnroll +
                      threadIdx.x;
       base < args.span; base += stride) {
    int64_t index[standInUnroll];
    Acc sum[standInUnroll];
    for (int u = 0; u < standInUnroll; ++u) {
      index[u] = base + int64_t(u) * blockDim.x;
      sum[u] = Acc(0);
    }
    for (int j = 0; j < args.numInputs; ++j) {
      const cuda::StandInTensor &input = args.inputs[j];
      Acc value[standInUnroll];
      for (int u = 0; u < standInUnroll; ++u)
        value[u] = index[u] < args.span
                       ? loadElement<Acc>(input.data, input.dtype,
                                          wrapIndex(index[u], input.numel,
                                                    args.span))
                       : Acc(0);
      for (int u = 0; u < standInUnroll; ++u)
        sum[u] = j == 0 ? value[u] : sum[u] + value[u];
    }
    for (int r = 0; r < args.numResults; ++r) {
      const cuda::StandInTensor &result = args.results[r];
      for (int u = 0; u < standInUnroll; ++u)
        if (index[u] < result.numel)
          storeElement<Acc>(const_cast<void *>(result.data), result.dtype,
                            index[u], sum[u]);
    }
  }
}

/// The 32-bit word `w` of eight consecutive elements held in 16-byte
/// vectors `v` (v[0] for 16-bit types, v[0..1] for f32, v[0..3] for f64).
/// Called with constant indices only, so that the vectors stay in registers
/// (a union indexed by a loop bound known at run time lives on the stack).
__device__ inline uint32_t word(const uint4 *v, int w) {
  const uint4 &q = v[w / 4];
  switch (w % 4) {
  case 0:
    return q.x;
  case 1:
    return q.y;
  case 2:
    return q.z;
  }
  return q.w;
}

__device__ inline void setWord(uint4 *v, int w, uint32_t value) {
  uint4 &q = v[w / 4];
  switch (w % 4) {
  case 0:
    q.x = value;
    return;
  case 1:
    q.y = value;
    return;
  case 2:
    q.z = value;
    return;
  }
  q.w = value;
}

/// Loads the `Vectors` 16-byte vectors of eight elements.
template <int Vectors>
__device__ inline void loadVectors(const void *data, int64_t octet,
                                   uint4 v[4]) {
  const uint4 *source = static_cast<const uint4 *>(data) + octet * Vectors;
#pragma unroll
  for (int k = 0; k < Vectors; ++k)
    v[k] = source[k];
}

template <int Vectors>
__device__ inline void storeVectors(void *data, int64_t octet,
                                    const uint4 v[4]) {
  uint4 *target = static_cast<uint4 *>(data) + octet * Vectors;
#pragma unroll
  for (int k = 0; k < Vectors; ++k)
    target[k] = v[k];
}

/// Eight 16-bit elements of type T from one vector, and back.
template <typename Acc, typename T>
__device__ inline void unpack16(const uint4 v[4], Acc out[8]) {
#pragma unroll
  for (int k = 0; k < 8; ++k)
    out[k] = loadAs<Acc>(T{uint16_t(word(v, k / 2) >> (16 * (k % 2)))});
}

template <typename T, typename Acc>
__device__ inline void pack16(const Acc in[8], uint4 v[4]) {
#pragma unroll
  for (int w = 0; w < 4; ++w)
    setWord(v, w,
            uint32_t(storeAs<T>(in[2 * w]).bits) |
                (uint32_t(storeAs<T>(in[2 * w + 1]).bits) << 16));
}

template <typename Acc>
__device__ inline void loadOctet(const void *data, DType dtype, int64_t octet,
                                 Acc out[8]) {
  uint4 v[4];
  switch (dtype) {
  case DType::F16:
    loadVectors<1>(data, octet, v);
    unpack16<Acc, Half>(v, out);
    return;
  case DType::BF16:
    loadVectors<1>(data, octet, v);
    unpack16<Acc, BFloat16>(v, out);
    return;
  case DType::F32:
    loadVectors<2>(data, octet, v);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      out[k] = loadAs<Acc>(__uint_as_float(word(v, k)));
    return;
  case DType::F64:
    loadVectors<4>(data, octet, v);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      out[k] = loadAs<Acc>(__hiloint2double(int(word(v, 2 * k + 1)),
                                            int(word(v, 2 * k))));
    return;
  }
}

template <typename Acc>
__device__ inline void storeOctet(void *data, DType dtype, int64_t octet,
                                  const Acc in[8]) {
  uint4 v[4];
  switch (dtype) {
  case DType::F16:
    pack16<Half>(in, v);
    storeVectors<1>(data, octet, v);
    return;
  case DType::BF16:
    pack16<BFloat16>(in, v);
    storeVectors<1>(data, octet, v);
    return;
  case DType::F32:
#pragma unroll
    for (int k = 0; k < 8; ++k)
      setWord(v, k, __float_as_uint(storeAs<float>(in[k])));
    storeVectors<2>(data, octet, v);
    return;
  case DType::F64:
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      double value = storeAs<double>(in[k]);
      setWord(v, 2 * k, uint32_t(__double2loint(value)));
      setWord(v, 2 * k + 1, uint32_t(__double2hiint(value)));
    }
    storeVectors<4>(data, octet, v);
    return;
  }
}

constexpr int octetUnroll = 2, uniformInputs = 4;

/// The octet of `input` that octet `octet` of the span reads.
__device__ inline int64_t sourceOctet(const cuda::StandInTensor &input,
                                      int64_t octet, int64_t span) {
  return input.numel >= span ? octet
                             : wrapIndex(octet * 8, input.numel, span) / 8;
}

/// standInKernel where the span and every result's and every shorter
/// input's numel are multiples of 8 (eight consecutive elements wrap and
/// end together) and every operand is 16-byte aligned: each thread sums
/// eight consecutive elements, loaded and stored as 16-byte vectors (2-byte
/// loads do not stream), octetUnroll octets a block apart with their loads
/// of one input issued together. The same sums. (standInUniformKernel
/// repeats its loop over the octets rather than share it through a lambda:
/// that changes the code ptxas makes for kernels measured on a GPU.)
template <typename Acc>
__global__ void
standInOctetKernel(const __grid_constant__ cuda::StandInArgs args) {
  int64_t octets = args.span / 8;
  int64_t stride = int64_t(gridDim.x) * blockDim.x * octetUnroll;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x * octetUnroll +
                      threadIdx.x;
       base < octets; base += stride) {
    int64_t octet[octetUnroll];
    bool live[octetUnroll];
    Acc sum[octetUnroll][8];
#pragma unroll
    for (int u = 0; u < octetUnroll; ++u) {
      octet[u] = base + int64_t(u) * blockDim.x;
      live[u] = octet[u] < octets;
#pragma unroll
      for (int k = 0; k < 8; ++k)
        sum[u][k] = Acc(0); // No inputs: zeros, as on the CPU.
    }
    for (int j = 0; j < args.numInputs; ++j) {
      const cuda::StandInTensor &input = args.inputs[j];
      Acc value[octetUnroll][8];
#pragma unroll
      for (int u = 0; u < octetUnroll; ++u)
        if (live[u])
          loadOctet<Acc>(input.data, input.dtype,
                         sourceOctet(input, octet[u], args.span), value[u]);
#pragma unroll
      for (int u = 0; u < octetUnroll; ++u)
#pragma unroll
        for (int k = 0; k < 8; ++k)
          sum[u][k] = j == 0 ? value[u][k] : sum[u][k] + value[u][k];
    }
    for (int r = 0; r < args.numResults; ++r)
#pragma unroll
      for (int u = 0; u < octetUnroll; ++u)
        if (octet[u] * 8 < args.results[r].numel)
          storeOctet<Acc>(const_cast<void *>(args.results[r].data),
                          args.results[r].dtype, octet[u], sum[u]);
  }
}

/// standInOctetKernel where every result is of the 16-bit type T and there
/// are 1 to uniformInputs inputs of type T or f32 (a transformer's
/// stand-ins: activations, and per-token f32 statistics short enough to
/// stay in cache): a thread issues the loads of all its T inputs' octets
/// before it sums any, 2 to 8 vectors in flight (80 registers: 768 threads
/// an SM; capping it at 64 spills). One at a time does not stream: the pass
/// above moved 1.5-1.9 TB/s on an H200, whose HBM gives 4.8
/// (docs/GpuCheck.md).
template <typename T>
__global__ void
standInUniformKernel(const __grid_constant__ cuda::StandInArgs args) {
  int64_t octets = args.span / 8;
  int64_t stride = int64_t(gridDim.x) * blockDim.x * octetUnroll;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x * octetUnroll +
                      threadIdx.x;
       base < octets; base += stride) {
    int64_t octet[octetUnroll];
    bool live[octetUnroll];
#pragma unroll
    for (int u = 0; u < octetUnroll; ++u) {
      octet[u] = base + int64_t(u) * blockDim.x;
      live[u] = octet[u] < octets;
    }
    // Indexed by constants only (unrolled loops), so held in registers.
    uint4 raw[uniformInputs][octetUnroll];
#pragma unroll
    for (int j = 0; j < uniformInputs; ++j)
      if (j < args.numInputs && args.inputs[j].dtype != DType::F32)
#pragma unroll
        for (int u = 0; u < octetUnroll; ++u)
          if (live[u])
            raw[j][u] = static_cast<const uint4 *>(args.inputs[j].data)
                [sourceOctet(args.inputs[j], octet[u], args.span)];
    float sum[octetUnroll][8];
#pragma unroll
    for (int j = 0; j < uniformInputs; ++j) {
      if (j >= args.numInputs)
        break;
      const cuda::StandInTensor &input = args.inputs[j];
#pragma unroll
      for (int u = 0; u < octetUnroll; ++u) {
        float value[8];
        if (!live[u])
          continue; // Past the span: nothing to load, nothing stored.
        if (input.dtype == DType::F32) {
          uint4 v[2];
          loadVectors<2>(input.data, sourceOctet(input, octet[u], args.span),
                         v);
#pragma unroll
          for (int k = 0; k < 8; ++k)
            value[k] = __uint_as_float(word(v, k));
        } else {
          unpack16<float, T>(&raw[j][u], value);
        }
#pragma unroll
        for (int k = 0; k < 8; ++k)
          sum[u][k] = j == 0 ? value[k] : sum[u][k] + value[k];
      }
    }
    uint4 packed[octetUnroll];
#pragma unroll
    for (int u = 0; u < octetUnroll; ++u)
      pack16<T>(sum[u], &packed[u]);
    for (int r = 0; r < args.numResults; ++r)
#pragma unroll
      for (int u = 0; u < octetUnroll; ++u)
        if (octet[u] * 8 < args.results[r].numel)
          static_cast<uint4 *>(const_cast<void *>(args.results[r].data))
              [octet[u]] = packed[u];
  }
}

/// standInUniformKernel where some input is shorter than the span and wraps
/// (a norm's weight, per-token statistics, an embedding's gradient's
/// tokens), without a division per octet and reading each short input's
/// octet once: the span is cut into rows of `rowOctets`, a multiple of the
/// longest short input's octets, and a thread takes one column of rows
/// `rowsPerBlock` at a time. A short input whose octets divide the row is
/// then at the same octet in every row: loaded once, held in registers. The
/// others step by the row modulo their length. Covering inputs stream,
/// wrapRows rows loaded together. The same sums, in the same order.
/// (Reading a 33.5 MB input 7.8 times through L2 made llama2-7b's
/// embedding_grad 2.09 of its price on an H100, its rmsnorm 1.35.)
constexpr int wrapRows = 2;

/// How standInWrapKernel cuts the span, a kernel parameter (in the constant
/// bank, not in registers: with them there it took 98 registers a thread).
struct WrapPlan {
  int64_t rowOctets = 0, rowsPerBlock = 0;
  /// Whether input j is shorter than the span and divides the row.
  bool held[uniformInputs] = {};
};

template <typename T>
__global__ void __launch_bounds__(threadsPerBlock, 3)
    standInWrapKernel(const __grid_constant__ cuda::StandInArgs args,
                      const WrapPlan plan) {
  int64_t column = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (column >= plan.rowOctets)
    return;
  int64_t rowsOctets = plan.rowsPerBlock * plan.rowOctets;
  int64_t first = int64_t(blockIdx.y) * rowsOctets + column;
  int64_t end = (int64_t(blockIdx.y) + 1) * rowsOctets;
  end = end < args.span / 8 ? end : args.span / 8;
  // The held octets, each thread's own, in shared memory: in registers
  // beside the streamed ones they spilled.
  __shared__ uint4 held[uniformInputs][2][threadsPerBlock];
  int t = threadIdx.x;
#pragma unroll
  for (int j = 0; j < uniformInputs; ++j) {
    if (j >= args.numInputs)
      break;
    const cuda::StandInTensor &input = args.inputs[j];
    if (!plan.held[j])
      continue;
    uint32_t at = uint32_t(uint64_t(first) % uint64_t(input.numel / 8));
    uint4 v[2];
    if (input.dtype == DType::F32)
      loadVectors<2>(input.data, at, v);
    else
      loadVectors<1>(input.data, at, v);
    held[j][0][t] = v[0];
    held[j][1][t] = v[1];
  }
  for (int64_t base = first; base < end; base += wrapRows * plan.rowOctets) {
    int64_t octet[wrapRows];
    bool live[wrapRows];
#pragma unroll
    for (int u = 0; u < wrapRows; ++u) {
      octet[u] = base + u * plan.rowOctets;
      live[u] = octet[u] < end;
    }
    // Indexed by constants only (unrolled loops), so held in registers.
    uint4 raw[uniformInputs][wrapRows];
#pragma unroll
    for (int j = 0; j < uniformInputs; ++j)
      if (j < args.numInputs && args.inputs[j].numel >= args.span &&
          args.inputs[j].dtype != DType::F32)
#pragma unroll
        for (int u = 0; u < wrapRows; ++u)
          if (live[u])
            raw[j][u] =
                static_cast<const uint4 *>(args.inputs[j].data)[octet[u]];
    float sum[wrapRows][8];
#pragma unroll
    for (int j = 0; j < uniformInputs; ++j) {
      if (j >= args.numInputs)
        break;
      const cuda::StandInTensor &input = args.inputs[j];
      bool covers = input.numel >= args.span;
#pragma unroll
      for (int u = 0; u < wrapRows; ++u) {
        if (!live[u])
          continue;
        uint4 v[2];
        if (covers && input.dtype != DType::F32) {
          v[0] = raw[j][u];
        } else if (plan.held[j]) {
          v[0] = held[j][0][t];
          v[1] = held[j][1][t];
        } else {
          // Covering f32, or short and not dividing the row (a division
          // a row; no transformer's stand-in has one).
          int64_t at = covers ? octet[u]
                              : int64_t(uint32_t(octet[u]) %
                                        uint32_t(input.numel / 8));
          if (input.dtype == DType::F32)
            loadVectors<2>(input.data, at, v);
          else
            loadVectors<1>(input.data, at, v);
        }
        float value[8];
        if (input.dtype == DType::F32) {
#pragma unroll
          for (int k = 0; k < 8; ++k)
            value[k] = __uint_as_float(word(v, k));
        } else {
          unpack16<float, T>(v, value);
        }
#pragma unroll
        for (int k = 0; k < 8; ++k)
          sum[u][k] = j == 0 ? value[k] : sum[u][k] + value[k];
      }
    }
    uint4 packed[wrapRows];
#pragma unroll
    for (int u = 0; u < wrapRows; ++u)
      pack16<T>(sum[u], &packed[u]);
    for (int r = 0; r < args.numResults; ++r)
#pragma unroll
      for (int u = 0; u < wrapRows; ++u)
        if (live[u] && octet[u] * 8 < args.results[r].numel)
          static_cast<uint4 *>(const_cast<void *>(args.results[r].data))
              [octet[u]] = packed[u];
  }
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

/// Launches standInWrapKernel where an input of a uniform stand-in is
/// shorter than its span; false where none is (or an octet index would not
/// fit 32 bits).
bool launchWrapKernel(const cuda::StandInArgs &args, DType type,
                      cudaStream_t stream) {
  int64_t octets = args.span / 8, longestShort = 0;
  bool empty = false;
  for (int j = 0; j < args.numInputs; ++j)
    if (args.inputs[j].numel < args.span) {
      longestShort = std::max(longestShort, args.inputs[j].numel / 8);
      empty |= args.inputs[j].numel == 0;
    }
  if (longestShort == 0 || empty || octets > int64_t(UINT32_MAX))
    return false;
  // A row at least a block wide, so that no block idles most of its threads.
  int64_t rowOctets =
      longestShort * ((threadsPerBlock + longestShort - 1) / longestShort);
  int64_t rows = (octets + rowOctets - 1) / rowOctets;
  int64_t columnBlocks = (rowOctets + threadsPerBlock - 1) / threadsPerBlock;
  // About as many blocks as the other passes launch (2048: several waves
  // on any GPU), in at most 65535 bands of rows.
  int64_t bands = std::min<int64_t>(
      std::min<int64_t>(std::max<int64_t>(2048 / columnBlocks, 1), rows),
      65535);
  int64_t rowsPerBlock = (rows + bands - 1) / bands;
  bands = (rows + rowsPerBlock - 1) / rowsPerBlock;
  WrapPlan plan;
  plan.rowOctets = rowOctets;
  plan.rowsPerBlock = rowsPerBlock;
  for (int j = 0; j < args.numInputs; ++j)
    plan.held[j] = args.inputs[j].numel < args.span &&
                   rowOctets % (args.inputs[j].numel / 8) == 0;
  dim3 grid{unsigned(columnBlocks), unsigned(bands)};
  if (type == DType::BF16)
    standInWrapKernel<BFloat16><<<grid, threadsPerBlock, 0, stream>>>(args, plan);
  else
    standInWrapKernel<Half><<<grid, threadsPerBlock, 0, stream>>>(args, plan);
  return true;
}

} // namespace

cudaError_t cuda::standIn(const StandInArgs &args, bool doubleAccumulator,
                          cudaStream_t stream) {
  if (args.span == 0)
    return cudaSuccess;
  bool octets = args.span % 8 == 0;
  for (int j = 0; j < args.numInputs; ++j)
    octets &= (args.inputs[j].numel >= args.span ||
               args.inputs[j].numel % 8 == 0) &&
              isAligned(args.inputs[j].data, 16);
  for (int r = 0; r < args.numResults; ++r)
    octets &= args.results[r].numel % 8 == 0 &&
              isAligned(args.results[r].data, 16);
  cudaGetLastError(); // as DDPRT_LAUNCH
  if (octets) {
    int64_t perBlock = int64_t(threadsPerBlock) * octetUnroll;
    int64_t blocks = (args.span / 8 + perBlock - 1) / perBlock;
    unsigned grid = unsigned(blocks > 8192 ? 8192 : blocks);
    // Results of one 16-bit type, inputs of it or f32: the kernel that
    // loads ahead.
    DType uniform = args.numResults > 0 ? args.results[0].dtype : DType::F32;
    bool isUniform = !doubleAccumulator && args.numInputs > 0 &&
                     args.numInputs <= uniformInputs &&
                     (uniform == DType::BF16 || uniform == DType::F16);
    for (int j = 0; j < args.numInputs; ++j)
      isUniform &= args.inputs[j].dtype == uniform ||
                   args.inputs[j].dtype == DType::F32;
    for (int r = 0; r < args.numResults; ++r)
      isUniform &= args.results[r].dtype == uniform;
    if (isUniform && launchWrapKernel(args, uniform, stream))
      return cudaGetLastError();
    if (isUniform && uniform == DType::BF16)
      standInUniformKernel<BFloat16>
          <<<grid, threadsPerBlock, 0, stream>>>(args);
    else if (isUniform)
      standInUniformKernel<Half><<<grid, threadsPerBlock, 0, stream>>>(args);
    else if (doubleAccumulator)
      standInOctetKernel<double><<<grid, threadsPerBlock, 0, stream>>>(args);
    else
      standInOctetKernel<float><<<grid, threadsPerBlock, 0, stream>>>(args);
    return cudaGetLastError();
  }
  int64_t perBlock = int64_t(threadsPerBlock) * standInUnroll;
  int64_t blocks = (args.span + perBlock - 1) / perBlock;
  unsigned grid = unsigned(blocks > 8192 ? 8192 : blocks);
  if (doubleAccumulator)
    standInKernel<double><<<grid, threadsPerBlock, 0, stream>>>(args);
  else
    standInKernel<float><<<grid, threadsPerBlock, 0, stream>>>(args);
  return cudaGetLastError();
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
