//===- StepSimulator.h - The simulation of one step, shared ------*- C++ -*===//
//
// The simulator's state, private to lib/Sim: Simulator.cpp prices and runs
// the ops, LowerBound.cpp computes the step's lower bound, and
// IncrementalSimulation.cpp exposes it op by op to the schedulers.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_SIM_STEPSIMULATOR_H
#define DDP_LIB_SIM_STEPSIMULATOR_H

#include "ddp/Sim/Simulator.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/ResultPlacement.h"
#include "ddp/Timing/StepClock.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

namespace ddp::sim::detail {

using mlir::Attribute;
using mlir::FailureOr;
using mlir::LogicalResult;
using mlir::ModuleOp;
using mlir::Operation;
using mlir::Type;
using mlir::Value;
using llvm::SmallVector;
using llvm::StringRef;
namespace func = mlir::func;
using timing::CostModel;
using timing::GroupPlacement;
using timing::OptimizerRule;
using timing::StepClock;

/// A mesh as simulated: its axis sizes after the `dp` option.
struct SimMesh {
  MeshOp op;
  SmallVector<int64_t> shape;
};

/// A process group as simulated: its stream and where its ranks sit.
struct SimGroup {
  unsigned stream = 0;
  GroupPlacement placement;
};

class StepSimulator {
public:
  StepSimulator(func::FuncOp step, const CostModel &model,
                const SimOptions &options)
      : step(step), model(model), options(options),
        clock(model.getCommComputeSlowdown()) {}

  FailureOr<SimResult> run();

  /// What run() does before the first op, and after the last.
  LogicalResult begin();
  SimResult finish();

  LogicalResult simulate(Operation *op);
  FailureOr<SimGroup *> getGroup(CollectiveOpInterface op);
  StepClock &getClock() { return clock; }
  double getIdealComputeTime() const { return result.idealComputeTime; }
  void setNotBefore(Operation *collective, double time) {
    externalNotBefore[collective] = time;
  }
  std::pair<double, double> getLastCollective() const {
    return lastCollective;
  }
  /// When the asynchronous op that made `token` ends (0: not simulated).
  double getTokenDone(Value token) const { return tokenDone.lookup(token); }

private:
  LogicalResult prepareMeshes(ModuleOp module);

  void runCompute(Operation *op, StringRef name, double baseTime);
  /// Runs an optimizer update of the elements of `grad` (of type
  /// `gradType`) of parameters of type `paramType`; `params` are the
  /// parameters it updates (one symbol or an array of them).
  void runOptimizer(Operation *op, StringRef name, OptimizerRule kind,
                    Type gradType, Type paramType, Attribute params);
  LogicalResult runCollective(CollectiveOpInterface op);
  /// Blocks compute until `time`; returns how long it was held.
  double blockComputeUntil(Operation *op, double time, StringRef name);
  /// Splits a hold of the compute stream on a stage-to-stage transfer whose
  /// peer was ready at `peerReady` into waiting for the peer and the
  /// transfer itself.
  void countPipelineHold(double holdStart, double held, double peerReady);
  void addEvent(Operation *op, StringRef name, EventCategory category,
                unsigned stream, double start, double duration,
                std::optional<CollectiveRecord> collective = std::nullopt);
  void computeLowerBound();

  func::FuncOp step;
  const CostModel &model;
  const SimOptions &options;

  SimResult result;
  /// Stream `s` of the result (0 is compute) is communication stream `s - 1`
  /// of the clock.
  StepClock clock;
  /// Per communication stream, the bandwidth-only time of its collectives.
  SmallVector<double> streamTransferBound{0.0};
  llvm::DenseMap<Value, double> tokenDone;
  /// The result stream of each asynchronous collective's token (of a join:
  /// the stream of the token that completes last).
  llvm::DenseMap<Value, unsigned> tokenStream;
  /// Per result stream, when its last collective ends.
  SmallVector<double> streamEnd{0.0};
  /// For an asynchronous send or receive over `pp` (or a join that ends
  /// with one), when the peer rank had sent (0 for a send): the wait that
  /// holds compute on it counts the time before as waiting for the peer.
  llvm::DenseMap<Value, double> pipelinePeerReady;
  /// When collectives may start at the earliest for a reason outside this
  /// step (a receive, once another rank's program has sent).
  llvm::DenseMap<Operation *, double> externalNotBefore;
  std::pair<double, double> lastCollective{0, 0};

  llvm::DenseMap<Attribute, SimMesh> meshes;
  llvm::DenseMap<std::pair<Attribute, Attribute>, SimGroup *> groupsByAttr;
  llvm::StringMap<SimGroup> groupsByKey;
  llvm::StringMap<Type> paramTypes;
  /// The parameters the lowering stores in their gathered buckets, whose
  /// copies in and out of the bucket cost nothing.
  std::optional<ParamsInGathers> paramsInGathers;
  llvm::StringMap<double> optimizerTime;
  llvm::StringSet<> unmodeled;
  /// Ideal compute before each grad_ready, in the order of result.gradReady.
  SmallVector<double> idealComputeAtReady;
};

} // namespace ddp::sim::detail

#endif // DDP_LIB_SIM_STEPSIMULATOR_H
