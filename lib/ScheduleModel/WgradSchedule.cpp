//===- WgradSchedule.cpp - Weight gradients delayed into communication ---===//
//
// ddp-schedule-compute's decision: a list scheduler that walks the step in
// block order on the simulator's clock and holds back the weight-gradient
// GEMMs of transformer layers, which nothing but their gradient's sum
// reads, to run them where the compute stream would otherwise wait for a
// collective (docs/ComputeScheduling.md). Every other
// op keeps its order; an op that reads a held GEMM's result (its
// accumulation, its grad_ready, a bucket it fills) waits with it.
//
//===----------------------------------------------------------------------===//

#include "ddp/ScheduleModel/ScheduleModel.h"

#include "ddp/Dialect/DDP/IR/TensorBytes.h"
#include "ddp/Sim/Simulator.h"
#include "ddp/Support/FormatNumber.h"

#include "llvm/ADT/STLExtras.h"

#include <deque>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace ddp;
using namespace ddp::schedule;

/// The transformer layer an op belongs to (its `layer` attribute).
static std::optional<int64_t> getLayerOf(Operation *op) {
  if (auto layer = op->getAttrOfType<IntegerAttr>("layer"))
    return layer.getInt();
  return std::nullopt;
}

/// Ops whose only dependences are their operands (and the compute stream's
/// order, which this scheduler is allowed to change). The optimizer, the
/// parameter writes and the kernels the compiler does not model are not:
/// every held op runs before them.
static bool isReorderable(Operation *op) {
  return isa<GetParamOp, GemmOp, ComputeOp, AccumulateOp, ScaleOp, CastOp,
             GradReadyOp, AllReduceOp, ReduceScatterOp, AllGatherOp,
             BroadcastOp, AllToAllOp, AllToAllVOp, SendOp, RecvOp, WaitOp,
             JoinOp, ChunkOp, ConcatOp, BucketPackOp, BucketUnpackOp>(op);
}

/// A collective whose group spans ranks that run other programs (the
/// stage-to-stage calls, the embedding group over pipeline ranks): those
/// programs pair their calls with this one in its place, so it never waits
/// for a held GEMM.
static bool crossesPrograms(Operation *op) {
  if (isa<SendOp, RecvOp>(op))
    return true;
  auto collective = dyn_cast<CollectiveOpInterface>(op);
  if (!collective)
    return false;
  return llvm::any_of(collective.getAxesAttr(), [](Attribute axis) {
    auto name = dyn_cast<StringAttr>(axis);
    return name && name.getValue() == "pp";
  });
}

/// A weight-gradient GEMM of a transformer layer, outside the W passes a
/// pipeline schedule places itself.
static bool isDelayable(Operation *op) {
  auto gemm = dyn_cast<GemmOp>(op);
  if (!gemm || gemm.getPhase() != GemmPhase::Wgrad || !getLayerOf(op))
    return false;
  if (auto task = op->getAttrOfType<StringAttr>("ddp.task"))
    return !task.getValue().starts_with("W");
  return true;
}

/// What a held GEMM keeps live: its operands.
static int64_t getHeldBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()))
      bytes += getTensorBytes(operand);
  return bytes;
}

namespace {
/// One walk of the step: the order it makes and what it predicts.
class Walk {
public:
  Walk(func::FuncOp step, const timing::CostModel &model,
       const sim::SimOptions &options, const std::set<int64_t> *layers,
       int64_t budget)
      : step(step), model(&model), options(options), layers(layers),
        budget(budget) {}

  LogicalResult run();

  std::vector<Operation *> order;
  llvm::DenseSet<Operation *> delayed;
  /// The layers one of whose held GEMMs ran while the compute stream would
  /// have waited.
  std::set<int64_t> filledLayers;
  double stepTime = 0;

private:
  LogicalResult emit(Operation *op);
  LogicalResult emitHeld(Operation *op);
  LogicalResult release();
  LogicalResult flushAll();
  LogicalResult flushOutsideHorizon(Operation *op);
  LogicalResult fillUntil(double time);
  bool readsHeld(Operation *op) const;
  bool mayHold(Operation *op) const;

  func::FuncOp step;
  const timing::CostModel *model;
  sim::SimOptions options;
  const std::set<int64_t> *layers;
  int64_t budget;

  std::unique_ptr<sim::IncrementalSimulation> simulation;
  /// Walked and not emitted: the held GEMMs, and the ops that read them.
  llvm::DenseSet<Operation *> held;
  std::deque<Operation *> heldGemms;
  std::vector<Operation *> heldReaders;
  /// The asynchronous ops whose wait is held: their readers wait too.
  llvm::DenseSet<Operation *> uncovered;
  /// Each op's place in the block, and the latest place emitted so far.
  llvm::DenseMap<Operation *, size_t> position;
  size_t latestEmitted = 0;
  int64_t heldBytes = 0;
};
} // namespace

bool Walk::readsHeld(Operation *op) const {
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    Operation *producer = operand.getDefiningOp();
    // The token of an op whose wait is held may be joined and waited; its
    // result waits for that wait.
    return producer &&
           (held.contains(producer) ||
            (uncovered.contains(producer) && !isa<TokenType>(operand.getType())));
  });
}

/// The asynchronous ops whose end a wait on `token` waits for (through
/// joins).
static void collectWaitedOps(Value token,
                             llvm::SmallPtrSetImpl<Operation *> &ops) {
  Operation *producer = token.getDefiningOp();
  if (!producer)
    return;
  if (auto join = dyn_cast<JoinOp>(producer)) {
    for (Value each : join.getTokens())
      collectWaitedOps(each, ops);
    return;
  }
  ops.insert(producer);
}

bool Walk::mayHold(Operation *op) const {
  if (!isDelayable(op))
    return false;
  if (layers && !layers->count(*getLayerOf(op)))
    return false;
  return getHeldBytes(op) <= budget - heldBytes;
}

LogicalResult Walk::emit(Operation *op) {
  if (failed(simulation->simulate(op)))
    return failure();
  order.push_back(op);
  latestEmitted = std::max(latestEmitted, position.lookup(op));
  // What a wait covers may be read from now on.
  if (auto wait = dyn_cast<WaitOp>(op)) {
    llvm::SmallPtrSet<Operation *, 4> covered;
    collectWaitedOps(wait.getToken(), covered);
    for (Operation *each : covered)
      uncovered.erase(each);
  }
  return success();
}

LogicalResult Walk::emitHeld(Operation *op) {
  held.erase(op);
  heldBytes -= getHeldBytes(op);
  // Delayed: an op that came after it runs before it.
  if (latestEmitted > position.lookup(op))
    delayed.insert(op);
  if (failed(emit(op)))
    return failure();
  return release();
}

/// Emits the held readers whose held operands have all run, in their
/// order, up to the first that must still wait: a reader never passes
/// another, so none passes the wait that covers what it reads.
LogicalResult Walk::release() {
  size_t released = 0;
  for (; released < heldReaders.size(); ++released) {
    Operation *reader = heldReaders[released];
    if (readsHeld(reader))
      break;
    held.erase(reader);
    if (failed(emit(reader)))
      return failure();
  }
  heldReaders.erase(heldReaders.begin(), heldReaders.begin() + released);
  return success();
}

LogicalResult Walk::flushAll() {
  while (!heldGemms.empty()) {
    Operation *gemm = heldGemms.front();
    heldGemms.pop_front();
    if (failed(emitHeld(gemm)))
      return failure();
  }
  if (failed(release()))
    return failure();
  // Nothing is held any more, so every reader left can run; in their
  // order, which is the block's.
  for (Operation *reader : heldReaders) {
    held.erase(reader);
    if (failed(emit(reader)))
      return failure();
  }
  heldReaders.clear();
  return success();
}

/// A held GEMM of layer l runs before any op of a layer other than l and
/// the one the backward reaches next (l - 1), and before any op of another
/// pipeline task or combined-1F1B node: it may fill the waits of its own
/// layer's backward and of the next one.
LogicalResult Walk::flushOutsideHorizon(Operation *op) {
  std::optional<int64_t> layer = getLayerOf(op);
  Attribute task = op->getAttr("ddp.task");
  Attribute node = op->getAttr("ddp.schedule_node");
  if (!layer && !task && !node)
    return success();
  for (size_t index = 0; index < heldGemms.size();) {
    Operation *gemm = heldGemms[index];
    int64_t own = *getLayerOf(gemm);
    bool outside = (layer && *layer != own && *layer != own - 1) ||
                   (task && task != gemm->getAttr("ddp.task")) ||
                   (node && node != gemm->getAttr("ddp.schedule_node"));
    if (!outside) {
      ++index;
      continue;
    }
    heldGemms.erase(heldGemms.begin() + index);
    if (failed(emitHeld(gemm)))
      return failure();
  }
  return success();
}

/// Runs held GEMMs, oldest first, while the compute stream would wait
/// until `time`.
LogicalResult Walk::fillUntil(double time) {
  timing::StepClock &clock = simulation->getClock();
  while (!heldGemms.empty() && clock.getNow() < time) {
    Operation *gemm = heldGemms.front();
    heldGemms.pop_front();
    filledLayers.insert(*getLayerOf(gemm));
    if (failed(emitHeld(gemm)))
      return failure();
  }
  return success();
}

LogicalResult Walk::run() {
  FailureOr<std::unique_ptr<sim::IncrementalSimulation>> created =
      sim::IncrementalSimulation::create(step, *model, options);
  if (failed(created))
    return failure();
  simulation = std::move(*created);
  for (auto [index, op] : llvm::enumerate(step.getBody().front()))
    position[&op] = index;
  for (Operation &each : step.getBody().front()) {
    Operation *op = &each;
    if (op->hasTrait<OpTrait::IsTerminator>() || !isReorderable(op)) {
      if (failed(flushAll()) || failed(emit(op)))
        return failure();
      continue;
    }
    // A stage-to-stage call carries the task of the pass it belongs to or
    // the next one; flushing there could split a batch of calls.
    if (!isa<SendOp, RecvOp>(op) && failed(flushOutsideHorizon(op)))
      return failure();
    if (readsHeld(op)) {
      if (!crossesPrograms(op)) {
        held.insert(op);
        heldReaders.push_back(op);
        if (auto wait = dyn_cast<WaitOp>(op)) {
          llvm::SmallPtrSet<Operation *, 4> waited;
          collectWaitedOps(wait.getToken(), waited);
          uncovered.insert(waited.begin(), waited.end());
        }
        continue;
      }
      if (failed(flushAll()))
        return failure();
    } else if (mayHold(op)) {
      held.insert(op);
      heldGemms.push_back(op);
      heldBytes += getHeldBytes(op);
      continue;
    }
    if (auto wait = dyn_cast<WaitOp>(op))
      if (failed(fillUntil(simulation->getTokenDone(wait.getToken()))))
        return failure();
    if (failed(emit(op)))
      return failure();
  }
  if (failed(flushAll()))
    return failure();
  stepTime = simulation->finish().stepTime;
  return success();
}

int64_t ddp::schedule::getLiveTensorPeak(func::FuncOp step) {
  SmallVector<Operation *> order;
  for (Operation &op : step.getBody().front())
    order.push_back(&op);
  return getLiveTensorPeak(order);
}

int64_t ddp::schedule::getLiveTensorPeak(ArrayRef<Operation *> order) {
  // A view lives as long as what it views: grad_ready returns its operand,
  // a chunk and a bucket's unpacked gradient are rows of theirs.
  auto baseOf = [](Value value) {
    while (Operation *producer = value.getDefiningOp()) {
      if (auto ready = dyn_cast<GradReadyOp>(producer))
        value = ready.getGrad();
      else if (auto chunk = dyn_cast<ChunkOp>(producer))
        value = chunk.getInput();
      else if (auto unpack = dyn_cast<BucketUnpackOp>(producer))
        value = unpack.getBucket();
      else
        break;
    }
    return value;
  };
  llvm::DenseMap<Operation *, size_t> position;
  for (auto [index, op] : llvm::enumerate(order))
    position[op] = index;
  llvm::DenseMap<Value, size_t> lastUse;
  for (auto [index, op] : llvm::enumerate(order))
    for (Value operand : op->getOperands()) {
      Value base = baseOf(operand);
      size_t &last = lastUse[base];
      last = std::max(last, index);
    }
  // A bucket is its gradients, made in place in it (as the simulator and
  // the storage plan have them): they live as long as the bucket is read.
  for (Operation *op : order)
    if (auto pack = dyn_cast<BucketPackOp>(op)) {
      auto bucketEnd = lastUse.find(pack->getResult(0));
      if (bucketEnd == lastUse.end())
        continue;
      for (Value operand : pack->getOperands()) {
        size_t &last = lastUse[baseOf(operand)];
        last = std::max(last, bucketEnd->second);
      }
    }
  // Bytes made at each position, and freed after each; summed in 128 bits
  // (each tensor fits in int64, their sum need not).
  std::vector<__int128> delta(order.size() + 1, 0);
  for (auto [index, op] : llvm::enumerate(order)) {
    if (isa<GradReadyOp, ChunkOp, BucketUnpackOp, GetParamOp, BucketPackOp>(
            op))
      continue;
    for (Value result : op->getResults()) {
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      int64_t bytes = getTensorBytes(result);
      auto last = lastUse.find(result);
      size_t end = last == lastUse.end() ? index : std::max(last->second, index);
      delta[index] += bytes;
      delta[end + 1] -= bytes;
    }
  }
  __int128 live = 0, peak = 0;
  for (size_t index = 0; index < order.size(); ++index) {
    live += delta[index];
    peak = std::max(peak, live);
  }
  return static_cast<int64_t>(
      std::min<__int128>(peak, std::numeric_limits<int64_t>::max()));
}

FailureOr<WgradSchedule>
ddp::schedule::scheduleWgrads(func::FuncOp step,
                              const WgradScheduleOptions &options) {
  FailureOr<sim::Pricing> pricing =
      sim::getPricing(step, options.hardware, options.dataParallelSize);
  if (failed(pricing))
    return failure();
  const timing::CostModel &model = pricing->model;
  const sim::SimOptions &simOptions = pricing->options;

  WgradSchedule schedule;
  for (Operation &op : step.getBody().front())
    schedule.order.push_back(&op);
  schedule.inPlacePeakBytes = getLiveTensorPeak(schedule.order);
  schedule.peakBytes = schedule.inPlacePeakBytes;
  if (options.memoryCapBytes > 0 &&
      schedule.inPlacePeakBytes > options.memoryCapBytes)
    return step.emitError()
           << "memory-cap-gib: the step holds "
           << formatBytes(schedule.inPlacePeakBytes)
           << " of live tensors in its own order, more than the cap of "
           << formatBytes(options.memoryCapBytes)
           << "; raise the cap (or recompute activations) to let "
              "ddp-schedule-compute move anything";

  constexpr int64_t kNoBudget = std::numeric_limits<int64_t>::max();
  auto walk = [&](const std::set<int64_t> *layers,
                  int64_t budget) -> FailureOr<Walk> {
    Walk each(step, model, simOptions, layers, budget);
    if (failed(each.run()))
      return failure();
    return each;
  };
  std::set<int64_t> none;
  FailureOr<Walk> inPlace = walk(&none, kNoBudget);
  if (failed(inPlace))
    return failure();
  schedule.predictedSeconds = inPlace->stepTime;

  FailureOr<Walk> every = walk(nullptr, kNoBudget);
  if (failed(every))
    return failure();
  // The layers the chosen order delays (nullptr: all of them).
  std::optional<std::set<int64_t>> chosen;
  FailureOr<Walk> best = std::move(every);
  if (options.choosePerLayer) {
    std::set<int64_t> filled = best->filledLayers;
    std::set<int64_t> all;
    for (Operation &op : step.getBody().front())
      if (isDelayable(&op))
        all.insert(*getLayerOf(&op));
    // Where every layer filled a wait, the walk of those layers is this one.
    if (filled != all) {
      FailureOr<Walk> some = walk(&filled, kNoBudget);
      if (failed(some))
        return failure();
      chosen = filled;
      if (best->stepTime < some->stepTime)
        chosen.reset();
      else
        best = std::move(some);
    }
    // Nothing delayed unless it ends the step sooner.
    if (best->stepTime >= inPlace->stepTime) {
      chosen = none;
      best = std::move(inPlace);
    }
  }

  const std::set<int64_t> *layers = chosen ? &*chosen : nullptr;
  int64_t peak = getLiveTensorPeak(best->order);
  if (options.memoryCapBytes > 0 && peak > options.memoryCapBytes) {
    // A budget of held GEMMs' operands whose order fits, by bisection
    // (the peak grows with the budget mostly, not strictly): budget 0
    // holds nothing, which fits (checked above).
    int64_t low = 0, high = 0;
    for (Operation &op : step.getBody().front())
      if (isDelayable(&op))
        high = getHeldBytes(&op) > kNoBudget - high
                   ? kNoBudget
                   : high + getHeldBytes(&op);
    FailureOr<Walk> fits = walk(layers, low);
    if (failed(fits))
      return failure();
    while (high - low > std::max<int64_t>(1, high / 64)) {
      int64_t middle = low + (high - low) / 2;
      FailureOr<Walk> trial = walk(layers, middle);
      if (failed(trial))
        return failure();
      if (getLiveTensorPeak(trial->order) <= options.memoryCapBytes) {
        low = middle;
        fits = std::move(trial);
      } else {
        high = middle;
      }
    }
    best = std::move(fits);
    peak = getLiveTensorPeak(best->order);
    // auto moves nothing unless that ends the step sooner.
    if (options.choosePerLayer && best->stepTime >= schedule.predictedSeconds) {
      best = walk(&none, kNoBudget);
      if (failed(best))
        return failure();
      peak = schedule.inPlacePeakBytes;
    }
  }
  schedule.order = std::move(best->order);
  schedule.delayed = std::move(best->delayed);
  schedule.predictedSeconds = best->stepTime;
  schedule.peakBytes = peak;
  return schedule;
}
