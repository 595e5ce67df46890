//===- ElementTypeTest.cpp - Names and sizes of the element types ---------===//

#include "ddp/Support/ElementType.h"

#include "gtest/gtest.h"

using namespace ddp;

namespace {

TEST(ElementType, NamesRoundTrip) {
  for (unsigned i = 0; i < kNumElementTypes; ++i) {
    auto type = static_cast<ElementType>(i);
    EXPECT_EQ(parseElementType(stringifyElementType(type)), type);
  }
  EXPECT_EQ(stringifyElementType(ElementType::BF16), "bf16");
  // Aliases are the model-config reader's business, not this one's.
  EXPECT_EQ(parseElementType("fp32"), std::nullopt);
  EXPECT_EQ(parseElementType(""), std::nullopt);
}

TEST(ElementType, Sizes) {
  EXPECT_EQ(getElementBytes(ElementType::F16), 2);
  EXPECT_EQ(getElementBytes(ElementType::BF16), 2);
  EXPECT_EQ(getElementBytes(ElementType::F32), 4);
  EXPECT_EQ(getElementBytes(ElementType::F64), 8);
}

} // namespace
