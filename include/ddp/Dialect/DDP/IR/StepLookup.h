//===- StepLookup.h - Which function of a module is its step ----*- C++ -*-===//
//
// Below the simulator and the lowering, so that both take the same function
// for the step. Each says in its own words why a module has none.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_IR_STEPLOOKUP_H
#define DDP_DIALECT_DDP_IR_STEPLOOKUP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace ddp {

/// The step of `module`: the function named `name` if it has a body, or when
/// `name` is empty the only function with a body. Null otherwise, with
/// `withBody` holding the module's functions with a body, in order (none or
/// several when `name` is empty). Emits nothing.
mlir::func::FuncOp
findStep(mlir::ModuleOp module, llvm::StringRef name,
         llvm::SmallVectorImpl<mlir::func::FuncOp> &withBody);

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_STEPLOOKUP_H
