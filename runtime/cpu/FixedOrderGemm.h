//===- FixedOrderGemm.h - GEMM whose every element has one sum order ------===//
//
// The CPU backend's matrix product. Every element of the result is
//
//   c[i][j] = fma(a[i][K-1], b[K-1][j], ... fma(a[i][1], b[1][j],
//                                           fma(a[i][0], b[0][j], 0)))
//
// one fused multiply-add per term, in ascending k, whatever the shape, the
// element's row or column, the blocking or the instruction set. So a GEMM on
// a block of rows gives bitwise the rows of the whole GEMM, which is what lets
// `ddp-run --verify` compare a step whose GEMMs were split into row chunks
// (ddp-overlap-tp-comm) with the unsplit step. OpenBLAS does not promise this
// and does not deliver it: its sgemm rounds a row differently depending on M
// and on where the row falls in the call (docs/Runtime.md, "GEMM").
//
// Each term is one IEEE fused multiply-add, so the same formula is exact on any
// hardware with FMA, a GPU's fmaf included.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CPU_FIXEDORDERGEMM_H
#define DDPRT_CPU_FIXEDORDERGEMM_H

#include <cstdint>

namespace ddprt::cpu {

/// Which code computes the product. The result is bitwise the same; only the
/// speed differs. `Best` takes the vector kernel when the CPU has AVX2 and FMA.
enum class GemmKernel { Best, Portable };

/// result (m x n, row-major) = op(lhs) * op(rhs), where op(lhs) is m x k and
/// op(rhs) is k x n; a transposed operand is stored row-major as its transpose
/// (lhs as k x m, rhs as n x k).
void fixedOrderGemm(bool transposeLhs, bool transposeRhs, int64_t m, int64_t n,
                    int64_t k, const float *lhs, const float *rhs,
                    float *result, GemmKernel kernel = GemmKernel::Best);
void fixedOrderGemm(bool transposeLhs, bool transposeRhs, int64_t m, int64_t n,
                    int64_t k, const double *lhs, const double *rhs,
                    double *result, GemmKernel kernel = GemmKernel::Best);

} // namespace ddprt::cpu

#endif // DDPRT_CPU_FIXEDORDERGEMM_H
