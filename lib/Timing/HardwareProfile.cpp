//===- HardwareProfile.cpp - Built-in and JSON hardware profiles ----------===//
//
// Every built-in number is cited in docs/CostModel.md ("Built-in profiles");
// keep the two in step.
//
//===----------------------------------------------------------------------===//

#include "ddp/Timing/HardwareProfile.h"
#include "ddp/Support/BoundedJSON.h"
#include "ddp/Support/FormatNumber.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <limits>

using namespace llvm;
using namespace ddp::timing;

//===----------------------------------------------------------------------===//
// Built-in profiles
//===----------------------------------------------------------------------===//

namespace {
constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kMicro = 1e-6;

/// NCCL's ring latency model (src/graph/tuning.cc: baseLat and hwLat for the
/// Simple protocol), shared by the GPU profiles.
constexpr double kNcclBaseLatencyUs = 8.4;
constexpr double kNcclNvlinkHopUs = 3.4;
constexpr double kNcclNetHopUs = 9.6;
constexpr double kNcclTreeBandwidthFraction = 0.9;

/// What differs between the NVIDIA GPUs of the built-in profiles.
struct NvidiaGpu {
  /// Dense tensor-core peak for f16/bf16, and the f32/f64 peak.
  double peak16Tflops, peak32Tflops;
  /// Dense FP8 tensor-core peak; 0 without FP8 tensor cores.
  double peak8Tflops;
  double gemmMaxEfficiency;
  int64_t numSMs;
  double hbmTBps;
  /// nccl-tests ring bus bandwidth inside an NVSwitch node.
  double nvlinkBusGBps;
  /// nvidia-smi's memory.total, MiB.
  double memoryMiB;
};

/// H100 SXM5 and H200 SXM share the GH100 die and clocks; H200 has faster
/// HBM; A100 has no FP8. Fields: f16/bf16, f32/f64 and fp8 TFLOP/s, GEMM
/// efficiency, SMs, HBM TB/s, NVLink bus GB/s, memory MiB (H100-SXM5-80GB,
/// H200-SXM-141GB, A100-SXM4-80GB).
constexpr NvidiaGpu kH100{989.4, 67, 1978.9, 0.75, 132, 3.35, 370, 81559};
constexpr NvidiaGpu kH200{989.4, 67, 1978.9, 0.75, 132, 4.8, 370, 143771};
constexpr NvidiaGpu kA100{312, 19.5, 0, 0.85, 108, 2.039, 230, 81920};

/// A node of 8 such GPUs on NVSwitch with `nicsPerNode` NICs, priced with
/// NCCL's latency model.
HardwareProfile makeNvidiaNode(StringRef name, StringRef description,
                               const NvidiaGpu &gpu, int64_t nicsPerNode,
                               double nicGBps) {
  HardwareProfile p;
  p.name = name.str();
  p.description = description.str();
  p.gpusPerNode = 8;
  p.peakFlops = {gpu.peak16Tflops * kTera, gpu.peak16Tflops * kTera,
                 gpu.peak32Tflops * kTera, gpu.peak32Tflops * kTera};
  p.fp8PeakFlops = gpu.peak8Tflops * kTera;
  p.gemm = {gpu.gemmMaxEfficiency, /*tileM=*/128, /*tileN=*/128,
            /*numComputeUnits=*/gpu.numSMs, /*kHalf=*/64};
  p.memoryBandwidth = gpu.hbmTBps * kTera;
  p.memoryEfficiency = 0.85;
  p.memoryCapacity = gpu.memoryMiB * 1024 * 1024;
  p.kernelOverhead = 2 * kMicro;
  p.intraNodeBusBandwidth = gpu.nvlinkBusGBps * kGiga;
  p.intraNodeHopLatency = kNcclNvlinkHopUs * kMicro;
  p.nicBusBandwidth = nicGBps * kGiga;
  p.nicsPerNode = nicsPerNode;
  p.interNodeHopLatency = kNcclNetHopUs * kMicro;
  p.collectiveBaseLatency = kNcclBaseLatencyUs * kMicro;
  p.treeBandwidthFraction = kNcclTreeBandwidthFraction;
  p.commComputeSlowdown = 1.1;
  return p;
}

/// This project's CI machine: 2 cores, one rank per core, the CPU backend's
/// OpenBLAS GEMMs and Open MPI over shared memory. Measured with
/// bench/sim/measure_cpu_profile.cpp (both ranks busy; the machine is shared
/// with other jobs, so +-30%); 16-bit GEMM rates are estimates (the runtime
/// converts through f32). docs/CostModel.md has the raw numbers.
HardwareProfile makeCpu() {
  HardwareProfile p;
  p.name = "cpu-mpi-2core";
  p.description = "2-core x86 VM, one rank per core, OpenBLAS GEMMs, "
                  "Open MPI over shared memory";
  p.gpusPerNode = 2;
  p.peakFlops = {80 * kGiga, 80 * kGiga, 100 * kGiga, 50 * kGiga};
  p.gemm = {/*maxEfficiency=*/1.0, /*tileM=*/16, /*tileN=*/4,
            /*numComputeUnits=*/1, /*kHalf=*/16};
  p.memoryBandwidth = 32 * kGiga;
  p.memoryEfficiency = 1.0;
  // The runtime's time between two kernels (median in its traces).
  p.kernelOverhead = 2 * kMicro;
  // A bucket-sized all-reduce (666 KB) as the runtime's communication thread
  // runs it; MPI alone moves small messages faster.
  p.intraNodeBusBandwidth = 1.6 * kGiga;
  p.intraNodeHopLatency = 1 * kMicro;
  p.nicBusBandwidth = 0.1 * kGiga;
  p.nicsPerNode = 1;
  p.interNodeHopLatency = 50 * kMicro;
  // With the runtime's hand-off to its communication thread and back: a
  // 256-byte all-reduce is waited for 7.8 us.
  p.collectiveBaseLatency = 5 * kMicro;
  p.treeBandwidthFraction = 1.0;
  // One rank per core: a collective in flight shares the core with compute,
  // and on this machine overlapping them saved nothing (docs/CostModel.md).
  // A large slowdown charges the overlapped communication to the step, as
  // the machine does.
  p.commComputeSlowdown = 20;
  return p;
}

struct BuiltinProfiles {
  SmallVector<HardwareProfile> profiles;
  SmallVector<StringRef> names;
  BuiltinProfiles() {
    profiles.push_back(makeNvidiaNode(
        "h100-sxm-nvlink",
        "one HGX H100 node: 8 H100-SXM5-80GB on NVLink 4 (NVSwitch); a group "
        "that leaves the node crosses a single 400 Gb/s NIC per node",
        kH100, /*nicsPerNode=*/1, /*nicGBps=*/46));
    profiles.push_back(makeNvidiaNode(
        "h100-sxm-ib400",
        "DGX H100: 8 H100-SXM5-80GB per node (NVLink 4, NVSwitch), 8x 400 Gb/s "
        "NDR InfiniBand per node, rail-optimized",
        kH100, /*nicsPerNode=*/8, /*nicGBps=*/46));
    profiles.push_back(makeNvidiaNode(
        "a100-sxm-ib200",
        "DGX A100: 8 A100-SXM4-80GB per node (NVLink 3, NVSwitch), 8x 200 Gb/s "
        "HDR InfiniBand per node",
        kA100, /*nicsPerNode=*/8, /*nicGBps=*/24));
    profiles.push_back(makeNvidiaNode(
        "h200-sxm-ib400",
        "HGX H200: 8 H200-SXM-141GB per node (NVLink 4, NVSwitch), 8x 400 Gb/s "
        "NDR InfiniBand per node, rail-optimized",
        kH200, /*nicsPerNode=*/8, /*nicGBps=*/46));
    profiles.push_back(makeCpu());
    for (const HardwareProfile &profile : profiles)
      names.push_back(profile.name);
  }
};

const BuiltinProfiles &getBuiltins() {
  static const BuiltinProfiles builtins;
  return builtins;
}
} // namespace

ArrayRef<StringRef> ddp::timing::getBuiltinHardwareProfileNames() {
  return getBuiltins().names;
}

Expected<HardwareProfile> ddp::timing::getBuiltinHardwareProfile(StringRef name) {
  for (const HardwareProfile &profile : getBuiltins().profiles)
    if (profile.name == name)
      return profile;
  return createStringError(
      inconvertibleErrorCode(),
      formatv("unknown hardware profile '{0}'; built-in profiles are: {1}",
              name, join(getBuiltinHardwareProfileNames(), ", ")));
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {
/// Numbers in messages as the user wrote them (`-370`, `0.5`, `1.0000001`),
/// not rounded.
std::string formatNumber(double value) { return ddp::formatShortest(value); }

/// Reads the fields of a profile object, reporting the first problem with
/// the dotted name of the field it concerns. With a base profile, absent
/// fields keep the base's value; without one they are errors.
class ProfileReader {
public:
  ProfileReader(StringRef source, bool fieldsOptional)
      : source(source), fieldsOptional(fieldsOptional) {}

  /// A number above `minimum` (at least `minimum` with `allowEqualMinimum`)
  /// and at most `maximum`, read into `out` after multiplying by `scale`.
  void readNumber(const json::Object &object, StringRef prefix, StringRef key,
                  double scale, double &out, double minimum = 0,
                  bool allowEqualMinimum = false,
                  double maximum = std::numeric_limits<double>::infinity()) {
    std::string field = fieldName(prefix, key);
    const json::Value *value = getField(object, field, key);
    if (!value)
      return;
    std::optional<double> number = value->getAsNumber();
    if (!number || !std::isfinite(*number)) {
      fail(formatv("field '{0}' must be a number", field));
      return;
    }
    bool ok = allowEqualMinimum ? *number >= minimum : *number > minimum;
    if (!ok) {
      fail(formatv("field '{0}' must be {1} {2}, got {3}", field,
                   allowEqualMinimum ? "at least" : "greater than",
                   formatNumber(minimum), formatNumber(*number)));
      return;
    }
    if (*number > maximum) {
      fail(formatv("field '{0}' must be at most {1}, got {2}", field,
                   formatNumber(maximum), formatNumber(*number)));
      return;
    }
    out = *number * scale;
  }

  void readInteger(const json::Object &object, StringRef prefix, StringRef key,
                   int64_t &out) {
    std::string field = fieldName(prefix, key);
    const json::Value *value = getField(object, field, key);
    if (!value)
      return;
    std::optional<int64_t> number = value->getAsInteger();
    if (!number) {
      fail(formatv("field '{0}' must be an integer", field));
      return;
    }
    if (*number <= 0) {
      fail(formatv("field '{0}' must be greater than 0, got {1}", field,
                   *number));
      return;
    }
    out = *number;
  }

  /// The nested object `key`, or null (after reporting when required).
  const json::Object *readObject(const json::Object &object, StringRef key) {
    const json::Value *value = getField(object, key, key);
    if (!value)
      return nullptr;
    const json::Object *nested = value->getAsObject();
    if (!nested)
      fail(formatv("field '{0}' must be an object", key));
    return nested;
  }

  void checkKnownKeys(const json::Object &object, StringRef prefix,
                      ArrayRef<StringRef> known) {
    if (error)
      return;
    for (const auto &entry : object) {
      StringRef key = entry.first;
      if (!is_contained(known, key)) {
        fail(formatv("unknown field '{0}' (expected one of: {1})",
                     fieldName(prefix, key), join(known, ", ")));
        return;
      }
    }
  }

  void fail(const Twine &message) {
    if (!error)
      error = ("hardware profile '" + source + "': " + message).str();
  }

  std::optional<std::string> error;

private:
  /// The value of `key` (called `field` in messages), or null when an earlier
  /// field failed or it is absent (an error unless fields are optional).
  const json::Value *getField(const json::Object &object, StringRef field,
                              StringRef key) {
    if (error)
      return nullptr;
    const json::Value *value = object.get(key);
    if (!value && !fieldsOptional)
      fail(formatv("missing field '{0}'", field));
    return value;
  }

  static std::string fieldName(StringRef prefix, StringRef key) {
    return prefix.empty() ? key.str() : (prefix + "." + key).str();
  }

  StringRef source;
  bool fieldsOptional;
};
} // namespace

Expected<HardwareProfile>
ddp::timing::parseHardwareProfile(const json::Value &json, StringRef source) {
  auto makeError = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  const json::Object *root = json.getAsObject();
  if (!root)
    return makeError("hardware profile '" + source +
                     "': the top level must be a JSON object");

  HardwareProfile profile;
  bool hasBase = false;
  if (const json::Value *base = root->get("base")) {
    std::optional<StringRef> baseName = base->getAsString();
    if (!baseName)
      return makeError("hardware profile '" + source +
                       "': field 'base' must be a string");
    Expected<HardwareProfile> baseProfile =
        getBuiltinHardwareProfile(*baseName);
    if (!baseProfile)
      return makeError("hardware profile '" + source +
                       "': field 'base': " + toString(baseProfile.takeError()));
    profile = std::move(*baseProfile);
    hasBase = true;
  }

  ProfileReader reader(source, /*fieldsOptional=*/hasBase);
  reader.checkKnownKeys(*root, "",
                        {"schema_version", "name", "description", "base",
                         "gpus_per_node", "peak_tflops", "gemm", "memory",
                         "kernel_overhead_us", "intra_node", "inter_node",
                         "collective", "comm_compute_slowdown"});

  if (const json::Value *version = root->get("schema_version")) {
    if (version->getAsInteger() != kHardwareProfileSchemaVersion)
      reader.fail(formatv("field 'schema_version' must be {0}",
                          kHardwareProfileSchemaVersion));
  }

  if (const json::Value *name = root->get("name")) {
    if (std::optional<StringRef> str = name->getAsString())
      profile.name = str->str();
    else
      reader.fail("field 'name' must be a string");
  } else if (!hasBase) {
    reader.fail("missing field 'name'");
  }
  if (const json::Value *description = root->get("description")) {
    if (std::optional<StringRef> str = description->getAsString())
      profile.description = str->str();
    else
      reader.fail("field 'description' must be a string");
  }

  reader.readInteger(*root, "", "gpus_per_node", profile.gpusPerNode);

  if (const json::Object *peak = reader.readObject(*root, "peak_tflops")) {
    SmallVector<StringRef> dtypes;
    for (unsigned i = 0; i < kNumElementTypes; ++i)
      dtypes.push_back(stringifyElementType(static_cast<ElementType>(i)));
    SmallVector<StringRef> known(dtypes);
    known.push_back("fp8");
    reader.checkKnownKeys(*peak, "peak_tflops", known);
    for (unsigned i = 0; i < kNumElementTypes; ++i)
      reader.readNumber(*peak, "peak_tflops", dtypes[i], kTera,
                        profile.peakFlops[i]);
    // Optional even without a base: most GPUs have no FP8 tensor cores.
    // Present, it must be a real peak; 0 is how a profile says "none".
    if (peak->get("fp8"))
      reader.readNumber(*peak, "peak_tflops", "fp8", kTera,
                        profile.fp8PeakFlops, 0, /*allowEqualMinimum=*/true);
  }

  if (const json::Object *gemm = reader.readObject(*root, "gemm")) {
    reader.checkKnownKeys(
        *gemm, "gemm",
        {"max_efficiency", "tile_m", "tile_n", "compute_units", "k_half"});
    reader.readNumber(*gemm, "gemm", "max_efficiency", 1,
                      profile.gemm.maxEfficiency, 0,
                      /*allowEqualMinimum=*/false, /*maximum=*/1);
    reader.readInteger(*gemm, "gemm", "tile_m", profile.gemm.tileM);
    reader.readInteger(*gemm, "gemm", "tile_n", profile.gemm.tileN);
    reader.readInteger(*gemm, "gemm", "compute_units",
                       profile.gemm.numComputeUnits);
    reader.readNumber(*gemm, "gemm", "k_half", 1, profile.gemm.kHalf, 0,
                      /*allowEqualMinimum=*/true);
  }

  if (const json::Object *memory = reader.readObject(*root, "memory")) {
    reader.checkKnownKeys(*memory, "memory",
                          {"bandwidth_gbps", "efficiency", "capacity_gib"});
    reader.readNumber(*memory, "memory", "bandwidth_gbps", kGiga,
                      profile.memoryBandwidth);
    reader.readNumber(*memory, "memory", "efficiency", 1,
                      profile.memoryEfficiency, 0,
                      /*allowEqualMinimum=*/false, /*maximum=*/1);
    // Optional: a profile without it plans without a memory check.
    if (memory->get("capacity_gib"))
      reader.readNumber(*memory, "memory", "capacity_gib", 1024.0 * 1024 * 1024,
                        profile.memoryCapacity);
  }

  reader.readNumber(*root, "", "kernel_overhead_us", kMicro,
                    profile.kernelOverhead, 0, /*allowEqualMinimum=*/true);

  if (const json::Object *intra = reader.readObject(*root, "intra_node")) {
    reader.checkKnownKeys(*intra, "intra_node",
                          {"bus_bandwidth_gbps", "latency_us"});
    reader.readNumber(*intra, "intra_node", "bus_bandwidth_gbps", kGiga,
                      profile.intraNodeBusBandwidth);
    reader.readNumber(*intra, "intra_node", "latency_us", kMicro,
                      profile.intraNodeHopLatency, 0,
                      /*allowEqualMinimum=*/true);
  }

  if (const json::Object *inter = reader.readObject(*root, "inter_node")) {
    reader.checkKnownKeys(
        *inter, "inter_node",
        {"nic_bus_bandwidth_gbps", "nics_per_node", "latency_us"});
    reader.readNumber(*inter, "inter_node", "nic_bus_bandwidth_gbps", kGiga,
                      profile.nicBusBandwidth);
    reader.readInteger(*inter, "inter_node", "nics_per_node",
                       profile.nicsPerNode);
    reader.readNumber(*inter, "inter_node", "latency_us", kMicro,
                      profile.interNodeHopLatency, 0,
                      /*allowEqualMinimum=*/true);
  }

  if (const json::Object *collective = reader.readObject(*root, "collective")) {
    reader.checkKnownKeys(*collective, "collective",
                          {"base_latency_us", "tree_bandwidth_fraction"});
    reader.readNumber(*collective, "collective", "base_latency_us", kMicro,
                      profile.collectiveBaseLatency, 0,
                      /*allowEqualMinimum=*/true);
    reader.readNumber(*collective, "collective", "tree_bandwidth_fraction", 1,
                      profile.treeBandwidthFraction, 0,
                      /*allowEqualMinimum=*/false, /*maximum=*/1);
  }

  reader.readNumber(*root, "", "comm_compute_slowdown", 1,
                    profile.commComputeSlowdown, 1,
                    /*allowEqualMinimum=*/true);

  if (reader.error)
    return makeError(*reader.error);
  return profile;
}

Expected<HardwareProfile> ddp::timing::loadHardwareProfile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(buffer.getError(),
                             "cannot read hardware profile '" + path +
                                 "': " + buffer.getError().message());
  Expected<json::Value> json = ddp::parseJSON((*buffer)->getBuffer());
  if (!json)
    return createStringError(
        inconvertibleErrorCode(),
        "hardware profile '" + path +
            "' is not valid JSON: " + toString(json.takeError()));
  return parseHardwareProfile(*json, path);
}

Expected<HardwareProfile>
ddp::timing::lookupHardwareProfile(StringRef nameOrPath) {
  if (is_contained(getBuiltinHardwareProfileNames(), nameOrPath))
    return getBuiltinHardwareProfile(nameOrPath);
  // Anything that looks like a file is read as one; a bare word is a
  // misspelled built-in name and gets the list of names.
  if (nameOrPath.ends_with(".json") || nameOrPath.contains('/'))
    return loadHardwareProfile(nameOrPath);
  return getBuiltinHardwareProfile(nameOrPath);
}

json::Value ddp::timing::toJSON(const HardwareProfile &p) {
  json::Object peak;
  for (unsigned i = 0; i < kNumElementTypes; ++i)
    peak[stringifyElementType(static_cast<ElementType>(i))] =
        p.peakFlops[i] / kTera;
  if (p.fp8PeakFlops > 0)
    peak["fp8"] = p.fp8PeakFlops / kTera;
  json::Object memory{{"bandwidth_gbps", p.memoryBandwidth / kGiga},
                      {"efficiency", p.memoryEfficiency}};
  if (p.memoryCapacity > 0)
    memory["capacity_gib"] = p.memoryCapacity / (1024.0 * 1024 * 1024);
  return json::Object{
      {"schema_version", kHardwareProfileSchemaVersion},
      {"name", p.name},
      {"description", p.description},
      {"gpus_per_node", p.gpusPerNode},
      {"peak_tflops", std::move(peak)},
      {"gemm", json::Object{{"max_efficiency", p.gemm.maxEfficiency},
                            {"tile_m", p.gemm.tileM},
                            {"tile_n", p.gemm.tileN},
                            {"compute_units", p.gemm.numComputeUnits},
                            {"k_half", p.gemm.kHalf}}},
      {"memory", std::move(memory)},
      {"kernel_overhead_us", p.kernelOverhead / kMicro},
      {"intra_node",
       json::Object{{"bus_bandwidth_gbps", p.intraNodeBusBandwidth / kGiga},
                    {"latency_us", p.intraNodeHopLatency / kMicro}}},
      {"inter_node",
       json::Object{{"nic_bus_bandwidth_gbps", p.nicBusBandwidth / kGiga},
                    {"nics_per_node", p.nicsPerNode},
                    {"latency_us", p.interNodeHopLatency / kMicro}}},
      {"collective",
       json::Object{{"base_latency_us", p.collectiveBaseLatency / kMicro},
                    {"tree_bandwidth_fraction", p.treeBandwidthFraction}}},
      {"comm_compute_slowdown", p.commComputeSlowdown},
  };
}
