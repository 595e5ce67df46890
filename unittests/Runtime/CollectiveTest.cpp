//===- CollectiveTest.cpp - Every collective x dtype x reduction ----------===//
//
// Each rank contributes small integers that depend on its world rank; the
// expected results are computed by hand from the group layout and compared
// bitwise (all values, sums and averages here are exact in every type).
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestSupport.h"

#include <algorithm>
#include <tuple>

using namespace ddprt::test;

namespace {

const int32_t allDTypes[] = {DDPRT_DTYPE_F16, DDPRT_DTYPE_BF16, DDPRT_DTYPE_F32,
                             DDPRT_DTYPE_F64};
const char *allGroups[] = {"dp", "tp", "dp,tp", "tp,dp"};

/// What world rank `rank` contributes at element i.
double contribution(int rank, int64_t i) {
  return double((rank * 7 + i * 3) % 11) - 5.0;
}

std::vector<double> contributions(int rank, int64_t numel) {
  std::vector<double> values(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i)
    values[size_t(i)] = contribution(rank, i);
  return values;
}

/// Elementwise sum (or average, or maximum) over the group's members.
std::vector<double> reduced(const ExpectedGroup &group, int64_t numel,
                            int32_t reduction) {
  if (reduction == DDPRT_REDUCTION_MAX) {
    std::vector<double> max(static_cast<size_t>(numel), -1e300);
    for (int member : group.members)
      for (int64_t i = 0; i < numel; ++i)
        max[size_t(i)] = std::max(max[size_t(i)], contribution(member, i));
    return max;
  }
  std::vector<double> sum(static_cast<size_t>(numel), 0.0);
  for (int member : group.members)
    for (int64_t i = 0; i < numel; ++i)
      sum[size_t(i)] += contribution(member, i);
  if (reduction == DDPRT_REDUCTION_AVG)
    for (double &value : sum)
      value /= double(group.members.size());
  return sum;
}

enum class Placement { Separate, InPlace };

using ReduceParams =
    std::tuple<int32_t, const char *, int32_t, bool, Placement>;

std::string reduceName(const ::testing::TestParamInfo<ReduceParams> &info) {
  auto [dtype, group, reduction, async, placement] = info.param;
  std::string name = std::string(dtypeLabel(dtype)) + "_" + group + "_" +
                     (reduction == DDPRT_REDUCTION_SUM   ? "sum"
                      : reduction == DDPRT_REDUCTION_AVG ? "avg"
                                                         : "max") +
                     (async ? "_async" : "_sync") +
                     (placement == Placement::InPlace ? "_inplace" : "");
  for (char &c : name)
    if (c == ',')
      c = '_';
  return name;
}

class AllReduceTest : public RuntimeSuite,
                      public ::testing::WithParamInterface<ReduceParams> {};

TEST_P(AllReduceTest, MatchesTheHandComputedReduction) {
  auto [dtype, axes, reduction, async, placement] = GetParam();
  const int64_t numel = 1031;
  ExpectedGroup expected = expectedGroup(axes);
  void *input = upload(dtype, contributions(ddprt::test::worldRank(), numel));
  void *result = input;
  if (placement == Placement::Separate) {
    DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, numel, &result));
  }
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context, ddprt_all_reduce(context, groupOf(axes), reduction,
                                            dtype, numel, input, result,
                                            async ? &handle : nullptr));
  if (async) {
    EXPECT_NE(handle, 0u);
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  }
  EXPECT_EQ(download(dtype, result, numel),
            reduced(expected, numel, reduction));
  if (placement == Placement::Separate) {
    // The input is left alone.
    EXPECT_EQ(download(dtype, input, numel),
              contributions(ddprt::test::worldRank(), numel));
    DDPRT_EXPECT_OK(context, ddprt_free(context, result));
  }
  DDPRT_EXPECT_OK(context, ddprt_free(context, input));
}

INSTANTIATE_TEST_SUITE_P(
    All, AllReduceTest,
    ::testing::Combine(
        ::testing::ValuesIn(allDTypes), ::testing::ValuesIn(allGroups),
        ::testing::Values(DDPRT_REDUCTION_SUM, DDPRT_REDUCTION_AVG,
                          DDPRT_REDUCTION_MAX),
        ::testing::Bool(),
        ::testing::Values(Placement::Separate, Placement::InPlace)),
    reduceName);

class ReduceScatterTest : public RuntimeSuite,
                          public ::testing::WithParamInterface<ReduceParams> {};

TEST_P(ReduceScatterTest, KeepsThisRanksSliceOfTheReduction) {
  auto [dtype, axes, reduction, async, placement] = GetParam();
  const int64_t numel = 257; // per rank
  ExpectedGroup expected = expectedGroup(axes);
  int64_t groupSize = int64_t(expected.members.size());
  int64_t total = numel * groupSize;
  void *input = upload(dtype, contributions(ddprt::test::worldRank(), total));
  // In place: the result is this rank's slice of the input buffer, as a
  // distributed optimizer reduces into its shard of the bucket.
  char *result =
      static_cast<char *>(input) + expected.rank * numel * dtypeSize(dtype);
  void *separate = nullptr;
  if (placement == Placement::Separate) {
    DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, numel, &separate));
    result = static_cast<char *>(separate);
  }
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context, ddprt_reduce_scatter(
                               context, groupOf(axes), reduction, dtype, numel,
                               input, result, async ? &handle : nullptr));
  if (async) {
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  }
  std::vector<double> full = reduced(expected, total, reduction);
  std::vector<double> slice(full.begin() + expected.rank * numel,
                            full.begin() + (expected.rank + 1) * numel);
  EXPECT_EQ(download(dtype, result, numel), slice);
  DDPRT_EXPECT_OK(context, ddprt_free(context, separate));
  DDPRT_EXPECT_OK(context, ddprt_free(context, input));
}

INSTANTIATE_TEST_SUITE_P(
    All, ReduceScatterTest,
    ::testing::Combine(
        ::testing::ValuesIn(allDTypes), ::testing::ValuesIn(allGroups),
        ::testing::Values(DDPRT_REDUCTION_SUM, DDPRT_REDUCTION_AVG,
                          DDPRT_REDUCTION_MAX),
        ::testing::Bool(),
        ::testing::Values(Placement::Separate, Placement::InPlace)),
    reduceName);

using GatherParams = std::tuple<int32_t, const char *, bool, Placement>;

std::string gatherName(const ::testing::TestParamInfo<GatherParams> &info) {
  auto [dtype, group, async, placement] = info.param;
  std::string name = std::string(dtypeLabel(dtype)) + "_" + group +
                     (async ? "_async" : "_sync") +
                     (placement == Placement::InPlace ? "_inplace" : "");
  for (char &c : name)
    if (c == ',')
      c = '_';
  return name;
}

class AllGatherTest : public RuntimeSuite,
                      public ::testing::WithParamInterface<GatherParams> {};

TEST_P(AllGatherTest, ConcatenatesInGroupOrder) {
  auto [dtype, axes, async, placement] = GetParam();
  const int64_t numel = 129;
  ExpectedGroup expected = expectedGroup(axes);
  int64_t groupSize = int64_t(expected.members.size());
  std::vector<double> mine = contributions(ddprt::test::worldRank(), numel);
  void *result = nullptr;
  DDPRT_ASSERT_OK(context,
                  ddprt_alloc(context, dtype, numel * groupSize, &result));
  void *input = nullptr;
  if (placement == Placement::InPlace) {
    // This rank's part is already in its slot of the result.
    input =
        static_cast<char *>(result) + expected.rank * numel * dtypeSize(dtype);
    std::vector<char> bytes = encode(dtype, mine);
    DDPRT_EXPECT_OK(context, ddprt_write(context, input, bytes.data(),
                                         int64_t(bytes.size())));
  } else {
    input = upload(dtype, mine);
  }
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context,
                  ddprt_all_gather(context, groupOf(axes), dtype, numel, input,
                                   result, async ? &handle : nullptr));
  if (async) {
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  }
  std::vector<double> gathered;
  for (int member : expected.members) {
    std::vector<double> part = contributions(member, numel);
    gathered.insert(gathered.end(), part.begin(), part.end());
  }
  EXPECT_EQ(download(dtype, result, numel * groupSize), gathered);
  if (placement == Placement::Separate) {
    DDPRT_EXPECT_OK(context, ddprt_free(context, input));
  }
  DDPRT_EXPECT_OK(context, ddprt_free(context, result));
}

INSTANTIATE_TEST_SUITE_P(
    All, AllGatherTest,
    ::testing::Combine(::testing::ValuesIn(allDTypes),
                       ::testing::ValuesIn(allGroups), ::testing::Bool(),
                       ::testing::Values(Placement::Separate,
                                         Placement::InPlace)),
    gatherName);

using RingParams = std::tuple<int32_t, const char *, int64_t>;

class SendRecvTest : public RuntimeSuite,
                     public ::testing::WithParamInterface<RingParams> {};

TEST_P(SendRecvTest, RingExchangeByRelativeOffset) {
  auto [dtype, axes, offset] = GetParam();
  ExpectedGroup expected = expectedGroup(axes);
  int64_t n = int64_t(expected.members.size());
  if (n < 2 || offset % n == 0)
    GTEST_SKIP() << "group '" << axes << "' of " << n
                 << " rank(s) has no peer at offset " << offset;
  const int64_t numel = 4099;
  void *input = upload(dtype, contributions(ddprt::test::worldRank(), numel));
  void *result = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, numel, &result));
  // Send `offset` ahead and receive from `offset` behind, both in flight at
  // once: issued one after the other they must not deadlock.
  ddprt_handle sent = 0, received = 0;
  DDPRT_EXPECT_OK(context, ddprt_send(context, groupOf(axes), offset, dtype,
                                      numel, input, &sent));
  DDPRT_EXPECT_OK(context, ddprt_recv(context, groupOf(axes), -offset, dtype,
                                      numel, result, &received));
  DDPRT_EXPECT_OK(context, ddprt_wait(context, received));
  DDPRT_EXPECT_OK(context, ddprt_wait(context, sent));
  int64_t from = ((expected.rank - offset) % n + n) % n;
  EXPECT_EQ(download(dtype, result, numel),
            contributions(expected.members[size_t(from)], numel));
  DDPRT_EXPECT_OK(context, ddprt_free(context, input));
  DDPRT_EXPECT_OK(context, ddprt_free(context, result));
}

INSTANTIATE_TEST_SUITE_P(
    All, SendRecvTest,
    ::testing::Combine(::testing::ValuesIn(allDTypes),
                       ::testing::ValuesIn(allGroups),
                       ::testing::Values(int64_t(1), int64_t(-1), int64_t(5))),
    [](const ::testing::TestParamInfo<RingParams> &info) {
      int32_t dtype = std::get<0>(info.param);
      const char *group = std::get<1>(info.param);
      int64_t offset = std::get<2>(info.param);
      std::string name = std::string(dtypeLabel(dtype)) + "_" + group +
                         "_offset" + (offset < 0 ? "m" : "") +
                         std::to_string(offset < 0 ? -offset : offset);
      for (char &c : name)
        if (c == ',')
          c = '_';
      return name;
    });

enum class Root { First, Last };
/// Where the result lies: its own buffer, on the input, or in the input's
/// buffer 7 elements after it (the root copies through an overlap).
enum class BroadcastPlacement { Separate, InPlace, Overlapping };
using BroadcastParams =
    std::tuple<int32_t, const char *, Root, bool, BroadcastPlacement>;

class BroadcastTest : public RuntimeSuite,
                      public ::testing::WithParamInterface<BroadcastParams> {};

/// Every rank ends with the root's contribution bit for bit; the others'
/// inputs hold their own values, which must not leak into the result.
TEST_P(BroadcastTest, EveryRankGetsTheRootsTensor) {
  auto [dtype, axes, whichRoot, async, placement] = GetParam();
  ExpectedGroup expected = expectedGroup(axes);
  int64_t root =
      whichRoot == Root::First ? 0 : int64_t(expected.members.size()) - 1;
  const int64_t numel = 2053, shift = 7;
  std::vector<double> mine = contributions(ddprt::test::worldRank(), numel);
  if (placement == BroadcastPlacement::Overlapping)
    mine.resize(size_t(numel + shift), 0.0);
  void *input = upload(dtype, mine);
  void *result = input;
  if (placement == BroadcastPlacement::Separate) {
    DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, numel, &result));
  } else if (placement == BroadcastPlacement::Overlapping) {
    result = static_cast<char *>(input) + shift * dtypeSize(dtype);
  }
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context,
                  ddprt_broadcast(context, groupOf(axes), root, dtype, numel,
                                  input, result, async ? &handle : nullptr));
  if (async) {
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  }
  EXPECT_EQ(download(dtype, result, numel),
            contributions(expected.members[size_t(root)], numel));
  DDPRT_EXPECT_OK(context, ddprt_free(context, input));
  if (placement == BroadcastPlacement::Separate) {
    DDPRT_EXPECT_OK(context, ddprt_free(context, result));
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, BroadcastTest,
    ::testing::Combine(::testing::ValuesIn(allDTypes),
                       ::testing::ValuesIn(allGroups),
                       ::testing::Values(Root::First, Root::Last),
                       ::testing::Bool(),
                       ::testing::Values(BroadcastPlacement::Separate,
                                         BroadcastPlacement::InPlace,
                                         BroadcastPlacement::Overlapping)),
    [](const ::testing::TestParamInfo<BroadcastParams> &info) {
      const BroadcastParams &p = info.param;
      std::string name =
          std::string(dtypeLabel(std::get<0>(p))) + "_" + std::get<1>(p) +
          (std::get<2>(p) == Root::First ? "_root_first" : "_root_last") +
          (std::get<3>(p) ? "_async" : "_sync") +
          (std::get<4>(p) == BroadcastPlacement::InPlace       ? "_inplace"
           : std::get<4>(p) == BroadcastPlacement::Overlapping ? "_overlapping"
                                                               : "");
      for (char &c : name)
        if (c == ',')
          c = '_';
      return name;
    });

class AllToAllTest : public RuntimeSuite,
                     public ::testing::WithParamInterface<GatherParams> {};

/// Block j of this rank's result is block (this rank's group rank) of group
/// rank j's input, bit for bit; in place, the result is the input buffer.
TEST_P(AllToAllTest, SwapsBlocksBetweenEveryPairOfRanks) {
  auto [dtype, axes, async, placement] = GetParam();
  ExpectedGroup expected = expectedGroup(axes);
  int64_t n = int64_t(expected.members.size());
  const int64_t block = 263, numel = block * n;
  void *input = upload(dtype, contributions(ddprt::test::worldRank(), numel));
  void *result = input;
  if (placement == Placement::Separate) {
    DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, numel, &result));
  }
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context,
                  ddprt_all_to_all(context, groupOf(axes), dtype, numel, input,
                                   result, async ? &handle : nullptr));
  if (async) {
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  }
  std::vector<double> want;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> theirs =
        contributions(expected.members[size_t(j)], numel);
    want.insert(want.end(), theirs.begin() + expected.rank * block,
                theirs.begin() + (expected.rank + 1) * block);
  }
  EXPECT_EQ(download(dtype, result, numel), want);
  if (placement == Placement::Separate) {
    EXPECT_EQ(download(dtype, input, numel),
              contributions(ddprt::test::worldRank(), numel));
    DDPRT_EXPECT_OK(context, ddprt_free(context, result));
  }
  DDPRT_EXPECT_OK(context, ddprt_free(context, input));
}

INSTANTIATE_TEST_SUITE_P(
    All, AllToAllTest,
    ::testing::Combine(::testing::ValuesIn(allDTypes),
                       ::testing::ValuesIn(allGroups), ::testing::Bool(),
                       ::testing::Values(Placement::Separate,
                                         Placement::InPlace)),
    gatherName);

class AllToAllVTest : public RuntimeSuite,
                      public ::testing::WithParamInterface<GatherParams> {};

/// The rows group rank `from` sends group rank `to` from sub-block `sub`:
/// every count from 0 to the whole sub-block (5 rows) occurs.
int64_t countedRows(int64_t from, int64_t to, int64_t sub) {
  return (3 * from + 2 * to + sub) % 6;
}

/// Sub-block k of block j of the result: the first counted rows of group
/// rank j's sub-block k of block (this rank), bit for bit, then zeros
/// where the input had values. The whole blocks' all-to-all gives the same
/// bits when the senders' rows past their counts are zero.
TEST_P(AllToAllVTest, MovesTheCountedRowsAndZeroesTheRest) {
  auto [dtype, axes, async, placement] = GetParam();
  ExpectedGroup expected = expectedGroup(axes);
  int64_t n = int64_t(expected.members.size());
  const int64_t subBlocks = 2, rows = 5, width = 3;
  const int64_t subBlock = rows * width, numel = n * subBlocks * subBlock;
  std::vector<double> sendCounts, recvCounts;
  for (int64_t peer = 0; peer < n; ++peer)
    for (int64_t sub = 0; sub < subBlocks; ++sub) {
      sendCounts.push_back(double(countedRows(expected.rank, peer, sub)));
      recvCounts.push_back(double(countedRows(peer, expected.rank, sub)));
    }
  void *send = upload(DDPRT_DTYPE_F32, sendCounts);
  void *recv = upload(DDPRT_DTYPE_F32, recvCounts);
  void *input = upload(dtype, contributions(ddprt::test::worldRank(), numel));
  void *result = input;
  if (placement == Placement::Separate) {
    DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, numel, &result));
  }
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context, ddprt_all_to_all_v(
                               context, groupOf(axes), subBlocks, width, dtype,
                               numel, input, send, recv, result,
                               async ? &handle : nullptr));
  if (async) {
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  }
  std::vector<double> want(size_t(numel), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> theirs =
        contributions(expected.members[size_t(j)], numel);
    for (int64_t sub = 0; sub < subBlocks; ++sub) {
      int64_t from = (expected.rank * subBlocks + sub) * subBlock;
      int64_t to = (j * subBlocks + sub) * subBlock;
      int64_t count = countedRows(j, expected.rank, sub) * width;
      std::copy(theirs.begin() + from, theirs.begin() + from + count,
                want.begin() + to);
    }
  }
  EXPECT_EQ(download(dtype, result, numel), want);
  if (placement == Placement::Separate) {
    EXPECT_EQ(download(dtype, input, numel),
              contributions(ddprt::test::worldRank(), numel));
    DDPRT_EXPECT_OK(context, ddprt_free(context, result));
  }
  DDPRT_EXPECT_OK(context, ddprt_free(context, input));
  DDPRT_EXPECT_OK(context, ddprt_free(context, send));
  DDPRT_EXPECT_OK(context, ddprt_free(context, recv));
}

INSTANTIATE_TEST_SUITE_P(
    All, AllToAllVTest,
    ::testing::Combine(::testing::ValuesIn(allDTypes),
                       ::testing::ValuesIn(allGroups), ::testing::Bool(),
                       ::testing::Values(Placement::Separate,
                                         Placement::InPlace)),
    gatherName);

class SixteenBitReductionTest : public RuntimeSuite {};

/// 16-bit reductions accumulate in f32 and round once: summed pairwise in
/// bf16, 256 + 1 + 1 would round to 256 at each step; in f32 it is 258.
TEST_F(SixteenBitReductionTest, BFloat16SumRoundsOnce) {
  ExpectedGroup expected = expectedGroup("dp,tp");
  int64_t n = int64_t(expected.members.size());
  double mine = ddprt::test::worldRank() == 0 ? 256.0 : 1.0;
  void *buffer = upload(DDPRT_DTYPE_BF16, {mine, -mine});
  DDPRT_EXPECT_OK(
      context, ddprt_all_reduce(context, groupOf("dp,tp"), DDPRT_REDUCTION_SUM,
                                DDPRT_DTYPE_BF16, 2, buffer, buffer, nullptr));
  double sum = 256.0 + double(n - 1);
  // Rounded once to bf16 (8 significant bits): 257 -> 256, 259 -> 260.
  double rounded =
      double(ddprt::bfloat16ToFloat(ddprt::floatToBFloat16(float(sum))));
  EXPECT_EQ(download(DDPRT_DTYPE_BF16, buffer, 2),
            (std::vector<double>{rounded, -rounded}));
  DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

/// The average of f16 values near the top of the range: their sum
/// overflows f16 but not the f32 accumulator.
TEST_F(SixteenBitReductionTest, HalfAverageDoesNotOverflow) {
  void *buffer = upload(DDPRT_DTYPE_F16, {60000.0, -60000.0, 1.0});
  DDPRT_EXPECT_OK(
      context, ddprt_all_reduce(context, groupOf("dp,tp"), DDPRT_REDUCTION_AVG,
                                DDPRT_DTYPE_F16, 3, buffer, buffer, nullptr));
  EXPECT_EQ(download(DDPRT_DTYPE_F16, buffer, 3),
            (std::vector<double>{60000.0, -60000.0, 1.0}));
  DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

} // namespace
