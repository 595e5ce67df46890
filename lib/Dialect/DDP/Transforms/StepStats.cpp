//===- StepStats.cpp - The -ddp-step-stats pass ---------------------------===//

#include "ddp/Dialect/DDP/Analysis/StepStats.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace ddp {
#define GEN_PASS_DEF_DDPSTEPSTATS
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace ddp;

namespace {
struct StepStatsPass : impl::DDPStepStatsBase<StepStatsPass> {
  void runOnOperation() override {
    StepStats stats = computeStepStats(getOperation());
    stats.print(llvm::outs());
    llvm::outs().flush();
    numParams = stats.numParams;
    numOps = stats.numOps;
    numUnusedResults = stats.numUnusedResults;
    markAllAnalysesPreserved();
  }
};
} // namespace
