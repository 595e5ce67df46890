//===- BlasGemm.cpp - the CPU backend's GEMM through the system BLAS ------===//

#include "BlasGemm.h"

#include <algorithm>
#include <cstdlib>

#if DDPRT_HAVE_BLAS
#include <cblas.h>
#include <mutex>

// OpenBLAS's own call, weak so that another BLAS with cblas_* links too
// (the address is then null).
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
#endif

using namespace ddprt::cpu;

#if DDPRT_HAVE_BLAS

bool ddprt::cpu::haveBlas() { return true; }

const char *ddprt::cpu::blasName() { return "openblas"; }

namespace {
/// OpenBLAS starts a thread per core when it loads (OMP_NUM_THREADS and
/// GOTO_NUM_THREADS, which it also reads, are overridden too). The setting
/// is the process's: an embedder that wants more threads sets
/// OPENBLAS_NUM_THREADS.
void limitBlasThreads() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!std::getenv("OPENBLAS_NUM_THREADS") && openblas_set_num_threads)
      openblas_set_num_threads(1);
  });
}

CBLAS_TRANSPOSE trans(bool transpose) {
  return transpose ? CblasTrans : CblasNoTrans;
}

/// A leading dimension: the BLAS wants at least 1, even for an empty matrix.
int lead(int64_t columns) { return int(columns > 1 ? columns : 1); }

/// The cases a BLAS may reject (a zero leading dimension) or leave to its
/// own rules: nothing to write, or a sum of no terms, which is +0.
template <typename T>
bool handleEmpty(int64_t m, int64_t n, int64_t k, T *result) {
  if (m == 0 || n == 0)
    return true;
  if (k != 0)
    return false;
  std::fill(result, result + m * n, T(0));
  return true;
}
} // namespace

namespace {
/// `gemm` is cblas_sgemm or cblas_dgemm. The leading dimensions follow from
/// the stored layouts: lhs is m x k (k x m when transposed), rhs k x n
/// (n x k), all row-major. The caller keeps every dimension within int
/// (CpuBackend::gemm).
template <typename T, typename Gemm>
void multiply(Gemm gemm, bool transposeLhs, bool transposeRhs, int64_t m,
              int64_t n, int64_t k, const T *lhs, const T *rhs, T *result) {
  if (handleEmpty(m, n, k, result))
    return;
  limitBlasThreads();
  gemm(CblasRowMajor, trans(transposeLhs), trans(transposeRhs), int(m), int(n),
       int(k), T(1), lhs, lead(transposeLhs ? m : k), rhs,
       lead(transposeRhs ? k : n), T(0), result, lead(n));
}
} // namespace

void ddprt::cpu::blasGemm(bool transposeLhs, bool transposeRhs, int64_t m,
                          int64_t n, int64_t k, const float *lhs,
                          const float *rhs, float *result) {
  multiply(cblas_sgemm, transposeLhs, transposeRhs, m, n, k, lhs, rhs, result);
}

void ddprt::cpu::blasGemm(bool transposeLhs, bool transposeRhs, int64_t m,
                          int64_t n, int64_t k, const double *lhs,
                          const double *rhs, double *result) {
  multiply(cblas_dgemm, transposeLhs, transposeRhs, m, n, k, lhs, rhs, result);
}

#else // !DDPRT_HAVE_BLAS

bool ddprt::cpu::haveBlas() { return false; }

const char *ddprt::cpu::blasName() { return ""; }

void ddprt::cpu::blasGemm(bool, bool, int64_t, int64_t, int64_t,
                          const float *, const float *, float *) {
  std::abort(); // CpuBackend::gemm asks haveBlas() first.
}

void ddprt::cpu::blasGemm(bool, bool, int64_t, int64_t, int64_t,
                          const double *, const double *, double *) {
  std::abort();
}

#endif
