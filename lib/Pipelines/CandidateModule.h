//===- CandidateModule.h - A copy of the module to schedule -----*- C++ -*-===//
//
// policy=auto's choices schedule copies of the module and simulate them. A
// pass may run a pipeline only on its own op or one nested in it, so each
// copy is nested in the module for the time of the choice.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_PIPELINES_CANDIDATEMODULE_H
#define DDP_LIB_PIPELINES_CANDIDATEMODULE_H

#include "mlir/IR/BuiltinOps.h"

namespace ddp {

/// A copy of `module`'s ops (but other candidates) and discardable
/// attributes, as a module at the end of its body. The caller erases it.
mlir::ModuleOp createCandidateModule(mlir::ModuleOp module);

} // namespace ddp

#endif // DDP_LIB_PIPELINES_CANDIDATEMODULE_H
