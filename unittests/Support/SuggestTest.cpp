//===- SuggestTest.cpp - The closest of a set of names --------------------===//

#include "ddp/Support/Suggest.h"

#include "gtest/gtest.h"

using namespace ddp;

namespace {

const llvm::StringRef kPolicies[] = {"megatron", "pytorch", "size", "auto"};

TEST(Suggest, AMisspeltNameFindsTheOneMeant) {
  // A swap is two edits; a dropped letter, one.
  EXPECT_EQ(findClosestName("megatorn", kPolicies), "megatron");
  EXPECT_EQ(findClosestName("pytroch", kPolicies), "pytorch");
  EXPECT_EQ(findClosestName("polcy", {"policy", "bucket-size"}), "policy");
  EXPECT_EQ(didYouMean("autoo", kPolicies), "; did you mean 'auto'?");
}

TEST(Suggest, ANameTooFarFromAnyGetsNoSuggestion) {
  // More than a third of the letters would change.
  EXPECT_EQ(findClosestName("fsdp", kPolicies), std::nullopt);
  EXPECT_EQ(findClosestName("zero-3", kPolicies), std::nullopt);
  EXPECT_EQ(didYouMean("x", {}), "");
}

TEST(Suggest, TheClosestOfSeveralWins) {
  // "sizes" is one edit from "size" and five from the others.
  EXPECT_EQ(findClosestName("sizes", kPolicies), "size");
  // An exact match is its own closest name.
  EXPECT_EQ(findClosestName("auto", kPolicies), "auto");
}

} // namespace
