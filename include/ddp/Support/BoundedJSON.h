//===- BoundedJSON.h - JSON parsing with a nesting limit --------*- C++ -*-===//
//
// llvm::json::parse recurses once per nested array or object, so a file of
// 50,000 `[` overflows the stack, and it keeps the last of two equal keys of
// an object, so a field given twice is silently overridden. Every JSON input
// of ddp (model config, parameter inventory, hardware profile) is parsed
// through parseJSON, which rejects both with a cheap scan.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SUPPORT_BOUNDEDJSON_H
#define DDP_SUPPORT_BOUNDEDJSON_H

#include "llvm/Support/JSON.h"

namespace ddp {

/// The deepest nesting of arrays and objects parseJSON accepts; real inputs
/// nest a handful of levels.
constexpr unsigned kMaxJSONDepth = 256;

/// llvm::json::parse, after checking that arrays and objects nest at most
/// kMaxJSONDepth deep; a text that parses but has an object with a key twice
/// (after decoding escapes) is an error too. Both fail with an error in
/// llvm::json::parse's format, `[line:column, byte=offset]: message`; a
/// duplicate key is reported at its second occurrence:
/// `[3:2, byte=40]: duplicate key 'a' in an object (first on line 2)`.
llvm::Expected<llvm::json::Value> parseJSON(llvm::StringRef text);

} // namespace ddp

#endif // DDP_SUPPORT_BOUNDEDJSON_H
