//===- OptionWords.cpp - Pass option text as MLIR reads it ----------------===//

#include "ddp/Support/OptionWords.h"

#include "llvm/ADT/STLExtras.h"

using namespace llvm;

/// The index of the `close` that ends what starts at `from`, skipping
/// nested brackets and quoted text, or npos (MLIR's findChar).
static size_t findClosing(StringRef text, size_t from, char close) {
  for (size_t i = from; i < text.size(); ++i) {
    char c = text[i];
    if (c == close)
      return i;
    if (c == '{')
      i = findClosing(text, i + 1, '}');
    else if (c == '(')
      i = findClosing(text, i + 1, ')');
    else if (c == '[')
      i = findClosing(text, i + 1, ']');
    else if (c == '"' || c == '\'')
      i = text.find(c, i + 1);
    if (i == StringRef::npos)
      return StringRef::npos;
  }
  return StringRef::npos;
}

/// A name or value as MLIR keeps it: trimmed, without one outer pair of
/// quotes, or of braces that enclose all of it.
static StringRef unwrapOptionWord(StringRef word) {
  word = word.trim();
  if (word.size() >= 2 && (word.front() == '"' || word.front() == '\'') &&
      word.back() == word.front())
    return word.drop_front().drop_back().trim();
  if (!word.empty() && word.front() == '{' &&
      findClosing(word, 1, '}') == word.size() - 1)
    return word.drop_front().drop_back().trim();
  return word;
}

SmallVector<std::pair<StringRef, StringRef>>
ddp::splitOptionWords(StringRef text) {
  SmallVector<std::pair<StringRef, StringRef>> words;
  auto skipQuoted = [&](size_t &i) {
    char c = text[i];
    if (c != '"' && c != '\'')
      return false;
    size_t partner = text.find(c, i + 1);
    if (partner != StringRef::npos)
      i = partner;
    return true;
  };
  while (!(text = text.ltrim()).empty()) {
    size_t nameEnd = text.find_first_of(" =");
    if (nameEnd == StringRef::npos || text[nameEnd] == ' ') {
      words.push_back({unwrapOptionWord(text.take_front(nameEnd)), ""});
      text = text.drop_front(std::min(nameEnd, text.size()));
      continue;
    }
    StringRef name = unwrapOptionWord(text.take_front(nameEnd));
    size_t i = nameEnd + 1;
    for (; i < text.size() && text[i] != ' '; ++i) {
      if (skipQuoted(i) || text[i] != '{')
        continue;
      for (size_t depth = 1; ++i < text.size();) {
        if (skipQuoted(i))
          continue;
        if (text[i] == '{')
          ++depth;
        else if (text[i] == '}' && --depth == 0)
          break;
      }
      if (i == text.size())
        break;
    }
    words.push_back(
        {name, unwrapOptionWord(text.slice(nameEnd + 1, std::min(i, text.size())))});
    text = text.drop_front(std::min(i, text.size()));
  }
  return words;
}

bool ddp::isBoolOptionValue(StringRef value) {
  static constexpr StringLiteral kBools[] = {"",     "true", "false", "1", "0",
                                             "True", "False", "TRUE", "FALSE"};
  return is_contained(kBools, value);
}
