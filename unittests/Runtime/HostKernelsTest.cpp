//===- HostKernelsTest.cpp - The CPU compute stand-in's sums --------------===//
//
// host::compute sums its inputs, each read at i % its length, in cache-sized
// blocks when no result shares bytes with an input and in one pass over
// each input otherwise. Both must give the bits of the definition: the sum
// in the accumulation type, inputs in order, the first taken as it is (so
// -0 stays -0). Checked on results longer than a block, inputs whose length
// does not divide it, mixed types, no inputs, and a result in place.
//
//===----------------------------------------------------------------------===//

#include "HostKernels.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace ddprt;

namespace {

/// The definition, element by element.
template <typename Acc, typename R>
std::vector<R> definition(const std::vector<Tensor> &inputs, int64_t numel) {
  std::vector<R> out(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    Acc sum = 0;
    for (size_t j = 0; j < inputs.size(); ++j)
      dispatchDType(inputs[j].dtype, [&](auto tag) {
        using T = decltype(tag);
        Acc value = loadAs<Acc>(
            static_cast<const T *>(inputs[j].data)[i % inputs[j].numel]);
        sum = j == 0 ? value : sum + value;
      });
    out[size_t(i)] = storeAs<R>(sum);
  }
  return out;
}

template <typename T> std::vector<T> randomValues(int64_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<double> normal;
  std::vector<T> values(static_cast<size_t>(count));
  for (T &value : values)
    value = storeAs<T>(normal(generator));
  return values;
}

struct Inputs {
  // First an f32 input as long as the result, which starts with -0; then
  // lengths that do not divide the 2048-element blocks.
  std::vector<float> first = randomValues<float>(5000, 1);
  std::vector<BFloat16> second = randomValues<BFloat16>(3, 2);
  std::vector<double> third = randomValues<double>(2047, 3);
  Inputs() { first[0] = -0.0f; }
  std::vector<Tensor> tensors() {
    return {{first.data(), DType::F32, int64_t(first.size())},
            {second.data(), DType::BF16, int64_t(second.size())},
            {third.data(), DType::F64, int64_t(third.size())}};
  }
};

template <typename T>
bool sameBits(const std::vector<T> &a, const T *b, size_t count) {
  return a.size() == count && std::memcmp(a.data(), b, count * sizeof(T)) == 0;
}

TEST(HostCompute, BlocksGiveTheDefinitionsBits) {
  Inputs in;
  std::vector<float> f32(5000);
  host::compute(in.tensors(), {f32.data(), DType::F32, 5000});
  EXPECT_TRUE(sameBits(definition<float, float>(in.tensors(), 5000),
                       f32.data(), f32.size()));
  // Whatever the later inputs add, the first element starts from -0.
  std::vector<double> f64(4100);
  host::compute(in.tensors(), {f64.data(), DType::F64, 4100});
  EXPECT_TRUE(sameBits(definition<double, double>(in.tensors(), 4100),
                       f64.data(), f64.size()));
  std::vector<Half> f16(2049);
  host::compute(in.tensors(), {f16.data(), DType::F16, 2049});
  EXPECT_TRUE(sameBits(definition<float, Half>(in.tensors(), 2049),
                       f16.data(), f16.size()));
}

TEST(HostCompute, NoInputsGivePositiveZeros) {
  std::vector<float> out(3000, -1.0f);
  host::compute({}, {out.data(), DType::F32, 3000});
  for (float value : out) {
    ASSERT_EQ(value, 0.0f);
    ASSERT_FALSE(std::signbit(value));
  }
}

TEST(HostCompute, AResultInPlaceReadsEveryInputFirst) {
  // The result is the first input, and a second, shorter input is a view
  // of its start: every value read must be the one from before the call.
  Inputs in;
  std::vector<Tensor> tensors = in.tensors();
  tensors[1] = {in.first.data(), DType::F32, 7};
  std::vector<float> before = in.first;
  std::vector<Tensor> copies = {{before.data(), DType::F32, 5000},
                                {before.data(), DType::F32, 7},
                                tensors[2]};
  std::vector<float> expected = definition<float, float>(copies, 5000);
  host::compute(tensors, {in.first.data(), DType::F32, 5000});
  EXPECT_TRUE(sameBits(expected, in.first.data(), in.first.size()));
}

} // namespace
