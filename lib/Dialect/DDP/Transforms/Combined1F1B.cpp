//===- Combined1F1B.cpp - Megatron's combined 1F1B order ------------------===//
//
// Orders a step's schedule nodes (ddp.schedule_node) as Megatron's
// combined_1f1b_schedule_for_no_pipelining runs them: each microbatch's
// forward beside the previous one's backward. Passes.td states the
// contract; ddp/Stages/Combined1F1B.h the order.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "Combined1F1BOrder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <set>
#include <string>

namespace ddp {
#define GEN_PASS_DEF_COMBINED1F1B
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

class Combined1F1BPass : public ddp::impl::Combined1F1BBase<Combined1F1BPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // TransformerConfig's assert (transformer_config.py L3073-3077).
    if (delayWgradCompute && !overlapMoeExpertParallelComm) {
      func.emitError() << kDelayWgradNeedsOverlap;
      return signalPassFailure();
    }
    if (!overlapMoeExpertParallelComm)
      return;
    if (func.isExternal())
      return;
    // A pipeline rank's program: ddp-pipeline-stages has put each of its
    // steady-state steps in the combined order, given the tags.
    if (getPipelineStage(func)) {
      if (llvm::any_of(func.getBody().getOps(), [](Operation &op) {
            return getScheduleNode(&op).has_value();
          }))
        return;
      func.emitError()
          << "overlap-moe-expert-parallel-comm needs the step's ops to "
             "carry ddp.schedule_node, as ddp-import sets them on an MoE "
             "model with the all-to-all dispatcher and "
             "overlap_moe_expert_parallel_comm; this pipeline rank's "
             "program has none";
      return signalPassFailure();
    }
    if (isUnsplitPipelineStep(func)) {
      func.emitError()
          << "ddp-combined-1f1b orders a step without pipeline stages; this "
             "one is pipelined: ddp-pipeline-stages orders its combined "
             "steps (overlap-moe-expert-parallel-comm=true), as ddp-schedule "
             "runs it";
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock())
      return emitFailure(func, "a step of one block");
    Block &body = func.getBody().front();

    // Every node's ops, and where the tagged ops end.
    int64_t lastLayer = 0;
    Operation *lastTagged = nullptr;
    for (Operation &op : body.without_terminator()) {
      // Moving a reader ahead of the wait for its value would read it
      // before it arrives: the pass runs before the overlaps.
      if (isa<WaitOp>(op)) {
        op.emitError() << "ddp-combined-1f1b orders a step before its "
                          "collectives are made asynchronous (ddp-schedule "
                          "runs it first); this step already waits for one";
        return signalPassFailure();
      }
      if (std::optional<ScheduleNode> node = getScheduleNode(&op)) {
        lastTagged = &op;
        lastLayer = std::max(lastLayer, node->layer);
      }
    }
    if (!lastTagged) {
      func.emitError()
          << "overlap-moe-expert-parallel-comm needs the step's ops to "
             "carry ddp.schedule_node, as ddp-import sets them on an MoE "
             "step with the all-to-all dispatcher and no pipeline stages; "
             "this step has none";
      return signalPassFailure();
    }
    if (failed(combined::checkBatchLevelOverlapStep(
            func->getParentOfType<ModuleOp>(), func)))
      return signalPassFailure();

    // Each op's place (combined::placeByNodes). The ops before the first
    // tagged op go first, the ops after the last tagged op stay last. A
    // get_param goes right before its first reader, as the importer puts
    // it: ddp-overlap-param-gather waits for a parameter's gather there.
    llvm::DenseSet<Operation *> wgradOps;
    if (delayWgradCompute)
      wgradOps = combined::findDelayedWgradOps(body);
    SmallVector<Operation *> prologue, tagged, epilogue, paramReads;
    bool afterLast = false;
    for (Operation &op : body.without_terminator()) {
      if (afterLast) {
        epilogue.push_back(&op);
        continue;
      }
      afterLast = &op == lastTagged;
      if (isa<GetParamOp>(op))
        paramReads.push_back(&op);
      else
        tagged.push_back(&op);
    }
    std::map<Combined1F1BKey, SmallVector<Operation *>> places;
    combined::placeByNodes(
        tagged,
        [&](const ScheduleNode &node, bool tail, bool delayedWgrad) {
          return getCombined1F1BKey(node, lastLayer, tail, delayedWgrad);
        },
        wgradOps, places, prologue);

    SmallVector<Operation *> withoutReads(prologue);
    for (auto &[key, ops] : places)
      llvm::append_range(withoutReads, ops);
    llvm::append_range(withoutReads, epilogue);
    SmallVector<Operation *> order = placeParamReads(body, withoutReads,
                                                     paramReads);
    if (failed(checkOrder(body, order)))
      return signalPassFailure();
    Operation *terminator = body.getTerminator();
    for (Operation *op : order)
      op->moveBefore(terminator);
    std::set<std::string> nodeNames;
    for (Operation &op : body)
      if (std::optional<ScheduleNode> node = getScheduleNode(&op))
        nodeNames.insert(node->str());
    numNodes += nodeNames.size();
  }

private:
  /// `order` with each of `reads` right before its first reader in it (in
  /// their own order where they share one); first when read nowhere.
  static SmallVector<Operation *>
  placeParamReads(Block &body, ArrayRef<Operation *> order,
                  ArrayRef<Operation *> reads) {
    DenseMap<Operation *, size_t> position;
    for (auto [index, op] : llvm::enumerate(order))
      position[op] = index;
    std::map<size_t, SmallVector<Operation *>> before;
    SmallVector<Operation *> unread;
    for (Operation *read : reads) {
      std::optional<size_t> first;
      for (Operation *user : read->getUsers())
        if (Operation *reader = body.findAncestorOpInBlock(*user))
          if (auto it = position.find(reader); it != position.end())
            first = std::min(first.value_or(it->second), it->second);
      if (first)
        before[*first].push_back(read);
      else
        unread.push_back(read);
    }
    SmallVector<Operation *> result(unread);
    for (auto [index, op] : llvm::enumerate(order)) {
      if (auto it = before.find(index); it != before.end())
        llvm::append_range(result, it->second);
      result.push_back(op);
    }
    return result;
  }

  void emitFailure(func::FuncOp func, StringRef what) {
    func.emitError() << "ddp-combined-1f1b expects " << what;
    signalPassFailure();
  }

  /// Whether `op` (or an op nested in it) reads or writes the parameters'
  /// state (ddp.get_param reads it; the optimizers write it).
  static std::pair<bool, bool> getParamStateEffects(Operation *op) {
    bool reads = false, writes = false;
    op->walk([&](Operation *nested) {
      auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
      if (!effects)
        return;
      SmallVector<MemoryEffects::EffectInstance> instances;
      effects.getEffects(instances);
      for (const MemoryEffects::EffectInstance &effect : instances) {
        if (!isa<ParamStateResource>(effect.getResource()))
          continue;
        reads |= isa<MemoryEffects::Read>(effect.getEffect());
        writes |= isa<MemoryEffects::Write>(effect.getEffect());
      }
    });
    return {reads, writes};
  }

  /// Every value an op (or an op nested in it) reads from this block is
  /// computed before it in `order`, and no parameter read or update moves
  /// across an update.
  static LogicalResult checkOrder(Block &body, ArrayRef<Operation *> order) {
    // A parameter update and the ops that read or update the parameters
    // before and after it keep their order: number each such op by the
    // updates before it (an update counts itself), and require the numbers
    // not to fall.
    DenseMap<Operation *, int64_t> epoch;
    int64_t updates = 0;
    for (Operation &op : body.without_terminator()) {
      auto [reads, writes] = getParamStateEffects(&op);
      if (writes)
        epoch[&op] = 2 * updates++ + 1;
      else if (reads)
        epoch[&op] = 2 * updates;
    }
    int64_t latest = 0;
    for (Operation *op : order) {
      auto it = epoch.find(op);
      if (it == epoch.end())
        continue;
      if (it->second < latest) {
        op->emitError() << "ddp-combined-1f1b: Megatron's combined 1F1B "
                           "would move this op across an update of the "
                           "parameters; the step's ddp.schedule_node tags "
                           "must leave the optimizer after every node";
        return failure();
      }
      latest = it->second;
    }
    DenseMap<Operation *, size_t> position;
    for (auto [index, op] : llvm::enumerate(order))
      position[op] = index;
    for (Operation *op : order) {
      WalkResult result = op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (!def || def->getBlock() != &body || !position.count(def))
            continue;
          if (position[def] < position[op])
            continue;
          auto describe = [](Operation *at) {
            std::optional<ScheduleNode> node = getScheduleNode(at);
            return node ? "node " + node->str() : std::string("no node");
          };
          op->emitError()
              << "ddp-combined-1f1b: this op (" << describe(op)
              << ") reads a value of an op (" << describe(def)
              << ") that Megatron's combined 1F1B runs after it; the step's "
                 "ddp.schedule_node tags do not follow its dataflow";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (result.wasInterrupted())
        return failure();
    }
    return success();
  }
};

} // namespace
