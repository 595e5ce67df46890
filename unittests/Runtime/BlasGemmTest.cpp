//===- BlasGemmTest.cpp - The CPU GEMM through the system BLAS ------------===//
//
// cpu/BlasGemm.h hands the CPU backend's products to OpenBLAS. Its results
// are not the fixed-order kernel's bits (that is why --verify keeps the
// kernel), so they are checked against it within a rounding bound, on every
// transpose, on shapes the leading dimensions get wrong when swapped, and on
// the empty shapes a BLAS rejects or leaves to its own rules.
//
//===----------------------------------------------------------------------===//

#include "cpu/BlasGemm.h"
#include "cpu/FixedOrderGemm.h"

#include "RandomValues.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <random>
#include <vector>

using namespace ddprt::cpu;
using ddprt::test::randomValues;

namespace {

template <typename T> void checkAgainstFixedOrder(double tolerance) {
  struct Shape {
    int64_t m, n, k;
  };
  // Non-square, so that a leading dimension taken from the wrong side
  // reads the wrong elements.
  for (Shape s : {Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{17, 4, 33},
                  Shape{64, 48, 100}, Shape{5, 130, 2}})
    for (bool transposeLhs : {false, true})
      for (bool transposeRhs : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << s.m << "x" << s.n << "x" << s.k << " lhsT="
                     << transposeLhs << " rhsT=" << transposeRhs);
        std::vector<T> lhs = randomValues<T>(size_t(s.m * s.k), 1);
        std::vector<T> rhs = randomValues<T>(size_t(s.k * s.n), 2);
        std::vector<T> expected(size_t(s.m * s.n)), actual(expected.size());
        fixedOrderGemm(transposeLhs, transposeRhs, s.m, s.n, s.k, lhs.data(),
                       rhs.data(), expected.data());
        blasGemm(transposeLhs, transposeRhs, s.m, s.n, s.k, lhs.data(),
                 rhs.data(), actual.data());
        for (size_t i = 0; i < expected.size(); ++i)
          ASSERT_NEAR(actual[i], expected[i],
                      tolerance * std::sqrt(double(s.k)) *
                          (1 + std::fabs(expected[i])))
              << "element " << i;
      }
}

TEST(BlasGemm, AgreesWithTheFixedOrderKernelWithinRounding) {
  if (!haveBlas())
    GTEST_SKIP() << "the runtime was built without a BLAS";
  checkAgainstFixedOrder<float>(1e-5);
  checkAgainstFixedOrder<double>(1e-13);
}

TEST(BlasGemm, EmptyShapes) {
  if (!haveBlas())
    GTEST_SKIP() << "the runtime was built without a BLAS";
  // k = 0: a sum of no terms is +0 over whatever the result held.
  std::vector<float> result(6, 7.0f);
  float one = 1;
  blasGemm(false, false, 2, 3, 0, &one, &one, result.data());
  for (float value : result) {
    EXPECT_EQ(value, 0.0f);
    EXPECT_FALSE(std::signbit(value));
  }
  // m = 0 or n = 0: nothing is written (a BLAS that rejected a leading
  // dimension of 0 would print an error; this checks only the result).
  std::vector<double> untouched(4, 3.0);
  blasGemm(false, true, 0, 2, 5, untouched.data(), untouched.data(),
           untouched.data());
  blasGemm(true, false, 2, 0, 5, untouched.data(), untouched.data(),
           untouched.data());
  for (double value : untouched)
    EXPECT_EQ(value, 3.0);
}

TEST(BlasGemm, OneThreadPerRankUnlessAsked) {
  if (!haveBlas() || std::getenv("OPENBLAS_NUM_THREADS"))
    GTEST_SKIP() << "no BLAS, or OPENBLAS_NUM_THREADS set";
  using GetThreads = int (*)();
  auto get = reinterpret_cast<GetThreads>(
      dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!get)
    GTEST_SKIP() << "the BLAS is not OpenBLAS";
  float a = 2, b = 3, c = 0;
  blasGemm(false, false, 1, 1, 1, &a, &b, &c);
  EXPECT_EQ(c, 6.0f);
  EXPECT_EQ(get(), 1);
}

} // namespace
