//===- ChromeTraceTest.cpp - The trace and report files are well formed ---===//
//
// Parses what the writers produce and checks the structure Perfetto and the
// runtime's traces rely on (COMMON trace format, docs/CostModel.md).
//
//===----------------------------------------------------------------------===//

#include "ddp/Sim/SimOutput.h"

#include "SimTestUtils.h"
#include "TestProfiles.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include "gtest/gtest.h"

#include <map>

using namespace ddp::sim;
using namespace ddp::timing;
using namespace ddp::sim::test;
using namespace ddp::timing::test;

namespace {
// Three streams: compute, dp and tp; synchronous and asynchronous
// collectives, a wait that blocks.
constexpr llvm::StringLiteral kStep = R"mlir(
ddp.mesh @world(dp = 2, tp = 2)
ddp.param @w : tensor<64x64xbf16>
func.func @step(%x: tensor<128x64xbf16>, %dy: tensor<128x64xbf16>) {
  %w = ddp.get_param @w : tensor<64x64xbf16>
  %y = ddp.gemm fwd %x, %w layer 0 : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xbf16>
  %z = ddp.all_reduce sum %y over @world[tp] : tensor<128x64xbf16>
  %a = ddp.compute "attention"(%z) flops 1.0e9 bytes 1.0e6 layer 0 : (tensor<128x64xbf16>) -> tensor<128x64xbf16>
  %dw = ddp.gemm wgrad %x transposed, %dy layer 0 : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<64x64xbf16>
  %g = ddp.grad_ready @w, %dw : tensor<64x64xbf16>
  %r, %t = ddp.all_reduce avg %g over @world[dp] async : tensor<64x64xbf16>
  ddp.wait %t
  ddp.sgd @w, %r lr 1.0e-2 : tensor<64x64xbf16>
  return
}
)mlir";

class OutputTest : public ::testing::Test {
protected:
  void SetUp() override {
    module = parseStep(*context, kStep);
    ASSERT_TRUE(module);
    mlir::FailureOr<SimResult> simulated =
        simulateStep(getStep(*module), model);
    ASSERT_TRUE(mlir::succeeded(simulated));
    result = std::move(*simulated);
  }

  std::unique_ptr<mlir::MLIRContext> context = makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module;
  CostModel model{cantFail(getBuiltinHardwareProfile("h100-sxm-ib400"))};
  SimResult result;
};

TEST_F(OutputTest, ChromeTraceIsWellFormed) {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeChromeTrace(result, os);

  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object *root = parsed->getAsObject();
  ASSERT_TRUE(root);
  EXPECT_EQ(root->getString("displayTimeUnit"), "ms");
  const llvm::json::Array *events = root->getArray("traceEvents");
  ASSERT_TRUE(events);

  std::map<int64_t, std::string> threadNames;
  std::optional<llvm::StringRef> processName;
  // Per track, the end of the last event: events of a stream never overlap.
  llvm::DenseMap<int64_t, double> trackEnd;
  llvm::StringSet<> categories;
  size_t numComplete = 0;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *event = value.getAsObject();
    ASSERT_TRUE(event);
    std::optional<llvm::StringRef> ph = event->getString("ph");
    ASSERT_TRUE(ph);
    ASSERT_TRUE(event->getString("name"));
    ASSERT_TRUE(event->getInteger("pid"));
    EXPECT_EQ(*event->getInteger("pid"), 0);
    if (*ph == "M") {
      const llvm::json::Object *args = event->getObject("args");
      ASSERT_TRUE(args && args->getString("name"));
      if (*event->getString("name") == "process_name") {
        processName = *args->getString("name");
      } else {
        EXPECT_EQ(*event->getString("name"), "thread_name");
        ASSERT_TRUE(event->getInteger("tid"));
        threadNames[*event->getInteger("tid")] = args->getString("name")->str();
      }
      continue;
    }
    ASSERT_EQ(*ph, "X");
    ++numComplete;
    std::optional<double> ts = event->getNumber("ts");
    std::optional<double> dur = event->getNumber("dur");
    std::optional<int64_t> tid = event->getInteger("tid");
    std::optional<llvm::StringRef> cat = event->getString("cat");
    ASSERT_TRUE(ts && dur && tid && cat);
    EXPECT_GE(*ts, 0);
    EXPECT_GE(*dur, 0);
    ASSERT_TRUE(event->getObject("args"));
    EXPECT_TRUE(*cat == "compute" || *cat == "comm" || *cat == "wait")
        << cat->str();
    categories.insert(*cat);
    // Compute and waits are on the compute stream, collectives elsewhere.
    EXPECT_EQ(*tid == 0, *cat != "comm");
    // Each stream is sequential: a track is a stream, not a mix.
    EXPECT_GE(*ts + 1e-6, trackEnd.lookup(*tid)) << "overlap on tid " << *tid;
    trackEnd[*tid] = *ts + *dur;
    EXPECT_TRUE(threadNames.count(*tid)) << "tid " << *tid << " is unnamed";
  }
  EXPECT_EQ(processName, llvm::StringRef("simulated"));
  EXPECT_EQ(numComplete, result.events.size());
  EXPECT_EQ(categories.size(), 3u);
  // compute, comm0 (tp), comm1 (dp): distinct tids with distinct names.
  ASSERT_EQ(threadNames.size(), 3u);
  EXPECT_EQ(threadNames[0], "compute");
  EXPECT_EQ(threadNames[1], "comm0");
  EXPECT_EQ(threadNames[2], "comm1");
  EXPECT_EQ(trackEnd.size(), 3u);
}

TEST_F(OutputTest, ReportHasItsSchemaFields) {
  llvm::json::Value report = buildJsonReport(result, model);
  // Through text, as a reader gets it.
  std::string text;
  llvm::raw_string_ostream(text) << report;
  llvm::json::Value parsed = cantFail(llvm::json::parse(text));
  const llvm::json::Object *root = parsed.getAsObject();
  ASSERT_TRUE(root);
  EXPECT_EQ(root->getInteger("schema_version"), kSimReportSchemaVersion);
  EXPECT_EQ(root->getString("step"), llvm::StringRef("step"));
  const llvm::json::Object *times = root->getObject("times_ms");
  ASSERT_TRUE(times);
  EXPECT_DOUBLE_EQ(*times->getNumber("step"), result.stepTime * 1e3);
  EXPECT_DOUBLE_EQ(*times->getNumber("exposed_communication"),
                   result.exposedCommTime * 1e3);
  const llvm::json::Object *bound = root->getObject("lower_bound_ms");
  ASSERT_TRUE(bound);
  EXPECT_DOUBLE_EQ(*bound->getNumber("value"), result.lowerBound.value() * 1e3);
  EXPECT_EQ(root->getArray("collectives")->size(), 2u);
  EXPECT_EQ(root->getArray("streams")->size(), 3u);
  EXPECT_EQ(root->getArray("grad_ready")->size(), 1u);
  EXPECT_EQ(root->getObject("hardware")->getString("name"),
            llvm::StringRef("h100-sxm-ib400"));
  EXPECT_TRUE(root->getNumber("overlap_fraction"));
}

TEST_F(OutputTest, SvgHasOneLanePerStream) {
  std::string svg;
  llvm::raw_string_ostream os(svg);
  writeTimelineSvg(result, os);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find(">compute</text>"), std::string::npos);
  EXPECT_NE(svg.find(">comm0 [tp]</text>"), std::string::npos);
  EXPECT_NE(svg.find(">comm1 [dp]</text>"), std::string::npos);
  EXPECT_NE(svg.find("time (ms)"), std::string::npos);
  // Every category is drawn on its lane: the lanes' comments give what
  // each draws, in pixels of the plot's 1000; the legend's 12x12 squares
  // show every color whatever the lanes hold, so the lanes are read there.
  EXPECT_NE(svg.find("<!-- lane 0 compute="), std::string::npos);
  EXPECT_NE(svg.find(" wait="), std::string::npos);
  EXPECT_NE(svg.find("<!-- lane 1 comm="), std::string::npos);
  EXPECT_NE(svg.find("<!-- lane 2 comm="), std::string::npos);
  for (llvm::StringRef color : {"#4e79a7", "#f28e2b", "#e15759"})
    EXPECT_NE(svg.find(("height=\"12\" fill=\"" + color + "\"/>").str()),
              std::string::npos)
        << color.str();
  // Lane rectangles are whole rows (no rendering blends two colours).
  EXPECT_EQ(svg.find("height=\"0."), std::string::npos);
}
} // namespace
