//===- ChromeTrace.cpp - The simulated timeline as a Chrome trace ---------===//
//
// The Trace Event Format shared with the runtime (docs/CostModel.md,
// "Chrome trace"): complete events in microseconds, one track per stream.
// Streamed with json::OStream so a 100k-op step never builds a DOM.
//
//===----------------------------------------------------------------------===//

#include "ddp/Sim/SimOutput.h"

#include "ddp/Sim/PipelineSimulator.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;
using namespace ddp;
using namespace ddp::sim;
using namespace ddp::timing;

/// Everything a reader of the trace wants to know about an op beyond its
/// name and interval.
static void writeArgs(json::OStream &json, const TimelineEvent &event) {
  json.attributeObject("args", [&] {
    if (!event.op)
      return;
    json.attribute("op", event.op->getName().getStringRef());
    if (auto layer = event.op->getAttrOfType<mlir::IntegerAttr>("layer"))
      json.attribute("layer", layer.getInt());
    if (auto param = event.op->getAttrOfType<mlir::FlatSymbolRefAttr>("param"))
      json.attribute("param", param.getValue());
    // The shape and work the event was priced at: routed rows at their
    // balanced fill.
    if (auto gemm = dyn_cast<GemmOp>(event.op)) {
      auto [m, n, k] = getCostedGemmShape(gemm);
      json.attribute("m", m);
      json.attribute("n", n);
      json.attribute("k", k);
      json.attribute("flops", 2.0 * double(m) * double(n) * double(k));
    } else if (auto compute = dyn_cast<ComputeOp>(event.op)) {
      double fill = getRoutedFill(compute);
      json.attribute("flops", compute.getFlops().convertToDouble() * fill);
      json.attribute("bytes", compute.getBytes().convertToDouble() * fill);
    }
    if (auto collective = dyn_cast<CollectiveOpInterface>(event.op)) {
      SmallVector<StringRef> axes;
      for (mlir::Attribute axis : collective.getAxesAttr())
        axes.push_back(cast<mlir::StringAttr>(axis).getValue());
      json.attribute("group", join(axes, ","));
    }
    if (const std::optional<CollectiveRecord> &record = event.collective) {
      json.attribute("bytes", record->bytes);
      json.attribute("async", record->async);
      json.attribute("algorithm",
                     stringifyCollectiveAlgorithm(record->cost.algorithm));
      json.attribute("bus_bandwidth_gbps", record->cost.busBandwidth / 1e9);
    }
  });
}

/// One process of the trace: its name, a track per stream, its events.
static void writeProcess(json::OStream &json, int64_t pid, StringRef name,
                         const SimResult &result) {
  json.object([&] {
    json.attribute("name", "process_name");
    json.attribute("ph", "M");
    json.attribute("pid", pid);
    json.attributeObject("args", [&] { json.attribute("name", name); });
  });
  // Not a structured binding: C++17 lambdas cannot capture one.
  for (const auto &indexed : enumerate(result.streams)) {
    size_t tid = indexed.index();
    const auto &stream = indexed.value();
    json.object([&] {
      json.attribute("name", "thread_name");
      json.attribute("ph", "M");
      json.attribute("pid", pid);
      json.attribute("tid", static_cast<int64_t>(tid));
      json.attributeObject("args",
                           [&] { json.attribute("name", stream.name); });
    });
  }
  for (const TimelineEvent &event : result.events) {
    json.object([&] {
      json.attribute("name", event.name);
      json.attribute("cat", stringifyEventCategory(event.category));
      json.attribute("ph", "X");
      json.attribute("ts", event.start * 1e6);
      json.attribute("dur", event.duration * 1e6);
      json.attribute("pid", pid);
      json.attribute("tid", static_cast<int64_t>(event.stream));
      writeArgs(json, event);
    });
  }
}

/// A trace of `processes`, each a (name, result) pair, pid = index.
static void
writeTrace(ArrayRef<std::pair<std::string, const SimResult *>> processes,
           raw_ostream &os) {
  json::OStream json(os);
  json.object([&] {
    json.attribute("displayTimeUnit", "ms");
    json.attributeArray("traceEvents", [&] {
      for (auto [pid, process] : enumerate(processes))
        writeProcess(json, static_cast<int64_t>(pid), process.first,
                     *process.second);
    });
  });
  os << "\n";
}

void ddp::sim::writeChromeTrace(const SimResult &result, raw_ostream &os) {
  writeTrace({{"simulated", &result}}, os);
}

void ddp::sim::writePipelineChromeTrace(const PipelineSimResult &result,
                                        raw_ostream &os) {
  std::vector<std::pair<std::string, const SimResult *>> processes;
  for (auto [rank, stage] : enumerate(result.stages))
    processes.emplace_back("pipeline rank " + std::to_string(rank), &stage);
  writeTrace(processes, os);
}
