//===- LoweredProgram.h - A lowered step, JIT or AOT ------------*- C++ -*-===//
//
// ddp-run's bridge between the compiler and the runtime: lowers a step with
// ddp-lower-to-runtime, then either JIT-compiles it with MLIR's
// ExecutionEngine, the runtime's entry points registered explicitly, or
// writes it as an object file for the ahead-of-time launcher.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TOOLS_DDP_RUN_LOWEREDPROGRAM_H
#define DDP_TOOLS_DDP_RUN_LOWEREDPROGRAM_H

#include "ddp/Runtime/ddp_program.h"
#include "ddp/Conversion/Passes.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace ddp {

/// The entry points of ddp_program.h in a JIT-compiled program.
struct ProgramEntryPoints {
  decltype(&ddp_program_init) init = nullptr;
  decltype(&ddp_program_setup) setup = nullptr;
  decltype(&ddp_program_step) step = nullptr;
  decltype(&ddp_program_teardown) teardown = nullptr;
};

/// A copy of `module` lowered with ddp-lower-to-runtime; null after the
/// pass reported its error through the context's diagnostics.
mlir::OwningOpRef<mlir::ModuleOp>
lowerToRuntime(mlir::ModuleOp module, const LowerDDPToRuntimeOptions &options);

/// A lowered program compiled in this process.
class JitProgram {
public:
  /// JIT-compiles `lowered`; the runtime's symbols are those of the ABI
  /// table, bound to the libddprt this tool is linked with.
  static llvm::Expected<std::unique_ptr<JitProgram>>
  create(mlir::ModuleOp lowered);

  const ProgramEntryPoints &getEntryPoints() const { return entryPoints; }

private:
  std::unique_ptr<mlir::ExecutionEngine> engine;
  ProgramEntryPoints entryPoints;
};

/// Writes `lowered` as a relocatable object file for the host's
/// architecture (generic CPU, position-independent), to be linked with the
/// launcher and libddprt.
llvm::Error writeObjectFile(mlir::ModuleOp lowered, llvm::StringRef path);

} // namespace ddp

#endif // DDP_TOOLS_DDP_RUN_LOWEREDPROGRAM_H
