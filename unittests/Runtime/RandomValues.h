//===- RandomValues.h - Normal random operands for kernel tests -*- C++ -*-===//
//
// Operands whose sums round differently in every order, so that a test of a
// GEMM's order of summation shows it. Shared by the GEMM tests.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_UNITTESTS_RANDOMVALUES_H
#define DDPRT_UNITTESTS_RANDOMVALUES_H

#include <random>
#include <vector>

namespace ddprt::test {

template <typename T> std::vector<T> randomValues(size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<T> normal;
  std::vector<T> values(count);
  for (T &value : values)
    value = normal(generator);
  return values;
}

} // namespace ddprt::test

#endif // DDPRT_UNITTESTS_RANDOMVALUES_H
