//===- ddp-opt.cpp - The ddp optimizer driver ------------------------------===//
//
// MlirOptMain with the ddp dialect, its passes, only the upstream dialects a
// step is written in (builtin and func) or may hold besides ddp ops (arith,
// lowered with it by ddp-lower-to-runtime), and the generic cleanups an
// embedder may run after a schedule, so that tests can show they keep it.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<ddp::DDPDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
  ddp::registerDDPConversionPasses();
  registry.insert<mlir::LLVM::LLVMDialect>();
  ddp::registerDDPPasses();
  ddp::registerDDPSchedulePipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSCCPPass();
  mlir::registerSymbolDCEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ddp optimizer driver: schedules the communication of a "
                  "data-parallel training step\n",
      registry));
}
