//===- OverlapParamGather.cpp - Gather parameters in the next forward -----===//
//
// Moves the distributed optimizer's all-gathers of updated parameters from
// the end of the step to its start, asynchronous and in forward order, as
// Megatron's --overlap-param-gather does. The step is one iteration of the
// training loop, so the gather of the previous step's update sits at the
// start of the step; the parameters carry the rank's updated shard from one
// step to the next. Every gather is checked before the first op changes.
// docs/DistributedOptimizer.md has the design.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <set>

namespace ddp {
#define GEN_PASS_DEF_OVERLAPPARAMGATHER
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

/// One all-gather of a shard optimizer's result, written to the parameters
/// by a ddp.set_params, and the first op of the step that names one of its
/// parameters: the gather must be complete there.
struct ParamGather {
  SetParamsOp setParams;
  AllGatherOp gather;
  Operation *firstUse = nullptr;
  unsigned firstUsePosition = 0;
  /// The model chunk of the pipeline task of the first use (0 outside a
  /// pipeline): Megatron keeps one buffer, and one chain of gathers, per
  /// chunk.
  int64_t chunk = 0;
};

class OverlapParamGatherPass
    : public ddp::impl::OverlapParamGatherBase<OverlapParamGatherPass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

/// The parameters named by the gather, for messages.
static std::string describeParams(SetParamsOp setParams) {
  std::string names;
  llvm::raw_string_ostream os(names);
  llvm::interleaveComma(setParams.getParams(), os,
                        [&](Attribute param) { os << param; });
  return names;
}

/// Checks that `setParams` writes the all-gathered result of a shard
/// optimizer over the same parameters, and fills `gather`; false when the
/// gather is already overlapped as this pass overlaps it.
static FailureOr<bool> planGather(func::FuncOp step, SetParamsOp setParams,
                                  ParamGather &gather) {
  auto error = [&]() {
    return setParams->emitError()
           << "cannot overlap the gather of parameters ["
           << describeParams(setParams) << "]: ";
  };
  if (setParams->getParentOp() != step)
    return error() << "the write must be at the top level of the step";
  auto allGather = setParams.getValues().getDefiningOp<AllGatherOp>();
  if (!allGather)
    return error() << "the values are not a ddp.all_gather";
  if (allGather.getToken()) {
    // The pass ran before: it gathers the parameters' shard, read back by
    // ddp.get_param_shard, asynchronously. Running it again changes nothing.
    auto shard = allGather.getInput().getDefiningOp<GetParamShardOp>();
    if (shard && shard.getParamsAttr() == setParams.getParamsAttr() &&
        shard.getOffsetsAttr() == setParams.getOffsetsAttr())
      return false;
    return error() << "the ddp.all_gather is already asynchronous";
  }
  if (!allGather.getResult().hasOneUse())
    return error() << "the gathered values are read by more than this write";
  Operation *update = allGather.getInput().getDefiningOp();
  // With outer-dp-sharding-strategy=optim the shard optimizer's part is
  // first gathered across the instances into the instance's shard, which
  // is what each rank writes back and gathers again.
  if (auto acrossInstances = dyn_cast_or_null<AllGatherOp>(update);
      acrossInstances && !acrossInstances.getToken() &&
      acrossInstances.getResult().hasOneUse())
    update = acrossInstances.getInput().getDefiningOp();
  ArrayAttr params;
  DenseI64ArrayAttr offsets;
  if (auto sgd = dyn_cast_or_null<ShardSGDOp>(update)) {
    params = sgd.getParamsAttr();
    offsets = sgd.getOffsetsAttr();
  } else if (auto adam = dyn_cast_or_null<ShardAdamOp>(update)) {
    params = adam.getParamsAttr();
    offsets = adam.getOffsetsAttr();
  } else {
    return error() << "the gathered shard is not a shard optimizer's result";
  }
  if (params != setParams.getParamsAttr() ||
      offsets != setParams.getOffsetsAttr())
    return error() << "the shard optimizer updates parameters " << params
                   << " at offsets " << offsets;
  gather.setParams = setParams;
  gather.gather = allGather;
  return true;
}

/// The first op of the step that names each parameter (it reads it, or
/// updates it: the shard optimizer reads the values of the rank's own
/// shard), with its position. One walk for all gathers: a walk per gather
/// made the pass quadratic (71 of 76 s of ddp-schedule on 400k ops).
using FirstUses = DenseMap<StringAttr, std::pair<unsigned, Operation *>>;
static FirstUses findFirstUses(Block &body) {
  FirstUses firstUses;
  for (auto [position, op] : llvm::enumerate(body))
    forEachNamedSymbol(&op, [&](StringAttr name) {
      firstUses.try_emplace(name, unsigned(position), &op);
    });
  return firstUses;
}

/// Sets the gather's first use: the first op that names one of its
/// parameters.
static void setFirstUse(const FirstUses &firstUses, ParamGather &gather) {
  for (auto param :
       gather.setParams.getParams().getAsRange<FlatSymbolRefAttr>()) {
    auto found = firstUses.find(param.getAttr());
    if (found == firstUses.end())
      continue;
    auto [position, op] = found->second;
    if (!gather.firstUse || position < gather.firstUsePosition) {
      gather.firstUse = op;
      gather.firstUsePosition = position;
    }
  }
  if (gather.firstUse)
    if (std::optional<PipelineTask> task = getPipelineTask(gather.firstUse))
      gather.chunk = task->chunk;
}

/// Where Megatron's interleaved schedule issues model chunk `chunk`'s
/// gathers under align_param_gather (schedules.py L1218-1221 and
/// L1341-1353 at Megatron-LM d98e8a64; chunks 0 and 1 go before the
/// schedule, at the start of the step): chunk c > 1 before the forward of virtual microbatch k of this
/// rank, where k + the rank's pipeline coordinate is the first microbatch
/// of chunk c - 1 in the forward order (which every rank shares), so that
/// every rank issues it at about the same time. Null where no forward is
/// k: the gathers are then issued at their first use.
static Operation *getAlignedIssuePoint(ArrayRef<std::pair<PipelineTask,
                                                          Operation *>>
                                           forwards,
                                       int64_t rank, int64_t chunk) {
  assert(chunk >= 2 && "chunks 0 and 1 are issued at the start");
  for (auto [index, forward] : llvm::enumerate(forwards)) {
    if (forward.first.chunk != chunk - 1 || forward.first.microbatch != 0)
      continue;
    int64_t k = int64_t(index) - rank;
    return k >= 0 ? forwards[k].second : nullptr;
  }
  return nullptr;
}

void OverlapParamGatherPass::runOnOperation() {
  func::FuncOp step = getOperation();
  if (step.isExternal())
    return;
  WalkResult fullOptimizer = step.walk([&](Operation *op) {
    if (!isa<SGDOp, AdamOp>(op))
      return WalkResult::advance();
    FlatSymbolRefAttr param = isa<SGDOp>(op) ? cast<SGDOp>(op).getParamAttr()
                                             : cast<AdamOp>(op).getParamAttr();
    op->emitError() << "overlap-param-gather needs the distributed optimizer, "
                       "but "
                    << param << " is updated by " << op->getName()
                    << "; use use-distributed-optimizer=true";
    return WalkResult::interrupt();
  });
  if (fullOptimizer.wasInterrupted())
    return signalPassFailure();

  SmallVector<ParamGather> gathers;
  WalkResult planned = step.walk([&](SetParamsOp setParams) {
    FailureOr<bool> toOverlap =
        planGather(step, setParams, gathers.emplace_back());
    if (failed(toOverlap))
      return WalkResult::interrupt();
    if (!*toOverlap)
      gathers.pop_back();
    return WalkResult::advance();
  });
  if (planned.wasInterrupted())
    return signalPassFailure();
  if (gathers.empty())
    return;

  Block &body = step.getBody().front();
  FirstUses firstUses = findFirstUses(body);
  for (ParamGather &gather : gathers)
    setFirstUse(firstUses, gather);
  // Forward order; the gathers of one bucket (one per kind of update) keep
  // the order the distributed optimizer gave them.
  llvm::stable_sort(gathers, [](const ParamGather &a, const ParamGather &b) {
    return a.firstUsePosition < b.firstUsePosition;
  });

  OpBuilder builder(&getContext());
  auto issue = [&](ParamGather &gather) {
    AllGatherOp oldGather = gather.gather;
    SetParamsOp setParams = gather.setParams;
    Location loc = oldGather.getLoc();
    auto shard = GetParamShardOp::create(
        builder, loc, oldGather.getInput().getType(), setParams.getParamsAttr(),
        setParams.getOffsetsAttr(), oldGather.getMeshAttr(),
        oldGather.getAxesAttr());
    gather.gather = AllGatherOp::create(
        builder, loc, oldGather.getResult().getType(),
        TokenType::get(&getContext()), shard.getResult(),
        oldGather.getMeshAttr(), oldGather.getAxesAttr(),
        /*asyncDependencies=*/ValueRange());
  };

  // The end of the step keeps the rank's updated shard in the parameters.
  for (ParamGather &gather : gathers) {
    AllGatherOp oldGather = gather.gather;
    SetParamsOp setParams = gather.setParams;
    builder.setInsertionPoint(setParams);
    SetParamShardOp::create(builder, setParams.getLoc(), oldGather.getInput(),
                            setParams.getParamsAttr(),
                            setParams.getOffsetsAttr(),
                            oldGather.getMeshAttr(), oldGather.getAxesAttr());
  }

  // The forwards of the rank's program in its order, with their first ops:
  // with several model chunks, the interleaved schedule's order.
  // A forward's first op is the first of its computation, after the
  // receive and wait of its input: where Megatron's
  // forward_step_helper_preprocess runs.
  SmallVector<std::pair<PipelineTask, Operation *>> forwards;
  std::set<std::pair<int64_t, int64_t>> seen;
  int64_t numChunks = 1;
  for (Operation &op : body)
    if (std::optional<PipelineTask> task = getPipelineTask(&op)) {
      numChunks = std::max(numChunks, task->chunk + 1);
      if (task->phase == PipelineTask::Phase::Forward &&
          !isa<SendOp, RecvOp, WaitOp>(op) &&
          seen.insert({task->microbatch, task->chunk}).second)
        forwards.emplace_back(*task, &op);
    }
  std::optional<int64_t> stage = getPipelineStage(step);
  int64_t rank = stage.value_or(0);
  // Megatron aligns the gathers of the interleaved schedule only: its
  // training arguments turn align_param_gather off on one chunk per
  // pipeline rank (arguments.py L1011-1017), so a 1F1B or GPipe rank's
  // gathers chain. A step outside a pipeline keeps ddp's meaning: every
  // gather at the start.
  bool align = alignParamGather && !(stage && numChunks == 1);
  bool alignAcrossChunks = align && numChunks > 1;

  // Which gathers are issued where: `issuedBefore[op]` before `op`, and
  // `issuedAfterWait[i]` right after gather i's wait (the chain).
  DenseMap<Operation *, SmallVector<size_t>> issuedBefore;
  SmallVector<std::optional<size_t>> issuedAfterWait(gathers.size());
  DenseMap<int64_t, size_t> lastOfChunk;
  for (auto [index, gather] : llvm::enumerate(gathers)) {
    Operation *point = nullptr;
    if (alignAcrossChunks && gather.chunk >= 2) {
      point = getAlignedIssuePoint(forwards, rank, gather.chunk);
    } else if (align) {
      point = &body.front();
    } else if (auto last = lastOfChunk.find(gather.chunk);
               last != lastOfChunk.end()) {
      issuedAfterWait[last->second] = index;
    } else {
      // The first gather of the step at its start, as before any forward;
      // a later chunk's first at its first use, where Megatron's forward
      // pre-hook finds it not yet dispatched.
      point = index == 0 ? &body.front() : gather.firstUse;
    }
    lastOfChunk[gather.chunk] = index;
    if (!point && !alignAcrossChunks)
      continue;
    // Never after the first use (an op before the first forward that names
    // the parameters, or a chunk whose issue point no forward reaches).
    if (!point || gather.firstUse->isBeforeInBlock(point))
      point = gather.firstUse;
    issuedBefore[point].push_back(index);
  }

  for (auto &[point, indices] : issuedBefore) {
    builder.setInsertionPoint(point);
    for (size_t index : indices)
      issue(gathers[index]);
  }
  for (auto [index, gather] : llvm::enumerate(gathers)) {
    // The gather completes and its parameters are written right before
    // their first use; the chunk's next gather is issued right after.
    builder.setInsertionPoint(gather.firstUse);
    Location loc = gather.setParams.getLoc();
    WaitOp::create(builder, loc, gather.gather.getToken());
    SetParamsOp::create(builder, loc, gather.gather.getResult(),
                        gather.setParams.getParamsAttr(),
                        gather.setParams.getOffsetsAttr());
    if (std::optional<size_t> next = issuedAfterWait[index])
      issue(gathers[*next]);
  }

  for (ParamGather &gather : gathers) {
    AllGatherOp oldGather =
        gather.setParams.getValues().getDefiningOp<AllGatherOp>();
    gather.setParams->erase();
    oldGather->erase();
  }
  numGathersDeferred += gathers.size();
}
