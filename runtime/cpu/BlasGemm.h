//===- BlasGemm.h - the CPU backend's GEMM through the system BLAS --------===//
//
// The CPU backend multiplies with the system's BLAS (OpenBLAS on Debian) when
// the runtime was built with one, except under DDPRT_FLAG_FIXED_ORDER_GEMM,
// which `ddp-run --verify` sets: a BLAS rounds a row differently depending on
// the call's shape (docs/Runtime.md, "GEMM"), so a step whose GEMMs were
// split into row chunks is compared with the fixed-order kernel
// (FixedOrderGemm.h). A run that measures speed takes the BLAS, 1.6-2.5x
// faster on this project's machine.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CPU_BLASGEMM_H
#define DDPRT_CPU_BLASGEMM_H

#include <cstdint>

namespace ddprt::cpu {

/// Whether this build of the runtime has a BLAS (CMake's DDPRT_ENABLE_BLAS
/// found one).
bool haveBlas();

/// The BLAS's name for traces and messages ("openblas"), or "" without one.
const char *blasName();

/// result (m x n, row-major) = op(lhs) * op(rhs), with the operand layouts of
/// fixedOrderGemm. Only with haveBlas(). The first call limits OpenBLAS to
/// one thread per rank unless OPENBLAS_NUM_THREADS says otherwise: ranks
/// already take one core each, and more threads would compete with them.
void blasGemm(bool transposeLhs, bool transposeRhs, int64_t m, int64_t n,
              int64_t k, const float *lhs, const float *rhs, float *result);
void blasGemm(bool transposeLhs, bool transposeRhs, int64_t m, int64_t n,
              int64_t k, const double *lhs, const double *rhs, double *result);

} // namespace ddprt::cpu

#endif // DDPRT_CPU_BLASGEMM_H
