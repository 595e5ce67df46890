//===- StepBuilder.h - Building the unscheduled step ------------*- C++ -*-===//
//
// What both importers share: the module with its mesh and parameters, ops
// built straight with OpBuilder, and the bookkeeping of gradients (summed
// over microbatches, marked ready after their last contribution, reduced over
// their data-parallel group in ready order, then handed to the optimizer).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_IMPORT_STEPBUILDER_H
#define DDP_LIB_IMPORT_STEPBUILDER_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Import/MeshLayout.h"
#include "ddp/Import/StepOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::importer {

/// A process group: axes of the step's mesh.
struct Group {
  mlir::ArrayAttr axes;
  int64_t size = 1;
};

struct ParamSpec {
  std::string name;
  mlir::RankedTensorType type;
  std::optional<int64_t> layer;
  std::optional<int64_t> tpDim;
  bool expert = false;
  bool sharedEmbedding = false;
  /// How many gradient contributions one microbatch makes (2 for a word
  /// embedding tied to the output layer).
  unsigned contributionsPerMicrobatch = 1;
  /// Set for parameters replicated across tensor-parallel ranks that only see
  /// this rank's slice of the sequence (norms, row-parallel biases and the
  /// router under sequence parallelism): their gradients are summed over
  /// `tp` before they are final, as Megatron's finalize_model_grads does.
  bool sumOverTensorParallel = false;
};

/// Builds the step in program order: per microbatch its forward, then its
/// backward. In a pipelined step every ddp op also records the pipeline rank
/// that runs it (`ddp.pipeline_stage`) and, inside the pipeline, its
/// forward or backward pass (`ddp.task`); ops with no stage run on every
/// stage their operands come from (the tied embedding's gradient sum and
/// update, on the first and the last stage). ddp-pipeline-stages splits the
/// step by these.
class StepBuilder : public mlir::OpBuilder::Listener {
public:
  StepBuilder(mlir::MLIRContext &context, const MeshLayout &layout,
              const OptimizerConfig &optimizer, int64_t numMicrobatches);

  Group getGroup(llvm::ArrayRef<llvm::StringRef> axes);
  const MeshLayout &getLayout() const { return layout; }

  /// Declares a parameter; declaration order is registration order.
  unsigned addParam(ParamSpec spec);

  /// Creates func.func @step with these arguments and returns them; the ops
  /// built next go into its body.
  llvm::SmallVector<mlir::Value> beginStep(mlir::TypeRange inputs);
  /// Which microbatch the ops built next belong to.
  void setMicrobatch(int64_t microbatch) { currentMicrobatch = microbatch; }
  int64_t getMicrobatch() const { return currentMicrobatch; }

  /// Makes the step pipelined over `stages` pipeline ranks.
  void setPipelineStages(int64_t stages) { pipelineStages = stages; }
  /// The ops built next are the `phase` of the current microbatch through
  /// model chunk `flowChunk` (in flow order: chunk c of rank r is
  /// c * stages + r). Nothing in a step that is not pipelined.
  void setPipelineChunk(PipelineTask::Phase phase, int64_t flowChunk);

  /// Makes the step record each op's node of Megatron's combined 1F1B
  /// schedule (ddp.schedule_node), for ddp-combined-1f1b.
  void enableScheduleNodes() { scheduleNodes = true; }
  /// While set, the GEMMs, compute ops and collectives built work on the
  /// tokens routed to this rank's experts: marked ddp.routed with this
  /// limit, and ddp.routed_fill with `fill` below 1 (worst-case buffers).
  void setRouted(std::optional<double> limit, double fill = 1) {
    routedLimit = limit;
    routedFill = fill;
  }
  /// The ops built next belong to node `kind` of the current microbatch's
  /// forward or backward (of `layer`, for a layer's kinds). Nothing in a
  /// step without schedule nodes.
  void setScheduleNode(bool backward, ScheduleNode::Kind kind,
                       int64_t layer = 0);
  void clearScheduleNode() { currentNode.reset(); }
  /// While set, setScheduleNode changes nothing: a forward rerun inside a
  /// backward (recomputation) stays in the backward's node.
  void freezeScheduleNode(bool frozen) { nodeFrozen = frozen; }

  /// The parameter's value, read with ddp.get_param at its first use.
  mlir::Value getParam(unsigned id);

  mlir::Value gemm(GemmPhase phase, mlir::Value lhs, bool transposeLhs,
                   mlir::Value rhs, bool transposeRhs,
                   std::optional<int64_t> layer);
  mlir::ValueRange compute(llvm::StringRef kind, mlir::ValueRange inputs,
                           mlir::TypeRange results, double flops, double bytes,
                           std::optional<int64_t> layer);
  /// A routing kernel (ddp.compute `routing`): the runtime computes it for
  /// real; the cost model prices it as any compute.
  mlir::ValueRange route(llvm::StringRef kind, RoutingKernel kernel,
                         llvm::ArrayRef<int64_t> params,
                         mlir::ValueRange inputs, mlir::TypeRange results,
                         double flops, double bytes,
                         std::optional<int64_t> layer);
  mlir::Value compute1(llvm::StringRef kind, mlir::ValueRange inputs,
                       mlir::Type result, double flops, double bytes,
                       std::optional<int64_t> layer) {
    return compute(kind, inputs, result, flops, bytes, layer).front();
  }
  mlir::Value castTo(mlir::Value input, mlir::Type elementType);

  /// Synchronous collectives over `group`, inline on the compute stream.
  mlir::Value allReduce(mlir::Value input, const Group &group,
                        Reduction reduction = Reduction::Sum);
  mlir::Value allGather(mlir::Value input, const Group &group);
  mlir::Value reduceScatter(mlir::Value input, const Group &group);
  mlir::Value allToAll(mlir::Value input, const Group &group);
  /// The all-to-all of counted rows (ddp.all_to_all_v).
  mlir::Value allToAllV(mlir::Value input, mlir::Value sendCounts,
                        mlir::Value recvCounts, const Group &group);

  /// Adds one gradient contribution of a parameter. Contributions of all
  /// microbatches are summed with ddp.accumulate; after the last one of the
  /// last microbatch the gradient is marked ready.
  void addGradient(unsigned id, mlir::Value gradient);

  /// ZB-H1: a weight-gradient GEMM built inside a backward task is the W
  /// task of its microbatch and chunk instead, and a weight's W
  /// contributions on pipeline rank r are summed in the order r runs its W
  /// tasks, `order[r]` (microbatches), each sum in its W task. That order
  /// is the reference step's sum too.
  void splitWeightGradients(std::vector<std::vector<int64_t>> order) {
    weightGradOrder = std::move(order);
  }
  bool splitsWeightGradients() const { return !weightGradOrder.empty(); }

  /// Ends the step: the data-parallel all-reduce of every gradient in ready
  /// order, the optimizer per parameter in the same order, and a return of
  /// `results`.
  mlir::OwningOpRef<mlir::ModuleOp> finish(mlir::ValueRange results);

private:
  void notifyOperationInserted(mlir::Operation *op,
                               mlir::OpBuilder::InsertPoint previous) override;
  mlir::IntegerAttr getLayerAttr(std::optional<int64_t> layer);
  void markReady(unsigned id);
  void sumWeightGradients(unsigned id);
  /// While alive, ops built inside a backward task go to its W task (where
  /// weight gradients are split).
  class WeightGradScope;

  mlir::MLIRContext &context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::OpBuilder builder;
  mlir::Location loc;
  MeshLayout layout;
  MeshOp mesh;
  mlir::FlatSymbolRefAttr meshRef;
  Group denseGroup, expertGroup, tensorParallelGroup;
  OptimizerConfig optimizer;
  int64_t numMicrobatches;
  int64_t currentMicrobatch = 0;
  int64_t pipelineStages = 1;
  /// The stage and task of the ops built next (pipelined steps).
  std::optional<std::pair<int64_t, PipelineTask>> currentTask;
  bool scheduleNodes = false;
  /// The schedule node of the ops built next (steps with schedule nodes).
  std::optional<ScheduleNode> currentNode;
  bool nodeFrozen = false;
  std::optional<double> routedLimit;
  double routedFill = 1;
  mlir::func::FuncOp step;

  std::vector<ParamSpec> params;
  std::vector<mlir::FlatSymbolRefAttr> paramRefs;
  std::vector<mlir::Value> paramValues;
  /// Per parameter, the sum of its contributions on each pipeline rank.
  std::vector<std::map<int64_t, mlir::Value>> gradients;
  /// Per parameter, the contributions added so far: its gradient is ready
  /// after the last (a deferred weight gradient may come after the last
  /// microbatch's others).
  std::vector<int64_t> contributions;
  /// splitWeightGradients' order per rank; empty when not split.
  std::vector<std::vector<int64_t>> weightGradOrder;
  /// Per parameter and rank, its W contributions as they came: summed in
  /// the rank's W order once the last has come.
  std::vector<std::map<int64_t, std::vector<std::pair<PipelineTask,
                                                      mlir::Value>>>>
      weightGrads;
  /// (parameter, final gradient) in the order they became ready.
  std::vector<std::pair<unsigned, mlir::Value>> ready;
};

} // namespace ddp::importer

#endif // DDP_LIB_IMPORT_STEPBUILDER_H
