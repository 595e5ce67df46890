//===- StandInKernels.cu - The compute stand-in's one pass ----------------===//
//
// cuda::standIn (Kernels.h): result[i] = input0[i % n0] + input1[i % n1] +
// ..., summed as host::compute sums, bitwise; element by element, in
// 16-byte vectors of eight elements (Octets.cuh), and by rows where an
// input wraps. Compiled with --fmad=false, as Kernels.cu.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.cuh"
#include "Kernels.h"
#include "Octets.cuh"

#include <algorithm>

using namespace ddprt;
using namespace ddprt::cuda;

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
      Acc weight = args.bounded ? standInWeight<Acc>(j) : Acc(1);
      for (int u = 0; u < standInUnroll; ++u)
        sum[u] = j == 0 ? value[u] : sum[u] + weight * value[u];
    }
    for (int r = 0; r < args.numResults; ++r) {
      const cuda::StandInTensor &result = args.results[r];
      for (int u = 0; u < standInUnroll; ++u)
        if (index[u] < result.numel)
          storeElement<Acc>(
              const_cast<void *>(result.data), result.dtype, index[u],
              args.bounded ? boundStandIn(sum[u], int64_t(args.resultIndex[r]))
                           : sum[u]);
    }
  }
}

constexpr int octetUnroll = 2, uniformInputs = 4;

/// Eight f32 elements from the two 16-byte vectors that hold them.
__device__ inline void unpackF32(const uint4 v[2], float value[8]) {
#pragma unroll
  for (int k = 0; k < 8; ++k)
    value[k] = __uint_as_float(word(v, k));
}

/// An input's eight values into the sums, in input order as host::compute
/// adds them (the first input's are the sums).
__device__ inline void addInto(float sum[8], const float value[8],
                               bool first) {
#pragma unroll
  for (int k = 0; k < 8; ++k)
    sum[k] = first ? value[k] : sum[k] + value[k];
}

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
          unpackF32(v, value);
        } else {
          unpack16<float, T>(&raw[j][u], value);
        }
        addInto(sum[u], value, j == 0);
      }
    }
    uint4 packed[octetUnroll];
#pragma unroll
    for (int u = 0; u < octetUnroll; ++u)
      packFloats<T>(sum[u], &packed[u]);
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
/// octet from HBM once: the span is cut into rows of `rowOctets`, a
/// multiple of the longest short input's octets, and a thread takes one
/// column of rows `rowsPerBlock` at a time. A short input whose octets
/// divide the row ("held") is then at the same octet in every row, which
/// the thread reads again from L1; where every input is held, the thread
/// sums once and stores every row. Other short inputs are read at their
/// wrapped octet. Covering inputs stream, wrapRows rows loaded together.
/// The same sums, in the same order. On an H100 this took llama2-7b's
/// embedding_grad from 2.03 of its price to 1.02 and cross_entropy_grad
/// from 1.70 to 1.39 (docs/GpuCheck.md). Holding the octets in shared
/// memory instead made every such kind slower (rmsnorm 1.49 against 1.37).
constexpr int wrapRows = 2;

/// How standInWrapKernel cuts the span, a kernel parameter (in the constant
/// bank: per-input offsets and steps in registers took 98 a thread, and
/// above 80 an SM holds 2 blocks of 256 instead of 3).
struct WrapPlan {
  int64_t rowOctets = 0, rowsPerBlock = 0;
  /// Whether input j is shorter than the span and divides the row.
  bool held[uniformInputs] = {};
  /// Whether every input is: then every row has the same sums.
  bool allHeld = false;
};

/// Octet `at` of a short input (T or f32) as floats, through L1: no result
/// overlaps a short input (onePassIsSafe), so it is read only.
template <typename T>
__device__ inline void loadShortOctet(const cuda::StandInTensor &input,
                                      int64_t at, float value[8]) {
  const uint4 *source = static_cast<const uint4 *>(input.data);
  if (input.dtype == DType::F32) {
    uint4 v[2] = {__ldg(source + 2 * at), __ldg(source + 2 * at + 1)};
    unpackF32(v, value);
  } else {
    uint4 v[1] = {__ldg(source + at)};
    unpack16<float, T>(v, value);
  }
}

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
  // A held input's octet, the same in every row: read from HBM once, then
  // from L1 (the thread's own 16 or 32 bytes).
  uint32_t heldAt[uniformInputs] = {};
#pragma unroll
  for (int j = 0; j < uniformInputs; ++j)
    if (j < args.numInputs && plan.held[j])
      heldAt[j] =
          uint32_t(uint64_t(first) % uint64_t(args.inputs[j].numel / 8));
  if (plan.allHeld) {
    // An embedding's gradient: its column's sums once, stored every row.
    float sum[8];
#pragma unroll
    for (int j = 0; j < uniformInputs; ++j) {
      if (j >= args.numInputs)
        break;
      float value[8];
      loadShortOctet<T>(args.inputs[j], heldAt[j], value);
      addInto(sum, value, j == 0);
    }
    uint4 packed;
    packFloats<T>(sum, &packed);
    for (int64_t octet = first; octet < end; octet += plan.rowOctets)
      for (int r = 0; r < args.numResults; ++r)
        if (octet * 8 < args.results[r].numel)
          static_cast<uint4 *>(const_cast<void *>(args.results[r].data))
              [octet] = packed;
    return;
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
        float value[8];
        if (covers && input.dtype != DType::F32) {
          unpack16<float, T>(&raw[j][u], value);
        } else if (covers) {
          uint4 v[2];
          loadVectors<2>(input.data, octet[u], v);
          unpackF32(v, value);
        } else {
          // Held, or short and not dividing the row (a division a row; no
          // transformer's stand-in has one).
          loadShortOctet<T>(input,
                            plan.held[j] ? int64_t(heldAt[j])
                                         : int64_t(uint32_t(octet[u]) %
                                                   uint32_t(input.numel / 8)),
                            value);
        }
        addInto(sum[u], value, j == 0);
      }
    }
    uint4 packed[wrapRows];
#pragma unroll
    for (int u = 0; u < wrapRows; ++u)
      packFloats<T>(sum[u], &packed[u]);
    for (int r = 0; r < args.numResults; ++r)
#pragma unroll
      for (int u = 0; u < wrapRows; ++u)
        if (live[u] && octet[u] * 8 < args.results[r].numel)
          static_cast<uint4 *>(const_cast<void *>(args.results[r].data))
              [octet[u]] = packed[u];
  }
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
  plan.allHeld = std::all_of(plan.held, plan.held + args.numInputs,
                             [](bool held) { return held; });
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
  // Bounded sums (verification, not speed) by the element-wise pass only.
  if (octets && !args.bounded) {
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
