//===- FuzzSupport.h - Shared setup of the libFuzzer targets ----*- C++ -*-===//
//
// Each input gets a fresh context so that a failure reproduces from the input
// alone, whatever ran before it in the same process.
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
#include <memory>

namespace ddp::fuzz {

/// A context with the dialects ddp-opt registers, single-threaded (libFuzzer
/// runs one input at a time and threads only slow it down).
std::unique_ptr<mlir::MLIRContext> createContext();

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
