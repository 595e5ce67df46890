//===- CostModel.cpp - Time of compute and collectives --------------------===//

#include "ddp/Timing/CostModel.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using namespace ddp;
using namespace ddp::timing;

StringRef ddp::timing::stringifyCollectiveAlgorithm(CollectiveAlgorithm algo) {
  switch (algo) {
  case CollectiveAlgorithm::Ring:
    return "ring";
  case CollectiveAlgorithm::Tree:
    return "tree";
  case CollectiveAlgorithm::Auto:
    return "auto";
  }
  llvm_unreachable("unknown collective algorithm");
}

GroupPlacement GroupPlacement::consecutive(int64_t ranks, int64_t gpusPerNode) {
  int64_t perNode = std::min(ranks, gpusPerNode);
  return {ranks, static_cast<int64_t>(divideCeil(ranks, perNode)), perNode};
}

double ddp::timing::getBusFactor(CollectiveKind kind, int64_t ranks) {
  double n = static_cast<double>(ranks);
  switch (kind) {
#define DDP_COLLECTIVE(Enumerator, Name, BusFactor, Steps, InterSteps)          \
  case CollectiveKind::Enumerator:                                             \
    return BusFactor;
#include "ddp/Runtime/Collectives.def"
  }
  llvm_unreachable("unknown collective kind");
}

/// The hops of a ring and those that cross nodes (NCCL's nsteps and
/// nInterSteps), as Collectives.def gives them.
static std::pair<int64_t, int64_t> getRingSteps(CollectiveKind kind,
                                                const GroupPlacement &group) {
  double n = static_cast<double>(group.ranks);
  double nodes = static_cast<double>(group.nodes);
  switch (kind) {
#define DDP_COLLECTIVE(Enumerator, Name, BusFactor, Steps, InterSteps)          \
  case CollectiveKind::Enumerator:                                             \
    return {static_cast<int64_t>(Steps), static_cast<int64_t>(InterSteps)};
#include "ddp/Runtime/Collectives.def"
  }
  llvm_unreachable("unknown collective kind");
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

double CostModel::gemmEfficiency(int64_t m, int64_t n, int64_t k) const {
  const GemmEfficiencyModel &model = hardware.gemm;
  // Each unit computes whole tiles; a GEMM takes as many tile-times as it
  // has waves, whatever fraction of the last wave and of each edge tile is
  // useful work.
  int64_t tiles = static_cast<int64_t>(divideCeil(m, model.tileM)) *
                  static_cast<int64_t>(divideCeil(n, model.tileN));
  int64_t waves =
      static_cast<int64_t>(divideCeil(tiles, model.numComputeUnits));
  double paddedOutput = static_cast<double>(waves) * model.numComputeUnits *
                        model.tileM * model.tileN;
  double outputFraction = static_cast<double>(m) * n / paddedOutput;
  double depthFraction = k / (k + model.kHalf);
  return model.maxEfficiency * outputFraction * depthFraction;
}

double CostModel::gemmTime(int64_t m, int64_t n, int64_t k,
                           ElementType type) const {
  double flops = 2.0 * m * n * k;
  // Under FP8 a 16-bit GEMM reads 1-byte operands and writes 16-bit output.
  bool fp8 = gemmPrecision == GemmPrecision::FP8 &&
             (type == ElementType::F16 || type == ElementType::BF16);
  double peak = fp8 ? hardware.fp8PeakFlops : hardware.getPeakFlops(type);
  double operandBytes = fp8 ? 1.0 : getElementBytes(type);
  double bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n) *
                     operandBytes +
                 static_cast<double>(m) * n * getElementBytes(type);
  double mathTime = flops / (peak * gemmEfficiency(m, n, k));
  double memoryTime =
      bytes / (hardware.memoryBandwidth * hardware.memoryEfficiency);
  return std::max(mathTime, memoryTime) + hardware.kernelOverhead;
}

double CostModel::computeTime(double flops, double bytes,
                              ElementType type) const {
  double mathTime =
      flops / (hardware.getPeakFlops(type) * hardware.gemm.maxEfficiency);
  double memoryTime =
      bytes / (hardware.memoryBandwidth * hardware.memoryEfficiency);
  return std::max(mathTime, memoryTime) + hardware.kernelOverhead;
}

double CostModel::memoryTime(double bytes) const {
  return bytes / (hardware.memoryBandwidth * hardware.memoryEfficiency) +
         hardware.kernelOverhead;
}

double CostModel::optimizerTime(OptimizerRule kind, double numel,
                                ElementType param, ElementType grad) const {
  // Megatron-LM's Float16OptimizerWithFloat16Params and the distributed
  // optimizer step an fp32 main copy of a 16-bit parameter, then copy it to
  // the parameter (megatron/core/optimizer/optimizer.py,
  // _copy_main_params_to_model_params).
  double elementBytes = getElementBytes(param);
  double paramBytes =
      numel * (elementBytes < 4 ? 2 * 4 + elementBytes : 2 * elementBytes);
  double bytes = paramBytes + numel * getElementBytes(grad);
  if (kind == OptimizerRule::Adam)
    bytes += 16 * numel;
  return memoryTime(bytes);
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

double CostModel::busBandwidth(const GroupPlacement &group) const {
  if (!group.spansNodes())
    return hardware.intraNodeBusBandwidth;
  // Rail-optimized fabrics give each GPU its own NIC: the ranks of the group
  // on one node cross the network through at most that many NICs.
  int64_t nics = std::min(group.ranksPerNode, hardware.nicsPerNode);
  double network = static_cast<double>(nics) * hardware.nicBusBandwidth;
  if (group.ranksPerNode > 1)
    return std::min(network, hardware.intraNodeBusBandwidth);
  return network;
}

CollectiveCost CostModel::ringCost(CollectiveKind kind, double bytes,
                                   const GroupPlacement &group) const {
  CollectiveCost cost;
  cost.algorithm = CollectiveAlgorithm::Ring;
  cost.busBandwidth = busBandwidth(group);
  cost.transfer = bytes * getBusFactor(kind, group.ranks) / cost.busBandwidth;
  // One hop per ring step; the steps that cross a node boundary pay the
  // network's latency.
  auto [steps, interSteps] = getRingSteps(kind, group);
  cost.latency = hardware.collectiveBaseLatency +
                 (steps - interSteps) * hardware.intraNodeHopLatency +
                 interSteps * hardware.interNodeHopLatency;
  return cost;
}

CollectiveCost CostModel::allToAllCost(double bytes,
                                       const GroupPlacement &group) const {
  // Each rank sends block j of its `bytes` straight to rank j (NCCL's
  // grouped send/recv). Inside a node the (n - 1) / n that moves shares the
  // NVSwitch at the node's bus bandwidth. Across nodes, each GPU's blocks
  // for the other nodes, (n - ranksPerNode) / n, leave through its own NIC
  // (rail-optimized; GPUs share one when a node has fewer), which bounds
  // the time unless NVLink's share takes longer. This is the slowest link of
  // the group's placement. A ring's busBandwidth() would instead count
  // every NIC of the node for one stream of data.
  CollectiveCost cost;
  cost.algorithm = CollectiveAlgorithm::Ring;
  double n = static_cast<double>(group.ranks);
  double perNode = static_cast<double>(group.ranksPerNode);
  double intra = bytes * (perNode - 1) / n / hardware.intraNodeBusBandwidth;
  cost.transfer = bytes * (n - 1) / n / hardware.intraNodeBusBandwidth;
  cost.latency = hardware.collectiveBaseLatency + hardware.intraNodeHopLatency;
  if (group.spansNodes()) {
    double nics = static_cast<double>(
        std::min(group.ranksPerNode, hardware.nicsPerNode));
    double perGpu = hardware.nicBusBandwidth * nics / perNode;
    cost.transfer = std::max(bytes * (n - perNode) / n / perGpu, intra);
    cost.latency =
        hardware.collectiveBaseLatency + hardware.interNodeHopLatency;
  }
  // As nccl-tests reports it: busbw = algbw x (n - 1) / n.
  cost.busBandwidth = bytes * (n - 1) / n / cost.transfer;
  return cost;
}

CollectiveCost CostModel::treeCost(double bytes,
                                   const GroupPlacement &group) const {
  CollectiveCost cost;
  cost.algorithm = CollectiveAlgorithm::Tree;
  cost.busBandwidth = busBandwidth(group) * hardware.treeBandwidthFraction;
  // Reduce up and broadcast down a pipelined (double binary) tree: every
  // rank moves the whole buffer twice.
  cost.transfer = 2 * bytes / cost.busBandwidth;
  // A chain inside each node, a tree of depth floor(log2(nodes)) between
  // them, traversed up and down (NCCL's tree latency).
  int64_t depth = group.nodes > 1 ? Log2_64(group.nodes) : 0;
  cost.latency = hardware.collectiveBaseLatency +
                 2 * ((group.ranksPerNode - 1) * hardware.intraNodeHopLatency +
                      depth * hardware.interNodeHopLatency);
  return cost;
}

CollectiveCost CostModel::collectiveCost(CollectiveKind kind, double bytes,
                                         const GroupPlacement &group) const {
  return collectiveCost(kind, bytes, group, algorithm);
}

CollectiveCost CostModel::collectiveCost(CollectiveKind kind, double bytes,
                                         const GroupPlacement &group,
                                         CollectiveAlgorithm algo) const {
  // A group of one rank has nothing to exchange (NCCL returns at once).
  if (group.ranks <= 1)
    return CollectiveCost{0, 0, CollectiveAlgorithm::Ring, 0};
  if (isAllToAll(kind))
    return allToAllCost(bytes, group);
  if (kind != CollectiveKind::AllReduce || algo == CollectiveAlgorithm::Ring)
    return ringCost(kind, bytes, group);
  if (algo == CollectiveAlgorithm::Tree)
    return treeCost(bytes, group);
  CollectiveCost ring = ringCost(kind, bytes, group);
  CollectiveCost tree = treeCost(bytes, group);
  return tree.total() < ring.total() ? tree : ring;
}

double CostModel::collectiveTransferBound(CollectiveKind kind, double bytes,
                                          const GroupPlacement &group) const {
  if (group.ranks <= 1)
    return 0;
  if (isAllToAll(kind))
    return allToAllCost(bytes, group).transfer;
  // The ring's data movement is never above the tree's (2(n-1)/n <= 2/f).
  return ringCost(kind, bytes, group).transfer;
}
