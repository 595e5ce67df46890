//===- ParamInventoryFuzzer.cpp - Fuzz the parameter inventory reader -----===//
//
// Input: a parameter inventory as ddp-import --inventory reads it. An
// inventory that reads is imported (when small) and the step must verify.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "ddp/Import/Import.h"
#include "ddp/Import/ParamInventory.h"
#include "ddp/Support/BoundedJSON.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

/// Steps of more parameter passes take long to build without reaching new
/// code.
static constexpr double kMaxFuzzedParamPasses = 64;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<llvm::json::Value> json =
      ddp::parseJSON(ddp::fuzz::asText(data, size));
  if (!json) {
    llvm::consumeError(json.takeError());
    return 0;
  }
  llvm::Expected<ddp::ParamInventory> inventory =
      ddp::parseParamInventory(*json, "fuzz");
  if (!inventory) {
    llvm::consumeError(inventory.takeError());
    return 0;
  }
  if (double(inventory->params.size()) * inventory->numMicrobatches >
      kMaxFuzzedParamPasses)
    return 0;
  MLIRContext &context = ddp::fuzz::getContext();
  OwningOpRef<ModuleOp> module = ddp::importInventory(context, *inventory);
  if (failed(verify(*module)))
    ddp::fuzz::reportBug("an imported inventory does not verify");
  return 0;
}
