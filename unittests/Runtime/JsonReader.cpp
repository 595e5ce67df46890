//===- JsonReader.cpp - A strict JSON reader for checking traces ----------===//

#include "JsonReader.h"

#include <cstdlib>

using namespace ddprt::test;

namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  bool parseDocument(JsonValue &value, std::string &error) {
    if (!parseValue(value) || (skipBlanks(), position != text.size())) {
      error = "malformed JSON at offset " + std::to_string(position);
      return false;
    }
    return true;
  }

private:
  void skipBlanks() {
    while (position < text.size() &&
           (text[position] == ' ' || text[position] == '\n' ||
            text[position] == '\t' || text[position] == '\r'))
      ++position;
  }

  bool consume(char c) {
    skipBlanks();
    if (position < text.size() && text[position] == c) {
      ++position;
      return true;
    }
    return false;
  }

  bool consumeWord(const char *word) {
    size_t length = std::string(word).size();
    if (text.compare(position, length, word) != 0)
      return false;
    position += length;
    return true;
  }

  bool parseString(std::string &out) {
    if (!consume('"'))
      return false;
    while (position < text.size()) {
      char c = text[position++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (position >= text.size())
        return false;
      char escaped = text[position++];
      switch (escaped) {
      case '"':
      case '\\':
      case '/':
        out += escaped;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        if (position + 4 > text.size())
          return false;
        unsigned code = std::stoul(text.substr(position, 4), nullptr, 16);
        position += 4;
        if (code >= 0x80) // The traces only escape control characters.
          return false;
        out += char(code);
        break;
      }
      default:
        return false;
      }
    }
    return false;
  }

  bool parseValue(JsonValue &value) {
    skipBlanks();
    if (position >= text.size())
      return false;
    char c = text[position];
    if (c == '{') {
      ++position;
      value.kind = JsonValue::Kind::Object;
      if (consume('}'))
        return true;
      do {
        std::string key;
        skipBlanks();
        if (!parseString(key) || !consume(':'))
          return false;
        JsonValue member;
        if (!parseValue(member) || value.object.count(key))
          return false;
        value.object.emplace(std::move(key), std::move(member));
      } while (consume(','));
      return consume('}');
    }
    if (c == '[') {
      ++position;
      value.kind = JsonValue::Kind::Array;
      if (consume(']'))
        return true;
      do {
        JsonValue element;
        if (!parseValue(element))
          return false;
        value.array.push_back(std::move(element));
      } while (consume(','));
      return consume(']');
    }
    if (c == '"') {
      value.kind = JsonValue::Kind::String;
      return parseString(value.string);
    }
    if (consumeWord("true") || consumeWord("false")) {
      value.kind = JsonValue::Kind::Bool;
      value.boolean = text[position - 1] == 'e' && text[position - 2] == 'u';
      return true;
    }
    if (consumeWord("null"))
      return true;
    const char *begin = text.c_str() + position;
    char *end = nullptr;
    value.number = std::strtod(begin, &end);
    if (end == begin)
      return false;
    value.kind = JsonValue::Kind::Number;
    position += size_t(end - begin);
    return true;
  }

  const std::string &text;
  size_t position = 0;
};

} // namespace

bool ddprt::test::parseJson(const std::string &text, JsonValue &value,
                            std::string &error) {
  return Parser(text).parseDocument(value, error);
}
