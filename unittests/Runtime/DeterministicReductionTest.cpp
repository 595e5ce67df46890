//===- DeterministicReductionTest.cpp - Rank-ordered reductions -----------===//
//
// Under DDPRT_FLAG_DETERMINISTIC_REDUCTIONS every element of an all-reduce or
// reduce-scatter is the sum of the group's contributions in pairs of
// neighbouring group ranks, level by level, in the accumulation type,
// whatever the message size. The values are chosen so that the order shows:
// in f32, 1e8 + 1 is 1e8, so (1e8 + 1) + (-1e8 + 1) is 0, the left fold
// ((1e8 + 1) + -1e8) + 1 is 1 and (1e8 + -1e8) + 1 + 1 is 2. avg is the
// same fold of the contributions pre-scaled by 1/n in their own type; the
// suite also runs on 3 ranks, where 1/3 is inexact.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestSupport.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <vector>

using namespace ddprt::test;

namespace {

double roundTo(int32_t dtype, double value) {
  return decode(dtype, encode(dtype, {value}))[0];
}

/// What group rank `g` contributes at element i: a large value, a small
/// one, the large one negated, a small one, ... so that any order but the
/// rank order gives other bits.
double contribution(int32_t dtype, int g, int64_t i) {
  double large = dtype == DDPRT_DTYPE_F64 ? 1e17 : 1e8;
  double small = 1.0 + double(i % 3);
  switch (g % 4) {
  case 0:
    return large;
  case 2:
    return -large;
  default:
    return small;
  }
}

/// What group rank `g` adds in: its contribution in `dtype`, for avg first
/// multiplied by 1/ranks (rounded to Acc) in Acc and rounded to `dtype`, as
/// ddprt_scale does.
template <typename Acc>
Acc operand(int32_t dtype, int ranks, int g, int64_t i, int32_t reduction) {
  Acc value = Acc(roundTo(dtype, contribution(dtype, g, i)));
  if (reduction == DDPRT_REDUCTION_AVG)
    value = Acc(roundTo(dtype, double(value * Acc(1.0 / double(ranks)))));
  return value;
}

/// The sum in pairs of neighbouring group ranks, level by level (an odd
/// last one carried up), in the accumulation type, rounded once to `dtype`.
template <typename Acc>
double foldByRankPairs(int32_t dtype, int ranks, int64_t i,
                       int32_t reduction) {
  std::vector<Acc> level;
  for (int g = 0; g < ranks; ++g)
    level.push_back(operand<Acc>(dtype, ranks, g, i, reduction));
  for (size_t count = level.size(); count > 1; count = (count + 1) / 2) {
    for (size_t pair = 0; pair < count / 2; ++pair) {
      Acc a = level[2 * pair], b = level[2 * pair + 1];
      level[pair] = reduction == DDPRT_REDUCTION_MAX ? std::max(a, b) : a + b;
    }
    if (count % 2 != 0)
      level[count / 2] = level[count - 1];
  }
  return roundTo(dtype, double(level[0]));
}

/// The expected reduction of every element index: contribution() depends
/// on the index only through i % 3, so three folds cover any message. (A
/// fold per element would round-trip through encode/decode a million times,
/// which takes minutes under AddressSanitizer.)
class ExpectedElements {
public:
  ExpectedElements(int32_t dtype, int ranks, int32_t reduction) {
    for (int64_t i = 0; i < 3; ++i)
      byResidue[size_t(i)] =
          dtype == DDPRT_DTYPE_F64
              ? foldByRankPairs<double>(dtype, ranks, i, reduction)
              : foldByRankPairs<float>(dtype, ranks, i, reduction);
  }
  double operator()(int64_t i) const { return byResidue[size_t(i % 3)]; }

private:
  std::array<double, 3> byResidue;
};

using Params = std::tuple<int32_t, const char *, int32_t, bool, int64_t>;

class DeterministicReductionTest
    : public RuntimeSuite,
      public ::testing::WithParamInterface<Params> {
protected:
  static void SetUpTestSuite() {
    startContext(DDPRT_FLAG_RETURN_ERRORS |
                 DDPRT_FLAG_DETERMINISTIC_REDUCTIONS);
  }
};

TEST_P(DeterministicReductionTest, AllReduceAddsInPairsOfGroupRanks) {
  auto [dtype, axes, reduction, async, numel] = GetParam();
  ExpectedGroup group = expectedGroup(axes);
  int ranks = int(group.members.size());
  ExpectedElements expectedAt(dtype, ranks, reduction);
  std::vector<double> mine(static_cast<size_t>(numel)),
      expected(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    mine[size_t(i)] = contribution(dtype, group.rank, i);
    expected[size_t(i)] = expectedAt(i);
  }
  void *data = upload(dtype, mine);
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context, ddprt_all_reduce(context, groupOf(axes), reduction,
                                            dtype, numel, data, data,
                                            async ? &handle : nullptr));
  if (async) {
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  }
  EXPECT_EQ(download(dtype, data, numel), expected);
  DDPRT_EXPECT_OK(context, ddprt_free(context, data));
}

TEST_P(DeterministicReductionTest, ReduceScatterAddsInPairsOfGroupRanks) {
  auto [dtype, axes, reduction, async, numel] = GetParam();
  ExpectedGroup group = expectedGroup(axes);
  int ranks = int(group.members.size());
  int64_t total = numel * ranks;
  std::vector<double> mine(static_cast<size_t>(total)),
      expected(static_cast<size_t>(numel));
  for (int64_t i = 0; i < total; ++i)
    mine[size_t(i)] = contribution(dtype, group.rank, i);
  ExpectedElements expectedAt(dtype, ranks, reduction);
  for (int64_t i = 0; i < numel; ++i)
    expected[size_t(i)] = expectedAt(group.rank * numel + i);
  void *input = upload(dtype, mine);
  void *result = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, numel, &result));
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context, ddprt_reduce_scatter(context, groupOf(axes),
                                                reduction, dtype, numel, input,
                                                result,
                                                async ? &handle : nullptr));
  if (async) {
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  }
  EXPECT_EQ(download(dtype, result, numel), expected);
  DDPRT_EXPECT_OK(context, ddprt_free(context, result));
  DDPRT_EXPECT_OK(context, ddprt_free(context, input));
}

std::string paramName(const ::testing::TestParamInfo<Params> &info) {
  auto [dtype, axes, reduction, async, numel] = info.param;
  std::string name = std::string(dtypeLabel(dtype)) + "_" + axes + "_" +
                     (reduction == DDPRT_REDUCTION_SUM   ? "sum"
                      : reduction == DDPRT_REDUCTION_AVG ? "avg"
                                                         : "max") +
                     (async ? "_async_" : "_sync_") + std::to_string(numel);
  for (char &c : name)
    if (c == ',')
      c = '_';
  return name;
}

// A message of 3 elements and one of 100003, large enough that MPI would
// reduce it with another algorithm than the small one.
INSTANTIATE_TEST_SUITE_P(
    All, DeterministicReductionTest,
    ::testing::Combine(
        ::testing::Values(DDPRT_DTYPE_BF16, DDPRT_DTYPE_F32, DDPRT_DTYPE_F64),
        ::testing::Values("dp", "dp,tp", "tp,dp"),
        ::testing::Values(DDPRT_REDUCTION_SUM, DDPRT_REDUCTION_AVG,
                          DDPRT_REDUCTION_MAX),
        ::testing::Bool(), ::testing::Values(int64_t(3), int64_t(100003))),
    paramName);

} // namespace
