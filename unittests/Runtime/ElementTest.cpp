//===- ElementTest.cpp - Conversions and per-element math -----------------===//

#include "Element.h"
#include "ElementOps.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <random>

using namespace ddprt;

namespace {

/// The value of every finite f16 bit pattern, found without the code under
/// test: sign * mantissa * 2^(exponent).
double referenceHalfValue(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  double magnitude = exponent == 0 ? std::ldexp(mantissa, -24)
                                   : std::ldexp(1024 + mantissa, exponent - 25);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

/// Rounds `value` to the nearest of the sorted finite values of a 16-bit
/// type by exhaustive search, ties to the even bit pattern; returns the bit
/// pattern. Overflow is checked separately.
uint16_t nearestBits(double value,
                     const std::vector<std::pair<double, uint16_t>> &sorted) {
  auto above = std::lower_bound(sorted.begin(), sorted.end(), value,
                                [](const std::pair<double, uint16_t> &entry,
                                   double v) { return entry.first < v; });
  if (above == sorted.begin())
    return above->second;
  auto below = std::prev(above);
  if (above == sorted.end())
    return below->second;
  double distanceBelow = value - below->first;
  double distanceAbove = above->first - value;
  if (distanceBelow < distanceAbove)
    return below->second;
  if (distanceAbove < distanceBelow)
    return above->second;
  return (below->second & 1) ? above->second : below->second;
}

std::vector<std::pair<double, uint16_t>> positiveHalfValues() {
  std::vector<std::pair<double, uint16_t>> values;
  for (uint32_t bits = 0; bits < 0x7c00; ++bits)
    values.push_back({referenceHalfValue(uint16_t(bits)), uint16_t(bits)});
  return values;
}

std::vector<std::pair<double, uint16_t>> positiveBFloat16Values() {
  std::vector<std::pair<double, uint16_t>> values;
  for (uint32_t bits = 0; bits < 0x7f80; ++bits)
    values.push_back({double(bitCast<float>(bits << 16)), uint16_t(bits)});
  return values;
}

TEST(ElementTest, HalfToFloatIsExactForEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    Half h{uint16_t(bits)};
    float value = halfToFloat(h);
    int exponent = (bits >> 10) & 0x1f;
    if (exponent == 0x1f) {
      if (bits & 0x3ff)
        EXPECT_TRUE(std::isnan(value)) << bits;
      else
        EXPECT_TRUE(std::isinf(value)) << bits;
      continue;
    }
    EXPECT_EQ(double(value), referenceHalfValue(uint16_t(bits))) << bits;
    // And back: every f16 value survives the round trip bitwise.
    EXPECT_EQ(floatToHalf(value).bits, bits) << bits;
  }
}

TEST(ElementTest, FloatToHalfRoundsToNearestEven) {
  auto table = positiveHalfValues();
  std::mt19937 random(7);
  std::uniform_int_distribution<uint32_t> anyBits(0, 0x477fefffu);
  for (int i = 0; i < 200000; ++i) {
    float value = bitCast<float>(anyBits(random));
    EXPECT_EQ(floatToHalf(value).bits, nearestBits(value, table)) << value;
    EXPECT_EQ(floatToHalf(-value).bits, 0x8000 | nearestBits(value, table));
  }
  // Every midpoint between neighbours (ties) and just around it.
  for (size_t i = 0; i + 1 < table.size(); ++i) {
    double middle = (table[i].first + table[i + 1].first) / 2;
    float tie = float(middle);
    ASSERT_EQ(double(tie), middle);
    EXPECT_EQ(floatToHalf(tie).bits, nearestBits(middle, table)) << middle;
    float justAbove = std::nextafter(tie, 1e30f);
    EXPECT_EQ(floatToHalf(justAbove).bits, table[i + 1].second);
    float justBelow = std::nextafter(tie, 0.0f);
    EXPECT_EQ(floatToHalf(justBelow).bits, table[i].second);
  }
}

TEST(ElementTest, FloatToHalfOverflowAndSpecials) {
  EXPECT_EQ(floatToHalf(65504.0f).bits, 0x7bff);
  EXPECT_EQ(floatToHalf(65519.996f).bits, 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f).bits, 0x7c00); // The tie goes up to Inf.
  EXPECT_EQ(floatToHalf(1e10f).bits, 0x7c00);
  EXPECT_EQ(floatToHalf(-1e10f).bits, 0xfc00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  uint16_t nan = floatToHalf(std::numeric_limits<float>::quiet_NaN()).bits;
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  EXPECT_EQ(floatToHalf(-0.0f).bits, 0x8000);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)).bits, 0); // Tie to even: 0.
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)).bits, 1);
}

TEST(ElementTest, FloatToBFloat16RoundsToNearestEven) {
  auto table = positiveBFloat16Values();
  std::mt19937 random(11);
  std::uniform_int_distribution<uint32_t> anyBits(0, 0x7f7f7fffu);
  for (int i = 0; i < 200000; ++i) {
    float value = bitCast<float>(anyBits(random));
    EXPECT_EQ(floatToBFloat16(value).bits, nearestBits(value, table)) << value;
  }
  EXPECT_EQ(floatToBFloat16(257.0f).bits, floatToBFloat16(256.0f).bits);
  EXPECT_EQ(floatToBFloat16(259.0f).bits, floatToBFloat16(260.0f).bits);
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);
  uint16_t nan = floatToBFloat16(std::numeric_limits<float>::quiet_NaN()).bits;
  EXPECT_TRUE(std::isnan(bfloat16ToFloat({nan})));
  // A signalling NaN must not round into Inf.
  float signalling = bitCast<float>(0x7f800001u);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(signalling))));
}

TEST(ElementTest, DoubleToSixteenBitRoundsOnce) {
  auto halfTable = positiveHalfValues();
  auto bfloatTable = positiveBFloat16Values();
  // Just above a tie: rounding to f32 first would land on the tie and then
  // round to even, which is down; one rounding goes up.
  for (size_t i = 0; i + 1 < halfTable.size(); i += 97) {
    double middle = (halfTable[i].first + halfTable[i + 1].first) / 2;
    double above = middle + std::ldexp(middle, -40);
    EXPECT_EQ(ElementTraits<Half>::fromDouble(above).bits,
              halfTable[i + 1].second)
        << above;
    double below = middle - std::ldexp(middle, -40);
    EXPECT_EQ(ElementTraits<Half>::fromDouble(below).bits, halfTable[i].second);
  }
  for (size_t i = 0; i + 1 < bfloatTable.size(); i += 89) {
    double middle = (bfloatTable[i].first + bfloatTable[i + 1].first) / 2;
    double above = middle + std::ldexp(middle, -45);
    EXPECT_EQ(ElementTraits<BFloat16>::fromDouble(above).bits,
              bfloatTable[i + 1].second)
        << above;
  }
  std::mt19937_64 random(3);
  std::uniform_real_distribution<double> anyValue(-70000.0, 70000.0);
  for (int i = 0; i < 100000; ++i) {
    double value = anyValue(random);
    if (std::fabs(value) >= 65520.0)
      continue;
    uint16_t expected = nearestBits(std::fabs(value), halfTable);
    if (value < 0)
      expected |= 0x8000;
    EXPECT_EQ(ElementTraits<Half>::fromDouble(value).bits, expected) << value;
  }
  EXPECT_EQ(ElementTraits<Half>::fromDouble(1e300).bits, 0x7c00);
  EXPECT_EQ(ElementTraits<BFloat16>::fromDouble(1e300).bits, 0x7f80);
  EXPECT_EQ(ElementTraits<Half>::fromDouble(1e-300).bits, 0);
  EXPECT_EQ(ElementTraits<Half>::fromDouble(-1e-300).bits, 0x8000);
}

TEST(ElementTest, ConvertElementGoesThroughTheWiderType) {
  EXPECT_EQ(convertElement<float>(Half{0x3c00}), 1.0f);
  EXPECT_EQ(convertElement<double>(BFloat16{0x4049}), 3.140625);
  EXPECT_EQ(convertElement<Half>(BFloat16{0x4049}).bits,
            floatToHalf(3.140625f).bits);
  // f64 -> f32 rounds once, to nearest even.
  EXPECT_EQ(convertElement<float>(1.0 + std::ldexp(1.0, -24)), 1.0f);
  EXPECT_EQ(convertElement<float>(1.0 + std::ldexp(3.0, -24)),
            1.0f + std::ldexp(1.0f, -22));
}

TEST(ElementTest, ArithmeticRoundsOnceInTheAccumulationType) {
  // bf16: 256 + 1 = 257 is not representable: to even, 256.
  BFloat16 big = floatToBFloat16(256.0f), one = floatToBFloat16(1.0f);
  EXPECT_EQ(bfloat16ToFloat(accumulateElement(big, one)), 256.0f);
  // f16 scale: in f32, so 60000 * 2 overflows only when stored.
  Half large = floatToHalf(60000.0f);
  EXPECT_TRUE(std::isinf(halfToFloat(scaleElement(large, 2.0))));
  EXPECT_EQ(halfToFloat(scaleElement(large, 0.5)), 30000.0f);
  // The factor is rounded to f32 for f32 data, kept in f64 for f64 data.
  EXPECT_EQ(scaleElement(3.0f, 0.1), 3.0f * 0.1f);
  EXPECT_EQ(scaleElement(3.0, 0.1), 3.0 * 0.1);
  EXPECT_EQ(sgdElement(1.0f, Half{0x3c00}, 0.5), 0.5f);
  EXPECT_EQ(sgdElement(1.0, 2.0f, 0.1), 1.0 - 0.1 * 2.0);
  EXPECT_TRUE(isFiniteElement(1.0f));
  EXPECT_FALSE(isFiniteElement(std::numeric_limits<float>::infinity()));
  EXPECT_FALSE(isFiniteElement(Half{0x7e00}));
  EXPECT_FALSE(isFiniteElement(BFloat16{0xff80}));
  EXPECT_TRUE(isFiniteElement(Half{0x7bff}));
}

TEST(ElementTest, AdamFirstStepMovesByTheLearningRate) {
  // At t = 1 the bias-corrected m / sqrt(v) is g / |g|.
  AdamScalars s{
      0.9f, 0.1f, 0.999f, 0.001f, float(0.01 / 0.1), float(std::sqrt(0.001)),
      1e-8f};
  float m = 0, v = 0;
  float param = adamElement(1.0f, 2.0f, m, v, s);
  EXPECT_NEAR(param, 1.0f - 0.01f, 1e-6f);
  EXPECT_FLOAT_EQ(m, 0.2f);
  EXPECT_FLOAT_EQ(v, 0.004f);
  m = 0, v = 0;
  EXPECT_NEAR(adamElement(1.0, -3.0f, m, v, s), 1.0 + 0.01, 1e-6);
}

} // namespace
