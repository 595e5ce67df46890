//===- BoundedJSON.cpp - JSON parsing with a nesting limit ----------------===//

#include "ddp/Support/BoundedJSON.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

Expected<json::Value> ddp::parseJSON(StringRef text) {
  // Positions as llvm::json reports them: 1-based lines, columns counted
  // from 0, so that callers that reformat its errors handle ours alike.
  unsigned depth = 0, line = 1;
  size_t lineStart = 0;
  bool inString = false, escaped = false;
  for (auto [offset, c] : enumerate(text)) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJSONDepth)
        return createStringError(
            inconvertibleErrorCode(),
            formatv("[{0}:{1}, byte={2}]: arrays and objects nest more than "
                    "{3} levels deep",
                    line, offset - lineStart, offset, kMaxJSONDepth));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    if (c == '\n') {
      ++line;
      lineStart = offset + 1;
    }
  }
  return json::parse(text);
}
