//===- BoundedJSON.h - JSON parsing with a nesting limit --------*- C++ -*-===//
//
// llvm::json::parse recurses once per nested array or object, so a file of
// 50,000 `[` overflows the stack. Every JSON input of ddp (model config,
// parameter inventory, hardware profile) is parsed through parseJSON, which
// rejects deep nesting with a cheap scan first.
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
/// kMaxJSONDepth deep. A too deep input fails with an error in
/// llvm::json::parse's format: `[line:column, byte=offset]: message`.
llvm::Expected<llvm::json::Value> parseJSON(llvm::StringRef text);

} // namespace ddp

#endif // DDP_SUPPORT_BOUNDEDJSON_H
