//===- BoundedJSON.cpp - JSON parsing with a nesting limit ----------------===//

#include "ddp/Support/BoundedJSON.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>
#include <string>

using namespace llvm;

namespace {
/// An array or object the scan is inside of.
struct Container {
  bool isObject = false;
  /// In an object: whether the next string is a key (after `{` or `,`).
  bool expectKey = false;
  /// In an object: its keys so far, with the line of each.
  StringMap<unsigned> keys;
};
} // namespace

/// The key `quoted` (with its quotes) stands for: llvm::json decodes the
/// escapes, so that "a" and "\u0061" are one key.
static std::string decodeKey(StringRef quoted) {
  if (!quoted.contains('\\'))
    return quoted.drop_front().drop_back().str();
  Expected<json::Value> value = json::parse(quoted);
  if (!value) {
    // Only a valid document's duplicates are reported; this one is not.
    consumeError(value.takeError());
    return quoted.str();
  }
  return value->getAsString()->str();
}

/// `key` as a message shows it: on one line, control bytes escaped, at most
/// 64 characters.
static std::string printableKey(StringRef key) {
  std::string printed;
  raw_string_ostream os(printed);
  printEscapedString(key.take_front(64), os);
  if (key.size() > 64)
    os << "...";
  return printed;
}

Expected<json::Value> ddp::parseJSON(StringRef text) {
  // Positions as llvm::json reports them: 1-based lines, columns counted
  // from 0, so that callers that reformat its errors handle ours alike.
  unsigned line = 1;
  size_t lineStart = 0;
  bool inString = false, escaped = false;
  SmallVector<Container, 8> containers;
  // Whether the string being scanned is an object's key, and where it starts.
  bool inKey = false;
  size_t keyStart = 0;
  unsigned keyLine = 0, keyColumn = 0;
  // llvm::json::parse keeps the last of two equal keys; the first duplicate
  // is reported once the text parses, so that syntax errors come first.
  std::optional<std::string> duplicate;
  for (auto [offset, c] : enumerate(text)) {
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
        if (inKey) {
          inKey = false;
          Container &object = containers.back();
          object.expectKey = false;
          std::string key = decodeKey(text.slice(keyStart, offset + 1));
          auto [it, inserted] = object.keys.try_emplace(key, keyLine);
          if (!inserted && !duplicate)
            duplicate = formatv("[{0}:{1}, byte={2}]: duplicate key '{3}' "
                                "in an object (first on line {4})",
                                keyLine, keyColumn, keyStart,
                                printableKey(key), it->second)
                            .str();
        }
      }
    } else if (c == '"') {
      inString = true;
      if (!containers.empty() && containers.back().isObject &&
          containers.back().expectKey) {
        inKey = true;
        keyStart = offset;
        keyLine = line;
        // Counted from 1, as editors count: llvm::json reports the position
        // after the character it stopped at, which reads the same.
        keyColumn = offset - lineStart + 1;
      }
    } else if (c == '[' || c == '{') {
      if (containers.size() == kMaxJSONDepth)
        return createStringError(
            inconvertibleErrorCode(),
            formatv("[{0}:{1}, byte={2}]: arrays and objects nest more than "
                    "{3} levels deep",
                    line, offset - lineStart, offset, kMaxJSONDepth));
      Container &container = containers.emplace_back();
      container.isObject = c == '{';
      container.expectKey = container.isObject;
    } else if ((c == ']' || c == '}') && !containers.empty()) {
      containers.pop_back();
    } else if (c == ',' && !containers.empty() &&
               containers.back().isObject) {
      containers.back().expectKey = true;
    }
    if (c == '\n') {
      ++line;
      lineStart = offset + 1;
    }
  }
  Expected<json::Value> value = json::parse(text);
  if (!value || !duplicate)
    return value;
  return createStringError(inconvertibleErrorCode(), *duplicate);
}
