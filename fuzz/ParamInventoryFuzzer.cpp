//===- ParamInventoryFuzzer.cpp - Fuzz the parameter inventory reader -----===//
//
// Input: a parameter inventory as ddp-import --inventory reads it. An
// inventory that reads is imported (when small) and the step must verify.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "ddp/Import/Import.h"
#include "ddp/Import/ParamInventory.h"

/// Steps of more parameter passes take long to build without reaching new
/// code.
static constexpr double kMaxFuzzedParamPasses = 64;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<ddp::ParamInventory> inventory =
      ddp::fuzz::readJSONInput<ddp::ParamInventory>(data, size,
                                                    ddp::parseParamInventory);
  if (!inventory)
    return 0;
  if (double(inventory->params.size()) * inventory->numMicrobatches >
      kMaxFuzzedParamPasses)
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      ddp::importInventory(ddp::fuzz::getContext(), *inventory);
  ddp::fuzz::checkImportVerifies(*module,
                                 "an imported inventory does not verify");
  return 0;
}
