//===- FixedOrderGemm.cpp - GEMM whose every element has one sum order ----===//
//
// A GotoBLAS-style blocked product (pack a k-block of the right operand into
// column panels, pack a block of rows of the left operand, run a register
// micro-kernel over every panel pair). The blocking only decides which
// elements are computed together, never the order of one element's terms:
// k-blocks run in ascending order, and a block's partial sums are stored in
// the result exactly and carried into the next one. Padding rows and columns
// of the packed panels are zeros whose results are thrown away.
//
//===----------------------------------------------------------------------===//

#include "FixedOrderGemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DDPRT_HAVE_FMA_CLONE 1
#endif

using namespace ddprt::cpu;

namespace {

// Register tile (rows x columns of the result) and cache blocks. 6 x 16 f32
// is twelve 8-lane accumulators, as in BLIS's Haswell kernel; a 256-deep
// packed panel of 16 columns is 16 KiB, half an L1.
template <typename T> struct Tile;
template <> struct Tile<float> {
  static constexpr int rows = 6, cols = 16;
};
template <> struct Tile<double> {
  static constexpr int rows = 6, cols = 8;
};
constexpr int64_t depthBlock = 256;  // k per packed panel
constexpr int64_t rowBlock = 72;     // rows of the left operand packed at once
constexpr int64_t columnBlock = 3072; // columns of the right operand packed

template <typename T> struct Operands {
  bool transposeLhs, transposeRhs;
  int64_t m, n, k;
  const T *lhs, *rhs;
  T *result;
  T lhsAt(int64_t row, int64_t depth) const {
    return transposeLhs ? lhs[depth * m + row] : lhs[row * k + depth];
  }
  T rhsAt(int64_t depth, int64_t column) const {
    return transposeRhs ? rhs[column * k + depth] : rhs[depth * n + column];
  }
};

/// One tile: acc = (first ? 0 : c) then acc = fma(a[kk], b[kk], acc) for
/// kk = 0..depth-1. `a` holds `depth` groups of R values (one per row), `b`
/// `depth` groups of C values (one per column). Written as plain loops of
/// std::fma: exact everywhere, fast only where the compiler inlines it.
template <typename T, int R, int C>
[[gnu::always_inline]] inline void tileBody(int64_t depth, const T *a,
                                            const T *b, T *c, int64_t ldc,
                                            int rows, int cols, bool first) {
  T acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int col = 0; col < C; ++col)
      acc[r][col] = (first || r >= rows || col >= cols) ? T(0)
                                                         : c[r * ldc + col];
  for (int64_t kk = 0; kk < depth; ++kk) {
    const T *bRow = b + kk * C;
    const T *aCol = a + kk * R;
    for (int r = 0; r < R; ++r)
      for (int col = 0; col < C; ++col)
        acc[r][col] = std::fma(aCol[r], bRow[col], acc[r][col]);
  }
  for (int r = 0; r < rows; ++r)
    for (int col = 0; col < cols; ++col)
      c[r * ldc + col] = acc[r][col];
}

template <typename T>
void tilePortable(int64_t depth, const T *a, const T *b, T *c, int64_t ldc,
                  int rows, int cols, bool first) {
  tileBody<T, Tile<T>::rows, Tile<T>::cols>(depth, a, b, c, ldc, rows, cols,
                                            first);
}

#ifdef DDPRT_HAVE_FMA_CLONE
/// 8-lane f32 or 4-lane f64 AVX2 vectors, for the one tile below.
template <typename T> struct Avx2;
template <> struct Avx2<float> {
  using Vec = __m256;
  static constexpr int lanes = 8;
  [[gnu::target("avx2,fma")]] static Vec zero() { return _mm256_setzero_ps(); }
  [[gnu::target("avx2,fma")]] static Vec load(const float *p) {
    return _mm256_loadu_ps(p);
  }
  [[gnu::target("avx2,fma")]] static void store(float *p, Vec v) {
    _mm256_storeu_ps(p, v);
  }
  [[gnu::target("avx2,fma")]] static Vec broadcast(const float *p) {
    return _mm256_broadcast_ss(p);
  }
  [[gnu::target("avx2,fma")]] static Vec fma(Vec a, Vec b, Vec c) {
    return _mm256_fmadd_ps(a, b, c);
  }
};
template <> struct Avx2<double> {
  using Vec = __m256d;
  static constexpr int lanes = 4;
  [[gnu::target("avx2,fma")]] static Vec zero() { return _mm256_setzero_pd(); }
  [[gnu::target("avx2,fma")]] static Vec load(const double *p) {
    return _mm256_loadu_pd(p);
  }
  [[gnu::target("avx2,fma")]] static void store(double *p, Vec v) {
    _mm256_storeu_pd(p, v);
  }
  [[gnu::target("avx2,fma")]] static Vec broadcast(const double *p) {
    return _mm256_broadcast_sd(p);
  }
  [[gnu::target("avx2,fma")]] static Vec fma(Vec a, Vec b, Vec c) {
    return _mm256_fmadd_pd(a, b, c);
  }
};

/// The tile with AVX2 + FMA: twelve accumulators (two vectors per row), two
/// loads of the right panel and six broadcasts of the left one per k. Every
/// lane does the same fma chain as tileBody.
template <typename T>
[[gnu::target("avx2,fma")]] void tileFma(int64_t depth, const T *a,
                                         const T *b, T *c, int64_t ldc,
                                         int rows, int cols, bool first) {
  using V = Avx2<T>;
  constexpr int R = Tile<T>::rows, C = Tile<T>::cols, L = V::lanes;
  static_assert(C == 2 * L, "two vectors per row");
  T edge[R][C];
  bool full = rows == R && cols == C;
  typename V::Vec acc[R][2];
  for (int r = 0; r < R; ++r) {
    if (first) {
      acc[r][0] = acc[r][1] = V::zero();
      continue;
    }
    const T *source = c + r * ldc;
    if (!full) {
      for (int col = 0; col < C; ++col)
        edge[r][col] = (r < rows && col < cols) ? c[r * ldc + col] : T(0);
      source = edge[r];
    }
    acc[r][0] = V::load(source);
    acc[r][1] = V::load(source + L);
  }
  for (int64_t kk = 0; kk < depth; ++kk) {
    typename V::Vec b0 = V::load(b + kk * C), b1 = V::load(b + kk * C + L);
    const T *aCol = a + kk * R;
    for (int r = 0; r < R; ++r) {
      typename V::Vec ar = V::broadcast(aCol + r);
      acc[r][0] = V::fma(ar, b0, acc[r][0]);
      acc[r][1] = V::fma(ar, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < rows; ++r) {
    T *target = full ? c + r * ldc : edge[r];
    V::store(target, acc[r][0]);
    V::store(target + L, acc[r][1]);
    if (!full)
      for (int col = 0; col < cols; ++col)
        c[r * ldc + col] = edge[r][col];
  }
}
#endif

template <typename T>
using TileFn = void (*)(int64_t, const T *, const T *, T *, int64_t, int, int,
                        bool);

template <typename T> TileFn<T> selectTile(GemmKernel kernel) {
#ifdef DDPRT_HAVE_FMA_CLONE
  if (kernel == GemmKernel::Best && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma"))
    return tileFma<T>;
#endif
  (void)kernel;
  return tilePortable<T>;
}

template <typename T>
void blockedGemm(const Operands<T> &op, GemmKernel kernel) {
  constexpr int R = Tile<T>::rows, C = Tile<T>::cols;
  TileFn<T> tile = selectTile<T>(kernel);
  // The packed blocks of one call (thread_local: several contexts of one
  // process may multiply at once).
  thread_local std::vector<T> packedRhs, packedLhs;
  for (int64_t n0 = 0; n0 < op.n; n0 += columnBlock) {
    int64_t nc = std::min(columnBlock, op.n - n0);
    int64_t panels = (nc + C - 1) / C;
    for (int64_t k0 = 0; k0 < op.k; k0 += depthBlock) {
      int64_t kc = std::min(depthBlock, op.k - k0);
      bool first = k0 == 0;
      packedRhs.resize(size_t(panels * kc * C));
      // The loop order follows the operand's storage so that reads are
      // contiguous; writes stay inside one L1-sized panel.
      auto packRhs = [&](int64_t p, int64_t kk, int col) {
        int64_t column = n0 + p * C + col;
        packedRhs[size_t((p * kc + kk) * C + col)] =
            column < n0 + nc ? op.rhsAt(k0 + kk, column) : T(0);
      };
      for (int64_t p = 0; p < panels; ++p) {
        if (op.transposeRhs) {
          for (int col = 0; col < C; ++col)
            for (int64_t kk = 0; kk < kc; ++kk)
              packRhs(p, kk, col);
        } else {
          for (int64_t kk = 0; kk < kc; ++kk)
            for (int col = 0; col < C; ++col)
              packRhs(p, kk, col);
        }
      }
      for (int64_t m0 = 0; m0 < op.m; m0 += rowBlock) {
        int64_t mc = std::min(rowBlock, op.m - m0);
        int64_t groups = (mc + R - 1) / R;
        packedLhs.resize(size_t(groups * kc * R));
        auto packLhs = [&](int64_t g, int64_t kk, int r) {
          int64_t row = m0 + g * R + r;
          packedLhs[size_t((g * kc + kk) * R + r)] =
              row < m0 + mc ? op.lhsAt(row, k0 + kk) : T(0);
        };
        for (int64_t g = 0; g < groups; ++g) {
          if (op.transposeLhs) {
            for (int64_t kk = 0; kk < kc; ++kk)
              for (int r = 0; r < R; ++r)
                packLhs(g, kk, r);
          } else {
            for (int r = 0; r < R; ++r)
              for (int64_t kk = 0; kk < kc; ++kk)
                packLhs(g, kk, r);
          }
        }
        for (int64_t p = 0; p < panels; ++p) {
          int cols = int(std::min<int64_t>(C, nc - p * C));
          for (int64_t g = 0; g < groups; ++g) {
            int rows = int(std::min<int64_t>(R, mc - g * R));
            T *c = op.result + (m0 + g * R) * op.n + n0 + p * C;
            tile(kc, packedLhs.data() + g * kc * R,
                 packedRhs.data() + p * kc * C, c, op.n, rows, cols, first);
          }
        }
      }
    }
  }
}

template <typename T>
void gemmImpl(bool transposeLhs, bool transposeRhs, int64_t m, int64_t n,
              int64_t k, const T *lhs, const T *rhs, T *result,
              GemmKernel kernel) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::fill(result, result + m * n, T(0));
    return;
  }
  blockedGemm<T>({transposeLhs, transposeRhs, m, n, k, lhs, rhs, result},
                 kernel);
}

} // namespace

void ddprt::cpu::fixedOrderGemm(bool transposeLhs, bool transposeRhs,
                                int64_t m, int64_t n, int64_t k,
                                const float *lhs, const float *rhs,
                                float *result, GemmKernel kernel) {
  gemmImpl(transposeLhs, transposeRhs, m, n, k, lhs, rhs, result, kernel);
}

void ddprt::cpu::fixedOrderGemm(bool transposeLhs, bool transposeRhs,
                                int64_t m, int64_t n, int64_t k,
                                const double *lhs, const double *rhs,
                                double *result, GemmKernel kernel) {
  gemmImpl(transposeLhs, transposeRhs, m, n, k, lhs, rhs, result, kernel);
}
