//===- LoweredProgram.cpp - A lowered step, JIT or AOT --------------------===//

#include "LoweredProgram.h"

#include "ddp/Conversion/DDPToLLVM/RuntimeFunctions.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace ddp;

OwningOpRef<ModuleOp>
ddp::lowerToRuntime(ModuleOp module, const LowerDDPToRuntimeOptions &options) {
  OwningOpRef<ModuleOp> lowered = module.clone();
  PassManager pm(module.getContext());
  pm.addPass(createLowerDDPToRuntime(options));
  if (failed(pm.run(*lowered)))
    return nullptr;
  return lowered;
}

/// Every entry point of the ABI table, bound to the libddprt linked into
/// this tool. Registered explicitly so that the JIT never depends on the
/// runtime's symbols being exported from the executable.
static llvm::orc::SymbolMap
getRuntimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
#define DDPRT_ENTRY_POINT(Enumerator, Result, Function, Parameters)            \
  symbols[interner(#Function)] = {                                             \
      llvm::orc::ExecutorAddr::fromPtr(&Function),                             \
      llvm::JITSymbolFlags::Exported};
#include "ddp/Runtime/RuntimeFunctions.def"
  return symbols;
}

template <typename Function>
static llvm::Error lookupEntryPoint(ExecutionEngine &engine,
                                    llvm::StringRef name, Function &function) {
  llvm::Expected<void *> address = engine.lookup(name);
  if (!address)
    return address.takeError();
  function = reinterpret_cast<Function>(*address);
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<JitProgram>>
JitProgram::create(ModuleOp lowered) {
  ExecutionEngineOptions options;
  // The code is a chain of runtime calls: nothing to optimize, and fast
  // instruction selection keeps large steps quick to compile.
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::None;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
      ExecutionEngine::create(lowered, options);
  if (!engine)
    return engine.takeError();
  (*engine)->registerSymbols(getRuntimeSymbols);

  auto program = std::unique_ptr<JitProgram>(new JitProgram());
  program->engine = std::move(*engine);
  ProgramEntryPoints &entry = program->entryPoints;
  ExecutionEngine &jit = *program->engine;
  if (llvm::Error error = llvm::joinErrors(
          llvm::joinErrors(
              lookupEntryPoint(jit, DDP_PROGRAM_SYM_INIT, entry.init),
              lookupEntryPoint(jit, DDP_PROGRAM_SYM_SETUP, entry.setup)),
          llvm::joinErrors(
              lookupEntryPoint(jit, DDP_PROGRAM_SYM_STEP, entry.step),
              lookupEntryPoint(jit, DDP_PROGRAM_SYM_TEARDOWN, entry.teardown))))
    return std::move(error);
  return program;
}

llvm::Error ddp::writeObjectFile(ModuleOp lowered, llvm::StringRef path) {
  // A generic CPU of the host's architecture: the object is meant to run on
  // another machine (a GPU node) than the one that compiled it.
  // Braces: with parentheses clang reads this as a function declaration.
  llvm::orc::JITTargetMachineBuilder targetBuilder{
      llvm::Triple(llvm::sys::getDefaultTargetTriple())};
  targetBuilder.setRelocationModel(llvm::Reloc::PIC_);
  // As in the JIT: a chain of calls has nothing to optimize, and the
  // optimizing code generator is superlinear on a step of 40k calls.
  targetBuilder.setCodeGenOptLevel(llvm::CodeGenOptLevel::None);
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> target =
      targetBuilder.createTargetMachine();
  if (!target)
    return target.takeError();

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(lowered, llvmContext, "ddp_program");
  if (!llvmModule)
    return llvm::createStringError("cannot translate the lowered step to "
                                   "LLVM IR");
  llvmModule->setDataLayout((*target)->createDataLayout());
  llvmModule->setTargetTriple((*target)->getTargetTriple());

  std::error_code errorCode;
  llvm::ToolOutputFile output(path, errorCode, llvm::sys::fs::OF_None);
  if (errorCode)
    return llvm::createStringError(errorCode, "cannot write '%s': %s",
                                   path.str().c_str(),
                                   errorCode.message().c_str());
  llvm::legacy::PassManager codegen;
  if ((*target)->addPassesToEmitFile(codegen, output.os(), nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  codegen.run(*llvmModule);
  return finishOutputFile(output, path);
}
