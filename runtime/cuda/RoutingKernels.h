//===- RoutingKernels.h - ddprt_route on a CUDA device ----------*- C++ -*-===//
//
// Launchers for the kernels in RoutingKernels.cu, each on the given stream.
// They compute what HostRouting.cpp computes, to the bit (Routing.h).
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CUDA_ROUTINGKERNELS_H
#define DDPRT_CUDA_ROUTINGKERNELS_H

#include "../Backend.h"

#include <cuda_runtime.h>

namespace ddprt::cuda {

/// One kernel of ddprt_route, its dimensions already checked (RouteOp).
cudaError_t route(const RouteOp &op, cudaStream_t stream);

} // namespace ddprt::cuda

#endif // DDPRT_CUDA_ROUTINGKERNELS_H
