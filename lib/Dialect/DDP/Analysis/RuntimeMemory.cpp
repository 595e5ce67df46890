//===- RuntimeMemory.cpp - What a lowered step allocates on a rank --------===//
//
// Read off the storage plan, so that ddp-run can refuse a run that cannot
// fit before any rank allocates, and ddp-step-stats can say what a step will
// need. The runtime's own allocations are counted as runtime/ makes them:
// ApiOptimizer.cpp gives each Adam-updated parameter 2 f32 moments per element
// and each updated 16-bit parameter an f32 main copy (per element in this
// rank's shard under the distributed optimizer), and backend computes 16-bit
// GEMMs and collectives on f32 copies. The scratch of the deterministic
// reductions is counted apart: only ddp-run
// --verify on more than 2 ranks asks the runtime for them.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
#include "ddp/Support/CheckedCount.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace ddp;

static bool is16Bit(Type type) {
  Type element = cast<RankedTensorType>(type).getElementType();
  return element.isF16() || element.isBF16();
}

static int64_t numElementsOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

/// Bytes the CPU backend allocates for one all-reduce or reduce-scatter
/// under DDPRT_FLAG_DETERMINISTIC_REDUCTIONS, as runtime/cpu/
/// CpuCollectives.cpp does (preScaleAverage, prepareGatherThenReduce): the
/// input scaled by 1/n for avg, in the element type; an f32 copy of a 16-bit
/// input; every rank's contribution to this rank's result, gathered in the
/// accumulation type; an f32 result that a 16-bit result is rounded from.
/// Reduce-scatter's input is group size x its result.
static CheckedCount getDeterministicReductionBytes(Type elementType,
                                                   int64_t inputNumel,
                                                   int64_t resultNumel,
                                                   int64_t groupSize,
                                                   Reduction reduction) {
  int64_t elementBytes = getElementBytes(elementType);
  int64_t accumulatorBytes = elementType.isF64() ? 8 : 4;
  bool wide = elementType.isF16() || elementType.isBF16();
  CheckedCount bytes = CheckedCount(resultNumel) * groupSize * accumulatorBytes;
  if (reduction == Reduction::Avg)
    bytes += CheckedCount(inputNumel) * elementBytes;
  if (wide)
    bytes += (CheckedCount(inputNumel) + resultNumel) * int64_t(sizeof(float));
  return bytes;
}

/// The peak of getDeterministicReductionBytes over `step`: the scratch of an
/// asynchronous collective lives until it completes, at the latest at the
/// wait of its token (or of a join of it), so it is counted from the op to
/// that wait; a token never waited stays counted to the end of the step.
static CheckedCount
getPeakDeterministicReductionBytes(const StoragePlan &plan) {
  CheckedCount live = 0, peak = 0;
  // The collectives a token completes: its own, or those joined into it.
  llvm::DenseMap<Value, SmallVector<Operation *, 1>> completes;
  llvm::DenseMap<Operation *, CheckedCount> pending;
  auto count = [&](Operation *op, Value input, Value result, Value token,
                   ArrayAttr axes, Reduction reduction) {
    auto inputType = cast<RankedTensorType>(input.getType());
    CheckedCount bytes = getDeterministicReductionBytes(
        inputType.getElementType(), inputType.getNumElements(),
        numElementsOf(result), getGroupSize(plan.mesh, axes), reduction);
    // An overflow stays in `peak`, which the caller reports.
    peak = CheckedCount::max(peak, live + bytes);
    if (!token)
      return;
    live += bytes;
    pending[op] = bytes;
    completes[token].push_back(op);
  };
  func::FuncOp step = plan.step;
  for (Operation &op : step.getBody().front()) {
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      count(&op, reduce.getInput(), reduce.getResult(), reduce.getToken(),
            reduce.getAxesAttr(), reduce.getReduction());
    else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
      count(&op, scatter.getInput(), scatter.getResult(), scatter.getToken(),
            scatter.getAxesAttr(), scatter.getReduction());
    else if (auto join = dyn_cast<JoinOp>(op)) {
      SmallVector<Operation *, 1> &joined = completes[join.getResult()];
      for (Value token : join.getTokens())
        llvm::append_range(joined, completes.lookup(token));
    } else if (auto wait = dyn_cast<WaitOp>(op)) {
      for (Operation *collective : completes.lookup(wait.getToken())) {
        auto it = pending.find(collective);
        if (it == pending.end())
          continue;
        live -= it->second;
        pending.erase(it);
      }
    }
    // An op issued after others (`async after`) completes them too: the
    // wait of an all-reduce chained after a reduce-scatter frees both.
    if (auto async = dyn_cast<AsyncOpInterface>(op))
      if (Value token = async.getAsyncToken())
        for (Value dependency : async.getAsyncDependencies()) {
          SmallVector<Operation *, 1> covered = completes.lookup(dependency);
          llvm::append_range(completes[token], covered);
        }
  }
  return peak;
}

/// The bytes of the parameters stored sharded (rule 10) on the rank that
/// keeps the most of them: per group, each group rank's elements of every
/// parameter summed, the largest sum taken (a sum over the groups). Only
/// the ranks a parameter's elements reach are visited: a group may have
/// 2^40 ranks.
static CheckedCount getShardStoredParamBytes(const StoragePlan &plan) {
  llvm::DenseMap<unsigned, llvm::DenseMap<int64_t, CheckedCount>> byRank;
  for (const PlannedParam &param : plan.params) {
    const std::optional<PlannedParam::ShardLayout> &layout = param.storedShard;
    if (!layout || param.numel == 0)
      continue;
    int64_t elementBytes = PlannedBuffer{param.dtype, 1}.getBytes();
    int64_t first = layout->offset / layout->shardNumel;
    int64_t last = (layout->offset + param.numel - 1) / layout->shardNumel;
    llvm::DenseMap<int64_t, CheckedCount> &ranks = byRank[layout->group];
    for (int64_t rank = first; rank <= last; ++rank)
      ranks[rank] +=
          CheckedCount(plan.getStoredNumel(param, rank)) * elementBytes;
  }
  CheckedCount total;
  for (const auto &entry : byRank) {
    int64_t most = 0;
    for (const auto &rank : entry.second)
      most = std::max(most,
                      rank.second.getOr(std::numeric_limits<int64_t>::max()));
    total += most;
  }
  return total;
}

FailureOr<RuntimeMemory> ddp::estimateRuntimeMemory(const StoragePlan &plan) {
  CheckedCount paramBytes, optimizerStateBytes, bufferBytes;
  int64_t largestParamBytes = 0;
  llvm::DenseSet<StringAttr> adamParams, updatedParams;
  func::FuncOp step = plan.step;
  Block &body = step.getBody().front();
  for (auto adam : body.getOps<AdamOp>())
    adamParams.insert(adam.getParamAttr().getAttr());
  updatedParams = adamParams;
  for (auto sgd : body.getOps<SGDOp>())
    updatedParams.insert(sgd.getParamAttr().getAttr());
  for (const PlannedParam &param : plan.params) {
    int64_t bytes = PlannedBuffer{param.dtype, param.numel}.getBytes();
    // A parameter stored in its gathered bucket is in the buffers' bytes;
    // one stored sharded is counted below.
    if (!param.inBucket && !param.storedShard)
      paramBytes += bytes;
    // Reading a sharded parameter whole gathers its bucket besides.
    CheckedCount readBytes = bytes;
    if (const std::optional<PlannedParam::ShardLayout> &layout =
            param.storedShard)
      readBytes += CheckedCount(plan.getStoredNumelBound(param)) *
                   (plan.groupSizes[layout->group] + 1) *
                   PlannedBuffer{param.dtype, 1}.getBytes();
    largestParamBytes = std::max(
        largestParamBytes,
        readBytes.getOr(std::numeric_limits<int64_t>::max()));
    ParamOp op = param.op;
    StringAttr name = op.getSymNameAttr();
    if (adamParams.contains(name))
      optimizerStateBytes += CheckedCount(param.numel) * 2 * sizeof(float);
    if (updatedParams.contains(name) && is16Bit(op.getTensorType()))
      optimizerStateBytes += CheckedCount(param.numel) * sizeof(float);
  }
  paramBytes += getShardStoredParamBytes(plan);
  // A shard optimizer's state covers the parameter elements of this rank's
  // shard: at most the shard.
  auto addShardState = [&](Value shard, Type paramShard, int64_t perElement) {
    if (is16Bit(paramShard))
      ++perElement;
    optimizerStateBytes +=
        CheckedCount(numElementsOf(shard)) * perElement * sizeof(float);
  };
  for (auto shardSgd : body.getOps<ShardSGDOp>())
    addShardState(shardSgd.getGrad(), shardSgd.getResult().getType(), 0);
  for (auto shardAdam : body.getOps<ShardAdamOp>())
    addShardState(shardAdam.getGrad(), shardAdam.getResult().getType(), 2);
  for (const PlannedBuffer &arena : plan.arenas)
    bufferBytes += arena.getBytes();

  // The CPU backend keeps one f32 copy per GEMM operand and result (each
  // grown to the largest) and widens a 16-bit collective's payload (as much
  // as each collective says: getWideningElements).
  int64_t gemmLhs = 0, gemmRhs = 0, gemmProduct = 0;
  CheckedCount collective = 0;
  auto growCollective = [&](CheckedCount numel) {
    collective = CheckedCount::max(collective, numel);
  };
  for (Operation &op : body) {
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (!is16Bit(gemm.getResult().getType()))
        continue;
      gemmLhs = std::max(gemmLhs, numElementsOf(gemm.getLhs()));
      gemmRhs = std::max(gemmRhs, numElementsOf(gemm.getRhs()));
      gemmProduct = std::max(gemmProduct, numElementsOf(gemm.getResult()));
    } else if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      if (is16Bit(collective.getPayload().getType()))
        growCollective(collective.getWideningElements());
    }
  }
  CheckedCount workingCopyBytes =
      (CheckedCount(gemmLhs) + gemmRhs + gemmProduct + collective) *
      sizeof(float);
  CheckedCount deterministicReductionBytes =
      getPeakDeterministicReductionBytes(plan);

  // The parts, and the total getTotalBytes makes of them.
  CheckedCount total =
      paramBytes + bufferBytes + optimizerStateBytes + workingCopyBytes;
  if (!total.fits())
    return emitError(step.getLoc(),
                     "the step needs more than 2^63 - 1 bytes per rank for "
                     "its parameters, buffers, optimizer state and working "
                     "copies; no rank can hold it");
  RuntimeMemory memory;
  memory.paramBytes = *paramBytes.get();
  memory.bufferBytes = *bufferBytes.get();
  memory.unsharedBufferBytes = plan.getUnsharedBufferBytes();
  memory.optimizerStateBytes = *optimizerStateBytes.get();
  memory.workingCopyBytes = *workingCopyBytes.get();
  memory.largestParamBytes = largestParamBytes;
  memory.deterministicReductionBytes = deterministicReductionBytes.get();
  return memory;
}

int64_t RuntimeMemory::getTotalBytes() const {
  // estimateRuntimeMemory has checked that this fits.
  return paramBytes + bufferBytes + optimizerStateBytes + workingCopyBytes;
}

