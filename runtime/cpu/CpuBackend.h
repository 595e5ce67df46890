//===- CpuBackend.h - The MPI + OpenBLAS backend ----------------*- C++ -*-===//
//
// Compute runs synchronously on the calling thread (the compute stream);
// every MPI call runs on the CommThread (the communication stream, trace
// stream 1). 16-bit reductions are done in f32, as MPI has no 16-bit float
// type: converted, reduced, rounded once. avg is a pre-multiplied sum: each
// rank's contribution is scaled by 1/n exactly as ddprt_scale does, then
// summed (docs/Runtime.md).
//
// Setup, memory and compute are in CpuBackend.cpp, the collectives in
// CpuCollectives.cpp; only createCpuBackend is seen outside them.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CPU_CPUBACKEND_H
#define DDPRT_CPU_CPUBACKEND_H

#include "../Backend.h"
#include "../HostKernels.h"
#include "../Mpi.h"
#include "../Trace.h"
#include "../Watchdog.h"
#include "CommThread.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace ddprt::cpu {

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(BackendEnv env)
      : env(env), comm(env.trace, env.watchdog) {}
  ~CpuBackend() override;

  Status start();

  int32_t getKind() const override { return DDPRT_BACKEND_CPU; }
  int getNumCommStreams() const override { return 1; }
  Status createGroup(const GroupLayout &layout,
                     const std::string &name) override;

  Status allocate(int64_t bytes, void **data) override;
  void deallocate(void *data) override { std::free(data); }
  Status copy(void *dst, const void *src, int64_t bytes) override;
  Status read(void *hostDst, const void *src, int64_t bytes) override;
  Status write(void *dst, const void *hostSrc, int64_t bytes) override;

  Status fillSeeded(const Tensor &tensor, uint64_t key) override;
  Status gemm(const GemmOp &op) override;
  Status route(const RouteOp &op) override;
  Status compute(const std::string &kind, const ComputeCost &cost, const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &results) override;
  Status accumulate(const Tensor &lhs, const void *rhs, void *result) override;
  Status scale(const Tensor &input, double factor, void *result) override;
  Status cast(const Tensor &input, DType resultType, void *result) override;
  Status findNonFinite(const Tensor &tensor, int64_t &index,
                       double &value) override;
  Status sgd(const Tensor &param, const Tensor &grad, double lr) override;
  Status adam(const Tensor &param, const Tensor &grad, float *moments,
              const AdamHyper &hyper, const AdamScalars &scalars,
              const Tensor *rounded) override;

  Status collective(const CollectiveOp &op,
                    std::unique_ptr<AsyncOp> *async) override;
  Status synchronize() override { return Status::ok(); }
  Status shutdown() override;

private:
  /// Runs `task` on the communication thread and waits for it.
  Status runOnCommThread(CommTask task);

  BackendEnv env;
  CommThread comm;
  /// Written by the communication thread (group creation), read by it only.
  std::vector<MPI_Comm> groups;
  /// f32 copies of 16-bit GEMM operands and the f32 product, kept between
  /// calls (compute thread only): fresh ones cost a page fault per 4 KiB,
  /// which for a full-width vocabulary GEMM (half a GiB of f32) was most of
  /// a step's time.
  std::vector<float> gemmLhs, gemmRhs, gemmProduct;
};

} // namespace ddprt::cpu

#endif // DDPRT_CPU_CPUBACKEND_H
