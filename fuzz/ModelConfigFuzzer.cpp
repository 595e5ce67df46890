//===- ModelConfigFuzzer.cpp - Fuzz the model config reader ---------------===//
//
// Input: a model config as ddp-import --config reads it. A config that reads
// is imported (when small) and the step must verify.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "ddp/Import/Import.h"
#include "ddp/Import/ModelConfig.h"
#include "ddp/Support/BoundedJSON.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

/// Steps of more layer passes take long to build without reaching new code.
static constexpr double kMaxFuzzedLayerPasses = 16;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<llvm::json::Value> json =
      ddp::parseJSON(ddp::fuzz::asText(data, size));
  if (!json) {
    llvm::consumeError(json.takeError());
    return 0;
  }
  llvm::Expected<ddp::ModelConfig> config =
      ddp::parseModelConfig(*json, "fuzz");
  if (!config) {
    llvm::consumeError(config.takeError());
    return 0;
  }
  double layerPasses = double(config->numLayers) * config->numMicrobatches *
                       (1.0 + double(config->numExperts));
  if (layerPasses > kMaxFuzzedLayerPasses)
    return 0;
  MLIRContext &context = ddp::fuzz::getContext();
  OwningOpRef<ModuleOp> module = ddp::importModel(context, *config);
  if (failed(verify(*module)))
    ddp::fuzz::reportBug("an imported model does not verify");
  return 0;
}
