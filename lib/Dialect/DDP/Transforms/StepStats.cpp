//===- StepStats.cpp - The -ddp-step-stats pass ---------------------------===//

#include "ddp/Dialect/DDP/Analysis/StepStats.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

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

  void runOnOperation() override {
    std::string errorMessage;
    std::unique_ptr<llvm::ToolOutputFile> file =
        mlir::openOutputFile(output, &errorMessage);
    if (!file) {
      getOperation().emitError("-ddp-step-stats: ") << errorMessage;
      return signalPassFailure();
    }
    StepStats stats = computeStepStats(getOperation());
    stats.print(file->os());
    file->os().flush();
    file->keep();
    numParams = stats.numParams;
    numOps = stats.numOps;
    numUnusedResults = stats.numUnusedResults;
    markAllAnalysesPreserved();
  }
};
} // namespace
