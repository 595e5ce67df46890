//===- FixedOrderGemmTest.cpp - The CPU GEMM's one sum order --------------===//
//
// Every element of the CPU backend's product must be the fma chain in
// ascending k (FixedOrderGemm.h): equal bitwise to the textbook loop, for
// every shape, transpose and kernel, and so the same for a block of rows as
// for the whole product. Random normal operands, so that the order of the
// roundings shows.
//
//===----------------------------------------------------------------------===//

#include "cpu/FixedOrderGemm.h"

#include "RandomValues.h"

#include "gtest/gtest.h"

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace ddprt::cpu;
using ddprt::test::randomValues;

namespace {

struct Shape {
  int64_t m, n, k;
  bool transposeLhs, transposeRhs;
  std::string str() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(k) + (transposeLhs ? " lhsT" : "") +
           (transposeRhs ? " rhsT" : "");
  }
};

/// The definition, written without blocking or vectors.
template <typename T>
std::vector<T> referenceProduct(const Shape &s, const std::vector<T> &lhs,
                                const std::vector<T> &rhs) {
  std::vector<T> result(size_t(s.m * s.n));
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        T a = s.transposeLhs ? lhs[size_t(p * s.m + i)] : lhs[size_t(i * s.k + p)];
        T b = s.transposeRhs ? rhs[size_t(j * s.k + p)] : rhs[size_t(p * s.n + j)];
        acc = std::fma(a, b, acc);
      }
      result[size_t(i * s.n + j)] = acc;
    }
  return result;
}

template <typename T> void expectReferenceProduct(const Shape &s) {
  std::vector<T> lhs = randomValues<T>(size_t(s.m * s.k), 1);
  std::vector<T> rhs = randomValues<T>(size_t(s.k * s.n), 2);
  std::vector<T> expected = referenceProduct(s, lhs, rhs);
  for (GemmKernel kernel : {GemmKernel::Best, GemmKernel::Portable}) {
    SCOPED_TRACE(s.str() + (kernel == GemmKernel::Best ? " best" : " portable"));
    // Poisoned: every element must be written, none kept.
    std::vector<T> result(expected.size(), T(NAN));
    fixedOrderGemm(s.transposeLhs, s.transposeRhs, s.m, s.n, s.k, lhs.data(),
                   rhs.data(), result.data(), kernel);
    ASSERT_EQ(0, std::memcmp(result.data(), expected.data(),
                             expected.size() * sizeof(T)));
  }
}

// Shapes around the 6 x 16 register tile, the 72-row and 256-deep blocks and
// the 3072-column block, each with all four transposes.
std::vector<Shape> edgeShapes() {
  std::vector<Shape> shapes;
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1},
                                                            {5, 15, 7},
                                                            {6, 16, 256},
                                                            {7, 17, 257},
                                                            {73, 33, 600},
                                                            {13, 3075, 20}})
    for (bool transposeLhs : {false, true})
      for (bool transposeRhs : {false, true})
        shapes.push_back({m, n, k, transposeLhs, transposeRhs});
  return shapes;
}

TEST(FixedOrderGemmTest, F32EqualsTheFmaChainInAscendingK) {
  for (const Shape &shape : edgeShapes())
    expectReferenceProduct<float>(shape);
}

TEST(FixedOrderGemmTest, F64EqualsTheFmaChainInAscendingK) {
  for (const Shape &shape : edgeShapes())
    expectReferenceProduct<double>(shape);
}

TEST(FixedOrderGemmTest, EmptyContractionIsZero) {
  std::vector<float> result(6, 7.0f);
  fixedOrderGemm(false, false, 2, 3, 0, nullptr, nullptr, result.data());
  EXPECT_EQ(result, std::vector<float>(6, 0.0f));
}

// What ddp-overlap-tp-comm relies on: rows [begin, end) of a product, computed
// on their own, are those rows of the whole product, for chunkings that cut
// through register tiles and row blocks (OpenBLAS fails both of these shapes).
TEST(FixedOrderGemmTest, RowChunksEqualTheWholeProduct) {
  for (auto [m, n, k] :
       std::vector<std::array<int64_t, 3>>{{48, 64, 32}, {256, 96, 1024}}) {
    for (bool transposeRhs : {false, true}) {
      std::vector<float> lhs = randomValues<float>(size_t(m * k), 3);
      std::vector<float> rhs = randomValues<float>(size_t(k * n), 4);
      std::vector<float> whole(size_t(m * n));
      fixedOrderGemm(false, transposeRhs, m, n, k, lhs.data(), rhs.data(),
                     whole.data());
      for (int64_t chunks : {2, 3, 5, 7}) {
        SCOPED_TRACE(std::to_string(m) + " rows in " + std::to_string(chunks) +
                     " chunks" + (transposeRhs ? ", rhsT" : ""));
        std::vector<float> chunked(whole.size(), NAN);
        for (int64_t c = 0; c < chunks; ++c) {
          int64_t begin = m * c / chunks, end = m * (c + 1) / chunks;
          fixedOrderGemm(false, transposeRhs, end - begin, n, k,
                         lhs.data() + begin * k, rhs.data(),
                         chunked.data() + begin * n);
        }
        EXPECT_EQ(0, std::memcmp(chunked.data(), whole.data(),
                                 whole.size() * sizeof(float)));
      }
    }
  }
}

} // namespace
