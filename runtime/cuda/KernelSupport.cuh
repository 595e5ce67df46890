//===- KernelSupport.cuh - What the CUDA kernel files share ---------------===//
//
// Included by the CUDA kernel files only.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CUDA_KERNELSUPPORT_CUH
#define DDPRT_CUDA_KERNELSUPPORT_CUH

#include <cstddef>
#include <cstdint>

namespace ddprt::cuda {

/// Threads per block of every elementwise and stand-in kernel.
constexpr int threadsPerBlock = 256;

inline bool isAligned(const void *data, size_t bytes) {
  return reinterpret_cast<uintptr_t>(data) % bytes == 0;
}

/// The blocks of an elementwise kernel over `numel` elements: one thread
/// each, at most 8192 blocks (the grid-stride loop covers the rest).
inline unsigned blocksFor(int64_t numel) {
  int64_t blocks = (numel + threadsPerBlock - 1) / threadsPerBlock;
  return unsigned(blocks < 1 ? 1 : blocks > 8192 ? 8192 : blocks);
}

/// Element `i` of `numel`, over the whole grid, as many times as it takes.
#define DDPRT_GRID_STRIDE(i, numel)                                            \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;             \
       i < (numel); i += int64_t(gridDim.x) * blockDim.x)

} // namespace ddprt::cuda

#endif // DDPRT_CUDA_KERNELSUPPORT_CUH
