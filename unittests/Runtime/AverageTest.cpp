//===- AverageTest.cpp - avg is scale(1/n) followed by a sum --------------===//
//
// The runtime defines an avg reduction as NCCL defines ncclAvg for floating
// point: every contribution is first multiplied by 1/n, then summed. It
// scales with ddprt_scale's own kernel, so an avg equals ddprt_scale(1/n)
// followed by a sum bitwise, for every group size and dtype; that is what a
// bucketed step (ddp.scale + sum, Megatron's default) relies on to match
// the unscheduled step (avg). The contributions have fractional parts and
// the suite runs on 3 ranks too, where 1/n is inexact and dividing the sum
// instead would round differently.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestSupport.h"

#include <tuple>

using namespace ddprt::test;

namespace {

/// What world rank `rank` contributes at element i: not a multiple of 3.
double contribution(int rank, int64_t i) {
  return double((rank * 7 + i * 13) % 23 - 11) * 0.37 + 0.01 * double(i % 5);
}

enum class Kind { AllReduce, ReduceScatter };

using Params = std::tuple<int32_t, const char *, Kind, bool>;

std::string paramName(const ::testing::TestParamInfo<Params> &info) {
  auto [dtype, axes, kind, async] = info.param;
  std::string name =
      std::string(dtypeLabel(dtype)) + "_" + axes +
      (kind == Kind::AllReduce ? "_all_reduce" : "_reduce_scatter") +
      (async ? "_async" : "_sync");
  for (char &c : name)
    if (c == ',')
      c = '_';
  return name;
}

class AverageSuite : public RuntimeSuite,
                     public ::testing::WithParamInterface<Params> {
protected:
  static std::vector<char> readBytes(const void *data, int64_t bytes) {
    std::vector<char> copy(size_t(bytes), 0);
    EXPECT_EQ(ddprt_read(context, copy.data(), data, bytes), DDPRT_OK)
        << ddprt_last_error(context);
    return copy;
  }

  /// The reduction of this rank's contribution (`reduction` over the group
  /// of `axes`), in its raw bytes.
  std::vector<char> reduce(int32_t reduction, const void *input) {
    auto [dtype, axes, kind, async] = GetParam();
    void *result = nullptr;
    EXPECT_EQ(ddprt_alloc(context, dtype, numel, &result), DDPRT_OK)
        << ddprt_last_error(context);
    ddprt_handle handle = 0;
    ddprt_handle *handlePointer = async ? &handle : nullptr;
    int32_t group = groupOf(axes);
    if (kind == Kind::AllReduce) {
      DDPRT_EXPECT_OK(context,
                      ddprt_all_reduce(context, group, reduction, dtype, numel,
                                       input, result, handlePointer));
    } else {
      DDPRT_EXPECT_OK(context, ddprt_reduce_scatter(context, group, reduction,
                                                    dtype, numel, input, result,
                                                    handlePointer));
    }
    if (async) {
      DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
    }
    std::vector<char> bytes = readBytes(result, numel * dtypeSize(dtype));
    DDPRT_EXPECT_OK(context, ddprt_free(context, result));
    return bytes;
  }

  void checkAverageIsScaledSum() {
    auto [dtype, axes, kind, async] = GetParam();
    int64_t ranks = int64_t(expectedGroup(axes).members.size());
    int64_t inputNumel = kind == Kind::AllReduce ? numel : numel * ranks;
    std::vector<double> mine(static_cast<size_t>(inputNumel));
    for (int64_t i = 0; i < inputNumel; ++i)
      mine[size_t(i)] = contribution(worldRank(), i);
    void *input = upload(dtype, mine);
    void *scaled = nullptr;
    DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, inputNumel, &scaled));
    DDPRT_EXPECT_OK(context, ddprt_scale(context, dtype, inputNumel, input,
                                         1.0 / double(ranks), scaled));
    std::vector<char> average = reduce(DDPRT_REDUCTION_AVG, input);
    std::vector<char> scaledSum = reduce(DDPRT_REDUCTION_SUM, scaled);
    EXPECT_EQ(average, scaledSum)
        << "avg over " << ranks
        << " ranks: " << ::testing::PrintToString(decode(dtype, average))
        << " vs scale(1/" << ranks
        << ") + sum: " << ::testing::PrintToString(decode(dtype, scaledSum));
    // The input is left alone.
    EXPECT_EQ(download(dtype, input, inputNumel),
              decode(dtype, encode(dtype, mine)));
    DDPRT_EXPECT_OK(context, ddprt_free(context, scaled));
    DDPRT_EXPECT_OK(context, ddprt_free(context, input));
  }

  static constexpr int64_t numel = 1031;
};

class AverageTest : public AverageSuite {};

TEST_P(AverageTest, EqualsScaleThenSumBitwise) { checkAverageIsScaledSum(); }

/// The same under DDPRT_FLAG_DETERMINISTIC_REDUCTIONS (ddp-run --verify),
/// where the sum is a fold in group-rank order.
class DeterministicAverageTest : public AverageSuite {
protected:
  static void SetUpTestSuite() {
    startContext(DDPRT_FLAG_RETURN_ERRORS |
                 DDPRT_FLAG_DETERMINISTIC_REDUCTIONS);
  }
};

TEST_P(DeterministicAverageTest, EqualsScaleThenSumBitwise) {
  checkAverageIsScaledSum();
}

const auto allParams = ::testing::Combine(
    ::testing::Values(DDPRT_DTYPE_F16, DDPRT_DTYPE_BF16, DDPRT_DTYPE_F32,
                      DDPRT_DTYPE_F64),
    ::testing::Values("dp", "tp", "dp,tp"),
    ::testing::Values(Kind::AllReduce, Kind::ReduceScatter), ::testing::Bool());

INSTANTIATE_TEST_SUITE_P(All, AverageTest, allParams, paramName);
INSTANTIATE_TEST_SUITE_P(All, DeterministicAverageTest, allParams, paramName);

} // namespace
