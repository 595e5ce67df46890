//===- Simulator.h - Step-time simulation of a ddp step ---------*- C++ -*-===//
//
// Executes a step (scheduled or not) against the cost model: one compute
// stream that runs the ops in block order, one communication stream per
// process group for asynchronous collectives, tokens and waits as
// dependencies. The semantics are written out in docs/CostModel.md
// ("Simulation").
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SIM_SIMULATOR_H
#define DDP_SIM_SIMULATOR_H

#include "ddp/Timing/CostModel.h"
#include "ddp/Timing/StepClock.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ddp {
namespace sim {

enum class EventCategory { Compute, Comm, Wait };
llvm::StringRef stringifyEventCategory(EventCategory category);

/// What the simulator priced for a collective.
struct CollectiveRecord {
  CollectiveKind kind = CollectiveKind::AllReduce;
  /// nccl-tests size of the collective (see CostModel::collectiveCost).
  double bytes = 0;
  timing::CollectiveCost cost;
  bool async = false;
};

/// One interval of one stream. Times in seconds from the start of the step.
struct TimelineEvent {
  std::string name;
  EventCategory category = EventCategory::Compute;
  /// 0 is the compute stream, 1... the communication streams.
  unsigned stream = 0;
  double start = 0;
  double duration = 0;
  /// The op it comes from (a wait event: the op that blocked).
  mlir::Operation *op = nullptr;
  /// Set for collectives.
  std::optional<CollectiveRecord> collective;

  double end() const { return start + duration; }
};

struct StreamInfo {
  /// "compute", or "comm0", "comm1", ... in order of first use.
  std::string name;
  /// The mesh axes of the process group (empty for the compute stream).
  llvm::SmallVector<std::string> axes;
  timing::GroupPlacement placement;
  /// Seconds the stream is busy, and how many ops ran on it.
  double busyTime = 0;
  int64_t numOps = 0;
  /// Of SimResult::exposedCommTime, the part the compute stream waited on
  /// this (communication) stream's collectives; the communication still
  /// running when compute ends counts on the stream that ends last.
  double exposedTime = 0;
};

/// When a gradient became final on the compute stream.
struct GradReadyTime {
  std::string param;
  double time = 0;
  int64_t numElements = 0;
  ElementType elementType = ElementType::F32;
  mlir::Operation *op = nullptr;
};

/// A lower bound on the step time of this graph on this hardware, whatever
/// the schedule; the step time is at least each term.
struct LowerBound {
  /// All compute at full speed (no slowdown, no waiting).
  double compute = 0;
  /// For the busiest process group: all its collectives' data at full bus
  /// bandwidth with no latency.
  double communication = 0;
  /// Compute up to the last `grad_ready`, then the smallest collective that
  /// can carry that gradient (its bytes alone, latency included), then its
  /// optimizer update.
  double tail = 0;

  double value() const { return std::max({compute, communication, tail}); }
  /// The name of the largest term.
  llvm::StringRef binding() const;
};

struct MeshAxisInfo {
  std::string name;
  int64_t size = 0;
  /// The size written in the IR, before the `dp` option rescaled it.
  int64_t sizeInIR = 0;
};

/// The most ranks a simulated mesh (after the `dp` option) may have. Placing
/// a group walks its members, and larger products overflow; 2^20 ranks is
/// several times the largest training job run so far.
constexpr int64_t kMaxSimulatedRanks = int64_t(1) << 20;

struct SimOptions {
  /// When positive, the data-parallel size to simulate instead of the one in
  /// the IR (see rescaleDataParallelAxes).
  int64_t dataParallelSize = 0;
  /// Keep every op's interval (needed for traces and pictures; the totals
  /// and the lower bound do not need it).
  bool recordEvents = true;
  /// The busiest expert-parallel rank's routed tokens over the balanced
  /// share (>= 1): the ops marked ddp.routed cost that much more, up to
  /// their cap. 1 is balanced routing.
  double moeImbalance = 1;
};

struct SimResult {
  std::string stepName;
  std::string hardwareName;
  std::string meshName;
  llvm::SmallVector<MeshAxisInfo> meshAxes;
  int64_t numRanks = 1;
  int64_t numNodes = 1;
  int64_t dataParallelSize = 1;

  /// When the last stream goes idle.
  double stepTime = 0;
  /// Time compute kernels ran, with the slowdown while a collective ran.
  double computeTime = 0;
  /// The same kernels without any slowdown.
  double idealComputeTime = 0;
  /// Flops of the GEMMs and costed compute ops (what model-FLOPs
  /// throughput counts).
  double flops = 0;
  /// Sum of the durations of all collectives.
  double commTime = 0;
  /// Time the compute stream stood still for communication: waits that
  /// blocked, synchronous collectives (and the queue before them), and any
  /// communication still running when compute ended.
  double exposedCommTime = 0;
  /// Of exposedCommTime, the holds on sends and receives over `pp`: the
  /// part spent before the transfer started (waiting for the peer rank,
  /// the pipeline's bubble) and the part the transfer itself took (the
  /// exposed p2p that overlap_p2p_comm hides).
  double pipelinePeerWaitTime = 0;
  double exposedPipelineTransferTime = 0;
  LowerBound lowerBound;

  int64_t numOps = 0;
  int64_t numComputeOps = 0;
  int64_t numCollectives = 0;
  int64_t numWaits = 0;
  /// Names of ops the model does not know, charged nothing (each once).
  llvm::SmallVector<std::string> unmodeledOps;

  llvm::SmallVector<StreamInfo> streams;
  std::vector<TimelineEvent> events;
  /// In op order.
  std::vector<GradReadyTime> gradReady;

  /// The fraction of communication hidden behind compute:
  /// 1 - exposed / total; none when there is no communication.
  std::optional<double> overlapFraction() const;
  double stepOverLowerBound() const;
  /// Flops per second of compute time; 0 without compute.
  double computeFlopRate() const {
    return computeTime > 0 ? flops / computeTime : 0;
  }
};

/// The axis sizes a mesh has when its data-parallel size becomes
/// `dataParallelSize`: the first (slowest) data-parallel axis absorbs the
/// change, the others keep their size. Fails with a message when the mesh
/// has no data-parallel axis or the size is not a multiple of the other
/// data-parallel axes.
llvm::Expected<llvm::SmallVector<int64_t>>
rescaleDataParallelAxes(llvm::ArrayRef<llvm::StringRef> axisNames,
                        llvm::ArrayRef<int64_t> sizes,
                        int64_t dataParallelSize);

/// Where the group spanned by `groupAxes` (indices into `meshShape`) sits,
/// with ranks numbered row-major (first axis slowest) and `gpusPerNode`
/// consecutive ranks per node. Describes the group holding rank 0.
timing::GroupPlacement placeGroup(llvm::ArrayRef<int64_t> meshShape,
                          llvm::ArrayRef<unsigned> groupAxes,
                          int64_t gpusPerNode);

/// The step of a module (ddp::findStep), or an error that names the `step`
/// option to simulate another.
mlir::FailureOr<mlir::func::FuncOp> findStepToSimulate(mlir::ModuleOp module,
                                                       llvm::StringRef name);

/// Simulates one step. Emits an error at the offending op and fails on IR it
/// cannot price (a group whose mesh cannot be rescaled).
mlir::FailureOr<SimResult> simulateStep(mlir::func::FuncOp step,
                                        const timing::CostModel &model,
                                        const SimOptions &options = {});

/// What a scheduler prices its choices with: the cost model of hardware
/// profile `hardware` (a built-in name or a JSON file), and options that
/// simulate at data-parallel size `dataParallelSize` (0: the mesh's)
/// without recording events.
struct Pricing {
  timing::CostModel model;
  SimOptions options;
};
/// Emits the profile lookup's error at `at` and fails.
mlir::FailureOr<Pricing> getPricing(mlir::Operation *at,
                                    llvm::StringRef hardware,
                                    int64_t dataParallelSize);

/// A simulation that a pass drives op by op, to price choices the IR does
/// not hold yet on the very clock the simulation of the finished step will
/// follow (ddp-overlap-tp-comm prices each GEMM's split count so). Ops are
/// fed in block order; between them the caller may run work of its own on
/// getClock(), which must be what the IR it then builds prices to.
class IncrementalSimulation {
public:
  /// Prepares the meshes of `step`'s module; emits an error and fails where
  /// simulateStep would. Records no events unless `keepEvents` (the
  /// schedulers' many trial runs need none; a pipeline's trace does).
  static mlir::FailureOr<std::unique_ptr<IncrementalSimulation>>
  create(mlir::func::FuncOp step, const timing::CostModel &model,
         const SimOptions &options = {}, bool keepEvents = false);
  ~IncrementalSimulation();

  /// Simulates `op` as simulateStep does.
  mlir::LogicalResult simulate(mlir::Operation *op);
  /// The communication stream of the clock that the group of `collective`
  /// (an op of CollectiveOpInterface) runs on, and where its ranks sit.
  mlir::FailureOr<std::pair<unsigned, timing::GroupPlacement>>
  getCommStream(mlir::Operation *collective);

  timing::StepClock &getClock();
  /// When the step simulated so far ends.
  double getStepEnd();
  /// The compute of the ops simulated so far at full speed (no slowdown,
  /// no waiting).
  double getIdealComputeTime() const;
  /// `collective` (not simulated yet) starts at `time` at the earliest: a
  /// receive whose data another rank's program sends then.
  void setNotBefore(mlir::Operation *collective, double time);
  /// The start and end of the collective simulated last.
  std::pair<double, double> getLastCollective() const;
  /// When the asynchronous op (or join) that made `token`, simulated
  /// already, ends: a wait on it holds the compute stream until then.
  double getTokenDone(mlir::Value token) const;
  /// Ends the simulation after the ops fed so far, as simulateStep does.
  SimResult finish();

private:
  IncrementalSimulation();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace sim
} // namespace ddp

#endif // DDP_SIM_SIMULATOR_H
