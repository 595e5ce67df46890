//===- SimReport.cpp - Text summary and JSON report of a simulation -------===//

#include "ddp/Sim/SimOutput.h"

#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;
using namespace mlir;
using namespace ddp::sim;
using namespace ddp::timing;

static double toMs(double seconds) { return seconds * 1e3; }

static std::string describeMesh(const SimResult &result) {
  std::string text = "@" + result.meshName + "(";
  for (auto [index, axis] : enumerate(result.meshAxes)) {
    if (index)
      text += ", ";
    text += formatv("{0} = {1}", axis.name, axis.size).str();
    if (axis.size != axis.sizeInIR)
      text += formatv(" ({0} in the IR)", axis.sizeInIR).str();
  }
  return text + ")";
}

static std::string describeGroup(const StreamInfo &stream) {
  return formatv("[{0}] {1} ranks on {2} node{3}", join(stream.axes, ", "),
                 stream.placement.ranks, stream.placement.nodes,
                 stream.placement.nodes == 1 ? "" : "s")
      .str();
}

void ddp::sim::printTextSummary(const SimResult &result, const CostModel &model,
                                raw_ostream &os) {
  auto line = [&](StringRef label, double ms) {
    os << "  " << left_justify(label, 20) << format("%12.3f ms", ms);
  };
  os << "simulated step @" << result.stepName << " on " << result.hardwareName
     << " (" << stringifyCollectiveAlgorithm(model.getAlgorithm())
     << " collectives"
     << (model.getGemmPrecision() == GemmPrecision::FP8 ? ", FP8 GEMMs" : "")
     << ")\n";
  if (!result.meshName.empty())
    os << "  mesh " << describeMesh(result) << ": " << result.numRanks
       << " ranks on " << result.numNodes << " node"
       << (result.numNodes == 1 ? "" : "s") << ", data-parallel size "
       << result.dataParallelSize << "\n";
  line("step time", toMs(result.stepTime));
  os << "\n";
  line("compute", toMs(result.computeTime));
  os << format("   (%.3f ms without slowdown, %lld kernels)\n",
               toMs(result.idealComputeTime),
               static_cast<long long>(result.numComputeOps));
  // A small step's rate in GFLOP/s: "0.0 TFLOP/s" says nothing.
  double rate = result.computeFlopRate();
  os << "  " << left_justify("compute rate", 20)
     << (rate >= 0.1e12 || rate == 0
             ? format("%12.1f TFLOP/s", rate / 1e12)
             : format("%12.1f GFLOP/s", rate / 1e9))
     << format(" (%.4g TFLOP of GEMMs and costed kernels)\n",
               result.flops / 1e12);
  line("communication", toMs(result.commTime));
  os << format("   (%lld collectives)\n",
               static_cast<long long>(result.numCollectives));
  line("exposed comm", toMs(result.exposedCommTime));
  os << "\n";
  os << "  " << left_justify("overlap", 20);
  if (std::optional<double> overlap = result.overlapFraction())
    os << format("%12.1f %%", *overlap * 100) << "\n";
  else
    os << format("%12s", "n/a") << "   (no communication)\n";
  line("lower bound", toMs(result.lowerBound.value()));
  os << format("   (compute %.3f, communication %.3f, tail %.3f ms; bound by ",
               toMs(result.lowerBound.compute),
               toMs(result.lowerBound.communication),
               toMs(result.lowerBound.tail))
     << result.lowerBound.binding() << ")\n";
  os << "  " << left_justify("step / lower bound", 20)
     << format("%12.3f", result.stepOverLowerBound()) << "\n";
  os << "  streams:\n";
  for (const StreamInfo &stream : result.streams) {
    os << "    " << left_justify(stream.name, 8)
       << format("busy %12.3f ms  %8lld ops", toMs(stream.busyTime),
                 static_cast<long long>(stream.numOps));
    if (!stream.axes.empty())
      os << "  " << describeGroup(stream);
    os << "\n";
  }
  if (!result.unmodeledOps.empty())
    os << "  not modeled (charged nothing): " << join(result.unmodeledOps, ", ")
       << "\n";
}

json::Value ddp::sim::buildJsonReport(const SimResult &result,
                                      const CostModel &model) {
  json::Array axes;
  for (const MeshAxisInfo &axis : result.meshAxes)
    axes.push_back(json::Object{{"name", axis.name},
                                {"size", axis.size},
                                {"size_in_ir", axis.sizeInIR}});

  json::Array streams;
  for (auto [tid, stream] : enumerate(result.streams)) {
    json::Array groupAxes;
    for (const std::string &axis : stream.axes)
      groupAxes.push_back(axis);
    streams.push_back(json::Object{
        {"tid", static_cast<int64_t>(tid)},
        {"name", stream.name},
        {"axes", std::move(groupAxes)},
        {"ranks", stream.placement.ranks},
        {"nodes", stream.placement.nodes},
        {"ranks_per_node", stream.placement.ranksPerNode},
        {"busy_ms", toMs(stream.busyTime)},
        {"ops", stream.numOps},
    });
  }

  json::Array collectives;
  for (const TimelineEvent &event : result.events) {
    if (!event.collective)
      continue;
    const CollectiveRecord &record = *event.collective;
    collectives.push_back(json::Object{
        {"op", event.name},
        {"kind", getCollectiveName(record.kind)},
        {"tid", static_cast<int64_t>(event.stream)},
        {"async", record.async},
        {"bytes", record.bytes},
        {"algorithm", stringifyCollectiveAlgorithm(record.cost.algorithm)},
        {"bus_bandwidth_gbps", record.cost.busBandwidth / 1e9},
        {"start_ms", toMs(event.start)},
        {"end_ms", toMs(event.end())},
        {"latency_ms", toMs(record.cost.latency)},
        {"transfer_ms", toMs(record.cost.transfer)},
    });
  }

  json::Array gradReady;
  for (const GradReadyTime &ready : result.gradReady)
    gradReady.push_back(json::Object{
        {"param", ready.param},
        {"time_ms", toMs(ready.time)},
        {"numel", ready.numElements},
        {"dtype", stringifyElementType(ready.elementType)},
    });

  json::Array unmodeled;
  for (const std::string &name : result.unmodeledOps)
    unmodeled.push_back(name);

  std::optional<double> overlap = result.overlapFraction();
  return json::Object{
      {"schema_version", kSimReportSchemaVersion},
      {"step", result.stepName},
      {"hardware", toJSON(model.getProfile())},
      {"collective_algorithm",
       stringifyCollectiveAlgorithm(model.getAlgorithm())},
      {"fp8_gemms", model.getGemmPrecision() == GemmPrecision::FP8},
      {"mesh", json::Object{{"name", result.meshName},
                            {"axes", std::move(axes)},
                            {"ranks", result.numRanks},
                            {"nodes", result.numNodes},
                            {"data_parallel_size", result.dataParallelSize}}},
      {"times_ms",
       json::Object{{"step", toMs(result.stepTime)},
                    {"compute", toMs(result.computeTime)},
                    {"compute_ideal", toMs(result.idealComputeTime)},
                    {"communication", toMs(result.commTime)},
                    {"exposed_communication", toMs(result.exposedCommTime)}}},
      {"overlap_fraction",
       overlap ? json::Value(*overlap) : json::Value(nullptr)},
      {"lower_bound_ms",
       json::Object{{"value", toMs(result.lowerBound.value())},
                    {"compute", toMs(result.lowerBound.compute)},
                    {"communication", toMs(result.lowerBound.communication)},
                    {"tail", toMs(result.lowerBound.tail)},
                    {"binding", result.lowerBound.binding()}}},
      {"step_over_lower_bound", result.stepOverLowerBound()},
      {"flops", result.flops},
      {"compute_tflops_per_s", result.computeFlopRate() / 1e12},
      {"counts", json::Object{{"ops", result.numOps},
                              {"compute_ops", result.numComputeOps},
                              {"collectives", result.numCollectives},
                              {"waits", result.numWaits}}},
      {"unmodeled_ops", std::move(unmodeled)},
      {"streams", std::move(streams)},
      {"collectives", std::move(collectives)},
      {"grad_ready", std::move(gradReady)},
  };
}

std::string ddp::sim::describeMemoryRemedies(ModuleOp module) {
  int64_t tensorParallel = 1, dataParallel = 1;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    tensorParallel = std::max(tensorParallel, getTensorParallelSize(mesh));
    int64_t size = 1;
    for (auto [name, axis] :
         llvm::zip_equal(mesh.getAxisNames().getAsValueRange<StringAttr>(),
                         mesh.getShape()))
      if (isDataParallelAxis(name))
        size *= axis;
    dataParallel = std::max(dataParallel, size);
  }
  bool sharded = module
                     .walk([](Operation *op) {
                       return isa<ShardSGDOp, ShardAdamOp>(op)
                                  ? WalkResult::interrupt()
                                  : WalkResult::advance();
                     })
                     .wasInterrupted();
  SmallVector<std::string> remedies{"more pipeline stages",
                                    "more tensor parallelism"};
  if (!sharded && dataParallel > 1)
    remedies.push_back("the distributed optimizer");
  if (tensorParallel > 1)
    remedies.push_back("sequence parallelism where it is off");
  if (getActivationBytes(module))
    remedies.push_back("activation recomputation");
  std::string text;
  for (auto [index, remedy] : llvm::enumerate(remedies))
    text += (index == 0                     ? ""
             : index + 1 == remedies.size() ? " or "
                                            : ", ") +
            remedy;
  return text + " lower it";
}

void ddp::sim::printPipelineSummary(const PipelineSimResult &result,
                                    const CostModel &model, raw_ostream &os) {
  os << "pipeline of " << result.stages.size() << " ranks on "
     << model.getProfile().name << format(": step %.3f ms", toMs(result.stepTime))
     << " (when the last rank finishes)\n";
  os << "  rank      ends ms   compute ms      idle ms    bubble ms      p2p "
        "ms   idle/ideal\n";
  for (auto [rank, stage] : llvm::enumerate(result.stages))
    os << format("  %4zu %12.3f %12.3f %12.3f %12.3f %12.3f %11.1f%%\n", rank,
                 toMs(stage.stepTime), toMs(stage.computeTime),
                 toMs(result.getIdleTime(rank)),
                 toMs(result.getBubbleTime(rank)),
                 toMs(result.getExposedP2PTime(rank)),
                 100 * result.getIdleFraction(rank));
  os << "  idle: the bubble (waiting for another rank), the stage-to-stage "
        "transfers (p2p) and the data- and tensor-parallel communication a "
        "rank waits for\n";
  os << format("  bubble: mean %.3f ms (%.1f%% of the step); exposed p2p: "
               "mean %.3f ms\n",
               toMs(result.getMeanBubbleTime()),
               result.stepTime > 0
                   ? 100 * result.getMeanBubbleTime() / result.stepTime
                   : 0.0,
               toMs(result.getMeanExposedP2PTime()));
  os << format("  lower bound %.3f ms (fill, a rank's tasks, drain); step / "
               "lower bound %.3f\n",
               toMs(result.lowerBound),
               result.lowerBound > 0 ? result.stepTime / result.lowerBound
                                     : 0.0);
  // What each rank keeps: its model state, and what it holds for its
  // backwards at its peak (docs/Pipeline.md#activation-memory).
  bool withActivations = !result.activations.empty();
  os << "  memory per rank: model state"
     << (withActivations ? " + activations at the peak (Korthikanti et al.)"
                         : "")
     << "\n";
  for (size_t rank = 0; rank < result.stages.size(); ++rank) {
    os << format("  %4zu ", rank)
       << formatBytes(std::llround(result.modelStateBytes[rank]));
    if (withActivations)
      os << " + " << formatBytes(result.activations[rank].bytes) << " ("
         << result.activations[rank].forwards
         << (result.activations[rank].forwards == 1 ? " forward) = "
                                                    : " forwards) = ")
         << formatBytes(std::llround(result.getMemoryBytes(rank)));
    os << "\n";
  }
  size_t peak = result.getMemoryPeakRank();
  double needed = result.getMemoryBytes(peak);
  double capacity = model.getProfile().memoryCapacity;
  os << "  most memory: rank " << peak << ", "
     << formatBytes(std::llround(needed));
  if (capacity > 0)
    os << (needed <= capacity ? " of the device's "
                              : ": more than the "
                                "device's ")
       << formatBytes(std::llround(capacity))
       << (needed <= capacity ? "" : "; " + result.memoryRemedies);
  os << "\n";
}

json::Value ddp::sim::buildPipelineJsonReport(const PipelineSimResult &result,
                                              const CostModel &model) {
  json::Array stages;
  for (auto [rank, stage] : llvm::enumerate(result.stages))
    stages.push_back(json::Object{
        {"rank", int64_t(rank)},
        {"end_ms", toMs(stage.stepTime)},
        {"compute_ms", toMs(stage.computeTime)},
        {"ideal_compute_ms", toMs(stage.idealComputeTime)},
        {"idle_ms", toMs(result.getIdleTime(rank))},
        {"idle_fraction", result.getIdleFraction(rank)},
        {"bubble_ms", toMs(result.getBubbleTime(rank))},
        {"exposed_p2p_ms", toMs(result.getExposedP2PTime(rank))},
        {"exposed_comm_ms", toMs(stage.exposedCommTime)}});
  json::Object report{{"schema_version", kSimReportSchemaVersion},
                      {"hardware", model.getProfile().name},
                      {"step_ms", toMs(result.stepTime)},
                      {"lower_bound_ms", toMs(result.lowerBound)},
                      {"mean_bubble_ms", toMs(result.getMeanBubbleTime())},
                      {"mean_exposed_p2p_ms",
                       toMs(result.getMeanExposedP2PTime())}};
  for (size_t rank = 0; rank < result.stages.size(); ++rank) {
    json::Object &stage = *stages[rank].getAsObject();
    stage["model_state_bytes"] = result.modelStateBytes[rank];
    stage["memory_bytes"] = result.getMemoryBytes(rank);
    if (result.activations.empty())
      continue;
    const ActivationPeak &peak = result.activations[rank];
    stage["activation_bytes"] = peak.bytes;
    stage["activation_forwards"] = peak.forwards;
    stage["activation_layers"] = peak.layers;
  }
  report["memory_peak_rank"] = int64_t(result.getMemoryPeakRank());
  if (double capacity = model.getProfile().memoryCapacity; capacity > 0) {
    report["device_memory_bytes"] = capacity;
    report["fits_device_memory"] =
        result.getMemoryBytes(result.getMemoryPeakRank()) <= capacity;
  }
  report["stages"] = std::move(stages);
  return report;
}
