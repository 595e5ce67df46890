//===- FuzzSupport.cpp - Shared setup of the libFuzzer targets ------------===//

#include "FuzzSupport.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"

mlir::MLIRContext &ddp::fuzz::getContext() {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    registry.insert<ddp::DDPDialect, mlir::func::FuncDialect,
                    mlir::LLVM::LLVMDialect>();
    auto *created = new mlir::MLIRContext(
        registry, mlir::MLIRContext::Threading::DISABLED);
    created->loadAllAvailableDialects();
    return created;
  }();
  return *context;
}

/// Skips whitespace and `//` comments, which may separate tokens.
static llvm::StringRef skipTrivia(llvm::StringRef text) {
  while (true) {
    text = text.ltrim();
    if (!text.starts_with("//"))
      return text;
    text = text.drop_until([](char c) { return c == '\n'; });
  }
}

bool ddp::fuzz::crashesUpstreamParser(llvm::StringRef text) {
  if (text.starts_with("ML\xefR"))
    return true;
  for (size_t at = text.find("array"); at != llvm::StringRef::npos;
       at = text.find("array", at + 1)) {
    llvm::StringRef rest = skipTrivia(text.drop_front(at + 5));
    if (rest.consume_front("<") && skipTrivia(rest).starts_with("index"))
      return true;
  }
  return false;
}

void ddp::fuzz::checkImportVerifies(mlir::ModuleOp module, const char *what) {
  if (failed(mlir::verify(module)))
    reportBug(what);
}
