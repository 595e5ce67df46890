//===- KernelSupport.cuh - What the CUDA kernel files share ---------------===//
//
// Included by Kernels.cu and StandInKernels.cu only.
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

} // namespace ddprt::cuda

#endif // DDPRT_CUDA_KERNELSUPPORT_CUH
