//===- HostKernelsTest.cpp - The CPU compute stand-in's sums --------------===//
//
// host::compute sums its inputs, each read at i % its length, in cache-sized
// blocks when no result shares bytes with an input and in one pass over
// each input otherwise. Both must give the bits of the definition: the sum
// in the accumulation type, inputs in order, the first taken as it is (so
// -0 stays -0). Checked on results longer than a block, inputs whose length
// does not divide it, mixed types, no inputs, and a result in place; and
// bounded (DDPRT_FLAG_BOUNDED_VALUES), each sum less its nearest multiple
// of 8 before its rounding.
//
//===----------------------------------------------------------------------===//

#include "HostKernels.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

using namespace ddprt;

namespace {

/// The definition, element by element.
/// Bounded (DDPRT_FLAG_BOUNDED_VALUES, result number `bounded`): input j
/// weighed by j + 1, the result's number added, then less the nearest
/// multiple of 8.
template <typename Acc, typename R>
std::vector<R> definition(const std::vector<Tensor> &inputs, int64_t numel,
                          std::optional<int64_t> bounded = std::nullopt) {
  std::vector<R> out(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    Acc sum = 0;
    for (size_t j = 0; j < inputs.size(); ++j)
      dispatchDType(inputs[j].dtype, [&](auto tag) {
        using T = decltype(tag);
        Acc value = loadAs<Acc>(
            static_cast<const T *>(inputs[j].data)[i % inputs[j].numel]);
        sum = j == 0 ? value : sum + (bounded ? Acc(j + 1) : Acc(1)) * value;
      });
    if (bounded) {
      sum += Acc(*bounded);
      sum -= Acc(8) * std::nearbyint(sum / Acc(8));
    }
    out[size_t(i)] = storeAs<R>(sum);
  }
  return out;
}

template <typename T>
std::vector<T> randomValues(int64_t count, unsigned seed, double scale = 1) {
  std::mt19937 generator(seed);
  std::normal_distribution<double> normal(0, scale);
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
  // Unbounded, and bounded as the op's results number 0 and 3.
  for (std::optional<int64_t> bounded :
       {std::optional<int64_t>(), std::optional<int64_t>(0),
        std::optional<int64_t>(3)}) {
    SCOPED_TRACE(bounded ? "bounded result " + std::to_string(*bounded)
                         : "unbounded");
    Inputs in;
    std::vector<float> f32(5000);
    host::compute(in.tensors(), {f32.data(), DType::F32, 5000}, bounded);
    EXPECT_TRUE(sameBits(definition<float, float>(in.tensors(), 5000, bounded),
                         f32.data(), f32.size()));
    // Whatever the later inputs add, the first element starts from -0
    // (which the bound makes +0, as the definition does).
    std::vector<double> f64(4100);
    host::compute(in.tensors(), {f64.data(), DType::F64, 4100}, bounded);
    EXPECT_TRUE(
        sameBits(definition<double, double>(in.tensors(), 4100, bounded),
                 f64.data(), f64.size()));
    std::vector<Half> f16(2049);
    host::compute(in.tensors(), {f16.data(), DType::F16, 2049}, bounded);
    EXPECT_TRUE(sameBits(definition<float, Half>(in.tensors(), 2049, bounded),
                         f16.data(), f16.size()));
  }
}

TEST(HostCompute, BoundedSumsStayBelowFiveAndKeepTheirResidue) {
  // Sums far outside [-4, 4] (the inputs' scale is 100): each lands in it,
  // an integer sum on its residue modulo 8, a fraction exactly (the bound
  // subtracts a multiple of 8 and nothing else).
  std::vector<float> big = randomValues<float>(3000, 4, 100);
  for (size_t i = 0; i < 1000; ++i)
    big[i] = std::round(big[i]);
  std::vector<float> out(3000);
  host::compute({{big.data(), DType::F32, 3000}},
                {out.data(), DType::F32, 3000}, std::optional<int64_t>(0));
  int moved = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_LE(std::fabs(out[i]), 4.0f) << i;
    double multiples = (double(big[i]) - double(out[i])) / 8;
    ASSERT_EQ(multiples, std::round(multiples)) << i << ": " << big[i];
    moved += out[i] != big[i];
  }
  EXPECT_GT(moved, 2500);
  EXPECT_EQ(boundElement(4.0f), 4.0f); // ties to even: 4/8 rounds to 0
  EXPECT_EQ(boundElement(12.0f), -4.0f);
  EXPECT_EQ(boundElement(-13.0), 3.0);
  EXPECT_TRUE(std::isnan(boundElement(INFINITY)));
}

TEST(HostCompute, BoundedResultsAndInputsAreTold) {
  // Bounded, a stand-in's results differ by their number and its inputs
  // weigh by theirs: swapping two results, or two inputs, shows.
  std::vector<float> x = {1, 2, 3}, y = {5, 7, 11};
  std::vector<float> xy(3), yx(3), second(3);
  Tensor tx{x.data(), DType::F32, 3}, ty{y.data(), DType::F32, 3};
  std::optional<int64_t> first = 0, secondResult = 1;
  host::compute({tx, ty}, {xy.data(), DType::F32, 3}, first);
  host::compute({ty, tx}, {yx.data(), DType::F32, 3}, first);
  host::compute({tx, ty}, {second.data(), DType::F32, 3}, secondResult);
  // 1 + 2 x 5 = 11 -> 3, 2 + 14 = 16 -> 0, 3 + 22 = 25 -> 1; 5 + 2 = 7 ->
  // -1, 7 + 4 = 11 -> 3, 11 + 6 = 17 -> 1; one more for result 1.
  EXPECT_EQ(xy, (std::vector<float>{3, 0, 1}));
  EXPECT_EQ(yx, (std::vector<float>{-1, 3, 1}));
  EXPECT_EQ(second, (std::vector<float>{-4, 1, 2})); // 12: a tie, to even
}

TEST(HostCompute, NoInputsGivePositiveZeros) {
  std::vector<float> out(3000, -1.0f);
  host::compute({}, {out.data(), DType::F32, 3000}, std::nullopt);
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
  host::compute(tensors, {in.first.data(), DType::F32, 5000}, std::nullopt);
  EXPECT_TRUE(sameBits(expected, in.first.data(), in.first.size()));
}

} // namespace
