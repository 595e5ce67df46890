//===- PrintStepStats.cpp - The ddp-step-stats pass -----------------------===//

#include "ddp/Dialect/DDP/Analysis/ActivationMemory.h"
#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
#include "ddp/Dialect/DDP/Analysis/StepStats.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace ddp {
#define GEN_PASS_DEF_STEPSTATS
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace ddp;

namespace {
struct StepStatsPass : impl::StepStatsBase<StepStatsPass> {
  using StepStatsBase::StepStatsBase;

  /// What each step function keeps for its backwards at its peak, when the
  /// importer recorded the model's activations.
  void printActivations(llvm::raw_ostream &os) {
    std::optional<ActivationBytes> bytes = getActivationBytes(getOperation());
    if (!bytes)
      return;
    os << "activations per rank (bytes; Korthikanti et al. as Megatron-LM "
          "counts them):\n"
       << "  per microbatch: " << bytes->layer << " per layer, "
       << bytes->embedding << " embedding, " << bytes->output << " output\n";
    if (!bytes->perLayer.empty()) {
      // Recomputation: what each layer keeps instead.
      os << "  kept per layer with recomputation:";
      for (int64_t kept : bytes->perLayer)
        os << " " << kept;
      os << "\n";
    }
    for (auto func : getOperation().getOps<mlir::func::FuncOp>()) {
      if (func.isExternal())
        continue;
      os << "  @" << func.getSymName() << ": ";
      std::optional<ActivationPeak> peak = computeActivationPeak(func, *bytes);
      if (!peak) {
        os << "per pipeline rank once ddp-pipeline-stages has split it\n";
        continue;
      }
      os << peak->bytes << " (" << formatBytes(peak->bytes) << ") at the peak: "
         << peak->forwards << " forward(s) in flight, " << peak->layers
         << " layer(s)\n";
    }
  }

  /// What ddp-lower-to-runtime's program allocates per rank, or why the step
  /// cannot be lowered (the planner's diagnostic, without its location).
  void printRuntimeMemory(llvm::raw_ostream &os) {
    std::string reason;
    mlir::ScopedDiagnosticHandler capture(&getContext(), [&](mlir::Diagnostic &diag) {
      if (reason.empty())
        reason = diag.str();
      return mlir::success();
    });
    mlir::FailureOr<StoragePlan> plan = StoragePlan::build(getOperation());
    mlir::FailureOr<RuntimeMemory> estimated = mlir::failure();
    if (succeeded(plan))
      estimated = estimateRuntimeMemory(*plan);
    if (failed(estimated)) {
      os << "runtime memory per rank (ddp's lowering): not lowerable: "
         << reason << "\n";
      return;
    }
    const RuntimeMemory &memory = *estimated;
    // What ddp-run's program allocates, not what Megatron-LM would: the
    // model state below is that.
    os << "runtime memory per rank (ddp's lowering): "
       << memory.getTotalBytes() << " bytes ("
       << formatBytes(memory.getTotalBytes())
       << "), what the lowered program allocates on ddp's runtime\n"
       << "  parameters: " << memory.paramBytes << "\n";
    if (plan->numParamsInBuckets > 0)
      os << "  parameters stored in their gathered buckets (counted in "
            "buffers): "
         << plan->numParamsInBuckets << "\n";
    if (int64_t sharded = plan->getNumShardStoredParams())
      os << "  parameters stored as this rank's shard: " << sharded
         << " (their bytes counted on the rank that keeps the most)\n";
    os << "  buffers: " << memory.bufferBytes << " (" << plan->buffers.size()
       << " buffers of " << memory.unsharedBufferBytes << " bytes in "
       << plan->arenas.size() << " arenas)\n"
       << "  optimizer state: " << memory.optimizerStateBytes << "\n"
       << "  cpu working copies: " << memory.workingCopyBytes << "\n"
       << "  not in the total: deterministic reductions (ddp-run --verify on "
          "more than 2 ranks): "
       << (memory.deterministicReductionBytes
               ? std::to_string(*memory.deterministicReductionBytes)
               : std::string("more than 2^63 - 1"))
       << "\n";
  }

  void runOnOperation() override {
    std::string errorMessage;
    std::unique_ptr<llvm::ToolOutputFile> file =
        mlir::openOutputFile(output, &errorMessage);
    if (!file) {
      getOperation().emitError("-ddp-step-stats: ") << errorMessage;
      return signalPassFailure();
    }
    // A pipeline's stage programs each run on their own pipeline ranks:
    // what one rank runs and keeps is its program's, not the module's sum.
    llvm::SmallVector<mlir::func::FuncOp> stages;
    for (auto func : getOperation().getOps<mlir::func::FuncOp>())
      if (!func.isExternal() && getPipelineStage(func))
        stages.push_back(func);
    if (stages.empty()) {
      mlir::FailureOr<StepStats> stats = computeStepStats(getOperation());
      if (failed(stats))
        return signalPassFailure();
      stats->print(file->os());
      printRuntimeMemory(file->os());
      stats->modelState.print(file->os());
      numOps = stats->numOps;
      numUnusedResults = stats->numUnusedResults;
    } else {
      file->os() << "pipeline stage programs: " << stages.size()
                 << " (each section is what the ranks of one pipeline "
                    "rank run and keep)\n";
      numOps = numUnusedResults = 0;
      for (mlir::func::FuncOp stage : stages) {
        mlir::FailureOr<StepStats> ofStage =
            computeStepStats(getOperation(), stage);
        if (failed(ofStage))
          return signalPassFailure();
        file->os() << "@" << stage.getSymName() << " (pipeline rank "
                   << *getPipelineStage(stage) << "):\n";
        ofStage->print(file->os());
        ofStage->modelState.print(file->os());
        numOps += ofStage->numOps;
        numUnusedResults += ofStage->numUnusedResults;
      }
      printRuntimeMemory(file->os());
    }
    numParams = llvm::range_size(getOperation().getOps<ParamOp>());
    printActivations(file->os());
    if (llvm::Error error = finishOutputFile(*file, output)) {
      getOperation().emitError("-ddp-step-stats: ")
          << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
