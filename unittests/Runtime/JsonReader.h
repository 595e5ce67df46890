//===- JsonReader.h - A strict JSON reader for checking traces --*- C++ -*-===//
//
// The runtime builds without LLVM (so without llvm::json), and so do its
// tests; this reads the traces it writes back, rejecting malformed JSON.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_UNITTESTS_JSONREADER_H
#define DDPRT_UNITTESTS_JSONREADER_H

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ddprt::test {

struct JsonValue {
  enum class Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object
  } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  bool has(const std::string &key) const {
    return kind == Kind::Object && object.count(key);
  }
  const JsonValue &at(const std::string &key) const { return object.at(key); }
};

/// Parses `text`; on malformed input returns false and says where in `error`.
bool parseJson(const std::string &text, JsonValue &value, std::string &error);

} // namespace ddprt::test

#endif // DDPRT_UNITTESTS_JSONREADER_H
