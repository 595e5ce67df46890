//===- SplitBatch.cpp - Row slices whose collectives overlap each other ---===//
//
// ddp-split-batch: Domino's idea (Wang et al., 2024) on the forward pass.
// Between one layer's attention and the next, every op of a transformer
// layer works row by row (the tokens): the projections, the bias and
// residual adds, the norms, the MLP, and their tensor-parallel collectives.
// Such a span is split into N row slices, each slice's collectives issued
// asynchronously, and the slices interleaved so that one slice's collective
// runs beside the next slice's compute. What the span computes for the ops
// after it (attention, the backward) is stacked back whole (ddp.concat), so
// every reader outside it reads the tensor it read before, and every row is
// computed by the same kernel on the same values: the step is bitwise the
// same. docs/ComputeScheduling.md has the design.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"
#include "ddp/Dialect/DDP/IR/MeshLookup.h"
#include "ddp/Dialect/DDP/IR/TensorBytes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Sim/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"

namespace ddp {
#define GEN_PASS_DEF_SPLITBATCH
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

/// The counts `auto` tries.
static constexpr int64_t kAutoCounts[] = {2, 3, 4};

/// The rows of a 2-D tensor value, or nullopt.
static std::optional<int64_t> getRows(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() != 2 || !type.hasStaticShape())
    return std::nullopt;
  return type.getDimSize(0);
}

static RankedTensorType withRows(Type type, int64_t rows) {
  auto ranked = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(ranked.getShape());
  shape[0] = rows;
  return RankedTensorType::get(shape, ranked.getElementType());
}

/// A synchronous collective over a tensor-parallel group (model-parallel
/// axes, none of them the pipeline's) on a 2-D tensor.
static bool isSplittableCollective(Operation *op) {
  if (!isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op))
    return false;
  if (cast<AsyncOpInterface>(op).getAsyncToken())
    return false;
  auto collective = cast<CollectiveOpInterface>(op);
  if (!getRows(collective.getPayload()))
    return false;
  return llvm::all_of(collective.getAxesAttr(), [](Attribute axis) {
    StringRef name = cast<StringAttr>(axis).getValue();
    return name != "pp" && isModelParallelAxis(name);
  });
}

/// The kernels that mix rows (a token with the others of its sequence), or
/// that make or read what is not one row per token.
static bool mixesRows(StringRef kind) {
  return kind.contains("attention") || kind.contains("embedding") ||
         kind.contains("cross_entropy") || kind.contains("moe") ||
         kind.contains("router");
}

/// An op a span may hold, by its kind alone.
static bool isSpanKind(Operation *op) {
  if (auto gemm = dyn_cast<GemmOp>(op))
    return gemm.getPhase() == GemmPhase::Fwd && !gemm.getTransposeLhs() &&
           getRows(gemm.getLhs());
  if (auto compute = dyn_cast<ComputeOp>(op)) {
    if (compute.getRouting() || op->hasAttr("ddp.routed") ||
        op->hasAttr("ddp.routed_fill") || mixesRows(compute.getKind()) ||
        compute->getNumResults() == 0)
      return false;
    Type first = compute->getResult(0).getType();
    return getRows(compute->getResult(0)) &&
           llvm::all_of(compute->getResultTypes(),
                        [&](Type type) { return type == first; });
  }
  return isSplittableCollective(op);
}

/// The operands of a span op that hold its rows (the others, weights and
/// broadcast operands, are read whole by every slice).
static SmallVector<unsigned> getSlicedOperands(Operation *op) {
  if (isa<GemmOp, CollectiveOpInterface>(op))
    return {0};
  SmallVector<unsigned> sliced;
  std::optional<int64_t> rows = getRows(op->getResult(0));
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (getRows(operand) == rows)
      sliced.push_back(index);
  return sliced;
}

namespace {
/// A run of ops between two row-mixing ops, split into row slices.
struct Span {
  /// In block order, without the parameter reads between them.
  SmallVector<Operation *> ops;
  /// The last op of the run in the block (the slices go after it).
  Operation *last = nullptr;
  /// The rows of the residual stream in the span (a rank's shard under
  /// sequence parallelism), and the tensor-parallel size when the span
  /// gathers and scatters (the other rows are that many times larger and
  /// are sliced interleaved, as ddp.chunk and ddp.concat do).
  int64_t shardRows = 0;
  int64_t interleave = 1;
  llvm::DenseSet<Operation *> members;

  /// How rows of `value` are sliced: contiguous (1) or interleaved over the
  /// group; nullopt when the value has other rows.
  std::optional<int64_t> getInterleave(Value value) const {
    std::optional<int64_t> rows = getRows(value);
    if (!rows)
      return std::nullopt;
    if (*rows == shardRows)
      return 1;
    if (interleave > 1 && *rows == shardRows * interleave)
      return interleave;
    return std::nullopt;
  }
  bool isInside(Value value) const {
    Operation *producer = value.getDefiningOp();
    return producer && members.contains(producer);
  }
};

class SplitBatchPass : public ddp::impl::SplitBatchBase<SplitBatchPass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  SmallVector<Span> findSpans(func::FuncOp step);
  /// Whether `op` can be split in `span`; fills `shardRows` first.
  bool isSplittable(const Span &span, Operation *op) const;
  bool allows(const Span &span, int64_t count) const;
  void rewrite(Span &span, int64_t count);
  FailureOr<int64_t> chooseCount(func::FuncOp step);
};
} // namespace

bool SplitBatchPass::isSplittable(const Span &span, Operation *op) const {
  auto sliced = [&](Value value) { return span.getInterleave(value); };
  if (auto gemm = dyn_cast<GemmOp>(op))
    // A weight made in the span (an attention written as GEMMs) would be
    // sliced with the rows; a count the user pinned for ddp-overlap-tp-comm
    // is the user's decision on this GEMM as it is.
    return sliced(gemm.getLhs()).has_value() &&
           !span.isInside(gemm.getRhs()) &&
           !op->hasAttr(DDPDialect::TpCommSplitsAttrHelper::getNameStr());
  if (auto compute = dyn_cast<ComputeOp>(op)) {
    auto result = cast<RankedTensorType>(compute->getResult(0).getType());
    std::optional<int64_t> mode = sliced(compute->getResult(0));
    if (!mode || result.getDimSize(0) == 0)
      return false;
    int64_t width = result.getNumElements() / result.getDimSize(0);
    for (Value operand : compute.getInputs()) {
      auto type = cast<RankedTensorType>(operand.getType());
      // A row operand: sliced with the result. The runtime's stand-in
      // reads operand element i for result element i, so its rows must be
      // as wide as the result's (docs/RationaleDDP.md).
      if (type.getRank() == 2 && getRows(operand) == result.getDimSize(0)) {
        if (type.getDimSize(1) != width)
          return false;
        // Read from outside the span, it is a chunk view: interleaved, only
        // a GEMM reads one.
        if (!span.isInside(operand) && *mode != 1)
          return false;
        continue;
      }
      // A broadcast operand (a bias, a norm's weight): element i mod its
      // size, the same in every slice when its size divides a row; read
      // whole by every slice, so not one the span makes.
      int64_t size = type.getNumElements();
      if (size == 0 || width % size != 0 || span.isInside(operand))
        return false;
    }
    return true;
  }
  auto collective = cast<CollectiveOpInterface>(op);
  std::optional<int64_t> in = sliced(collective.getPayload());
  std::optional<int64_t> out = sliced(op->getResult(0));
  if (!in || !out)
    return false;
  // An interleaved chunk of a tensor made before the span is a view only a
  // GEMM's lhs reads.
  if (*in > 1 && !span.isInside(collective.getPayload()))
    return false;
  if (isa<ReduceScatterOp>(op))
    return *in > 1 && *out == 1;
  if (isa<AllGatherOp>(op))
    return *in == 1 && *out > 1;
  return true;
}

SmallVector<Span> SplitBatchPass::findSpans(func::FuncOp step) {
  SmallVector<Span> spans;
  Block &body = step.getBody().front();
  // Runs of span kinds (parameter reads between them allowed), in one
  // pipeline task.
  SmallVector<SmallVector<Operation *>> runs;
  SmallVector<Operation *> lasts;
  SmallVector<Operation *> current;
  Operation *last = nullptr;
  Attribute task;
  auto close = [&]() {
    if (!current.empty()) {
      runs.push_back(current);
      lasts.push_back(last);
    }
    current.clear();
  };
  for (Operation &op : body) {
    if (isa<GetParamOp>(op)) {
      if (!current.empty())
        last = &op;
      continue;
    }
    Attribute opTask = op.getAttr("ddp.task");
    if (!isSpanKind(&op) || op.hasAttr("ddp.schedule_node") ||
        (!current.empty() && opTask != task))
      close();
    if (!isSpanKind(&op) || op.hasAttr("ddp.schedule_node"))
      continue;
    if (current.empty())
      task = opTask;
    current.push_back(&op);
    last = &op;
  }
  close();

  // Each run, cut where an op cannot be split in it.
  for (auto [run, runLast] : llvm::zip(runs, lasts)) {
    SmallVector<Operation *> pending(run.begin(), run.end());
    // The rows and the interleave of a span of `ops`.
    auto describe = [&](ArrayRef<Operation *> ops) {
      Span span;
      span.ops.assign(ops.begin(), ops.end());
      span.members.insert(ops.begin(), ops.end());
      int64_t minRows = std::numeric_limits<int64_t>::max();
      for (Operation *op : ops) {
        for (Value value : op->getResults())
          if (std::optional<int64_t> rows = getRows(value))
            minRows = std::min(minRows, *rows);
        if (auto collective = dyn_cast<CollectiveOpInterface>(op);
            collective && isa<ReduceScatterOp, AllGatherOp>(op))
          span.interleave = getGroupSize(
              lookupMesh(step, collective.getMeshAttr()),
              collective.getAxesAttr());
      }
      span.shardRows = minRows;
      return span;
    };
    auto firstUnsplittable = [&](const Span &span) {
      size_t bad = 0;
      while (bad < span.ops.size() && isSplittable(span, span.ops[bad]))
        ++bad;
      return bad;
    };
    while (!pending.empty()) {
      Span span = describe(pending);
      size_t bad = firstUnsplittable(span);
      SmallVector<Operation *> rest;
      bool cut = bad < span.ops.size();
      if (cut) {
        rest.assign(span.ops.begin() + bad + 1, span.ops.end());
        // The part before the cut, described alone, until every op of it
        // can be split.
        SmallVector<Operation *> part(span.ops.begin(), span.ops.begin() + bad);
        while (!part.empty()) {
          span = describe(part);
          size_t partBad = firstUnsplittable(span);
          if (partBad == part.size())
            break;
          part.resize(partBad);
        }
        if (part.empty())
          span = describe({});
      }
      // Cut, the slices go before the op that ends the part; whole, after
      // the parameter reads that end the run.
      span.last = !cut ? runLast : span.ops.empty() ? nullptr : span.ops.back();
      bool hasCollective = llvm::any_of(span.ops, [](Operation *op) {
        return isa<CollectiveOpInterface>(op);
      });
      // Some compute beside the collectives. In the backward that is a
      // gradient's add before the all-gather of the next dgrad's input
      // (under sequence parallelism): its slices overlap each other there,
      // where ddp-overlap-tp-comm would pipeline the all-gather with the
      // dgrad's chunks instead; auto keeps whichever is faster.
      bool hasCompute = llvm::any_of(span.ops, [](Operation *op) {
        return !isa<CollectiveOpInterface>(op);
      });
      if (hasCollective && hasCompute)
        spans.push_back(std::move(span));
      pending = std::move(rest);
    }
  }
  return spans;
}

bool SplitBatchPass::allows(const Span &span, int64_t count) const {
  for (Operation *op : span.ops)
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults())) {
      std::optional<int64_t> mode = span.getInterleave(value);
      if (!mode)
        continue;
      // The rows bound the count first, so the product cannot wrap.
      int64_t rows = *getRows(value);
      if (count > rows || rows % (count * *mode) != 0)
        return false;
    }
  return true;
}

void SplitBatchPass::rewrite(Span &span, int64_t count) {
  OpBuilder builder(span.last->getContext());
  builder.setInsertionPointAfter(span.last);
  Attribute task = span.ops.front()->getAttr("ddp.task");
  auto tag = [&](Operation *op) {
    if (task)
      op->setAttr("ddp.task", task);
  };
  SmallVector<SmallVector<Operation *>> slices(count);
  SmallVector<IRMapping> mappings(count);
  llvm::DenseMap<std::pair<Value, int64_t>, Value> chunks;
  auto sliceOf = [&](Value value, int64_t index) -> Value {
    std::optional<int64_t> mode = span.getInterleave(value);
    assert(mode && "a sliced operand has the span's rows");
    Value &chunk = chunks[{value, index}];
    if (!chunk) {
      auto op = ChunkOp::create(
          builder, value.getLoc(),
          withRows(value.getType(), *getRows(value) / count), value,
          builder.getI64IntegerAttr(index), builder.getI64IntegerAttr(count),
          builder.getI64IntegerAttr(*mode));
      tag(op);
      slices[index].push_back(op);
      chunk = op.getResult();
    }
    return chunk;
  };

  for (int64_t index = 0; index < count; ++index) {
    IRMapping &mapping = mappings[index];
    for (Operation *op : span.ops) {
      // Values of the span map to this slice's; the rows read from before
      // the span are chunk views.
      Operation *clone = builder.clone(*op, mapping);
      for (unsigned operand : getSlicedOperands(op))
        if (!span.isInside(op->getOperand(operand)))
          clone->setOperand(operand, sliceOf(op->getOperand(operand), index));
      for (Value result : clone->getResults())
        if (std::optional<int64_t> rows = getRows(result))
          result.setType(withRows(result.getType(), *rows / count));
      if (auto compute = dyn_cast<ComputeOp>(clone)) {
        // Each slice moves its rows and reads the broadcast operands (a
        // bias, a norm's weight) whole.
        double broadcast = 0;
        llvm::SmallVector<unsigned> rowOperands = getSlicedOperands(op);
        for (auto [index, operand] : llvm::enumerate(op->getOperands()))
          if (!llvm::is_contained(rowOperands, index))
            broadcast += getTensorBytes(operand);
        double bytes = compute.getBytes().convertToDouble();
        broadcast = std::min(broadcast, bytes);
        compute.setFlopsAttr(builder.getF64FloatAttr(
            compute.getFlops().convertToDouble() / count));
        compute.setBytesAttr(
            builder.getF64FloatAttr((bytes - broadcast) / count + broadcast));
      }
      if (isa<CollectiveOpInterface>(clone)) {
        Operation *async = createAsyncCollective(builder, clone);
        async->setDiscardableAttrs(clone->getDiscardableAttrDictionary());
        clone->erase();
        clone = async;
      }
      for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
        mapping.map(from, to);
      slices[index].push_back(clone);
    }
  }

  // Each slice's waits, right before the first op of the slice that reads
  // the collective's result (or at the slice's end).
  for (SmallVector<Operation *> &slice : slices) {
    SmallVector<Operation *> ordered;
    llvm::DenseMap<Operation *, Operation *> waitOf;
    SmallVector<Operation *> unread;
    for (Operation *op : slice)
      if (auto async = dyn_cast<AsyncOpInterface>(op);
          async && async.getAsyncToken()) {
        auto wait = WaitOp::create(builder, op->getLoc(), async.getAsyncToken());
        tag(wait);
        waitOf[op] = wait;
        unread.push_back(op);
      }
    for (Operation *op : slice) {
      for (Value operand : op->getOperands())
        if (Operation *producer = operand.getDefiningOp())
          if (Operation *wait = waitOf.lookup(producer)) {
            ordered.push_back(wait);
            waitOf.erase(producer);
            llvm::erase(unread, producer);
          }
      ordered.push_back(op);
    }
    for (Operation *op : unread)
      ordered.push_back(waitOf.lookup(op));
    slice = std::move(ordered);
  }

  // Domino's order: each slice up to and including its next collective,
  // then the next slice, round and round.
  SmallVector<Operation *> order;
  SmallVector<size_t> next(count, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t index = 0; index < count; ++index) {
      SmallVector<Operation *> &slice = slices[index];
      while (next[index] < slice.size()) {
        Operation *op = slice[next[index]++];
        order.push_back(op);
        progress = true;
        if (isa<CollectiveOpInterface>(op))
          break;
      }
    }
  }

  // What the ops after the span read: the slices stacked back.
  for (Operation *op : span.ops)
    for (Value result : op->getResults()) {
      bool readAfter = llvm::any_of(result.getUsers(), [&](Operation *user) {
        return !span.members.contains(user);
      });
      if (!readAfter)
        continue;
      SmallVector<Value> pieces;
      for (IRMapping &mapping : mappings)
        pieces.push_back(mapping.lookup(result));
      auto concat = ConcatOp::create(
          builder, op->getLoc(), result.getType(), pieces,
          builder.getI64IntegerAttr(*span.getInterleave(result)));
      tag(concat);
      order.push_back(concat);
      result.replaceUsesWithIf(concat.getResult(), [&](OpOperand &use) {
        return !span.members.contains(use.getOwner());
      });
    }

  Operation *after = span.last;
  for (Operation *op : order) {
    op->moveAfter(after);
    after = op;
  }
  for (Operation *op : llvm::reverse(span.ops))
    op->erase();
}

FailureOr<int64_t> SplitBatchPass::chooseCount(func::FuncOp step) {
  FailureOr<sim::Pricing> pricing =
      sim::getPricing(step, hardware, dataParallelSize);
  if (failed(pricing))
    return failure();
  auto price = [&](func::FuncOp candidate) -> FailureOr<double> {
    FailureOr<sim::SimResult> result =
        sim::simulateStep(candidate, pricing->model, pricing->options);
    if (failed(result))
      return failure();
    return result->stepTime;
  };
  FailureOr<double> best = price(step);
  if (failed(best))
    return failure();
  int64_t chosen = 1;
  auto module = step->getParentOfType<ModuleOp>();
  SmallVector<Span> spans = findSpans(step);
  for (int64_t count : kAutoCounts) {
    // A count no span's rows allow changes nothing.
    if (llvm::none_of(spans, [&](const Span &span) {
          return allows(span, count);
        }))
      continue;
    // A copy beside the step, split and priced, then dropped.
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto copy = cast<func::FuncOp>(builder.clone(*step));
    copy.setSymName((step.getSymName() + "_batch_split_candidate").str());
    bool any = false;
    for (Span &span : findSpans(copy))
      if (allows(span, count)) {
        rewrite(span, count);
        any = true;
      }
    FailureOr<double> time = any ? price(copy) : FailureOr<double>(*best);
    copy.erase();
    if (failed(time))
      return failure();
    if (*time < *best) {
      best = *time;
      chosen = count;
    }
  }
  return chosen;
}

void SplitBatchPass::runOnOperation() {
  std::optional<int64_t> fixed = batchSplit.getValue().getCount();
  if (fixed == 1)
    return;
  SmallVector<func::FuncOp> steps;
  for (auto step : getOperation().getOps<func::FuncOp>())
    if (!step.isExternal() && step.getBody().hasOneBlock())
      steps.push_back(step);
  for (func::FuncOp step : steps) {
    int64_t count = 0;
    if (fixed) {
      count = *fixed;
    } else {
      FailureOr<int64_t> chosen = chooseCount(step);
      if (failed(chosen))
        return signalPassFailure();
      count = *chosen;
    }
    bool any = false;
    if (count > 1)
      for (Span &span : findSpans(step)) {
        // A count the rows do not allow leaves the span whole, as
        // tp-comm-num-splits leaves a GEMM.
        if (!allows(span, count))
          continue;
        rewrite(span, count);
        ++numSpansSplit;
        any = true;
      }
    // The count the step's spans were split into (1: none).
    setBatchSplit(step, any ? count : 1);
  }
}
