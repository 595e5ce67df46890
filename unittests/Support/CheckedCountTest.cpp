//===- CheckedCountTest.cpp - Counts that remember overflow ---------------===//

#include "ddp/Support/CheckedCount.h"

#include "gtest/gtest.h"

#include <limits>

using namespace ddp;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(CheckedCount, SumsThatFit) {
  CheckedCount sum;
  sum += 3;
  sum += CheckedCount(4) * 5;
  sum -= 1;
  EXPECT_TRUE(sum.fits());
  EXPECT_EQ(sum.get(), 22);
  EXPECT_EQ((CheckedCount(kMax - 1) + 1).get(), kMax);
  EXPECT_EQ((CheckedCount(kMin + 1) - 1).get(), kMin);
}

// Two f32 parameters of 2^59 elements: each takes 2^61 bytes, their sum
// 2^62 fits, four of them do not (issue 25, ModelState's parameter bytes).
TEST(CheckedCount, SumOfTermsThatEachFit) {
  CheckedCount bytes;
  for (int i = 0; i < 3; ++i)
    bytes += CheckedCount(int64_t(1) << 59) * 4;
  EXPECT_TRUE(bytes.fits());
  bytes += CheckedCount(int64_t(1) << 59) * 4;
  EXPECT_FALSE(bytes.fits());
  EXPECT_EQ(bytes.get(), std::nullopt);
  EXPECT_EQ(bytes.getOr(-1), -1);
}

TEST(CheckedCount, OverflowIsSticky) {
  CheckedCount count(kMax);
  count += 1;
  EXPECT_FALSE(count.fits());
  // Bringing the value back into range does not hide the overflow.
  count -= 2;
  EXPECT_FALSE(count.fits());
  count *= 0;
  EXPECT_FALSE(count.fits());
  // Nor does adding it to a count that fits.
  CheckedCount other(1);
  other += count;
  EXPECT_FALSE(other.fits());
}

// A peak over a step: an overflow is kept, whatever comes after it.
TEST(CheckedCount, MaxKeepsAnOverflow) {
  EXPECT_EQ(CheckedCount::max(3, 5).get(), 5);
  EXPECT_EQ(CheckedCount::max(5, 3).get(), 5);
  CheckedCount huge = CheckedCount(kMax) + 1;
  EXPECT_FALSE(CheckedCount::max(huge, 8).fits());
  EXPECT_FALSE(CheckedCount::max(8, huge).fits());
}

TEST(CheckedCount, Products) {
  EXPECT_FALSE((CheckedCount(int64_t(1) << 62) * 2).fits());
  EXPECT_FALSE((CheckedCount(kMin) * -1).fits());
  EXPECT_EQ((CheckedCount(int64_t(1) << 31) * (int64_t(1) << 31)).get(),
            int64_t(1) << 62);
  EXPECT_FALSE((CheckedCount(kMin) - 1).fits());
}
} // namespace
