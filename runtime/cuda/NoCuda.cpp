//===- NoCuda.cpp - Answers for a library built without CUDA --------------===//
//
// Compiled instead of the CUDA backend when CMake found no CUDA toolkit or
// no NCCL, so that asking for the CUDA backend is a clear error.
//
//===----------------------------------------------------------------------===//

#include "../Backend.h"

using namespace ddprt;

bool ddprt::isCudaBackendBuilt() { return false; }

bool ddprt::isCudaDeviceAvailable(std::string &why) {
  why = "libddprt was built without the CUDA backend (CMake found no CUDA "
        "toolkit or no NCCL; see docs/Runtime.md)";
  return false;
}

std::unique_ptr<Backend> ddprt::createCudaBackend(BackendEnv, Status &status) {
  std::string why;
  isCudaDeviceAvailable(why);
  status = makeError(DDPRT_ERROR_UNAVAILABLE, why);
  return nullptr;
}
