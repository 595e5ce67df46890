//===- FormatNumberTest.cpp - Numbers in messages, as the user wrote them -===//

#include "ddp/Support/FormatNumber.h"

#include "gtest/gtest.h"

using namespace ddp;

namespace {

TEST(FormatNumber, KeepsEveryDigitTheValueNeeds) {
  // `%.2f` printed these as 1.00 and -0.00, `%g` the first as 1.
  EXPECT_EQ(formatShortest(1.0000001), "1.0000001");
  EXPECT_EQ(formatShortest(-1e-12), "-1e-12");
  EXPECT_EQ(formatShortest(1.0000000000000002), "1.0000000000000002");
  EXPECT_EQ(formatShortest(0.9999999), "0.9999999");
}

TEST(FormatNumber, WritesShortValuesShort) {
  EXPECT_EQ(formatShortest(0.1), "0.1");
  EXPECT_EQ(formatShortest(0.5), "0.5");
  EXPECT_EQ(formatShortest(1.25), "1.25");
  EXPECT_EQ(formatShortest(0), "0");
  EXPECT_EQ(formatShortest(-0.0), "-0");
  EXPECT_EQ(formatShortest(2.5e-5), "2.5e-05");
}

TEST(FormatNumber, WritesIntegerPartsOutUpTo17Digits) {
  EXPECT_EQ(formatShortest(370), "370");
  EXPECT_EQ(formatShortest(-370), "-370");
  EXPECT_EQ(formatShortest(123456789012.0), "123456789012");
  EXPECT_EQ(formatShortest(1e16), "10000000000000000");
  EXPECT_EQ(formatShortest(1e17), "1e+17");
  EXPECT_EQ(formatShortest(1e20), "1e+20");
}

} // namespace

TEST(FormatNumber, CountsReadAsModelSizes) {
  EXPECT_EQ(ddp::formatCount(0), "0");
  EXPECT_EQ(ddp::formatCount(999), "999");
  EXPECT_EQ(ddp::formatCount(1000), "1.00K");
  EXPECT_EQ(ddp::formatCount(84288), "84.3K");
  EXPECT_EQ(ddp::formatCount(166656), "167K");
  EXPECT_EQ(ddp::formatCount(6738415616.0), "6.74B");
  EXPECT_EQ(ddp::formatCount(174.56e9), "175B");
  EXPECT_EQ(ddp::formatCount(1.008e12), "1.01T");
  EXPECT_EQ(ddp::formatCount(2.5e6), "2.50M");
  // The unit of the rounded value.
  EXPECT_EQ(ddp::formatCount(999950), "1.00M");
  EXPECT_EQ(ddp::formatCount(999.6), "1.00K");
  EXPECT_EQ(ddp::formatCount(9999), "10.0K");
}
