//===- SimTestUtils.h - Parsing steps for simulator tests -------*- C++ -*-===//

#ifndef DDP_UNITTESTS_SIM_SIMTESTUTILS_H
#define DDP_UNITTESTS_SIM_SIMTESTUTILS_H

#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

namespace ddp::sim::test {

/// An MLIR context with the dialects a step is written in.
inline std::unique_ptr<mlir::MLIRContext> makeContext() {
  auto context = std::make_unique<mlir::MLIRContext>();
  context->loadDialect<ddp::DDPDialect, mlir::func::FuncDialect>();
  return context;
}

inline mlir::OwningOpRef<mlir::ModuleOp> parseStep(mlir::MLIRContext &context,
                                                   llvm::StringRef ir) {
  return mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
}

inline mlir::func::FuncOp getStep(mlir::ModuleOp module) {
  return *module.getOps<mlir::func::FuncOp>().begin();
}

} // namespace ddp::sim::test

#endif // DDP_UNITTESTS_SIM_SIMTESTUTILS_H
