//===- BoundedJSONTest.cpp - JSON parsing with a nesting limit ------------===//

#include "ddp/Support/BoundedJSON.h"

#include "gtest/gtest.h"

#include <string>

using namespace ddp;

namespace {

std::string nested(unsigned depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(BoundedJSON, AcceptsNestingUpToTheLimit) {
  llvm::Expected<llvm::json::Value> value = parseJSON(nested(kMaxJSONDepth));
  ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
}

TEST(BoundedJSON, RejectsDeeperNestingWithItsPosition) {
  // Deep enough to overflow llvm::json::parse's stack if it got that far.
  std::string text = "{\"a\":\n" + nested(50000) + "}";
  llvm::Expected<llvm::json::Value> value = parseJSON(text);
  ASSERT_FALSE(bool(value));
  EXPECT_EQ(llvm::toString(value.takeError()),
            "[2:255, byte=261]: arrays and objects nest more than 256 levels "
            "deep");
}

TEST(BoundedJSON, IgnoresBracketsInStrings) {
  std::string text =
      "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  llvm::Expected<llvm::json::Value> value = parseJSON(text);
  ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
  EXPECT_EQ(value->getAsArray()->front().getAsString()->size(), 2001u);
}

TEST(BoundedJSON, RejectsAKeyTwiceInAnObject) {
  llvm::Expected<llvm::json::Value> value =
      parseJSON("{\"a\": 1,\n \"b\": {\"a\": 2}, \"a\": 3}");
  ASSERT_FALSE(bool(value));
  EXPECT_EQ(llvm::toString(value.takeError()),
            "[2:17, byte=25]: duplicate key 'a' in an object (first on line "
            "1)");
  // Keys are compared as decoded: \u0061 is 'a'.
  value = parseJSON("[{\"b\": [{\"a\": 1, \"\\u0061\": 2}]}]");
  ASSERT_FALSE(bool(value));
  EXPECT_NE(llvm::toString(value.takeError()).find("duplicate key 'a'"),
            std::string::npos);
}

TEST(BoundedJSON, AcceptsEqualKeysInDifferentObjectsAndKeysAsValues) {
  llvm::Expected<llvm::json::Value> value = parseJSON(
      R"({"a": {"a": "a", "b": ["a", {"a": 1}]}, "b": {"a": 2}, "c": "b"})");
  ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
}

// A key with a newline or a quote stays on the message's one line, and a
// long one is cut.
TEST(BoundedJSON, EscapesAndShortensTheDuplicateKey) {
  llvm::Expected<llvm::json::Value> value =
      parseJSON(R"({"a\nb\"": 1, "a\nb\"": 2})");
  ASSERT_FALSE(bool(value));
  std::string message = llvm::toString(value.takeError());
  EXPECT_NE(message.find("duplicate key 'a\\0Ab\\22'"), std::string::npos)
      << message;
  std::string key(100, 'k');
  value = parseJSON("{\"" + key + "\": 1, \"" + key + "\": 2}");
  ASSERT_FALSE(bool(value));
  message = llvm::toString(value.takeError());
  EXPECT_NE(message.find("'" + key.substr(0, 64) + "...'"), std::string::npos)
      << message;
}

TEST(BoundedJSON, ReportsSyntaxErrorsBeforeDuplicateKeys) {
  llvm::Expected<llvm::json::Value> value = parseJSON(R"({"a": 1, "a": 2)");
  ASSERT_FALSE(bool(value));
  EXPECT_EQ(llvm::toString(value.takeError()).find("duplicate"),
            std::string::npos);
}

TEST(BoundedJSON, ReportsSyntaxErrorsAsLLVMDoes) {
  llvm::Expected<llvm::json::Value> value = parseJSON("[1,");
  ASSERT_FALSE(bool(value));
  EXPECT_NE(llvm::toString(value.takeError()).find("[1:3, byte=3]"),
            std::string::npos);
}

} // namespace
