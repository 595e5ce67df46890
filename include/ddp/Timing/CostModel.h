//===- CostModel.h - Time of compute and collectives ------------*- C++ -*-===//
//
// Pure functions of a hardware profile: the time of a GEMM, of a costed
// compute kernel, of a memory-bound kernel and of a collective over a process
// group placed on nodes. The simulator, the `auto` bucketing policy and the
// benchmarks all price work through this class, so they agree.
//
// Collective times follow NCCL's own alpha-beta model (src/graph/tuning.cc):
// a ring moves `bytes * busFactor` over the bus bandwidth and pays one hop
// latency per step; a tree all-reduce moves `2 * bytes` at a fraction of the
// bus bandwidth and pays hops along the chain inside nodes and the tree
// between them. Bus factors are those of nccl-tests (doc/PERFORMANCE.md):
// all-reduce 2(n-1)/n, reduce-scatter and all-gather (n-1)/n, send/recv 1.
// The formulas are written out in docs/CostModel.md.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TIMING_COSTMODEL_H
#define DDP_TIMING_COSTMODEL_H

#include "ddp/Runtime/CollectiveKind.h"
#include "ddp/Timing/HardwareProfile.h"

#include <cstdint>

namespace ddp {
namespace timing {

/// Ring and tree are NCCL's two algorithms; `Auto` takes whichever the model
/// says is faster, as NCCL's tuner does. Only all-reduce has a tree.
enum class CollectiveAlgorithm { Ring, Tree, Auto };
llvm::StringRef stringifyCollectiveAlgorithm(CollectiveAlgorithm algorithm);

/// How GEMMs on 16-bit tensors run: at their own precision, or as Transformer
/// Engine's FP8 recipe runs a linear layer (operands cast to FP8, FP8 tensor
/// cores, 16-bit output). Attention and other costed kernels keep their
/// precision either way, as Transformer Engine's default recipe does.
enum class GemmPrecision { Native, FP8 };

/// The optimizer updates the cost model prices.
enum class OptimizerRule { SGD, Adam };

/// Where the ranks of one process group sit: `ranks` in all, spread over
/// `nodes` nodes with at most `ranksPerNode` on any one of them.
struct GroupPlacement {
  int64_t ranks = 1;
  int64_t nodes = 1;
  int64_t ranksPerNode = 1;

  bool spansNodes() const { return nodes > 1; }
  /// A group of `ranks` consecutive ranks starting on a node boundary.
  static GroupPlacement consecutive(int64_t ranks, int64_t gpusPerNode);
};

/// The time of one collective, split into its parts.
struct CollectiveCost {
  /// Launch plus per-hop latency (seconds).
  double latency = 0;
  /// Time to move the data at the bus bandwidth (seconds).
  double transfer = 0;
  /// The algorithm priced (Ring or Tree, never Auto).
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  /// The bus bandwidth used (bytes/s).
  double busBandwidth = 0;

  double total() const { return latency + transfer; }
};

class CostModel {
public:
  /// With `GemmPrecision::FP8` the profile must have an FP8 peak
  /// (`fp8PeakFlops > 0`); callers check, as the simulate pass does.
  explicit CostModel(HardwareProfile profile,
                     CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto,
                     GemmPrecision gemmPrecision = GemmPrecision::Native)
      : hardware(std::move(profile)), algorithm(algorithm),
        gemmPrecision(gemmPrecision) {}

  const HardwareProfile &getProfile() const { return hardware; }
  CollectiveAlgorithm getAlgorithm() const { return algorithm; }
  GemmPrecision getGemmPrecision() const { return gemmPrecision; }

  //===--- Compute --------------------------------------------------------===//

  /// Fraction of peak a GEMM of this shape reaches (tile and wave
  /// quantization, short K); in (0, maxEfficiency].
  double gemmEfficiency(int64_t m, int64_t n, int64_t k) const;

  /// Time of `C[m,n] = A[m,k] * B[k,n]`: the slower of 2mnk flops at the
  /// shape's efficiency and of reading A and B and writing C, plus the kernel
  /// overhead. Under `GemmPrecision::FP8` a 16-bit GEMM runs at the FP8 peak
  /// and reads 1-byte operands (the casts themselves are not priced).
  double gemmTime(int64_t m, int64_t n, int64_t k, ElementType type) const;

  /// Time of a kernel doing `flops` flops and moving `bytes` bytes (roofline:
  /// flops at the asymptotic GEMM efficiency, bytes at the streaming memory
  /// bandwidth), plus the kernel overhead.
  double computeTime(double flops, double bytes, ElementType type) const;

  /// Time of a memory-bound kernel moving `bytes` bytes (elementwise ops,
  /// casts, optimizer updates), plus the kernel overhead.
  double memoryTime(double bytes) const;

  /// Time of an optimizer update of `numel` elements, a memory-bound kernel:
  /// it reads the parameter and the gradient and writes the parameter; Adam
  /// also reads and writes its two fp32 moments. A 16-bit parameter is
  /// updated through its fp32 main copy (Megatron's mixed-precision
  /// optimizer, as the runtime does): the main copy is read and written and
  /// the parameter only written (28 bytes an element for Adam on bf16). `ddp.sgd` / `ddp.adam` price
  /// a whole parameter this way, and `ddp.shard_sgd` / `ddp.shard_adam` the
  /// elements of a shard, so that the two schedules compare.
  double optimizerTime(OptimizerRule kind, double numel, ElementType param,
                       ElementType grad) const;

  /// Compute kernels run this many times longer while a collective runs.
  double getCommComputeSlowdown() const { return hardware.commComputeSlowdown; }

  //===--- Communication --------------------------------------------------===//

  /// The nccl-tests bus bandwidth a group placed so reaches: the intra-node
  /// bus bandwidth inside one node; across nodes, the NICs the group's ranks
  /// on one node can use (at most one per rank), capped by the intra-node
  /// bandwidth those ranks share.
  double busBandwidth(const GroupPlacement &group) const;

  /// The cost of one collective. `bytes` is the size nccl-tests reports for
  /// it: the buffer of an all-reduce, the whole (unscattered) input of a
  /// reduce-scatter, the whole (gathered) output of an all-gather, the
  /// message of a send/recv. Cheap: a handful of flops, no allocation.
  CollectiveCost collectiveCost(CollectiveKind kind, double bytes,
                                const GroupPlacement &group) const;
  CollectiveCost collectiveCost(CollectiveKind kind, double bytes,
                                const GroupPlacement &group,
                                CollectiveAlgorithm algorithm) const;

  double collectiveTime(CollectiveKind kind, double bytes,
                        const GroupPlacement &group) const {
    return collectiveCost(kind, bytes, group).total();
  }

  /// The time of the collective's data movement alone, at full bus bandwidth
  /// with no latency and the best algorithm: what the lower bound charges.
  double collectiveTransferBound(CollectiveKind kind, double bytes,
                                 const GroupPlacement &group) const;

private:
  CollectiveCost ringCost(CollectiveKind kind, double bytes,
                          const GroupPlacement &group) const;
  CollectiveCost treeCost(double bytes, const GroupPlacement &group) const;
  CollectiveCost allToAllCost(double bytes, const GroupPlacement &group) const;

  HardwareProfile hardware;
  CollectiveAlgorithm algorithm;
  GemmPrecision gemmPrecision;
};

/// nccl-tests' factor from algorithm bandwidth to bus bandwidth for a group
/// of `ranks`: 2(n-1)/n, (n-1)/n, or 1.
double getBusFactor(CollectiveKind kind, int64_t ranks);

} // namespace timing
} // namespace ddp

#endif // DDP_TIMING_COSTMODEL_H
