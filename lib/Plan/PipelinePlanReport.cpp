//===- PipelinePlanReport.cpp - A pipeline plan, as text ------------------===//

#include "ddp/Plan/PipelinePlanReport.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace ddp;
using namespace ddp::plan;

void ddp::plan::printPipelineCandidates(const PipelinePlan &plan,
                                        const timing::CostModel &model,
                                        llvm::raw_ostream &os) {
  os << "pipeline schedules on " << model.getProfile().name
     << " (the configured one first; bubble, exposed p2p and other exposed "
        "communication are means over the pipeline ranks)\n";
  os << llvm::format("  %-40s %11s %11s %9s %9s %11s %10s\n", "schedule",
                     "step ms", "bubble ms", "p2p ms", "comm ms", "step/bound",
                     "peak GiB");
  for (auto [index, candidate] : llvm::enumerate(plan.candidates)) {
    std::string name = candidate.choice.describe();
    std::string mark = index == plan.configured ? "configured" : "";
    if (plan.best && index == *plan.best)
      mark += mark.empty() ? "auto" : ", auto";
    if (!candidate.result) {
      os << llvm::format("  %-40s refused", name.c_str())
         << (mark.empty() ? "" : " (" + mark + ")") << ": " << candidate.refusal
         << "\n";
      continue;
    }
    const sim::PipelineSimResult &result = *candidate.result;
    os << llvm::format(
        "  %-40s %11.3f %11.3f %9.3f %9.3f %11.3f %10.2f", name.c_str(),
        result.stepTime * 1e3, result.getMeanBubbleTime() * 1e3,
        result.getMeanExposedP2PTime() * 1e3,
        result.getMeanOtherExposedCommTime() * 1e3,
        result.lowerBound > 0 ? result.stepTime / result.lowerBound : 0.0,
        candidate.peakMemoryBytes / double(1ull << 30));
    if (!candidate.fits)
      os << "  does not fit";
    if (!mark.empty())
      os << "  (" << mark << ")";
    os << "\n";
  }
}

void ddp::plan::printPipelineChoice(const PipelinePlan &plan,
                                    llvm::raw_ostream &os) {
  const PipelineCandidate &configured = plan.candidates[plan.configured];
  const PipelineCandidate &best = plan.candidates[*plan.best];
  os << "auto: " << best.choice.describe() << "\n";
  if (configured.result)
    os << llvm::formatv("auto / configured step time: {0:f3}\n",
                        best.result->stepTime / configured.result->stepTime);
  else
    os << "auto / configured step time: none, the configured schedule was "
          "refused (above)\n";
  if (!best.fits)
    os << "warning: no schedule fits the device's memory; auto chose the "
          "one that needs the least\n";
}
