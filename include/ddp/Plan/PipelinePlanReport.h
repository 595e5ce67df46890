//===- PipelinePlanReport.h - A pipeline plan, as text ----------*- C++ -*-===//
//
// What ddp-plan prints of a pipeline plan: a row per candidate (step,
// bubble, exposed p2p and other communication, step over the lower bound,
// the busiest rank's memory; refused ones with the reason), the configured
// and the chosen marked, then auto's choice against the configured one.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_PLAN_PIPELINEPLANREPORT_H
#define DDP_PLAN_PIPELINEPLANREPORT_H

#include "ddp/Plan/PipelinePlanner.h"

#include "llvm/Support/raw_ostream.h"

namespace ddp::plan {

/// The table of `plan`'s candidates, simulated on `model`.
void printPipelineCandidates(const PipelinePlan &plan,
                             const timing::CostModel &model,
                             llvm::raw_ostream &os);

/// `auto: <choice>`, its step time over the configured one's (or why there
/// is none), and a warning when no candidate fits the device. `plan` has a
/// best candidate.
void printPipelineChoice(const PipelinePlan &plan, llvm::raw_ostream &os);

} // namespace ddp::plan

#endif // DDP_PLAN_PIPELINEPLANREPORT_H
