//===- SimOutput.h - What users read of a simulation ------------*- C++ -*-===//
//
// The text summary, the JSON report (schema in docs/schemas/), the Chrome
// trace (the Trace Event Format shared with the runtime's traces) and an SVG
// timeline drawn without a browser.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SIM_SIMOUTPUT_H
#define DDP_SIM_SIMOUTPUT_H

#include "ddp/Sim/PipelineSimulator.h"
#include "ddp/Sim/Simulator.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace ddp {
namespace sim {

/// The version of the JSON report, written as `"schema_version"`.
constexpr int64_t kSimReportSchemaVersion = 1;

/// A human-readable summary: step time, compute, communication, exposed
/// communication, overlap, lower bound and the streams.
void printTextSummary(const SimResult &result, const timing::CostModel &model,
                      llvm::raw_ostream &os);

/// The machine-readable report (docs/schemas/sim-report.schema.json).
llvm::json::Value buildJsonReport(const SimResult &result,
                                  const timing::CostModel &model);

/// What would lower the memory a rank of `module`'s step needs, as the end
/// of a sentence: "more pipeline stages, ... or activation recomputation
/// lower it". Only what can still help is named: not the distributed
/// optimizer where the step already shards its state or has one
/// data-parallel rank, not sequence parallelism without tensor parallelism.
std::string describeMemoryRemedies(mlir::ModuleOp module);

/// A pipeline's summary: the step (when the last rank finishes) and per
/// pipeline rank its end, compute, idle time and idle over ideal compute;
/// then each rank's memory (model state, activations at its peak), the
/// rank that needs the most and whether it fits the profile's device.
void printPipelineSummary(const PipelineSimResult &result,
                          const timing::CostModel &model,
                          llvm::raw_ostream &os);

/// The same as JSON: `{"schema_version", "hardware", "step_ms",
/// "lower_bound_ms",
/// "memory_peak_rank", ["device_memory_bytes", "fits_device_memory",]
/// "stages": [{"rank", "end_ms", "compute_ms", "ideal_compute_ms",
/// "idle_ms", "idle_fraction", "exposed_comm_ms", "model_state_bytes",
/// "memory_bytes", ["activation_bytes", "activation_forwards",
/// "activation_layers"]}]}` (bracketed: when known).
llvm::json::Value buildPipelineJsonReport(const PipelineSimResult &result,
                                          const timing::CostModel &model);

/// The Chrome trace: one `X` event per recorded interval, `pid` 0 named
/// "simulated", `tid` 0 the compute stream and 1... the communication
/// streams, each named by a `thread_name` metadata event.
void writeChromeTrace(const SimResult &result, llvm::raw_ostream &os);
/// The same for a pipeline: pid r is pipeline rank r ("pipeline rank r"),
/// all on the pipeline's one clock.
void writePipelineChromeTrace(const PipelineSimResult &result,
                              llvm::raw_ostream &os);

/// An SVG picture of the timeline: one lane per stream, intervals colored by
/// category, an axis in milliseconds.
void writeTimelineSvg(const SimResult &result, llvm::raw_ostream &os);

/// One timeline of a picture of several, and the title written before its
/// own (empty: none).
struct TimelinePanel {
  llvm::StringRef title;
  const SimResult *result = nullptr;
};
/// The timelines of `panels` one above the other on one time axis, which
/// spans the longest step (ddp-plan compares two schedules so).
void writeTimelineSvg(llvm::ArrayRef<TimelinePanel> panels,
                      llvm::raw_ostream &os);

} // namespace sim
} // namespace ddp

#endif // DDP_SIM_SIMOUTPUT_H
