//===- OverlapTpComm.cpp - Overlap tensor-parallel collectives ------------===//
//
// Megatron's --tp-comm-overlap decided at compile time: GEMMs whose result a
// tensor-parallel collective reduces, or whose input one gathers, are split
// into row chunks, each chunk's collective running beside the next or the
// previous chunk's GEMM (pipeline), and the
// backward's collectives that only the next GEMM need not wait for run beside
// it (bulk). The pass decides everything first (the candidates here, their
// split counts from ddp/ScheduleModel's search on the simulator's clock, so
// that the simulation of the result predicts exactly what was chosen on),
// and only then rewrites, recording the counts as attributes.
// docs/Scheduling.md has the design.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/ScheduleModel/ScheduleModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace ddp {
#define GEN_PASS_DEF_OVERLAPTPCOMM
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;
using schedule::TpSplitCandidate;

namespace {

/// Gives each op a rewrite creates the pipeline task (`ddp.task`) of the op
/// it stands for, so that a pipelined step's tasks still cover every op
/// (the activation memory, the pipeline's lower bound and the printed
/// schedule read them).
struct TaskCopier : OpBuilder::Listener {
  explicit TaskCopier(Operation *from) : task(getPipelineTask(from)) {}
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    if (task)
      setPipelineTask(op, *task);
  }
  std::optional<PipelineTask> task;
};

class OverlapTpCommPass
    : public ddp::impl::OverlapTpCommBase<OverlapTpCommPass> {
public:
  using Base::Base;
  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  LogicalResult findCandidates(func::FuncOp step);
  void rewritePipeline(TpSplitCandidate &candidate);
  void rewriteGatherPipeline(TpSplitCandidate &candidate);
  void rewriteBulk(Operation *collective);

  /// tp-comm-num-splits as a number; nullopt for auto.
  std::optional<int64_t> fixedSplits;
  SmallVector<TpSplitCandidate> candidates;
  llvm::DenseMap<Operation *, size_t> candidateOfGemm, candidateOfCollective;
  /// The collectives to make bulk, in block order.
  SmallVector<Operation *> bulk;
  /// What auto's search predicted, when it ran.
  std::optional<double> predictedStepTime;
};

} // namespace

LogicalResult OverlapTpCommPass::initialize(MLIRContext *) {
  fixedSplits = numSplits.getValue().getCount();
  return success();
}

/// Whether every axis of the collective's group is a model-parallel one:
/// the collectives this pass schedules are the tensor-parallel ones.
static bool isModelParallel(CollectiveOpInterface collective) {
  return llvm::all_of(collective.getAxesAttr(), [](Attribute axis) {
    return isModelParallelAxis(cast<StringAttr>(axis).getValue());
  });
}

static bool isSynchronous(Operation *op) {
  return !cast<AsyncOpInterface>(op).getAsyncToken();
}

/// The name of the parameter a GEMM multiplies by, or "". A wgrad GEMM
/// does not read its weight: it is the weight of the dgrad GEMM that reads
/// the same output gradient.
static StringRef getWeightName(GemmOp gemm) {
  for (Value operand : {gemm.getRhs(), gemm.getLhs()})
    if (auto getParam = operand.getDefiningOp<GetParamOp>())
      return getParam.getParam();
  if (gemm.getPhase() == GemmPhase::Wgrad)
    for (Operation *user : gemm.getLhs().getUsers())
      if (auto dgrad = dyn_cast<GemmOp>(user);
          dgrad && dgrad.getPhase() == GemmPhase::Dgrad)
        return getWeightName(dgrad);
  return "";
}

LogicalResult OverlapTpCommPass::findCandidates(func::FuncOp step) {
  // Megatron's tp_comm_overlap_disable_qkv / _fc1 name TE's layers; ddp
  // finds them by the weight's name (the importer's Megatron names).
  auto isDisabledLayer = [&](GemmOp gemm) {
    StringRef weight = getWeightName(gemm);
    return (disableQkv && weight.contains("linear_qkv")) ||
           (disableFc1 && weight.contains("linear_fc1"));
  };
  auto groupSizeOf = [&](CollectiveOpInterface collective) {
    return getGroupSize(lookupMesh(step, collective.getMeshAttr()),
                        collective.getAxesAttr());
  };

  for (auto gemm : step.getBody().front().getOps<GemmOp>()) {
    // A count the user set; the dialect has checked it is positive.
    std::optional<int64_t> userSplits = getTpCommSplits(gemm);
    CollectiveOpInterface collective;
    if (gemm.getResult().hasOneUse())
      collective = dyn_cast<CollectiveOpInterface>(
          *gemm.getResult().user_begin());
    bool reduces =
        collective &&
        isa<AllReduceOp, ReduceScatterOp>(collective.getOperation()) &&
        isSynchronous(collective) && isModelParallel(collective) &&
        collective->getBlock() == gemm->getBlock();
    // Other readers of the gathered tensor (the backward's wgrad GEMM) must
    // come after the GEMM, where its chunks have all arrived.
    auto gather = gemm.getLhs().getDefiningOp<AllGatherOp>();
    bool gathers =
        !reduces && gather && isSynchronous(gather) &&
        isModelParallel(gather) && !candidateOfCollective.count(gather) &&
        gather->getBlock() == gemm->getBlock() &&
        llvm::all_of(gather.getResult().getUses(), [&](OpOperand &use) {
          return use.getOwner() == gemm.getOperation()
                     ? use.getOperandNumber() == 0
                     : use.getOwner()->getBlock() == gemm->getBlock() &&
                           gemm->isBeforeInBlock(use.getOwner());
        });
    if (gathers)
      collective = gather;
    // Row chunks of the result are row chunks of the lhs.
    bool splittable = (reduces || gathers) && !gemm.getTransposeLhs();
    if (userSplits) {
      if (!splittable)
        return gemm.emitError("has ")
               << DDPDialect::TpCommSplitsAttrHelper::getNameStr() << " = "
               << *userSplits
               << " but cannot be split: only a GEMM whose lhs is not "
                  "transposed and whose result only a synchronous "
                  "tensor-parallel reduce-scatter or all-reduce reads, or "
                  "whose lhs a synchronous tensor-parallel all-gather "
                  "gathers for it and for readers after it, can";
    }
    if (!splittable)
      continue;
    bool enabled = gathers ? overlapAg && gemm.getPhase() != GemmPhase::Wgrad
                   : gemm.getPhase() == GemmPhase::Fwd   ? overlapRs
                   : gemm.getPhase() == GemmPhase::Dgrad ? overlapRsDgrad
                                                         : false;
    if (!userSplits && (!enabled || isDisabledLayer(gemm)))
      continue;
    TpSplitCandidate candidate;
    candidate.gemm = gemm;
    candidate.collective = collective;
    if (isa<ReduceScatterOp, AllGatherOp>(collective.getOperation()))
      candidate.interleave = groupSizeOf(collective);
    candidate.gatherReadAfter =
        gathers && !gather.getResult().hasOneUse();
    // A count the IR or tp-comm-num-splits gives is not searched.
    candidate.fixed = userSplits || fixedSplits;
    if (userSplits) {
      candidate.splits = *userSplits;
    } else if (fixedSplits && candidate.allows(*fixedSplits)) {
      // A count the rows do not allow leaves the GEMM whole, as auto would.
      candidate.splits = *fixedSplits;
    }
    if (!candidate.allows(candidate.splits))
      return gemm.emitError("cannot be split into ")
             << candidate.splits << " chunks: its " << gemm.getM()
             << " rows must divide into " << candidate.splits << " x "
             << candidate.interleave
             << (candidate.interleave > 1
                     ? (gathers ? " (chunks x the all-gather's ranks)"
                                : " (chunks x the reduce-scatter's ranks)")
                     : "")
             << " equal parts";
    candidateOfGemm[gemm] = candidates.size();
    candidateOfCollective[collective] = candidates.size();
    candidates.push_back(candidate);
  }

  // Bulk: what the next GEMM does not read runs beside it. A collective
  // right before its first reader has nothing to hide behind.
  auto firstReader = [](Operation *op) -> Operation * {
    Operation *first = nullptr;
    for (Operation *user : op->getResult(0).getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
    return first;
  };
  for (Operation &op : step.getBody().front()) {
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    // Only these run in bulk; a send has no result to find a reader of.
    if (!isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op) ||
        !isSynchronous(&op) || !isModelParallel(collective) ||
        candidateOfCollective.count(&op))
      continue;
    Operation *reader = firstReader(&op);
    bool hides = reader && reader != op.getNextNode();
    if (isa<AllReduceOp, ReduceScatterOp>(op)) {
      auto dgrad = collective.getPayload().getDefiningOp<GemmOp>();
      if (bulkWgrad && hides && dgrad && dgrad.getPhase() == GemmPhase::Dgrad &&
          !isDisabledLayer(dgrad))
        bulk.push_back(&op);
      continue;
    }
    auto gather = dyn_cast<AllGatherOp>(op);
    if (!gather)
      continue;
    SmallVector<GemmOp> readers;
    bool onlyGemms = llvm::all_of(gather.getResult().getUsers(), [&](Operation *user) {
      auto gemm = dyn_cast<GemmOp>(user);
      if (gemm)
        readers.push_back(gemm);
      return gemm != nullptr;
    });
    if (!onlyGemms || readers.empty())
      continue;
    bool onlyWgrad = llvm::all_of(readers, [&](GemmOp gemm) {
      return gemm.getPhase() == GemmPhase::Wgrad && !isDisabledLayer(gemm);
    });
    if (bulkDgrad && hides && onlyWgrad)
      bulk.push_back(&op);
    else if (overlapAg)
      ++numAllGathersLeftWhole;
  }
  return success();
}

void OverlapTpCommPass::rewritePipeline(TpSplitCandidate &candidate) {
  GemmOp gemm = candidate.gemm;
  Operation *collective = candidate.collective;
  OpBuilder builder(collective);
  TaskCopier copier(gemm);
  builder.setListener(&copier);
  if (candidate.splits == 1) {
    setTpCommSplits(gemm, 1);
    // Where the decision was priced: right before its collective.
    gemm->moveBefore(collective);
    return;
  }
  int64_t count = candidate.splits;
  Location loc = gemm.getLoc();
  auto lhsType = cast<RankedTensorType>(gemm.getLhs().getType());
  auto resultType = cast<RankedTensorType>(gemm.getResult().getType());
  SmallVector<int64_t> lhsShape(lhsType.getShape());
  lhsShape[0] /= count;
  SmallVector<int64_t> resultShape(resultType.getShape());
  resultShape[0] /= count;
  auto chunkResultType = RankedTensorType::get(resultShape,
                                               resultType.getElementType());
  auto reducedType =
      cast<RankedTensorType>(collective->getResult(0).getType());
  SmallVector<int64_t> reducedShape(reducedType.getShape());
  reducedShape[0] /= count;
  auto chunkReducedType =
      RankedTensorType::get(reducedShape, reducedType.getElementType());
  auto tokenType = TokenType::get(builder.getContext());

  SmallVector<Value> reduced, tokens;
  for (int64_t index = 0; index < count; ++index) {
    auto chunk = ChunkOp::create(
        builder, loc, RankedTensorType::get(lhsShape, lhsType.getElementType()),
        gemm.getLhs(), index, count, candidate.interleave);
    auto piece = GemmOp::create(
        builder, loc, chunkResultType, gemm.getPhaseAttr(), chunk,
        gemm.getTransposeLhsAttr(), gemm.getRhs(), gemm.getTransposeRhsAttr(),
        gemm.getLayerAttr());
    Operation *reduction;
    if (auto allReduce = dyn_cast<AllReduceOp>(collective))
      reduction = AllReduceOp::create(
          builder, collective->getLoc(), chunkReducedType, tokenType,
          allReduce.getReductionAttr(), piece, allReduce.getMeshAttr(),
          allReduce.getAxesAttr(), /*asyncDependencies=*/ValueRange());
    else {
      auto scatter = cast<ReduceScatterOp>(collective);
      reduction = ReduceScatterOp::create(
          builder, collective->getLoc(), chunkReducedType, tokenType,
          scatter.getReductionAttr(), piece, scatter.getMeshAttr(),
          scatter.getAxesAttr(), /*asyncDependencies=*/ValueRange());
    }
    reduced.push_back(reduction->getResult(0));
    tokens.push_back(reduction->getResult(1));
  }
  for (Value token : tokens)
    WaitOp::create(builder, collective->getLoc(), token);
  auto concat = ConcatOp::create(builder, collective->getLoc(), reducedType,
                                 reduced);
  collective->getResult(0).replaceAllUsesWith(concat.getResult());
  collective->erase();
  gemm.erase();
  ++numGemmsPipelined;
  numChunks += count;
}

void OverlapTpCommPass::rewriteGatherPipeline(TpSplitCandidate &candidate) {
  GemmOp gemm = candidate.gemm;
  auto gather = cast<AllGatherOp>(candidate.collective.getOperation());
  OpBuilder builder(gather);
  TaskCopier copier(gemm);
  builder.setListener(&copier);
  if (candidate.splits == 1) {
    setTpCommSplits(gemm, 1);
    return;
  }
  int64_t count = candidate.splits;
  auto withRows = [&](Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] /= count;
    return RankedTensorType::get(shape, type.getElementType());
  };
  auto tokenType = TokenType::get(builder.getContext());
  SmallVector<Value> gathered, tokens;
  for (int64_t index = 0; index < count; ++index) {
    auto chunk = ChunkOp::create(builder, gather.getLoc(),
                                 withRows(gather.getInput()), gather.getInput(),
                                 index, count, /*interleave=*/1);
    auto chunkGather = AllGatherOp::create(
        builder, gather.getLoc(), withRows(gather.getResult()), tokenType,
        chunk, gather.getMeshAttr(), gather.getAxesAttr(),
        /*asyncDependencies=*/ValueRange());
    gathered.push_back(chunkGather.getResult());
    tokens.push_back(chunkGather.getAsyncToken());
  }
  builder.setInsertionPoint(gemm);
  SmallVector<Value> products;
  for (auto [piece, token] : llvm::zip(gathered, tokens)) {
    WaitOp::create(builder, gather.getLoc(), token);
    products.push_back(GemmOp::create(
        builder, gemm.getLoc(), withRows(gemm.getResult()), gemm.getPhaseAttr(),
        piece, gemm.getTransposeLhsAttr(), gemm.getRhs(),
        gemm.getTransposeRhsAttr(), gemm.getLayerAttr()));
  }
  auto concat = ConcatOp::create(builder, gemm.getLoc(),
                                 gemm.getResult().getType(), products,
                                 candidate.interleave);
  // The later readers get the gathered chunks stacked back, right after.
  Value whole;
  if (candidate.gatherReadAfter)
    whole = ConcatOp::create(builder, gather.getLoc(),
                             gather.getResult().getType(), gathered,
                             candidate.interleave);
  gemm.getResult().replaceAllUsesWith(concat.getResult());
  gemm.erase();
  if (whole)
    gather.getResult().replaceAllUsesWith(whole);
  gather.erase();
  ++numGemmsPipelined;
  numChunks += count;
}

void OverlapTpCommPass::rewriteBulk(Operation *collective) {
  Operation *first = nullptr;
  for (Operation *user : collective->getResult(0).getUsers())
    if (!first || user->isBeforeInBlock(first))
      first = user;
  OpBuilder builder(collective);
  TaskCopier copier(collective);
  builder.setListener(&copier);
  Operation *async = createAsyncCollective(builder, collective);
  async->setDiscardableAttrs(collective->getDiscardableAttrDictionary());
  setTpCommBulk(async);
  collective->getResult(0).replaceAllUsesWith(async->getResult(0));
  collective->erase();
  builder.setInsertionPoint(first);
  WaitOp::create(builder, async->getLoc(), async->getResult(1));
  ++numBulkCollectives;
}

void OverlapTpCommPass::runOnOperation() {
  func::FuncOp step = getOperation();
  if (!tpCommOverlap || step.isExternal() || !step.getBody().hasOneBlock())
    return;
  candidates.clear();
  candidateOfGemm.clear();
  candidateOfCollective.clear();
  bulk.clear();
  predictedStepTime.reset();
  // Decide (every check first, so that a failure leaves the step as it
  // was), then rewrite.
  if (failed(findCandidates(step)))
    return signalPassFailure();
  FailureOr<std::optional<double>> predicted = schedule::searchTpSplits(
      step, candidates, bulk, hardware, dataParallelSize);
  if (failed(predicted))
    return signalPassFailure();
  predictedStepTime = *predicted;
  for (TpSplitCandidate &candidate : candidates) {
    if (candidate.gathersInput())
      rewriteGatherPipeline(candidate);
    else
      rewritePipeline(candidate);
  }
  for (Operation *collective : bulk)
    rewriteBulk(collective);
  // What ddp-simulate of the result reproduces.
  if (predictedStepTime)
    setTpCommPredictedStepUs(step, *predictedStepTime * 1e6);
}
