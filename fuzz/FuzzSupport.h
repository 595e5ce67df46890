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

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstddef>
#include <cstdint>

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

} // namespace ddp::fuzz

#endif // DDP_FUZZ_FUZZSUPPORT_H
