//===- PipelineStages.cpp - One program per pipeline rank -----------------===//
//
// Splits a step whose ops record their pipeline rank and task into one
// function per rank, each running its tasks in the schedule's order, with a
// send and a receive for every value that crosses ranks. Passes.td states
// the contract; docs/Pipeline.md the schedules.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "Combined1F1BOrder.h"
#include "PipelineExchangePlacement.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"

#include <map>
#include <tuple>

namespace ddp {
#define GEN_PASS_DEF_PIPELINESTAGES
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;
using ddp::pipeline::ExchangePlan;
using ddp::pipeline::Transfer;

namespace {

using pipeline::getKey;
using pipeline::TaskKey;

/// What the split knows about one step.
class StageSplit {
public:
  StageSplit(func::FuncOp step, MeshOp mesh, int64_t stages, bool combined,
             bool delayWgrad)
      : step(step), mesh(mesh), stages(stages), combined(combined),
        delayWgrad(delayWgrad) {}

  /// Reads every op's rank and task, and checks them against `kindName`
  /// and `groupSize`.
  LogicalResult analyze(StringRef kindName, int64_t groupSize,
                        const PipelineExchangeOptions &options);
  /// Orders each rank's ops, finds the values that cross ranks and places
  /// their sends and receives.
  LogicalResult plan(const PipelineExchangeOptions &options);
  /// Builds the stage functions before `step`, marked as keeping their
  /// sent forward outputs unless `deallocate`, moving into them the ops
  /// that run on one rank (`step` is left for the caller to erase);
  /// returns how many values cross ranks.
  size_t build(bool deallocate);

private:
  /// What analyze() read of an op of the step (not of a get_param): its
  /// task, read once (the attribute is a string to parse).
  std::optional<PipelineTask> getTask(Operation *op) const {
    auto found = info.find(op);
    return found == info.end() ? std::nullopt : found->second.task;
  }
  int64_t getFlowChunk(Operation *op) const;
  int64_t getOffset(const Transfer &transfer) const;
  size_t getSendPosition(const Transfer &transfer,
                         const DenseMap<Operation *, size_t> &position) const;

  func::FuncOp step;
  MeshOp mesh;
  int64_t stages;
  /// overlap-moe-expert-parallel-comm and delay-wgrad-compute.
  bool combined, delayWgrad;
  PipelineScheduleKind kind = PipelineScheduleKind::OneFOneB;
  PipelineShape shape;
  bool hasWeightGradTasks = false;
  /// Each op's ranks (its own ddp.pipeline_stage, or those of its
  /// operands), its own stage (-1 without one) and its task.
  struct OpInfo {
    llvm::BitVector stages;
    int64_t stage = -1;
    std::optional<PipelineTask> task;
  };
  DenseMap<Operation *, OpInfo> info;
  /// Each rank's ops in the order it runs them (get_params excluded).
  std::vector<std::vector<Operation *>> orders;
  std::vector<Transfer> transfers;
  /// Where each rank's schedule tasks begin and end, and its ops after the
  /// pipeline begin, in its order (pipeline::StageOrders).
  std::vector<size_t> taskBegin, taskEnd, postStart;
  std::vector<std::map<TaskKey, size_t>> combinedTails;
  ExchangePlan exchanges;
};

} // namespace

LogicalResult StageSplit::analyze(StringRef kindName, int64_t groupSize,
                                  const PipelineExchangeOptions &options) {
  int64_t chunks = 1, microbatches = 1;
  Block &body = step.getBody().front();
  // A task index past the ops of the step names a pipeline larger than any
  // the step holds (and its schedule would not fit in memory). Counted once:
  // a block's size() walks its list.
  int64_t bound = static_cast<int64_t>(body.getOperations().size());
  info.reserve(bound);
  for (Operation &op : body.without_terminator()) {
    std::optional<int64_t> stage = getPipelineStage(&op);
    std::optional<PipelineTask> task = getPipelineTask(&op);
    if (isa<GetParamOp>(op))
      continue;
    if (task && !stage)
      return op.emitError("has a 'ddp.task' but no 'ddp.pipeline_stage'; "
                          "the task of an op says nothing without its rank");
    if (stage && *stage >= stages)
      return op.emitError("'ddp.pipeline_stage' is ")
             << *stage << ", but the mesh's pp axis has " << stages
             << " ranks (0 to " << stages - 1 << ")";
    if (op.getNumRegions() > 0)
      return op.emitError("an op with regions cannot be split into pipeline "
                          "stages: the values its regions use would have to "
                          "cross ranks too");
    if (task) {
      if (task->microbatch >= bound || task->chunk >= bound)
        return op.emitError("'ddp.task' ")
               << task->str() << " names microbatch " << task->microbatch
               << " or model chunk " << task->chunk << ", more than the "
               << bound << " ops of the step could hold";
      chunks = std::max(chunks, task->chunk + 1);
      microbatches = std::max(microbatches, task->microbatch + 1);
      hasWeightGradTasks |= task->phase == PipelineTask::Phase::WeightGrad;
    }
    llvm::BitVector set(stages);
    if (stage) {
      set.set(*stage);
    } else {
      for (Value operand : op.getOperands())
        if (Operation *producer = operand.getDefiningOp();
            producer && !isa<GetParamOp>(producer))
          if (auto found = info.find(producer); found != info.end())
            set |= found->second.stages;
      if (set.none())
        return op.emitError(
            "has no 'ddp.pipeline_stage' and none of its operands is "
            "computed on a pipeline rank, so no rank would run it; give it "
            "a 'ddp.pipeline_stage'");
    }
    info[&op] = OpInfo{std::move(set), stage.value_or(-1), task};
  }

  if (kindName.empty()) {
    kind = chunks > 1 ? PipelineScheduleKind::Interleaved
                      : PipelineScheduleKind::OneFOneB;
  } else if (std::optional<PipelineScheduleKind> parsed =
                 parsePipelineScheduleKind(kindName)) {
    kind = *parsed;
  } else {
    return step.emitError("unknown pipeline schedule '")
           << kindName << "'; expected 1f1b, interleaved, gpipe or zb-h1";
  }
  // ZB-H1 orders W tasks the importer made for it (pipeline_schedule
  // zb-h1), whose sums follow its order; an imported step records which
  // schedule it was built for. A step without W tasks would run as 1F1B
  // with one more warmup forward.
  bool zeroBubble = kind == PipelineScheduleKind::ZeroBubbleH1;
  if (auto recorded = step->getParentOfType<ModuleOp>()
                          ->getAttrOfType<DictionaryAttr>(
                              kScheduleOptionsAttrName)) {
    auto built = recorded.getAs<StringAttr>("pipeline-schedule");
    bool builtForZeroBubble = built && built.getValue() == "zb-h1";
    if (zeroBubble && !builtForZeroBubble)
      return step.emitError("the zb-h1 schedule runs the W passes an import "
                            "for it builds (each backward's weight "
                            "gradients, summed in its order), but @")
             << step.getSymName()
             << " was imported for another schedule; import the model with "
                "pipeline_schedule \"zb-h1\"";
    if (!zeroBubble && builtForZeroBubble)
      return step.emitError("@")
             << step.getSymName()
             << " was imported for the zb-h1 schedule (its weight gradients "
                "are W passes, summed in that schedule's order), but the "
             << stringifyPipelineScheduleKind(kind)
             << " schedule is asked for; use pipeline-schedule=zb-h1, or "
                "import the model again with that pipeline_schedule";
  } else if (zeroBubble && !hasWeightGradTasks) {
    return step.emitError(
        "the zb-h1 schedule runs each backward's weight gradients as a "
        "pass of their own (W<m>.<c>), but @")
           << step.getSymName()
           << " has none; import the model with pipeline_schedule "
              "\"zb-h1\", or use pipeline-schedule=1f1b";
  }
  // Only a step tagged with schedule nodes has a combined order; ddp-schedule
  // asks for it only when the overlap is on, and ddp-combined-1f1b then
  // refuses a step without tags.
  combined &= llvm::any_of(body.without_terminator(), [](Operation &op) {
    return getScheduleNode(&op).has_value();
  });
  if (combined && failed(combined::checkBatchLevelOverlapStep(
                      step->getParentOfType<ModuleOp>(), step)))
    return failure();
  shape = {stages, chunks, microbatches, groupSize, combined};
  for (int64_t rank = 0; rank < stages; ++rank) {
    std::string name = (step.getSymName() + "_stage" + Twine(rank)).str();
    if (Operation *taken =
            SymbolTable::lookupSymbolIn(step->getParentOp(), name)) {
      InFlightDiagnostic diag = step.emitError("cannot name pipeline rank ")
                                << rank << "'s program @" << name
                                << ": the module already has a symbol of "
                                   "that name";
      diag.attachNote(taken->getLoc()) << "the symbol";
      return diag;
    }
  }
  if (llvm::Error error = checkPipelineSchedule(kind, shape))
    return step.emitError("cannot run the ")
           << stringifyPipelineScheduleKind(kind) << " schedule on @"
           << step.getSymName() << " (" << stages << " ranks, " << chunks
           << " model chunks each, " << microbatches
           << " microbatches): " << llvm::toString(std::move(error));
  if (llvm::Error error = checkPipelineExchange(kind, options))
    return step.emitError() << llvm::toString(std::move(error));
  return success();
}

int64_t StageSplit::getFlowChunk(Operation *op) const {
  auto found = info.find(op);
  if (found == info.end() || !found->second.task || found->second.stage < 0)
    return -1;
  return found->second.task->chunk * stages + found->second.stage;
}

/// Activations go forward (+1 for the next rank), their gradients back
/// (-1); a value outside the pipeline takes the shorter way round.
int64_t StageSplit::getOffset(const Transfer &transfer) const {
  int64_t distance = ((transfer.to - transfer.from) % stages + stages) % stages;
  int64_t producerChunk = getFlowChunk(transfer.value.getDefiningOp());
  int64_t userChunk = getFlowChunk(transfer.user);
  bool forward = producerChunk >= 0 && userChunk >= 0
                     ? producerChunk < userChunk
                     : 2 * distance <= stages;
  return forward ? distance : distance - stages;
}

/// Right after the value is computed; but a value used after the
/// pipeline is sent only when the sender is past its pipeline too: sent
/// earlier, it would hold the sender's in-order communication stream until
/// the receiver reached its end, and the pipeline's own traffic behind it
/// would never arrive.
size_t StageSplit::getSendPosition(
    const Transfer &transfer,
    const DenseMap<Operation *, size_t> &position) const {
  size_t computed = position.lookup(transfer.value.getDefiningOp()) + 1;
  if (getTask(transfer.user))
    return computed;
  return std::max(computed, postStart[transfer.from]);
}

LogicalResult StageSplit::plan(const PipelineExchangeOptions &options) {
  Block &body = step.getBody().front();
  llvm::DenseSet<Operation *> delayedWgrads;
  if (combined && delayWgrad)
    delayedWgrads = combined::findDelayedWgradOps(body);
  // Per rank: the ops before the first task, each task's ops, the rest.
  std::vector<std::vector<Operation *>> before(stages), after(stages);
  std::vector<std::map<TaskKey, std::vector<Operation *>>> tasks(stages);
  bool pipelineStarted = false;
  for (Operation &op : body.without_terminator()) {
    if (isa<GetParamOp>(op))
      continue;
    const OpInfo &opInfo = info.find(&op)->second;
    const std::optional<PipelineTask> &task = opInfo.task;
    pipelineStarted |= task.has_value();
    for (unsigned rank : opInfo.stages.set_bits()) {
      if (task)
        tasks[rank][getKey(*task)].push_back(&op);
      else
        (pipelineStarted ? after : before)[rank].push_back(&op);
    }
  }
  orders.assign(stages, {});
  combinedTails.assign(stages, {});
  taskBegin.clear();
  taskEnd.clear();
  postStart.clear();
  for (int64_t rank = 0; rank < stages; ++rank) {
    std::vector<Operation *> &order = orders[rank];
    order = before[rank];
    taskBegin.push_back(order.size());
    auto take = [&](const PipelineTask &task) {
      std::vector<Operation *> ops;
      if (auto it = tasks[rank].find(getKey(task)); it != tasks[rank].end()) {
        ops = std::move(it->second);
        tasks[rank].erase(it);
      }
      return ops;
    };
    std::vector<PipelineTask> stageOrder = getStageOrder(kind, shape, rank);
    std::vector<size_t> pairs = getCombinedPairs(kind, shape, rank);
    for (size_t index = 0, pair = 0; index < stageOrder.size(); ++index) {
      // A combined step: the forward and the backward after it, node by
      // node.
      if (pair < pairs.size() && pairs[pair] == index) {
        ++pair;
        std::vector<Operation *> forward = take(stageOrder[index]);
        std::vector<Operation *> backward = take(stageOrder[++index]);
        combined::CombinedStep step =
            combined::orderCombinedStep(forward, backward, delayedWgrads);
        combinedTails[rank][getKey(stageOrder[index])] =
            order.size() + step.tail;
        llvm::append_range(order, step.ops);
        continue;
      }
      llvm::append_range(order, take(stageOrder[index]));
    }
    taskEnd.push_back(order.size());
    // Deferred weight-gradient passes follow the schedule, in microbatch
    // order, as Megatron's finish_embedding_wgrad_compute runs them after
    // the flush (the map orders W after F and B).
    for (auto &[key, ops] : tasks[rank]) {
      // analyze() sized the schedule to hold every forward and backward.
      assert(std::get<0>(key) == int(PipelineTask::Phase::WeightGrad) &&
             "the schedule runs every forward and backward");
      order.insert(order.end(), ops.begin(), ops.end());
    }
    postStart.push_back(order.size());
    order.insert(order.end(), after[rank].begin(), after[rank].end());
  }

  // Each operand must be computed earlier on the rank, or come from
  // another rank.
  for (int64_t rank = 0; rank < stages; ++rank) {
    DenseSet<Operation *> done;
    DenseSet<Value> received;
    for (Operation *op : orders[rank]) {
      for (Value operand : op->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (!producer || isa<GetParamOp>(producer))
          continue;
        const llvm::BitVector &where = info.find(producer)->second.stages;
        if (where.test(rank)) {
          if (done.contains(producer))
            continue;
          std::optional<PipelineTask> task = getTask(op);
          std::optional<PipelineTask> producerTask = getTask(producer);
          InFlightDiagnostic diag =
              op->emitError("pipeline rank ")
              << rank << " runs this op"
              << (task ? " (in " + task->str() + ")" : std::string())
              << " before the op that computes its operand"
              << (producerTask ? " (in " + producerTask->str() + ")"
                               : std::string())
              << " in the " << stringifyPipelineScheduleKind(kind)
              << " schedule; its 'ddp.task' is not the pass it belongs to";
          diag.attachNote(producer->getLoc()) << "the operand's producer";
          return diag;
        }
        if (received.insert(operand).second) {
          Transfer transfer{operand, static_cast<int64_t>(where.find_first()),
                            rank, op, 0};
          transfer.offset = getOffset(transfer);
          transfers.push_back(transfer);
        }
      }
      done.insert(op);
    }
  }

  // An op after the pipeline may run on several ranks, at a different
  // index on each.
  std::vector<DenseMap<Operation *, size_t>> position(stages);
  for (int64_t rank = 0; rank < stages; ++rank)
    for (auto [index, op] : llvm::enumerate(orders[rank]))
      position[rank][op] = index;
  for (Transfer &transfer : transfers)
    transfer.sendAt = getSendPosition(transfer, position[transfer.from]);
  // Megatron overlaps only the interleaved schedule's calls; ddp's own
  // rule overlaps the others.
  pipeline::StageOrders stageOrders{kind,      shape,     orders,
                                    taskBegin, taskEnd,   postStart,
                                    combinedTails, step.getLoc()};
  // ZB-H1 has no Megatron calls to follow: it exchanges by that rule too.
  bool early = (options.overlap ||
                kind == PipelineScheduleKind::ZeroBubbleH1) &&
               kind != PipelineScheduleKind::Interleaved;
  FailureOr<ExchangePlan> placed =
      early ? pipeline::placeEarly(stageOrders, transfers, options.deallocate)
            : pipeline::placeAsMegatron(stageOrders, transfers, options);
  bool batchedTwoWay = !early && options.batch && stages == 2;
  if (failed(placed) ||
      failed(pipeline::checkDelivery(*placed, transfers,
                                     stringifyPipelineScheduleKind(kind),
                                     batchedTwoWay)))
    return failure();
  exchanges = std::move(*placed);
  return success();
}

size_t StageSplit::build(bool deallocate) {
  MLIRContext *context = step.getContext();
  OpBuilder builder(step);
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  ArrayAttr ppAxes = builder.getStrArrayAttr({"pp"});
  auto tokenType = TokenType::get(context);
  auto returnOp = cast<func::ReturnOp>(step.getBody().front().getTerminator());

  for (int64_t rank = 0; rank < stages; ++rank) {
    std::string name = (step.getSymName() + "_stage" + Twine(rank)).str();
    assert(!SymbolTable::lookupSymbolIn(step->getParentOp(), name) &&
           "analyze() checks that the names are free");
    auto func = func::FuncOp::create(builder, step.getLoc(), name,
                                     step.getFunctionType());
    setPipelineStage(func, rank);
    if (!deallocate)
      setKeepsPipelineOutputs(func);
    Block *entry = func.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockEnd(entry);
    IRMapping mapping;
    mapping.map(step.getArguments(), entry->getArguments());
    // The token of each send and receive not waited yet, by 2 * transfer
    // + 1 for a send, + 0 for a receive, and the issue order.
    DenseMap<size_t, Value> pending;
    SmallVector<size_t> issueOrder;
    // The receives each op waits for first.
    DenseMap<Operation *, SmallVector<size_t>> usedBy;

    auto wait = [&](size_t key,
                    std::optional<PipelineTask> task, Location loc) {
      auto it = pending.find(key);
      if (it == pending.end())
        return;
      auto waitOp = WaitOp::create(body, loc, it->second);
      if (task)
        setPipelineTask(waitOp, *task);
      pending.erase(it);
    };
    auto issue = [&](const pipeline::ExchangeAction &action,
                     std::optional<PipelineTask> task) {
      SmallVector<size_t> issued;
      for (const pipeline::ExchangeOp &exchange : action.ops) {
        const Transfer &transfer = transfers[exchange.transfer];
        size_t key = 2 * exchange.transfer + (exchange.isSend ? 1 : 0);
        if (action.isWait) {
          wait(key, task, transfer.value.getLoc());
          continue;
        }
        if (exchange.isSend) {
          Operation *producer = transfer.value.getDefiningOp();
          auto send = SendOp::create(body, producer->getLoc(), tokenType,
                                     mapping.lookupOrDefault(transfer.value),
                                     body.getI64IntegerAttr(transfer.offset),
                                     meshRef, ppAxes, ValueRange());
          // A send deferred past the pipeline (its value is used after it)
          // belongs to no task.
          std::optional<PipelineTask> sent = getTask(producer);
          if (sent && getTask(transfer.user))
            setPipelineTask(send, *sent);
          pending.insert({key, send.getToken()});
          issueOrder.push_back(key);
        } else {
          auto recv = RecvOp::create(
              body, transfer.value.getLoc(), transfer.value.getType(),
              tokenType, body.getI64IntegerAttr(-transfer.offset), meshRef,
              ppAxes, ValueRange());
          if (task)
            setPipelineTask(recv, *task);
          mapping.map(transfer.value, recv.getResult());
          pending.insert({key, recv.getToken()});
          issueOrder.push_back(key);
          usedBy[transfer.user].push_back(key);
        }
        issued.push_back(key);
      }
      if (action.blocking)
        for (size_t key : issued)
          wait(key, task, transfers[key / 2].value.getLoc());
    };
    auto issueBefore = [&](size_t index, std::optional<PipelineTask> task) {
      auto it = exchanges[rank].find(index);
      if (it != exchanges[rank].end())
        for (const pipeline::ExchangeAction &action : it->second)
          issue(action, task);
    };

    for (auto [index, op] : llvm::enumerate(orders[rank])) {
      std::optional<PipelineTask> task = getTask(op);
      issueBefore(index, task);
      // A receive is waited before its first use at the latest.
      for (size_t key : usedBy.lookup(op))
        wait(key, task, transfers[key / 2].value.getLoc());
      // Each rank reads the parameters it uses itself, in the first task
      // that uses them there.
      for (Value operand : op->getOperands())
        if (auto get = operand.getDefiningOp<GetParamOp>();
            get && !mapping.contains(operand)) {
          Operation *copy = body.clone(*get, mapping);
          copy->removeAttr(DDPDialect::PipelineStageAttrHelper::getNameStr());
          copy->removeAttr(DDPDialect::TaskAttrHelper::getNameStr());
          if (task)
            setPipelineTask(copy, *task);
        }
      // An op of one rank moves there, its operands remapped (a value of
      // this rank's is its own; the others were received, gathered or
      // cloned): cloning and erasing each of a 467k-op step's ops cost
      // more than the move. An op of several ranks is cloned for each.
      Operation *placed = op;
      if (info.find(op)->second.stages.count() == 1) {
        op->moveBefore(entry, entry->end());
        for (OpOperand &operand : op->getOpOperands())
          if (Value mapped = mapping.lookupOrNull(operand.get()))
            operand.set(mapped);
      } else {
        placed = body.clone(*op, mapping);
      }
      placed->removeAttr(DDPDialect::PipelineStageAttrHelper::getNameStr());
    }
    issueBefore(orders[rank].size(), std::nullopt);
    for (size_t key : issueOrder)
      if (auto it = pending.find(key); it != pending.end())
        WaitOp::create(body, step.getLoc(), it->second);

    // The step's results this rank computes (or was given).
    SmallVector<Value> results;
    for (Value result : returnOp.getOperands()) {
      Operation *producer = result.getDefiningOp();
      // A parameter is returned by the ranks that read it.
      auto found = producer ? info.find(producer) : info.end();
      if (!producer ||
          (isa<GetParamOp>(producer)
               ? mapping.contains(result)
               : found != info.end() && found->second.stages.test(rank)))
        results.push_back(mapping.lookupOrDefault(result));
    }
    func::ReturnOp::create(body, returnOp.getLoc(), results);
    func.setFunctionType(builder.getFunctionType(
        step.getArgumentTypes(), ValueRange(results).getTypes()));
  }
  return transfers.size();
}

namespace {

class PipelineStagesPass
    : public ddp::impl::PipelineStagesBase<PipelineStagesPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void PipelineStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<func::FuncOp> steps;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (getPipelineStage(func) || func.isExternal())
      continue;
    bool tagged = llvm::any_of(func.getBody().getOps(), [](Operation &op) {
      return getPipelineStage(&op) || getPipelineTask(&op);
    });
    if (tagged)
      steps.push_back(func);
  }
  if (steps.empty())
    return markAllAnalysesPreserved();

  MeshOp mesh;
  for (auto candidate : module.getOps<MeshOp>()) {
    if (candidate.getAxisSize("pp") < 0)
      continue;
    if (mesh) {
      candidate.emitError("a second mesh with a pp axis; ddp-pipeline-stages "
                          "splits steps over one");
      return signalPassFailure();
    }
    mesh = candidate;
  }
  if (!mesh) {
    steps.front().emitError(
        "its ops name pipeline ranks, but no mesh has a pp axis to run them "
        "on; declare one, e.g. ddp.mesh @world(pp = 2, dp = 1)");
    return signalPassFailure();
  }
  int64_t stages = mesh.getAxisSize("pp");
  // TransformerConfig's assert (transformer_config.py L3073-3077).
  if (delayWgradCompute && !overlapMoeExpertParallelComm) {
    module.emitError() << kDelayWgradNeedsOverlap;
    return signalPassFailure();
  }
  if (microbatchGroupSize < 0) {
    module.emitError("microbatch-group-size must not be negative, got ")
        << static_cast<int64_t>(microbatchGroupSize);
    return signalPassFailure();
  }

  // Megatron batches no call when it overlaps them (its arguments set
  // batch_p2p_comm to the opposite of overlap_p2p_comm).
  PipelineExchangeOptions options;
  options.overlap = overlapP2PComm;
  options.batch = batchP2PComm && !overlapP2PComm;
  options.warmupFlush = overlapP2PCommWarmupFlush;
  options.deallocate = deallocatePipelineOutputs;

  for (func::FuncOp step : steps) {
    if (!step.getBody().hasOneBlock()) {
      step.emitError("a pipelined step must be one block; @")
          << step.getSymName() << " branches";
      return signalPassFailure();
    }
    StageSplit split(step, mesh, stages, overlapMoeExpertParallelComm,
                     delayWgradCompute);
    if (failed(split.analyze(pipelineSchedule, microbatchGroupSize,
                             options)) ||
        failed(split.plan(options)))
      return signalPassFailure();
    numTransfers += split.build(options.deallocate);
    numStages += stages;
    step.erase();
  }
}
