//===- schedule-tool.cpp - ddp's schedule pipeline in a tool of one's own -===//
//
// An out-of-tree tool built against an installed ddp (find_package(DDP)): it
// reads a step, runs populateDDPSchedulePipeline on it in its own
// PassManager and prints the scheduled step, as
// `ddp-opt --ddp-schedule="OPTIONS"` does:
//
//   schedule-tool step.mlir --schedule="policy=megatron bucket-size=40"
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

static llvm::cl::opt<std::string> inputFilename(llvm::cl::Positional,
                                                llvm::cl::desc("<step.mlir>"),
                                                llvm::cl::init("-"));
static llvm::cl::opt<std::string>
    scheduleOptions("schedule",
                    llvm::cl::desc("The options of ddp-opt's --ddp-schedule, "
                                   "e.g. \"policy=auto hw=a100-sxm-ib200\""),
                    llvm::cl::init(""));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "Schedules a ddp step with ddp's schedule pipeline\n");

  mlir::DialectRegistry registry;
  registry.insert<ddp::DDPDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);

  // createFromString reports a bad option itself.
  std::unique_ptr<ddp::SchedulePipelineOptions> options =
      ddp::SchedulePipelineOptions::createFromString(scheduleOptions);
  if (!options)
    return EXIT_FAILURE;

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return EXIT_FAILURE;

  mlir::PassManager pm(&context);
  ddp::populateDDPSchedulePipeline(pm, *options);
  if (mlir::failed(pm.run(*module)))
    return EXIT_FAILURE;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return EXIT_SUCCESS;
}
