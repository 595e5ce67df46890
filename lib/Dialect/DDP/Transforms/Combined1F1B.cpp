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
#include "ddp/Dialect/DDP/Transforms/Passes.h"

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

    // Each op's place: its own node's, or for an untagged op the node of
    // the tagged op before it. A forward combine node's ops after its last
    // collective have their own place (getCombined1F1BKey's tail). The ops
    // before the first tagged op go first, the ops after the last tagged op
    // stay last. A get_param goes right before its first reader, as the
    // importer puts it: ddp-overlap-param-gather waits for a parameter's
    // gather there.
    std::map<std::string, Operation *> lastCollective;
    for (Operation &op : body.without_terminator())
      if (std::optional<ScheduleNode> node = getScheduleNode(&op);
          node && isa<CollectiveOpInterface>(op))
        lastCollective[node->str()] = &op;
    // delay_wgrad_compute: a backward's wgrad GEMMs that TE's backward_dw
    // computes (not the router's: TopKRouter's weight is a plain
    // parameter, its gradient made at once), and what their node computes
    // from them (the sums into the gradient, its grad_ready).
    llvm::DenseSet<Operation *> wgradOps;
    if (delayWgradCompute) {
      llvm::DenseSet<Operation *> routerWgrads = getRouterWgrads(body);
      for (Operation &op : body.without_terminator()) {
        std::optional<ScheduleNode> node = getScheduleNode(&op);
        if (!node || !node->backward)
          continue;
        auto gemm = dyn_cast<GemmOp>(op);
        bool fromWgrad =
            (gemm && gemm.getPhase() == GemmPhase::Wgrad &&
             !routerWgrads.contains(&op)) ||
            llvm::any_of(op.getOperands(), [&](Value operand) {
              Operation *def = operand.getDefiningOp();
              return def && wgradOps.contains(def) &&
                     getScheduleNode(def) == node;
            });
        if (fromWgrad)
          wgradOps.insert(&op);
      }
    }
    // Where each moved op went: an untagged op that reads one goes there
    // too (it would otherwise stay ahead of its value).
    DenseMap<Operation *, Combined1F1BKey> movedTo;
    std::map<Combined1F1BKey, SmallVector<Operation *>> places;
    SmallVector<Operation *> prologue, epilogue, paramReads;
    std::optional<Combined1F1BKey> current;
    std::set<std::string> pastLastCollective;
    bool afterLast = false;
    for (Operation &op : body.without_terminator()) {
      if (afterLast) {
        epilogue.push_back(&op);
        continue;
      }
      afterLast = &op == lastTagged;
      if (isa<GetParamOp>(op)) {
        paramReads.push_back(&op);
        continue;
      }
      if (std::optional<ScheduleNode> node = getScheduleNode(&op)) {
        std::string name = node->str();
        bool tail = !node->backward &&
                    node->kind == ScheduleNode::Kind::Combine &&
                    pastLastCollective.count(name);
        current = getCombined1F1BKey(*node, lastLayer, tail);
        if (lastCollective[name] == &op)
          pastLastCollective.insert(name);
        if (wgradOps.contains(&op)) {
          Combined1F1BKey delayed = getCombined1F1BKey(
              *node, lastLayer, tail, /*delayedWgrad=*/true);
          places[delayed].push_back(&op);
          movedTo[&op] = delayed;
          continue;
        }
      } else if (!movedTo.empty()) {
        std::optional<Combined1F1BKey> latest;
        for (Value operand : op.getOperands())
          if (auto it = movedTo.find(operand.getDefiningOp());
              it != movedTo.end() && (!latest || *latest < it->second))
            latest = it->second;
        if (latest) {
          places[*latest].push_back(&op);
          movedTo[&op] = *latest;
          continue;
        }
      }
      if (!current)
        prologue.push_back(&op);
      else
        places[*current].push_back(&op);
    }

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
  /// The wgrad GEMMs whose sums reach the grad_ready of a router weight
  /// (Megatron's `...mlp.router.weight`), through the sums and reductions
  /// between.
  static llvm::DenseSet<Operation *> getRouterWgrads(Block &body) {
    llvm::DenseSet<Operation *> found, seen;
    SmallVector<Operation *> worklist;
    for (GradReadyOp ready : body.getOps<GradReadyOp>())
      if (ready.getParam().ends_with("router.weight"))
        worklist.push_back(ready);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!seen.insert(op).second)
        continue;
      if (auto gemm = dyn_cast<GemmOp>(op);
          gemm && gemm.getPhase() == GemmPhase::Wgrad) {
        found.insert(op);
        continue;
      }
      if (!isa<GradReadyOp, AccumulateOp, AllReduceOp>(op))
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          worklist.push_back(def);
    }
    return found;
  }

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
