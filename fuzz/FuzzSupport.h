//===- FuzzSupport.h - Shared setup of the libFuzzer targets ----*- C++ -*-===//
//
// The IR targets share one context across inputs: creating a context with
// the LLVM dialect loaded for every input ran at about 8 inputs a second.
// Uniqued types and attributes accumulate (libFuzzer's -rss_limit_mb
// catches runaway growth); a failure that does not reproduce from its input
// alone would point at state leaking between ops, itself a bug.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_FUZZ_FUZZSUPPORT_H
#define DDP_FUZZ_FUZZSUPPORT_H

#include "ddp/Support/BoundedJSON.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/JSON.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace ddp::fuzz {

/// The process's context, with the dialects ddp-opt registers loaded,
/// single-threaded (libFuzzer runs one input at a time and threads only slow
/// it down).
mlir::MLIRContext &getContext();

/// Drops every diagnostic: malformed input is expected to produce them, and
/// printing them would drown libFuzzer's output.
class SilenceDiagnostics : public mlir::ScopedDiagnosticHandler {
public:
  explicit SilenceDiagnostics(mlir::MLIRContext *context)
      : ScopedDiagnosticHandler(context, [](mlir::Diagnostic &) {
          return mlir::success();
        }) {}
};

inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

/// Whether `text` is MLIR that crashes upstream MLIR 22's parser before any
/// ddp code runs: a dense array of `index` (`array<index>`, see
/// test/Dialect/DDP/upstream-dense-array-index.mlir) or bytecode, whose
/// reader is upstream's alone. The targets skip such input so that a run
/// keeps finding ddp's own bugs.
bool crashesUpstreamParser(llvm::StringRef text);

/// Input the tools accept must produce IR that verifies; anything else is a
/// bug, reported as a crash so that libFuzzer saves the input.
[[noreturn]] inline void reportBug(const char *what) {
  llvm::report_fatal_error(llvm::Twine("fuzz: ") + what);
}

/// The value of `expected`, or none when it holds an error: the input
/// readers reject most fuzzed input, which is not a bug.
template <typename T>
std::optional<T> valueOrNone(llvm::Expected<T> expected) {
  if (!expected) {
    llvm::consumeError(expected.takeError());
    return std::nullopt;
  }
  return std::move(*expected);
}

/// The input parsed as JSON (parseJSON) and then read by `read`, one of the
/// readers the tools use (parseModelConfig, ...); none when either rejects it.
template <typename T>
std::optional<T> readJSONInput(
    const uint8_t *data, size_t size,
    llvm::function_ref<llvm::Expected<T>(const llvm::json::Value &,
                                         llvm::StringRef)>
        read) {
  std::optional<llvm::json::Value> json =
      valueOrNone(parseJSON(asText(data, size)));
  if (!json)
    return std::nullopt;
  return valueOrNone(read(*json, "fuzz"));
}

/// Reports the bug `what` unless `module`, imported from input its reader
/// accepted, verifies.
void checkImportVerifies(mlir::ModuleOp module, const char *what);

} // namespace ddp::fuzz

#endif // DDP_FUZZ_FUZZSUPPORT_H
