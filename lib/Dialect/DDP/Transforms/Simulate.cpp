//===- Simulate.cpp - The ddp-simulate pass -------------------------------===//
//
// An analysis pass: prices the step with the DDPSim library and writes what
// the user asked for. The IR is never changed.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "ddp/Dialect/DDP/Analysis/StepStats.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/ScheduleModel/ScheduleModel.h"
#include "ddp/Sim/SimOutput.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>

namespace ddp {
#define GEN_PASS_DEF_SIMULATE
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;
using namespace ddp::sim;
using namespace ddp::timing;

namespace {
struct SimulatePass : public ddp::impl::SimulateBase<SimulatePass> {
  using SimulateBase::SimulateBase;

  void runOnOperation() override;

private:
  void runOnPipeline(HardwareProfile profile);
  /// Writes `write`'s output to `path` ('-' is stdout); reports failures at
  /// the module.
  LogicalResult writeFile(StringRef path, StringRef what,
                          llvm::function_ref<void(raw_ostream &)> write);
};
} // namespace

/// The model state per rank of `module` (docs/DistributedOptimizer.md) at
/// the simulated sizes: a shard optimizer's group may be resized by `dp`.
static FailureOr<ModelState> getSimulatedModelState(ModuleOp module,
                                                    const SimResult &result) {
  FailureOr<ModelState> state = computeModelState(module);
  if (failed(state))
    return failure();
  // The simulator places at most 2^20 ranks, so the product fits.
  for (auto &[axes, sharded] : state->sharded) {
    sharded.groupSize = 1;
    for (StringRef axis : llvm::split(axes, ','))
      for (const MeshAxisInfo &info : result.meshAxes)
        if (info.name == axis)
          sharded.groupSize *= info.size;
  }
  return state;
}

static llvm::json::Value toJSON(const ModelState &state) {
  llvm::json::Array sharded;
  for (const auto &[axes, entry] : state.sharded)
    sharded.push_back(llvm::json::Object{
        {"group", axes},
        {"ranks", entry.groupSize},
        {"param_elements", entry.paramElements},
        {"params_bytes", entry.paramBytes},
        {"main_params_bytes", entry.mainParamBytes},
        {"optimizer_state_bytes", entry.optimizerStateBytes}});
  return llvm::json::Object{
      {"param_elements", state.paramElements},
      {"params_bytes", state.paramBytes},
      {"grads_bytes", state.gradBytes},
      {"grad_padding_bytes", state.gradPaddingBytes},
      {"main_params_bytes", state.mainParamBytes},
      {"optimizer_state_bytes", state.optimizerStateBytes},
      {"sharded", std::move(sharded)},
      {"bytes_per_rank", state.getBytesPerRank()}};
}

LogicalResult
SimulatePass::writeFile(StringRef path, StringRef what,
                        llvm::function_ref<void(raw_ostream &)> write) {
  // "-" opens llvm::outs().
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return emitError(getOperation().getLoc(), "ddp-simulate: cannot write the ")
           << what << " to '" << path << "': " << error;
  write(file->os());
  if (llvm::Error writeError = finishOutputFile(*file, path))
    return emitError(getOperation().getLoc(), "ddp-simulate: cannot write the ")
           << what << " to '" << path
           << "': " << llvm::errorToErrorCode(std::move(writeError)).message();
  return success();
}

/// The stage programs of a pipeline, simulated together: the summary and
/// the report per pipeline rank.
void SimulatePass::runOnPipeline(HardwareProfile profile) {
  ModuleOp module = getOperation();
  if (!stepName.empty() || dataParallelSize != 0) {
    emitError(module.getLoc(),
              "ddp-simulate: a pipeline is simulated whole; step and dp are "
              "not for pipelines yet");
    return signalPassFailure();
  }
  CostModel model(std::move(profile), algorithm,
                  fp8Gemms ? GemmPrecision::FP8 : GemmPrecision::Native);
  SimOptions options;
  options.recordEvents = !tracePath.empty() || !timelinePath.empty();
  options.moeImbalance = moeImbalance;
  FailureOr<PipelineSimResult> result = simulatePipeline(module, model, options);
  if (failed(result))
    return signalPassFailure();
  stepTimeMicros = static_cast<uint64_t>(std::llround(result->stepTime * 1e6));
  for (const SimResult &stage : result->stages) {
    numSimulatedOps += stage.numOps;
    numSimulatedCollectives += stage.numCollectives;
  }
  bool ok = true;
  if (!outputPath.empty())
    ok &= succeeded(writeFile(outputPath, "summary", [&](raw_ostream &os) {
      printPipelineSummary(*result, model, os);
    }));
  if (!reportPath.empty())
    ok &= succeeded(writeFile(reportPath, "report", [&](raw_ostream &os) {
      os << llvm::formatv("{0:2}", buildPipelineJsonReport(*result, model))
         << "\n";
    }));
  if (!tracePath.empty())
    ok &= succeeded(writeFile(tracePath, "trace", [&](raw_ostream &os) {
      writePipelineChromeTrace(*result, os);
    }));
  if (!timelinePath.empty())
    ok &= succeeded(writeFile(timelinePath, "timeline", [&](raw_ostream &os) {
      // One lane group per rank, on the pipeline's one time axis.
      std::vector<std::string> titles;
      for (size_t rank = 0; rank < result->stages.size(); ++rank)
        titles.push_back("pipeline rank " + std::to_string(rank));
      std::vector<TimelinePanel> panels;
      for (auto [title, stage] : llvm::zip_equal(titles, result->stages))
        panels.push_back({title, &stage});
      writeTimelineSvg(panels, os);
    }));
  if (!ok)
    signalPassFailure();
}

void SimulatePass::runOnOperation() {
  ModuleOp module = getOperation();
  markAllAnalysesPreserved();

  // Without hw=, the profile ddp-schedule's auto policy laid the step out
  // for, or the one ddp-schedule was given: the prediction is for the same
  // machine.
  std::string hardwareName = hardware;
  if (!hardware.hasValue()) {
    llvm::SmallSetVector<StringRef, 2> recorded;
    for (func::FuncOp step : module.getOps<func::FuncOp>())
      if (auto policy =
              step->getAttrOfType<BucketPolicyAttr>(kBucketPolicyAttrName))
        if (StringAttr hw = policy.getHw())
          recorded.insert(hw.getValue());
    if (recorded.size() > 1) {
      emitError(module.getLoc(), "ddp-simulate: the step's functions were "
                                 "laid out for different hardware (")
          << llvm::join(recorded, ", ") << "); give hw=";
      return signalPassFailure();
    }
    if (!recorded.empty())
      hardwareName = recorded.front().str();
    // Else the hw ddp-schedule was given, which it records with the
    // module's schedule options.
    else if (auto options = module->getAttrOfType<DictionaryAttr>(
                 kScheduleOptionsAttrName))
      if (auto hw = options.getAs<StringAttr>("hw"))
        hardwareName = hw.getValue().str();
  }

  // Validate every option before doing any work.
  llvm::Expected<HardwareProfile> profile = lookupHardwareProfile(hardwareName);
  if (!profile) {
    emitError(module.getLoc(), "ddp-simulate: ")
        << llvm::toString(profile.takeError());
    return signalPassFailure();
  }
  if (fp8Gemms && profile->fp8PeakFlops <= 0) {
    emitError(module.getLoc(), "ddp-simulate: fp8-gemms needs an FP8 peak, "
                               "but hardware profile '")
        << profile->name << "' has no 'peak_tflops.fp8'";
    return signalPassFailure();
  }
  if (!(moeImbalance >= 1) || !std::isfinite(double(moeImbalance))) {
    emitError(module.getLoc(),
              "ddp-simulate: moe-imbalance is the busiest rank's routed "
              "tokens over the balanced share, at least 1 (balanced), got ")
        << double(moeImbalance);
    return signalPassFailure();
  }
  if (dataParallelSize < 0) {
    // The option itself does not stream as a number into a diagnostic.
    emitError(module.getLoc(),
              "ddp-simulate: dp must be positive (or 0 to keep the mesh), got ")
        << static_cast<int64_t>(dataParallelSize);
    return signalPassFailure();
  }
  if (hasPipelineStages(module))
    return runOnPipeline(std::move(*profile));
  // One pipeline rank's program simulated alone waits on no peer: what it
  // says of the rank's own streams holds (docs/PipelineSimulation.md reads
  // its tensor-parallel traffic so), its step time does not.
  if (func::FuncOp extracted = getExtractedStageProgram(module))
    extracted.emitWarning()
        << "'@" << extracted.getSymName()
        << "' is one pipeline rank's program, extracted from a pipeline "
           "('ddp.program_groups'): simulated alone it waits on no other "
           "rank, so its step time leaves out the bubble and the "
           "stage-to-stage waits; the pipeline's step is ddp-simulate on the "
           "module that holds every stage program, before "
           "ddp-extract-pipeline-stage";
  FailureOr<func::FuncOp> step = findStepToSimulate(module, stepName);
  if (failed(step))
    return signalPassFailure();

  CostModel model(std::move(*profile), algorithm,
                  fp8Gemms ? GemmPrecision::FP8 : GemmPrecision::Native);
  SimOptions options;
  options.dataParallelSize = dataParallelSize;
  options.moeImbalance = moeImbalance;
  options.recordEvents =
      !reportPath.empty() || !tracePath.empty() || !timelinePath.empty();
  FailureOr<SimResult> result = simulateStep(*step, model, options);
  if (failed(result))
    return signalPassFailure();

  numSimulatedOps = result->numOps;
  numSimulatedCollectives = result->numCollectives;
  stepTimeMicros = static_cast<uint64_t>(std::llround(result->stepTime * 1e6));

  // Only what is written needs them: the model state, and the tensors the
  // step's order keeps live at once beside it (what prefetching a gather or
  // holding a GEMM back changes).
  ModelState modelState;
  int64_t livePeak = 0;
  if (!outputPath.empty() || !reportPath.empty()) {
    FailureOr<ModelState> state = getSimulatedModelState(module, *result);
    if (failed(state))
      return signalPassFailure();
    modelState = std::move(*state);
    livePeak = schedule::getLiveTensorPeak(*step);
  }
  bool ok = true;
  if (!outputPath.empty())
    ok &= succeeded(writeFile(outputPath, "summary", [&](raw_ostream &os) {
      printTextSummary(*result, model, os);
      modelState.print(os);
      os << "live tensors at their peak (activations, gradients, gathered "
            "parameters; each from its op to its last reader): "
         << livePeak << " bytes\n";
    }));
  if (!reportPath.empty())
    ok &= succeeded(writeFile(reportPath, "report", [&](raw_ostream &os) {
      llvm::json::Value report = buildJsonReport(*result, model);
      report.getAsObject()->try_emplace("model_state", toJSON(modelState));
      report.getAsObject()->try_emplace("live_tensor_peak_bytes", livePeak);
      os << llvm::formatv("{0:2}", report) << "\n";
    }));
  if (!tracePath.empty())
    ok &= succeeded(writeFile(tracePath, "trace", [&](raw_ostream &os) {
      writeChromeTrace(*result, os);
    }));
  if (!timelinePath.empty())
    ok &= succeeded(writeFile(timelinePath, "timeline", [&](raw_ostream &os) {
      writeTimelineSvg(*result, os);
    }));
  if (!ok)
    signalPassFailure();
}
