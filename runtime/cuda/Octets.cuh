//===- Octets.cuh - Eight elements as 16-byte vectors, in registers -------===//
//
// The stand-in's 16-byte passes (StandInKernels.cu) load and store eight
// consecutive elements of any dtype as one to four 16-byte vectors: a
// kernel streams at HBM's rate only in vectors, not in 2-byte elements
// (docs/GpuCheck.md). Included by StandInKernels.cu only.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CUDA_OCTETS_CUH
#define DDPRT_CUDA_OCTETS_CUH

#include "../Element.h"
#include "../ElementOps.h"

#include <cuda_bf16.h>

#include <cstring>

namespace ddprt::cuda {

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

/// pack16 of floats, in the passes whose results are of one 16-bit type
/// (standInUniformKernel, standInWrapKernel). For bf16 by the GPU's
/// conversion of two at once (one instruction, where floatToBFloat16 takes
/// several an element: those passes issue about as many instructions as
/// HBM gives them time for, and this made llama2-7b's memory-bound kinds
/// 3-8 % faster on an H100). Both round to nearest even; only a NaN
/// differs (the GPU's is canonical, the CPU's keeps the payload), so an
/// octet holding one takes the CPU's way. (The any-dtype pass keeps
/// pack16: with this it measured 1357 GB/s against 1962, once.)
template <typename T>
__device__ inline void packFloats(const float in[8], uint4 v[4]) {
  pack16<T>(in, v);
}

template <>
__device__ inline void packFloats<BFloat16>(const float in[8], uint4 v[4]) {
  bool nan = false;
#pragma unroll
  for (int k = 0; k < 8; ++k)
    nan |= in[k] != in[k];
  if (nan) {
    pack16<BFloat16>(in, v);
    return;
  }
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    __nv_bfloat162 pair = __floats2bfloat162_rn(in[2 * w], in[2 * w + 1]);
    uint32_t bits;
    memcpy(&bits, &pair, sizeof bits);
    setWord(v, w, bits);
  }
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

} // namespace ddprt::cuda

#endif // DDPRT_CUDA_OCTETS_CUH
