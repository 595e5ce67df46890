//===- ModelConfigFuzzer.cpp - Fuzz the model config reader ---------------===//
//
// Input: a model config as ddp-import --config reads it. A config that reads
// is imported (when small) and the step must verify; a pipelined one must
// also split into stage programs that the order check proves cannot hang,
// since the config's checks are Megatron's and Megatron runs it. Its
// bytecode (ddp-import --emit-bytecode) reads back as the same step.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Import/Import.h"
#include "ddp/Import/ModelConfig.h"
#include "ddp/Plan/PipelinePlanner.h"
#include "ddp/Timing/HardwareProfile.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

/// Steps of more layer passes take long to build without reaching new code.
static constexpr double kMaxFuzzedLayerPasses = 16;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<ddp::ModelConfig> config =
      ddp::fuzz::readJSONInput<ddp::ModelConfig>(data, size,
                                                 ddp::parseModelConfig);
  if (!config)
    return 0;
  double layerPasses = double(config->numLayers) * config->numMicrobatches *
                       (1.0 + double(config->numExperts));
  if (layerPasses > kMaxFuzzedLayerPasses)
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      ddp::importModel(ddp::fuzz::getContext(), *config);
  ddp::fuzz::checkImportVerifies(*module, "an imported model does not verify");
  // What ddp-import --emit-bytecode writes reads back as the same step.
  std::string bytecode;
  llvm::raw_string_ostream bytecodeStream(bytecode);
  if (failed(mlir::writeBytecodeToFile(*module, bytecodeStream)))
    ddp::fuzz::reportBug("an imported model cannot be written as bytecode");
  mlir::OwningOpRef<mlir::ModuleOp> readBack =
      mlir::parseSourceString<mlir::ModuleOp>(
          bytecode, mlir::ParserConfig(&ddp::fuzz::getContext()));
  auto print = [](mlir::ModuleOp step) {
    std::string text;
    llvm::raw_string_ostream os(text);
    step.print(os);
    return text;
  };
  if (!readBack || print(*readBack) != print(*module))
    ddp::fuzz::reportBug("an imported model's bytecode reads back as "
                         "another step");
  if (!config->isPipelined())
    return 0;
  mlir::PassManager pm(&ddp::fuzz::getContext());
  ddp::PipelineStagesOptions options;
  options.microbatchGroupSize = config->microbatchGroupSizePerVpStage;
  // What the import records for ddp-schedule.
  options.overlapP2PComm =
      config->getVirtualPipelineSize() > 1 && config->overlapP2PComm;
  options.deallocatePipelineOutputs = config->deallocatePipelineOutputs;
  options.overlapMoeExpertParallelComm = config->overlapMoeExpertParallelComm;
  options.delayWgradCompute = config->delayWgradCompute;
  if (config->pipelineSchedule)
    options.pipelineSchedule =
        ddp::stringifyPipelineScheduleKind(*config->pipelineSchedule).str();
  pm.addPass(ddp::createPipelineStages(options));
  pm.addPass(ddp::createVerifyCollectiveOrder());
  if (failed(pm.run(*module)))
    ddp::fuzz::reportBug("a pipelined model does not split into stage "
                         "programs that cannot hang");

  // The config the importer records reads back as the same config, and
  // auto's pipeline plan (which imports it again at other virtual sizes)
  // refuses a candidate or simulates it, never crashes.
  llvm::Expected<std::optional<ddp::ModelConfig>> recorded =
      ddp::getRecordedModelConfig(*module);
  if (!recorded || !*recorded ||
      llvm::json::Value(ddp::modelConfigToJSON(**recorded)) !=
          llvm::json::Value(ddp::modelConfigToJSON(*config)))
    ddp::fuzz::reportBug("a pipelined model's recorded config does not read "
                         "back as its config");
  static const ddp::timing::CostModel model(
      cantFail(ddp::timing::lookupHardwareProfile("h100-sxm-ib400")));
  llvm::Expected<ddp::plan::PipelinePlan> plan = ddp::plan::planPipeline(
      ddp::fuzz::getContext(), *config, nullptr, "", model,
      [](const llvm::Twine &) {});
  if (!plan)
    ddp::fuzz::reportBug("auto's pipeline plan fails without options");
  return 0;
}
