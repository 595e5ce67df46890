//===- HardwareProfileTest.cpp - Built-in and JSON profiles ---------------===//

#include "ddp/Timing/HardwareProfile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace ddp::timing;
using ::testing::HasSubstr;

namespace {

/// The message of a failed parse (empty when it succeeded).
std::string parseError(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return "bad test JSON: " + llvm::toString(json.takeError());
  llvm::Expected<HardwareProfile> profile =
      parseHardwareProfile(*json, "test.json");
  if (profile)
    return "";
  return llvm::toString(profile.takeError());
}

/// A complete profile in its JSON form, with `field` (a dotted path) removed
/// or replaced by `value`.
std::string completeProfileWith(llvm::StringRef field,
                                std::optional<llvm::json::Value> value) {
  llvm::json::Value json =
      toJSON(cantFail(getBuiltinHardwareProfile("h100-sxm-ib400")));
  llvm::json::Object *object = json.getAsObject();
  auto [head, tail] = field.split('.');
  if (!tail.empty()) {
    object = object->getObject(head);
    head = tail;
  }
  if (value)
    (*object)[head] = std::move(*value);
  else
    object->erase(head);
  std::string text;
  llvm::raw_string_ostream(text) << json;
  return text;
}

TEST(HardwareProfile, BuiltinsExistAndAreSane) {
  for (llvm::StringRef name :
       {"h100-sxm-nvlink", "h100-sxm-ib400", "a100-sxm-ib200", "h200-sxm-ib400",
        "cpu-mpi-2core"}) {
    SCOPED_TRACE(name.str());
    HardwareProfile p = cantFail(getBuiltinHardwareProfile(name));
    EXPECT_EQ(p.name, name);
    EXPECT_GT(p.gpusPerNode, 0);
    for (double peak : p.peakFlops)
      EXPECT_GT(peak, 0);
    EXPECT_GT(p.gemm.maxEfficiency, 0);
    EXPECT_LE(p.gemm.maxEfficiency, 1);
    EXPECT_GT(p.memoryBandwidth, 0);
    EXPECT_GT(p.intraNodeBusBandwidth, 0);
    EXPECT_GT(p.nicBusBandwidth, 0);
    EXPECT_GE(p.commComputeSlowdown, 1);
  }
  EXPECT_EQ(getBuiltinHardwareProfileNames().size(), 5u);
}

TEST(HardwareProfile, DatasheetNumbers) {
  HardwareProfile h100 = cantFail(getBuiltinHardwareProfile("h100-sxm-ib400"));
  EXPECT_DOUBLE_EQ(h100.getPeakFlops(ElementType::BF16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.memoryBandwidth, 3.35e12);
  HardwareProfile h200 = cantFail(getBuiltinHardwareProfile("h200-sxm-ib400"));
  EXPECT_DOUBLE_EQ(h200.memoryBandwidth, 4.8e12);
  HardwareProfile a100 = cantFail(getBuiltinHardwareProfile("a100-sxm-ib200"));
  EXPECT_DOUBLE_EQ(a100.getPeakFlops(ElementType::BF16), 312e12);
  EXPECT_EQ(a100.gemm.numComputeUnits, 108);
}

TEST(HardwareProfile, JsonRoundTrip) {
  for (llvm::StringRef name : getBuiltinHardwareProfileNames()) {
    SCOPED_TRACE(name.str());
    HardwareProfile original = cantFail(getBuiltinHardwareProfile(name));
    HardwareProfile copy =
        cantFail(parseHardwareProfile(toJSON(original), "roundtrip"));
    EXPECT_EQ(copy.name, original.name);
    EXPECT_EQ(copy.gpusPerNode, original.gpusPerNode);
    for (unsigned i = 0; i < kNumElementTypes; ++i)
      EXPECT_NEAR(copy.peakFlops[i], original.peakFlops[i],
                  1e-9 * original.peakFlops[i]);
    EXPECT_NEAR(copy.nicBusBandwidth, original.nicBusBandwidth, 1e-3);
    EXPECT_NEAR(copy.interNodeHopLatency, original.interNodeHopLatency, 1e-15);
    EXPECT_EQ(copy.gemm.numComputeUnits, original.gemm.numComputeUnits);
    EXPECT_DOUBLE_EQ(copy.commComputeSlowdown, original.commComputeSlowdown);
    EXPECT_NEAR(copy.fp8PeakFlops, original.fp8PeakFlops,
                1e-9 * original.fp8PeakFlops);
  }
}

TEST(HardwareProfile, Fp8PeakIsOptionalAndChecked) {
  // A complete profile without an FP8 peak parses and has none.
  std::string withoutFp8 =
      completeProfileWith("peak_tflops.fp8", std::nullopt);
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(withoutFp8);
  ASSERT_TRUE(static_cast<bool>(json));
  HardwareProfile parsed = cantFail(parseHardwareProfile(*json, "p.json"));
  EXPECT_EQ(parsed.fp8PeakFlops, 0);
  EXPECT_THAT(parseError(completeProfileWith("peak_tflops.fp8",
                                             llvm::json::Value(-1))),
              HasSubstr("field 'peak_tflops.fp8' must be at least 0, got -1"));
  EXPECT_THAT(parseError(completeProfileWith("peak_tflops.fp8",
                                             llvm::json::Value("fast"))),
              HasSubstr("field 'peak_tflops.fp8' must be a number"));
}

TEST(HardwareProfile, CompleteProfileParses) {
  EXPECT_EQ(
      parseError(completeProfileWith("description", llvm::json::Value("x"))),
      "");
}

TEST(HardwareProfile, MissingFieldIsNamed) {
  EXPECT_EQ(
      parseError(completeProfileWith("inter_node.latency_us", std::nullopt)),
      "hardware profile 'test.json': missing field "
      "'inter_node.latency_us'");
  EXPECT_THAT(parseError(completeProfileWith("gpus_per_node", std::nullopt)),
              HasSubstr("missing field 'gpus_per_node'"));
  EXPECT_THAT(parseError(completeProfileWith("peak_tflops.bf16", std::nullopt)),
              HasSubstr("missing field 'peak_tflops.bf16'"));
  EXPECT_THAT(parseError(completeProfileWith("gemm", std::nullopt)),
              HasSubstr("missing field 'gemm'"));
}

TEST(HardwareProfile, NegativeBandwidthIsNamed) {
  EXPECT_EQ(parseError(completeProfileWith("intra_node.bus_bandwidth_gbps",
                                           llvm::json::Value(-370))),
            "hardware profile 'test.json': field "
            "'intra_node.bus_bandwidth_gbps' must be greater than 0, got -370");
  EXPECT_THAT(
      parseError(
          completeProfileWith("memory.bandwidth_gbps", llvm::json::Value(0))),
      HasSubstr("field 'memory.bandwidth_gbps' must be greater than 0"));
}

TEST(HardwareProfile, OtherBadValuesAreNamed) {
  EXPECT_THAT(parseError(completeProfileWith("gemm.max_efficiency",
                                             llvm::json::Value(1.5))),
              HasSubstr("field 'gemm.max_efficiency' must be at most 1"));
  EXPECT_EQ(
      parseError(
          completeProfileWith("memory.efficiency", llvm::json::Value(2))),
      "hardware profile 'test.json': field 'memory.efficiency' must be at "
      "most 1, got 2");
  EXPECT_THAT(
      parseError(completeProfileWith("collective.tree_bandwidth_fraction",
                                     llvm::json::Value(1.25))),
      HasSubstr("field 'collective.tree_bandwidth_fraction' must be at "
                "most 1, got 1.25"));
  EXPECT_THAT(parseError(completeProfileWith("comm_compute_slowdown",
                                             llvm::json::Value(0.5))),
              HasSubstr("field 'comm_compute_slowdown' must be at least 1"));
  EXPECT_THAT(parseError(completeProfileWith("gpus_per_node",
                                             llvm::json::Value("eight"))),
              HasSubstr("field 'gpus_per_node' must be an integer"));
  EXPECT_THAT(parseError(completeProfileWith("inter_node.nics_per_node",
                                             llvm::json::Value(2.5))),
              HasSubstr("field 'inter_node.nics_per_node' must be an integer"));
  EXPECT_THAT(parseError(completeProfileWith("intra_node.bandwidth",
                                             llvm::json::Value(1))),
              HasSubstr("unknown field 'intra_node.bandwidth'"));
  EXPECT_THAT(parseError("[1, 2]"), HasSubstr("must be a JSON object"));
}

TEST(HardwareProfile, UnknownNameListsTheBuiltins) {
  llvm::Expected<HardwareProfile> profile = lookupHardwareProfile("h100-pcie");
  ASSERT_FALSE(static_cast<bool>(profile));
  EXPECT_EQ(llvm::toString(profile.takeError()),
            "unknown hardware profile 'h100-pcie'; built-in profiles are: "
            "h100-sxm-nvlink, h100-sxm-ib400, a100-sxm-ib200, h200-sxm-ib400, "
            "cpu-mpi-2core");
}

TEST(HardwareProfile, BaseProfileWithOverrides) {
  llvm::json::Value json = llvm::json::Object{
      {"base", "h100-sxm-ib400"},
      {"name", "h100-slow-ib"},
      {"inter_node", llvm::json::Object{{"nic_bus_bandwidth_gbps", 12.5}}}};
  HardwareProfile p = cantFail(parseHardwareProfile(json, "override.json"));
  EXPECT_EQ(p.name, "h100-slow-ib");
  EXPECT_DOUBLE_EQ(p.nicBusBandwidth, 12.5e9);
  EXPECT_EQ(p.nicsPerNode, 8);
  EXPECT_DOUBLE_EQ(p.getPeakFlops(ElementType::BF16), 989.4e12);

  EXPECT_THAT(parseError(R"({"base": "tpu-v5"})"),
              HasSubstr("field 'base': unknown hardware profile 'tpu-v5'"));
}

TEST(HardwareProfile, LoadFromFile) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("profile", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << R"({"base": "a100-sxm-ib200", "gpus_per_node": 4})";
  }
  HardwareProfile p = cantFail(lookupHardwareProfile(path));
  EXPECT_EQ(p.gpusPerNode, 4);
  llvm::sys::fs::remove(path);

  llvm::Expected<HardwareProfile> missing =
      loadHardwareProfile("/nonexistent/profile.json");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_THAT(
      llvm::toString(missing.takeError()),
      HasSubstr("cannot read hardware profile '/nonexistent/profile.json'"));
}

TEST(HardwareProfile, MalformedJsonFile) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("profile", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << R"({"name": "x",)";
  }
  llvm::Expected<HardwareProfile> profile = loadHardwareProfile(path);
  ASSERT_FALSE(static_cast<bool>(profile));
  EXPECT_THAT(llvm::toString(profile.takeError()),
              HasSubstr("is not valid JSON"));
  llvm::sys::fs::remove(path);
}
} // namespace
