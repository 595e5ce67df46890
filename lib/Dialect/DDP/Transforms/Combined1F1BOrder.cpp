//===- Combined1F1BOrder.cpp - Ops in Megatron's combined order -----------===//

#include "Combined1F1BOrder.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"

#include "llvm/ADT/DenseMap.h"

#include <set>
#include <string>

using namespace mlir;
using namespace ddp;

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

llvm::DenseSet<Operation *> ddp::combined::findDelayedWgradOps(Block &body) {
  llvm::DenseSet<Operation *> wgradOps;
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
  return wgradOps;
}

void ddp::combined::placeByNodes(
    ArrayRef<Operation *> ops, NodeKeyFn keyOf,
    const llvm::DenseSet<Operation *> &delayedWgrads,
    std::map<Combined1F1BKey, SmallVector<Operation *>> &places,
    SmallVectorImpl<Operation *> &before) {
  // A forward combine node's ops after its last collective have their own
  // place (getCombined1F1BKey's tail).
  std::map<std::string, Operation *> lastCollective;
  for (Operation *op : ops)
    if (std::optional<ScheduleNode> node = getScheduleNode(op);
        node && isa<CollectiveOpInterface>(op))
      lastCollective[node->str()] = op;
  // Where each delayed op went: an untagged op that reads one goes there
  // too (it would otherwise stay ahead of its value).
  llvm::DenseMap<Operation *, Combined1F1BKey> movedTo;
  std::optional<Combined1F1BKey> current;
  std::set<std::string> pastLastCollective;
  for (Operation *op : ops) {
    if (std::optional<ScheduleNode> node = getScheduleNode(op)) {
      std::string name = node->str();
      bool tail = !node->backward &&
                  node->kind == ScheduleNode::Kind::Combine &&
                  pastLastCollective.count(name);
      current = keyOf(*node, tail, /*delayedWgrad=*/false);
      if (lastCollective[name] == op)
        pastLastCollective.insert(name);
      if (delayedWgrads.contains(op)) {
        Combined1F1BKey delayed = keyOf(*node, tail, /*delayedWgrad=*/true);
        places[delayed].push_back(op);
        movedTo[op] = delayed;
        continue;
      }
    } else if (!movedTo.empty()) {
      std::optional<Combined1F1BKey> latest;
      for (Value operand : op->getOperands())
        if (auto it = movedTo.find(operand.getDefiningOp());
            it != movedTo.end() && (!latest || *latest < it->second))
          latest = it->second;
      if (latest) {
        places[*latest].push_back(op);
        movedTo[op] = *latest;
        continue;
      }
    }
    if (!current)
      before.push_back(op);
    else
      places[*current].push_back(op);
  }
}

/// The first and last layer the ops' nodes name (0, 0 with none).
static std::pair<int64_t, int64_t>
getLayerRange(ArrayRef<Operation *> ops) {
  std::optional<std::pair<int64_t, int64_t>> range;
  for (Operation *op : ops)
    if (std::optional<ScheduleNode> node = getScheduleNode(op);
        node && node->hasLayer())
      range = range ? std::make_pair(std::min(range->first, node->layer),
                                     std::max(range->second, node->layer))
                    : std::make_pair(node->layer, node->layer);
  return range.value_or(std::make_pair(int64_t(0), int64_t(0)));
}

combined::CombinedStep ddp::combined::orderCombinedStep(
    ArrayRef<Operation *> forward, ArrayRef<Operation *> backward,
    const llvm::DenseSet<Operation *> &delayedWgrads) {
  std::map<Combined1F1BKey, SmallVector<Operation *>> places;
  SmallVector<Operation *> before;
  for (ArrayRef<Operation *> ops : {forward, backward}) {
    // Named, not bound: the lambda below captures them, which C++17 does
    // not allow of structured bindings.
    std::pair<int64_t, int64_t> range = getLayerRange(ops);
    int64_t first = range.first, last = range.second;
    placeByNodes(
        ops,
        [&](const ScheduleNode &node, bool tail, bool delayedWgrad) {
          // One step: the node's own microbatch does not order it (the
          // forward of microbatch 1 and the backward of 0 share step 1).
          ScheduleNode local = node;
          local.microbatch = local.backward ? 0 : 1;
          if (local.hasLayer())
            local.layer -= first;
          return getCombined1F1BKey(local, last - first, tail, delayedWgrad);
        },
        delayedWgrads, places, before);
  }
  CombinedStep step;
  step.ops.assign(before.begin(), before.end());
  std::optional<size_t> tail;
  for (auto &[key, ops] : places) {
    if (key.group == 2 && !tail)
      tail = step.ops.size();
    llvm::append_range(step.ops, ops);
  }
  step.tail = tail.value_or(step.ops.size());
  return step;
}

LogicalResult combined::checkBatchLevelOverlapStep(ModuleOp module,
                                                   Operation *step) {
  if (!llvm::any_of(module.getOps<MeshOp>(), [](MeshOp mesh) {
        return getExpertParallelSize(mesh) > 1;
      }))
    return step->emitError()
           << "overlap-moe-expert-parallel-comm overlaps the experts' "
              "all-to-alls, and no mesh has an expert-parallel axis of more "
              "than one rank (Megatron asserts expert_model_parallel_size > "
              "1); turn the option off, or import with "
              "expert_model_parallel_size > 1";
  for (auto param : module.getOps<ParamOp>()) {
    Type element = param.getTensorType().getElementType();
    if (element.isBF16() || element.isF16())
      continue;
    std::string name; // Unquoted, as the message's other words.
    llvm::raw_string_ostream(name) << element;
    return step->emitError()
           << "overlap-moe-expert-parallel-comm runs on a bf16 or fp16 "
              "model, as Megatron asserts, but parameter @"
           << param.getSymName() << " is " << name
           << "; turn the option off, or import with params_dtype bf16";
  }
  return success();
}
