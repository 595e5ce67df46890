//===- HardwareProfile.h - What the cost model knows of a machine -*- C++
//-*-===//
//
// A hardware profile describes one kind of machine to the cost model: peak
// throughput per dtype, how close GEMMs get to it, memory bandwidth, the
// bandwidth and latency of the links inside and between nodes, and how much
// compute slows down while a collective runs beside it. Profiles are built in
// (see docs/CostModel.md for the source of every number) or read from JSON.
//
// This header has no MLIR dependency: the bucketing policies and benchmarks
// use the cost model without any IR.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TIMING_HARDWAREPROFILE_H
#define DDP_TIMING_HARDWAREPROFILE_H

#include "ddp/Support/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <optional>
#include <string>

namespace ddp {
namespace timing {

/// Element types the cost model distinguishes; they index per-dtype tables.
using ddp::ElementType;
using ddp::kNumElementTypes;

/// How close a GEMM of a given shape gets to peak: the output is cut into
/// `tileM x tileN` tiles that run in waves over `numComputeUnits` units
/// (NVIDIA's tile and wave quantization), and a short K dimension cannot
/// amortize a tile's prologue and epilogue (`K / (K + kHalf)`). Large,
/// well-shaped GEMMs reach `maxEfficiency` of peak.
struct GemmEfficiencyModel {
  double maxEfficiency = 0;
  int64_t tileM = 0;
  int64_t tileN = 0;
  int64_t numComputeUnits = 0;
  double kHalf = 0;
};

/// All quantities in SI units (flop/s, bytes/s, seconds). The JSON form uses
/// TFLOP/s, GB/s (1e9 bytes/s) and microseconds; see docs/CostModel.md.
struct HardwareProfile {
  std::string name;
  std::string description;
  /// Ranks sharing a node (GPUs, or processes for a CPU profile). Ranks
  /// `[k * gpusPerNode, (k + 1) * gpusPerNode)` share node `k`.
  int64_t gpusPerNode = 0;
  /// Peak dense throughput, indexed by ElementType.
  std::array<double, kNumElementTypes> peakFlops{};
  /// Peak dense FP8 tensor-core throughput; 0 where the GPU has none. Only
  /// GEMMs use it, and only when the cost model prices them as FP8 (see
  /// CostModel's `fp8Gemms`).
  double fp8PeakFlops = 0;
  GemmEfficiencyModel gemm;
  /// HBM (or DRAM) bandwidth and the fraction of it streaming kernels reach.
  double memoryBandwidth = 0;
  double memoryEfficiency = 0;
  /// Device memory per GPU in bytes, as nvidia-smi's memory.total gives it;
  /// 0 when unknown (then no plan is checked against it).
  double memoryCapacity = 0;
  /// Fixed cost of every kernel on the compute stream (launch gap).
  double kernelOverhead = 0;
  /// nccl-tests bus bandwidth of a collective inside one node, and the
  /// latency of one step (hop) of a ring inside a node.
  double intraNodeBusBandwidth = 0;
  double intraNodeHopLatency = 0;
  /// Achievable bus bandwidth of one NIC, how many NICs a node has, and the
  /// latency of one step that crosses the network.
  double nicBusBandwidth = 0;
  int64_t nicsPerNode = 0;
  double interNodeHopLatency = 0;
  /// Fixed cost of launching one collective.
  double collectiveBaseLatency = 0;
  /// Fraction of the ring's bus bandwidth a tree all-reduce reaches.
  double treeBandwidthFraction = 0;
  /// Compute kernels take this factor longer while a collective is in flight
  /// (communication kernels occupy SMs and memory bandwidth).
  double commComputeSlowdown = 1;

  double getPeakFlops(ElementType type) const {
    return peakFlops[static_cast<unsigned>(type)];
  }
};

/// Names of the built-in profiles.
llvm::ArrayRef<llvm::StringRef> getBuiltinHardwareProfileNames();

/// A built-in profile, or an error listing the known names.
llvm::Expected<HardwareProfile> getBuiltinHardwareProfile(llvm::StringRef name);

/// Reads a profile from its JSON form. `source` names the input in errors
/// (a file name). A profile may start from a built-in one with
/// `"base": "<name>"` and override some fields; without a base every field is
/// required. Errors name the offending field, e.g. `inter_node.latency_us`.
llvm::Expected<HardwareProfile>
parseHardwareProfile(const llvm::json::Value &json, llvm::StringRef source);

/// Reads a profile from a JSON file.
llvm::Expected<HardwareProfile> loadHardwareProfile(llvm::StringRef path);

/// A built-in name, or else a path to a JSON file (what `hw=` accepts).
llvm::Expected<HardwareProfile>
lookupHardwareProfile(llvm::StringRef nameOrPath);

/// The JSON form of a profile (the same schema parseHardwareProfile reads).
llvm::json::Value toJSON(const HardwareProfile &profile);

/// The version of the profile schema, written as `"schema_version"`.
constexpr int64_t kHardwareProfileSchemaVersion = 1;

} // namespace timing
} // namespace ddp

#endif // DDP_TIMING_HARDWAREPROFILE_H
