//===- ddp-opt.cpp - The ddp optimizer driver ------------------------------===//
//
// MlirOptMain with the ddp dialect, its passes, and only the upstream dialects
// a step is written in (builtin and func).
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<ddp::DDPDialect, mlir::func::FuncDialect>();
  ddp::registerDDPPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ddp optimizer driver: schedules the communication of a "
                  "data-parallel training step\n",
      registry));
}
