//===- PipelineSimulator.cpp - The stage programs of a pipeline -----------===//
//
// Each rank's program runs on a simulator of its own; the ranks advance in
// turns, each as far as it can, and a receive over `pp` waits until the
// rank that sends it has been simulated to the send. The order check
// (ddp-verify-collective-order) has proved that this always progresses.
//
//===----------------------------------------------------------------------===//

#include "ddp/Sim/PipelineSimulator.h"
#include "ddp/Sim/SimOutput.h"

#include "ddp/Dialect/DDP/Analysis/StepStats.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"

#include <map>

using namespace mlir;
using namespace ddp;
using namespace ddp::sim;

/// The mean over the ranks of `time(rank)`.
template <typename Fn>
static double meanOverRanks(const PipelineSimResult &result, Fn time) {
  double sum = 0;
  for (size_t rank = 0; rank < result.stages.size(); ++rank)
    sum += time(rank);
  return result.stages.empty() ? 0 : sum / double(result.stages.size());
}

double PipelineSimResult::getMeanBubbleTime() const {
  return meanOverRanks(*this, [&](size_t rank) { return getBubbleTime(rank); });
}

double PipelineSimResult::getMeanExposedP2PTime() const {
  return meanOverRanks(*this,
                       [&](size_t rank) { return getExposedP2PTime(rank); });
}

double PipelineSimResult::getMeanOtherExposedCommTime() const {
  return meanOverRanks(
      *this, [&](size_t rank) { return getOtherExposedCommTime(rank); });
}

bool ddp::sim::hasPipelineStages(ModuleOp module) {
  return llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp func) {
    return getPipelineStage(func).has_value();
  });
}

FailureOr<PipelineSimResult>
ddp::sim::simulatePipeline(ModuleOp module, const timing::CostModel &model,
                           const SimOptions &options) {
  FailureOr<std::optional<PipelinePrograms>> found =
      getPipelinePrograms(module);
  if (failed(found))
    return failure();
  if (!*found)
    return module.emitError("no pipeline stage programs (functions with "
                            "ddp.pipeline_stage) to simulate");
  int64_t stages = (*found)->stages;
  SmallVector<func::FuncOp> byRank = (*found)->byRank;
  for (auto [rank, func] : llvm::enumerate(byRank))
    if (!func.getBody().hasOneBlock())
      return func.emitError("pipeline rank ")
             << rank << "'s program must have one block to simulate";

  // Pair the i-th send from a to b with the i-th receive at b from a.
  std::map<std::pair<int64_t, int64_t>, std::vector<Operation *>> sends, recvs;
  for (auto [index, func] : llvm::enumerate(byRank))
    for (Operation &op : func.getBody().front()) {
      if (!isPipelineMessage(&op))
        continue;
      int64_t rank = index;
      int64_t peer = getPipelinePeer(&op, rank, stages);
      if (isa<SendOp>(op))
        sends[{rank, peer}].push_back(&op);
      else
        recvs[{peer, rank}].push_back(&op);
    }
  DenseMap<Operation *, Operation *> sendOf;
  for (auto &[channel, sent] : sends)
    (void)recvs[channel];
  for (auto &[channel, received] : recvs) {
    std::vector<Operation *> &sent = sends[channel];
    if (sent.size() != received.size())
      return module.emitError("pipeline rank ")
             << channel.first << " sends " << sent.size()
             << " time(s) to rank " << channel.second << ", which receives "
             << received.size() << " time(s); run ddp-verify-collective-order";
    for (auto [send, recv] : llvm::zip(sent, received))
      sendOf[recv] = send;
  }

  std::vector<std::unique_ptr<IncrementalSimulation>> simulations;
  std::vector<std::vector<Operation *>> programs;
  for (func::FuncOp func : byRank) {
    FailureOr<std::unique_ptr<IncrementalSimulation>> simulation =
        IncrementalSimulation::create(func, model, options,
                                      /*keepEvents=*/true);
    if (failed(simulation))
      return failure();
    simulations.push_back(std::move(*simulation));
    std::vector<Operation *> &ops = programs.emplace_back();
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    // The runtime holds a rank's sends and receives until its next wait,
    // other collective or synchronous message, and issues them together
    // (one NCCL group; the order check's batch): the simulator posts a
    // batch's receives at its end, after its sends, or a ring of batches
    // that each receive before they send would wait on itself.
    auto isAsyncMessage = [](Operation *op) {
      return isPipelineMessage(op) && cast<AsyncOpInterface>(op).isAsync();
    };
    auto closesBatch = [&](Operation *op) {
      return isa<WaitOp, func::ReturnOp>(op) ||
             (isa<CollectiveOpInterface>(op) && !isAsyncMessage(op));
    };
    for (auto begin = ops.begin(); begin != ops.end();) {
      begin = std::find_if(begin, ops.end(), isAsyncMessage);
      auto end = std::find_if(begin, ops.end(), closesBatch);
      std::stable_partition(begin, end, [&](Operation *op) {
        return !(isAsyncMessage(op) && isa<RecvOp>(op));
      });
      begin = end;
    }
  }

  // The pipeline's own bound (PipelineSimResult::lowerBound): each rank's
  // ideal compute from its first task's first op to its last backward's
  // last (what the schedule passes insert among them included), in the
  // fill and drain tasks, and after its last backward (W passes that
  // follow it, ZB-H1's or deferred ones, run beside the other ranks'
  // drain, so they are not on the chain).
  int64_t lastMicrobatch = 0;
  std::vector<size_t> firstTaskIndex(stages, SIZE_MAX),
      lastBackwardIndex(stages, 0);
  for (auto [rank, ops] : llvm::enumerate(programs))
    for (auto [index, op] : llvm::enumerate(ops))
      if (std::optional<PipelineTask> task = getPipelineTask(op)) {
        lastMicrobatch = std::max(lastMicrobatch, task->microbatch);
        firstTaskIndex[rank] = std::min(firstTaskIndex[rank], index);
        if (task->phase == PipelineTask::Phase::Backward)
          lastBackwardIndex[rank] = index;
      }
  std::vector<double> inTasks(stages, 0), fill(stages, 0), drain(stages, 0),
      afterLastBackward(stages, 0);

  // When each send started: its receive starts no earlier.
  DenseMap<Operation *, double> sentAt;
  std::vector<size_t> next(stages, 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t rank = 0; rank < stages; ++rank) {
      for (; next[rank] < programs[rank].size(); ++next[rank]) {
        Operation *op = programs[rank][next[rank]];
        if (isa<RecvOp>(op) && isPipelineMessage(op)) {
          auto sent = sentAt.find(sendOf.lookup(op));
          if (sent == sentAt.end())
            break;
          simulations[rank]->setNotBefore(op, sent->second);
        }
        double before = simulations[rank]->getIdealComputeTime();
        if (failed(simulations[rank]->simulate(op)))
          return failure();
        double spent = simulations[rank]->getIdealComputeTime() - before;
        size_t index = next[rank];
        if (index >= firstTaskIndex[rank] && index <= lastBackwardIndex[rank])
          inTasks[rank] += spent;
        else if (index > lastBackwardIndex[rank])
          afterLastBackward[rank] += spent;
        if (std::optional<PipelineTask> task = getPipelineTask(op)) {
          bool forward = task->phase == PipelineTask::Phase::Forward;
          bool backward = task->phase == PipelineTask::Phase::Backward;
          if (task->chunk == 0 && forward && task->microbatch == 0)
            fill[rank] += spent;
          if (task->chunk == 0 && backward &&
              task->microbatch == lastMicrobatch)
            drain[rank] += spent;
        }
        if (isa<SendOp>(op) && isPipelineMessage(op))
          sentAt[op] = simulations[rank]->getLastCollective().first;
        moved = true;
      }
    }
  }
  for (int64_t rank = 0; rank < stages; ++rank)
    if (next[rank] < programs[rank].size())
      return programs[rank][next[rank]]->emitError(
          "pipeline rank ")
             << rank << " waits here for a send that no rank reaches; run "
                "ddp-verify-collective-order";

  PipelineSimResult result;
  for (auto &simulation : simulations) {
    result.stages.push_back(simulation->finish());
    result.stepTime = std::max(result.stepTime, result.stages.back().stepTime);
  }
  for (func::FuncOp program : byRank) {
    FailureOr<ModelState> state = computeModelState(module, program);
    if (failed(state))
      return failure();
    result.modelStateBytes.push_back(state->getBytesPerRank());
  }
  double before = 0;
  for (int64_t rank = 0; rank < stages; ++rank) {
    const SimResult &stage = result.stages[rank];
    double chain = before + inTasks[rank] + afterLastBackward[0];
    for (int64_t q = 0; q < rank; ++q)
      chain += drain[q];
    result.lowerBound = std::max({result.lowerBound, chain,
                                  stage.lowerBound.value(),
                                  stage.idealComputeTime});
    before += fill[rank];
  }
  if (std::optional<ActivationBytes> bytes = getActivationBytes(module))
    for (func::FuncOp program : byRank)
      result.activations.push_back(
          computeActivationPeak(program, *bytes).value_or(ActivationPeak()));
  result.memoryRemedies = describeMemoryRemedies(module);
  return result;
}
