//===- ParseIRFuzzer.cpp - Fuzz the IR parser and verifier ----------------===//
//
// Input: MLIR text. Parses it with the ddp dialect (which runs the
// verifiers) and prints what parses, so custom parsers, verifiers and
// printers all see malformed input.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A copy: the tools read files NUL-terminated, which MLIR's lexer relies
  // on at the end of the buffer; libFuzzer's input is not.
  std::string text = ddp::fuzz::asText(data, size).str();
  if (ddp::fuzz::crashesUpstreamParser(text))
    return -1;
  MLIRContext *context = &ddp::fuzz::getContext();
  ddp::fuzz::SilenceDiagnostics silence(context);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      text, ParserConfig(context));
  if (module)
    module->print(llvm::nulls());
  return 0;
}
