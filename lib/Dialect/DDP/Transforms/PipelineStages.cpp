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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"

#include <map>
#include <tuple>

namespace ddp {
#define GEN_PASS_DEF_PIPELINESTAGES
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

using TaskKey = std::tuple<int, int64_t, int64_t>;
TaskKey getKey(const PipelineTask &task) {
  return {static_cast<int>(task.phase), task.microbatch, task.chunk};
}

/// A value computed on rank `from` and first used on rank `to` by `user`.
struct Transfer {
  Value value;
  int64_t from, to;
  Operation *user;
  /// The sender sends it before its op at this index (see getSendPosition),
  /// the receiver receives it before its op at this one (placeReceives).
  size_t sendAt = 0, recvAt = 0;
};

/// What the split knows about one step.
class StageSplit {
public:
  StageSplit(func::FuncOp step, MeshOp mesh, int64_t stages)
      : step(step), mesh(mesh), stages(stages) {}

  /// Reads every op's rank and task, and checks them against `kindName`
  /// and `groupSize`.
  LogicalResult analyze(StringRef kindName, int64_t groupSize);
  /// Orders each rank's ops and finds the values that cross ranks.
  LogicalResult plan();
  /// Builds the stage functions before `step`; returns how many values
  /// cross ranks.
  size_t build();

private:
  const llvm::BitVector &getStagesOf(Operation *op) { return stagesOf[op]; }
  int64_t getFlowChunk(Operation *op) const;
  int64_t getOffset(const Transfer &transfer) const;
  size_t getSendPosition(const Transfer &transfer,
                         const DenseMap<Operation *, size_t> &position) const;
  LogicalResult placeReceives();

  func::FuncOp step;
  MeshOp mesh;
  int64_t stages;
  PipelineScheduleKind kind = PipelineScheduleKind::OneFOneB;
  PipelineShape shape;
  DenseMap<Operation *, llvm::BitVector> stagesOf;
  /// Each rank's ops in the order it runs them (get_params excluded).
  std::vector<std::vector<Operation *>> orders;
  std::vector<Transfer> transfers;
  /// Where each rank's ops after the pipeline begin in its order.
  std::vector<size_t> postStart;
};

} // namespace

LogicalResult StageSplit::analyze(StringRef kindName, int64_t groupSize) {
  int64_t chunks = 1, microbatches = 1;
  Block &body = step.getBody().front();
  // A task index past the ops of the step names a pipeline larger than any
  // the step holds (and its schedule would not fit in memory). Counted once:
  // a block's size() walks its list.
  int64_t bound = static_cast<int64_t>(body.getOperations().size());
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
      if (task->phase == PipelineTask::Phase::WeightGrad)
        return op.emitError("'ddp.task' is ")
               << task->str()
               << ", a weight-gradient pass, which no schedule of "
                  "ddp-pipeline-stages runs apart from its backward yet; "
                  "tag it as part of B"
               << task->microbatch << "." << task->chunk;
      if (task->microbatch >= bound || task->chunk >= bound)
        return op.emitError("'ddp.task' ")
               << task->str() << " names microbatch " << task->microbatch
               << " or model chunk " << task->chunk << ", more than the "
               << bound << " ops of the step could hold";
      chunks = std::max(chunks, task->chunk + 1);
      microbatches = std::max(microbatches, task->microbatch + 1);
    }
    llvm::BitVector set(stages);
    if (stage) {
      set.set(*stage);
    } else {
      for (Value operand : op.getOperands())
        if (Operation *producer = operand.getDefiningOp();
            producer && !isa<GetParamOp>(producer))
          set |= stagesOf[producer];
      if (set.none())
        return op.emitError(
            "has no 'ddp.pipeline_stage' and none of its operands is "
            "computed on a pipeline rank, so no rank would run it; give it "
            "a 'ddp.pipeline_stage'");
    }
    stagesOf[&op] = std::move(set);
  }

  if (kindName.empty()) {
    kind = chunks > 1 ? PipelineScheduleKind::Interleaved
                      : PipelineScheduleKind::OneFOneB;
  } else if (std::optional<PipelineScheduleKind> parsed =
                 parsePipelineScheduleKind(kindName)) {
    kind = *parsed;
  } else {
    return step.emitError("unknown pipeline schedule '")
           << kindName << "'; expected 1f1b, interleaved or gpipe";
  }
  shape = {stages, chunks, microbatches, groupSize};
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
  return success();
}

int64_t StageSplit::getFlowChunk(Operation *op) const {
  std::optional<PipelineTask> task = getPipelineTask(op);
  std::optional<int64_t> stage = getPipelineStage(op);
  return task && stage ? task->chunk * stages + *stage : -1;
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
  if (getPipelineTask(transfer.user))
    return computed;
  return std::max(computed, postStart[transfer.from]);
}

LogicalResult StageSplit::plan() {
  Block &body = step.getBody().front();
  // Per rank: the ops before the first task, each task's ops, the rest.
  std::vector<std::vector<Operation *>> before(stages), after(stages);
  std::vector<std::map<TaskKey, std::vector<Operation *>>> tasks(stages);
  bool pipelineStarted = false;
  for (Operation &op : body.without_terminator()) {
    if (isa<GetParamOp>(op))
      continue;
    std::optional<PipelineTask> task = getPipelineTask(&op);
    pipelineStarted |= task.has_value();
    for (unsigned rank : stagesOf[&op].set_bits()) {
      if (task)
        tasks[rank][getKey(*task)].push_back(&op);
      else
        (pipelineStarted ? after : before)[rank].push_back(&op);
    }
  }
  orders.assign(stages, {});
  postStart.clear();
  for (int64_t rank = 0; rank < stages; ++rank) {
    std::vector<Operation *> &order = orders[rank];
    order = before[rank];
    for (const PipelineTask &task : getStageOrder(kind, shape, rank)) {
      auto it = tasks[rank].find(getKey(task));
      if (it == tasks[rank].end())
        continue;
      order.insert(order.end(), it->second.begin(), it->second.end());
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
        const llvm::BitVector &where = stagesOf[producer];
        if (where.test(rank)) {
          if (done.contains(producer))
            continue;
          std::optional<PipelineTask> task = getPipelineTask(op);
          std::optional<PipelineTask> producerTask =
              getPipelineTask(producer);
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
        if (received.insert(operand).second)
          transfers.push_back(
              {operand, static_cast<int64_t>(where.find_first()), rank, op});
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
  return placeReceives();
}

/// Posts each receive early, as Megatron posts a step's receives with its
/// sends: at the start of the receiving rank's first task by which the
/// value has been sent, in an execution where each rank starts a task as
/// soon as the values it needs have arrived, a forward taking one unit of
/// time and a backward two (Megatron's usual ratio). A rank's communication
/// completes in issue order, so a receive posted only at its first use
/// could hold up the sender's later traffic behind it: with interleaved
/// chunks on two ranks, rank 0 sends B0.1's gradient long before rank 1
/// runs B0.0. Receives from one rank are posted in the order it sent them,
/// the order MPI and NCCL match them in.
LogicalResult StageSplit::placeReceives() {
  // Each rank's order as segments: its tasks, and the ops after them.
  struct Segment {
    size_t begin, end;
    double cost;
  };
  std::vector<std::vector<Segment>> segments(stages);
  for (int64_t rank = 0; rank < stages; ++rank) {
    std::vector<Operation *> &order = orders[rank];
    for (size_t begin = 0; begin < order.size();) {
      std::optional<PipelineTask> task = getPipelineTask(order[begin]);
      size_t end = begin + 1;
      bool post = begin >= postStart[rank];
      while (end < order.size() && (post || end < postStart[rank]) &&
             (post ? end >= postStart[rank]
                   : getPipelineTask(order[end]) == task))
        ++end;
      double cost = !task || post ? 0.0
                    : task->phase == PipelineTask::Phase::Backward ? 2.0
                                                                   : 1.0;
      segments[rank].push_back({begin, end, cost});
      begin = end;
    }
  }

  DenseMap<Operation *, std::vector<Transfer *>> needs;
  for (Transfer &transfer : transfers)
    needs[transfer.user].push_back(&transfer);
  // Transfers in the order each sender issues them.
  std::vector<Transfer *> bySend;
  for (Transfer &transfer : transfers)
    bySend.push_back(&transfer);
  llvm::stable_sort(bySend, [](const Transfer *a, const Transfer *b) {
    return std::tie(a->from, a->sendAt) < std::tie(b->from, b->sendAt);
  });
  DenseMap<Transfer *, double> sentAt;
  DenseSet<Transfer *> posted;
  std::vector<size_t> next(stages, 0);
  std::vector<double> time(stages, 0.0);

  while (true) {
    int64_t best = -1;
    double bestStart = 0;
    for (int64_t rank = 0; rank < stages; ++rank) {
      if (next[rank] == segments[rank].size())
        continue;
      const Segment &segment = segments[rank][next[rank]];
      double start = time[rank];
      bool ready = true;
      for (size_t index = segment.begin; ready && index < segment.end; ++index)
        for (Transfer *transfer : needs.lookup(orders[rank][index])) {
          if (transfer->to != rank)
            continue;
          auto it = sentAt.find(transfer);
          if (it == sentAt.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
      if (ready && (best < 0 || start < bestStart)) {
        best = rank;
        bestStart = start;
      }
    }
    if (best < 0)
      break;
    const Segment &segment = segments[best][next[best]];
    // A value for after the pipeline is received after it too: posted
    // earlier, it would join a batch the pipeline waits on.
    bool inPipeline = segment.begin < postStart[best];
    for (Transfer *transfer : bySend) {
      auto it = sentAt.find(transfer);
      if (transfer->to != best || it == sentAt.end() ||
          it->second > bestStart ||
          (inPipeline && !getPipelineTask(transfer->user)))
        continue;
      if (posted.insert(transfer).second)
        transfer->recvAt = segment.begin;
    }
    time[best] = bestStart + segment.cost;
    for (Transfer *transfer : bySend)
      if (transfer->from == best && transfer->sendAt > segment.begin &&
          transfer->sendAt <= segment.end)
        sentAt[transfer] = time[best];
    ++next[best];
  }

  for (int64_t rank = 0; rank < stages; ++rank) {
    if (next[rank] == segments[rank].size())
      continue;
    Operation *op = orders[rank][segments[rank][next[rank]].begin];
    InFlightDiagnostic diag =
        op->emitError("the ")
        << stringifyPipelineScheduleKind(kind)
        << " schedule cannot run: pipeline rank " << rank
        << " waits here for a value that another rank computes only after "
           "waiting for this one";
    return diag;
  }
  return success();
}

size_t StageSplit::build() {
  MLIRContext *context = step.getContext();
  OpBuilder builder(step);
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  ArrayAttr ppAxes = builder.getStrArrayAttr({"pp"});
  auto tokenType = TokenType::get(context);
  auto returnOp = cast<func::ReturnOp>(step.getBody().front().getTerminator());

  // Per rank, the sends and the receives to issue before its op at each
  // index, each in the order they were sent.
  std::vector<std::map<size_t, std::vector<const Transfer *>>> sendsBefore(
      stages),
      recvsBefore(stages);
  for (const Transfer &transfer : transfers)
    sendsBefore[transfer.from][transfer.sendAt].push_back(&transfer);
  std::vector<const Transfer *> bySend;
  for (auto &perRank : sendsBefore)
    for (auto &[index, sends] : perRank)
      bySend.insert(bySend.end(), sends.begin(), sends.end());
  for (const Transfer *transfer : bySend)
    recvsBefore[transfer->to][transfer->recvAt].push_back(transfer);

  for (int64_t rank = 0; rank < stages; ++rank) {
    std::string name = (step.getSymName() + "_stage" + Twine(rank)).str();
    assert(!SymbolTable::lookupSymbolIn(step->getParentOp(), name) &&
           "analyze() checks that the names are free");
    auto func = func::FuncOp::create(builder, step.getLoc(), name,
                                     step.getFunctionType());
    setPipelineStage(func, rank);
    Block *entry = func.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockEnd(entry);
    IRMapping mapping;
    mapping.map(step.getArguments(), entry->getArguments());
    SmallVector<Value> tokens;

    auto issueSends = [&](size_t index) {
      auto it = sendsBefore[rank].find(index);
      if (it == sendsBefore[rank].end())
        return;
      for (const Transfer *transfer : it->second) {
        Operation *producer = transfer->value.getDefiningOp();
        auto send = SendOp::create(
            body, producer->getLoc(), tokenType,
            mapping.lookup(transfer->value),
            body.getI64IntegerAttr(getOffset(*transfer)), meshRef, ppAxes,
            ValueRange());
        // A send deferred past the pipeline (its value is used after it)
        // belongs to no task.
        std::optional<PipelineTask> task = getPipelineTask(producer);
        if (task && getPipelineTask(transfer->user))
          setPipelineTask(send, *task);
        tokens.push_back(send.getToken());
      }
    };
    // A receive is waited right before its first use.
    DenseMap<Operation *, SmallVector<std::pair<Value, Value>>> waitsBefore;
    for (auto [index, op] : llvm::enumerate(orders[rank])) {
      issueSends(index);
      std::optional<PipelineTask> task = getPipelineTask(op);
      for (const Transfer *transfer : recvsBefore[rank][index]) {
        auto recv = RecvOp::create(
            body, transfer->value.getLoc(), transfer->value.getType(),
            tokenType, body.getI64IntegerAttr(-getOffset(*transfer)),
            meshRef, ppAxes, ValueRange());
        if (task)
          setPipelineTask(recv, *task);
        waitsBefore[transfer->user].push_back(
            {transfer->value, recv.getToken()});
        mapping.map(transfer->value, recv.getResult());
      }
      for (auto [value, token] : waitsBefore.lookup(op)) {
        auto wait = WaitOp::create(body, value.getLoc(), token);
        if (task)
          setPipelineTask(wait, *task);
      }
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
      Operation *clone = body.clone(*op, mapping);
      clone->removeAttr(DDPDialect::PipelineStageAttrHelper::getNameStr());
    }
    issueSends(orders[rank].size());
    for (Value token : tokens)
      WaitOp::create(body, step.getLoc(), token);

    // The step's results this rank computes (or was given).
    SmallVector<Value> results;
    for (Value result : returnOp.getOperands()) {
      Operation *producer = result.getDefiningOp();
      // A parameter is returned by the ranks that read it.
      if (!producer ||
          (isa<GetParamOp>(producer) ? mapping.contains(result)
                                     : stagesOf.count(producer) &&
                                           stagesOf[producer].test(rank)))
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
  if (microbatchGroupSize < 0) {
    module.emitError("microbatch-group-size must not be negative, got ")
        << static_cast<int64_t>(microbatchGroupSize);
    return signalPassFailure();
  }

  for (func::FuncOp step : steps) {
    if (!step.getBody().hasOneBlock()) {
      step.emitError("a pipelined step must be one block; @")
          << step.getSymName() << " branches";
      return signalPassFailure();
    }
    StageSplit split(step, mesh, stages);
    if (failed(split.analyze(pipelineSchedule, microbatchGroupSize)) ||
        failed(split.plan()))
      return signalPassFailure();
    numTransfers += split.build();
    numStages += stages;
    step.erase();
  }
}
