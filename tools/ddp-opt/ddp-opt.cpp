//===- ddp-opt.cpp - The ddp optimizer driver ------------------------------===//
//
// MlirOptMain with the ddp dialect, its passes, only the upstream dialects a
// step is written in (builtin and func) or may hold besides ddp ops (arith,
// lowered with it by ddp-lower-to-runtime), and the generic cleanups an
// embedder may run after a schedule, so that tests can show they keep it.
//
// The output file is opened here rather than by MlirOptMain(argc, argv, ...),
// which keeps it without looking at its write errors: a full disk ended
// ddp-opt with "LLVM ERROR: IO failure on output stream", naming no file.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Pipelines/SchedulePipeline.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <cstdio>

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<ddp::DDPDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
  ddp::registerDDPConversionPasses();
  registry.insert<mlir::LLVM::LLVMDialect>();
  // -convert-to-llvm finds each dialect's patterns through these.
  mlir::registerPass([] { return mlir::createConvertToLLVMPass(); });
  ddp::registerConvertDDPToLLVMInterface(registry);
  mlir::registerConvertFuncToLLVMInterface(registry);
  mlir::arith::registerConvertArithToLLVMInterface(registry);
  ddp::registerDDPPasses();
  ddp::registerDDPSchedulePipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSCCPPass();
  mlir::registerSymbolDCEPass();
  // An error at a step function would print the whole function after it
  // (MLIR's default); ddp's messages name the op and where it is, so the
  // IR is printed only on request (--mlir-print-op-on-diagnostic).
  mlir::registerMLIRContextCLOptions();
  if (llvm::cl::Option *option =
          llvm::cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic"))
    static_cast<llvm::cl::opt<bool> *>(option)->setInitialValue(false);
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv,
      "ddp optimizer driver: schedules the communication of a data-parallel "
      "training step\n",
      registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // What prints a list and exits writes no output file: MlirOptMain's own.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));
  // Where MlirOptMain has it, after the options.
  llvm::InitLLVM initLLVM(argc, argv);

  // As MlirOptMain: a tool that waits for a terminal seems to hang.
  if (inputFile == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  // A model config, a Megatron-LM argument dump or an inventory given by
  // mistake: the parser's "expected operation name in quotes" names no fix.
  // (MLIR text never starts with '{' but for a `{-#` metadata block.)
  llvm::StringRef text = input->getBuffer().ltrim();
  if ((text.starts_with("{") && !text.starts_with("{-#")) ||
      text.starts_with("[")) {
    llvm::WithColor::error(llvm::errs(), "ddp-opt")
        << "'" << inputFile
        << "' is JSON, not MLIR: ddp-import makes a step from a model config "
           "(--config), a Megatron-LM log (--megatron-args) or a parameter "
           "inventory (--inventory)\n";
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  if (llvm::Error error = ddp::finishOutputFile(*output, outputFile)) {
    llvm::WithColor::error(llvm::errs(), "ddp-opt")
        << llvm::toString(std::move(error)) << "\n";
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
