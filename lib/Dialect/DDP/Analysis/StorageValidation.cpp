//===- StorageValidation.cpp - Check a storage plan independently ---------===//
//
// The planner decides where every tensor lives; this file re-derives, from
// the step alone, what must hold of those decisions and checks them, so that
// a planner bug is a compile-time error at an op instead of a write past a
// buffer at run time. It shares no liveness code with the planner on purpose.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
#include "ddp/Dialect/DDP/Analysis/BufferReuse.h"
#include "ddp/Dialect/DDP/IR/TensorBytes.h"
#include "ddp/Support/CheckedCount.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace ddp;

namespace {

/// One tensor value as the plan stores it.
struct PlacedValue {
  Value value;
  Storage storage;
  int64_t bytes = 0;
  /// First and last step position at which the memory holds this value:
  /// from its definition to its last read (an asynchronous read, and an
  /// asynchronous op's write of its result, end at the wait that completes
  /// it). Block arguments are defined at position 0.
  unsigned defined = 0;
  unsigned lastRead = 0;
  /// The ranks of a rank view's group (1 for any other value).
  int64_t groupSize = 1;

  /// The bytes the value may hold on some rank: for a rank view, every
  /// rank's shard together.
  int64_t begin() const {
    return std::min(storage.getByteOffset(0),
                    storage.getByteOffset(groupSize - 1));
  }
  int64_t end() const {
    return std::max(storage.getByteOffset(0),
                    storage.getByteOffset(groupSize - 1)) +
           bytes;
  }
};

class StorageValidator {
public:
  explicit StorageValidator(const StoragePlan &plan) : plan(plan) {}
  LogicalResult run();

private:
  void numberOps();
  unsigned getCompletion(Value token) const;
  unsigned getReadEnd(Operation *user) const;
  void collectViews();
  bool isViewOf(Value view, Value base) const;
  bool isInPlaceCollective(const PlacedValue &first,
                           const PlacedValue &second) const;
  InFlightDiagnostic emitError(Value value) const;
  std::optional<int64_t> getCapacity(const Storage &storage) const;

  LogicalResult checkInsideStorage(const PlacedValue &placed) const;
  LogicalResult checkArenas() const;
  LogicalResult checkViewsInsideBases() const;
  LogicalResult checkNoLiveOverlap() const;
  LogicalResult checkParamReadsBeforeUpdates() const;

  Block &getStepBlock() const {
    func::FuncOp step = plan.step;
    return step.getBody().front();
  }
  Location getStepLoc() const { return plan.step->getLoc(); }

  const StoragePlan &plan;
  llvm::DenseMap<Operation *, unsigned> position;
  /// A view's base: ddp.grad_ready's operand, ddp.bucket_unpack's bucket, or
  /// for a gradient produced in its bucket slice, the packed bucket.
  llvm::DenseMap<Value, Value> baseOf;
  llvm::SmallVector<PlacedValue> placed;
};

} // namespace

void StorageValidator::numberOps() {
  for (auto [index, op] : llvm::enumerate(getStepBlock()))
    position[&op] = index + 1;
}

unsigned StorageValidator::getCompletion(Value token) const {
  unsigned last = 0;
  for (Operation *user : token.getUsers()) {
    if (auto join = dyn_cast<JoinOp>(user))
      last = std::max(last, getCompletion(join.getResult()));
    else if (auto dependent = dyn_cast<AsyncOpInterface>(user))
      last = std::max(last, getCompletion(dependent.getAsyncToken()));
    else
      last = std::max(last, position.lookup(user));
  }
  return last;
}

unsigned StorageValidator::getReadEnd(Operation *user) const {
  unsigned end = position.lookup(user);
  if (auto async = dyn_cast<AsyncOpInterface>(user))
    if (Value token = async.getAsyncToken())
      end = std::max(end, getCompletion(token));
  return end;
}

void StorageValidator::collectViews() {
  for (Operation &op : getStepBlock()) {
    if (auto gradReady = dyn_cast<GradReadyOp>(op)) {
      baseOf[gradReady.getResult()] = gradReady.getGrad();
    } else if (auto unpack = dyn_cast<BucketUnpackOp>(op)) {
      for (Value grad : unpack.getGrads())
        baseOf[grad] = unpack.getBucket();
    } else if (auto chunk = dyn_cast<ChunkOp>(op)) {
      baseOf[chunk.getResult()] = chunk.getInput();
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      // An operand the plan produced in its rows is part of the result.
      llvm::SmallVector<unsigned> copied =
          plan.concatCopies.lookup(concat.getOperation());
      for (auto [index, input] : llvm::enumerate(concat.getInputs()))
        if (!llvm::is_contained(copied, index) && !baseOf.count(input))
          baseOf[input] = concat.getResult();
    } else if (auto pack = dyn_cast<BucketPackOp>(op)) {
      // A gradient the plan produced in its slice is part of the bucket; one
      // it copies at the pack is not.
      llvm::SmallVector<unsigned> copied =
          plan.packCopies.lookup(pack.getOperation());
      for (auto [index, grad] : llvm::enumerate(pack.getGrads())) {
        if (llvm::is_contained(copied, index))
          continue;
        Value holder = lookThroughGradReady(grad);
        if (!baseOf.count(holder))
          baseOf[holder] = pack.getBucket();
      }
    }
  }
}

bool StorageValidator::isViewOf(Value view, Value base) const {
  for (Value current = view; current; current = baseOf.lookup(current))
    if (current == base)
      return true;
  return false;
}

/// Whether `first` and `second` are ddp.chunk views of the same tensor, or
/// operands of the same interleaved ddp.concat: nothing writes through a
/// chunk, and the extent of an interleaved piece (its first block's rows
/// onwards) spans rows of its siblings that it neither reads nor writes.
static bool areChunksOfOneTensor(Value first, Value second) {
  auto firstChunk = first.getDefiningOp<ChunkOp>();
  auto secondChunk = second.getDefiningOp<ChunkOp>();
  if (firstChunk && secondChunk &&
      firstChunk.getInput() == secondChunk.getInput())
    return true;
  return llvm::any_of(first.getUsers(), [&](Operation *user) {
    auto concat = dyn_cast<ConcatOp>(user);
    return concat && concat.getInterleave() > 1 &&
           llvm::is_contained(concat.getInputs(), second);
  });
}

/// The bytes from the first to the last byte `value` holds: its size, but
/// for a piece of g interleaved blocks (an interleaved ddp.chunk, which a
/// GEMM reads block by block, or an operand an interleaved ddp.concat has
/// produced in its rows) the span from its first block's piece to its last,
/// (g - 1) strides of the whole's block plus one piece. Sibling pieces lie
/// in between (areChunksOfOneTensor); anything else there must not be live.
static int64_t getInterleavedSpan(const StoragePlan &plan, Value value) {
  int64_t bytes = getTensorBytes(value.getType());
  int64_t interleave = 1, wholeBytes = 0;
  if (auto chunk = value.getDefiningOp<ChunkOp>()) {
    interleave = chunk.getInterleave();
    wholeBytes = getTensorBytes(chunk.getInput().getType());
  }
  // An operand the concat copies lives whole in storage of its own.
  for (OpOperand &use : value.getUses())
    if (auto concat = dyn_cast<ConcatOp>(use.getOwner());
        concat && concat.getInterleave() > 1 &&
        !llvm::is_contained(plan.concatCopies.lookup(concat.getOperation()),
                            use.getOperandNumber())) {
      interleave = concat.getInterleave();
      wholeBytes = getTensorBytes(concat.getResult().getType());
    }
  if (interleave <= 1)
    return bytes;
  return (interleave - 1) * (wholeBytes / interleave) + bytes / interleave;
}

/// Whether `shard` is the rank's shard of `whole` in NCCL's in-place form
/// for a collective over `axes`: shard == whole + rank * (shard's bytes).
static bool isRankShardOf(const StoragePlan &plan, const PlacedValue &shard,
                          const PlacedValue &whole, ArrayAttr axes) {
  return shard.storage.isRankView() && !whole.storage.isRankView() &&
         shard.storage.kind == whole.storage.kind &&
         shard.storage.index == whole.storage.index &&
         *shard.storage.rankGroup == plan.getGroupIndex(axes) &&
         shard.storage.byteOffset == whole.storage.byteOffset &&
         shard.storage.rankStride == shard.bytes;
}

/// A reduce-scatter's result in the rank's shard of its input, an
/// all-gather's input in the rank's shard of its result, or an all-reduce's
/// or a scale's result in its input's storage (its input read by it alone),
/// may share bytes with the other, provided the op is the input's last
/// reader.
bool StorageValidator::isInPlaceCollective(const PlacedValue &first,
                                           const PlacedValue &second) const {
  for (auto [input, result] :
       {std::pair(&first, &second), std::pair(&second, &first)}) {
    Operation *op = result->value.getDefiningOp();
    if (!op || input->lastRead != getReadEnd(op))
      continue;
    if (auto reduceScatter = dyn_cast<ReduceScatterOp>(op);
        reduceScatter && reduceScatter.getInput() == input->value &&
        isRankShardOf(plan, *result, *input, reduceScatter.getAxesAttr()))
      return true;
    if (auto gather = dyn_cast<AllGatherOp>(op);
        gather && gather.getInput() == input->value &&
        isRankShardOf(plan, *input, *result, gather.getAxesAttr()))
      return true;
    bool sameBytes = input->value.hasOneUse() &&
                     !input->storage.isRankView() &&
                     !result->storage.isRankView() &&
                     input->storage.kind == result->storage.kind &&
                     input->storage.index == result->storage.index &&
                     input->storage.byteOffset == result->storage.byteOffset;
    Value written = llvm::TypeSwitch<Operation *, Value>(op)
                        .Case([](AllReduceOp reduce) { return reduce.getInput(); })
                        .Case([](ScaleOp scale) { return scale.getInput(); })
                        .Default([](Operation *) { return Value(); });
    if (sameBytes && written == input->value)
      return true;
  }
  return false;
}

InFlightDiagnostic StorageValidator::emitError(Value value) const {
  Location loc = value.getDefiningOp() ? value.getDefiningOp()->getLoc()
                                       : getStepLoc();
  return mlir::emitError(loc, "internal error: the storage plan ");
}

std::optional<int64_t>
StorageValidator::getCapacity(const Storage &storage) const {
  if (storage.kind == Storage::Kind::Param) {
    if (storage.index >= plan.params.size())
      return std::nullopt;
    const PlannedParam &param = plan.params[storage.index];
    return PlannedBuffer{param.dtype, param.numel}.getBytes();
  }
  if (storage.index >= plan.buffers.size())
    return std::nullopt;
  return plan.buffers[storage.index].getBytes();
}

LogicalResult
StorageValidator::checkInsideStorage(const PlacedValue &value) const {
  std::optional<int64_t> capacity = getCapacity(value.storage);
  const char *kind =
      value.storage.kind == Storage::Kind::Param ? "parameter" : "buffer";
  if (!capacity)
    return emitError(value.value)
           << "names " << kind << " #" << value.storage.index
           << ", which does not exist";
  // A parameter stored as the rank's shard (rule 10) holds no whole value
  // to alias.
  if (value.storage.kind == Storage::Kind::Param &&
      plan.params[value.storage.index].storedShard)
    return emitError(value.value)
           << "places a value in parameter #" << value.storage.index
           << ", which the runtime stores as this rank's shard only";
  // A rank view's offset is linear in the rank, so the ranks whose bytes
  // fit are an interval: check the first and last, and find the first that
  // does not fit by bisection (a group may have 2^40 ranks).
  auto getBegin = [&](int64_t rank) {
    // Checked: the plan under validation may be wrong.
    return CheckedCount(value.storage.byteOffset) +
           CheckedCount(value.storage.isRankView() ? rank : 0) *
               value.storage.rankStride;
  };
  auto fits = [&](int64_t rank) {
    CheckedCount begin = getBegin(rank);
    std::optional<int64_t> end = (begin + value.bytes).get();
    return begin.fits() && *begin.get() >= 0 && end && *end <= *capacity;
  };
  int64_t last = value.groupSize - 1;
  if (fits(0) && fits(last))
    return success();
  int64_t rank = 0;
  if (fits(0)) {
    // fits(lo) and !fits(hi).
    int64_t lo = 0, hi = last;
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    rank = hi;
  }
  int64_t begin = getBegin(rank).getOr(std::numeric_limits<int64_t>::max());
  InFlightDiagnostic diag = emitError(value.value)
                            << "places a value of " << value.bytes
                            << " bytes at byte " << begin << " of " << kind
                            << " #" << value.storage.index;
  if (value.storage.isRankView())
    diag << " on rank " << rank << " of group '"
         << plan.groups[*value.storage.rankGroup] << "'";
  return diag << ", which holds " << *capacity << " bytes";
}

LogicalResult StorageValidator::checkViewsInsideBases() const {
  llvm::DenseMap<Value, const PlacedValue *> byValue;
  for (const PlacedValue &value : placed)
    byValue[value.value] = &value;
  for (auto [view, base] : baseOf) {
    const PlacedValue *inner = byValue.lookup(view);
    const PlacedValue *outer = byValue.lookup(base);
    if (!inner || !outer)
      continue;
    // A view of a rank view moves with the rank as its base does.
    bool sameStorage =
        inner->storage.kind == outer->storage.kind &&
        inner->storage.index == outer->storage.index &&
        (!outer->storage.isRankView() ||
         (inner->storage.rankGroup == outer->storage.rankGroup &&
          inner->storage.rankStride == outer->storage.rankStride));
    if (!sameStorage || inner->begin() < outer->begin() ||
        inner->end() > outer->end())
      return emitError(view)
             << "places a view (bytes [" << inner->begin() << ", "
             << inner->end() << ")) outside its base (bytes ["
             << outer->begin() << ", " << outer->end() << ")"
             << (sameStorage ? "" : " of another buffer") << ")";
  }
  return success();
}

LogicalResult StorageValidator::checkArenas() const {
  // Every buffer inside its arena; a buffer whose bytes must outlive the
  // step or stay zero in an arena of its own.
  llvm::DenseSet<unsigned> alone(plan.inputBuffers.begin(),
                                 plan.inputBuffers.end());
  for (const PlannedParam &param : plan.params)
    if (param.inBucket)
      alone.insert(param.inBucket->index);
  for (auto pack : getStepBlock().getOps<BucketPackOp>())
    if (leavesBucketPadding(pack))
      alone.insert(plan.storage.lookup(pack.getBucket()).index);
  llvm::SmallVector<unsigned> buffersIn(plan.arenas.size(), 0);
  for (const PlannedBuffer &buffer : plan.buffers)
    if (buffer.arena < plan.arenas.size())
      ++buffersIn[buffer.arena];
  for (auto [index, buffer] : llvm::enumerate(plan.buffers)) {
    if (buffer.arena >= plan.arenas.size() || buffer.arenaOffset < 0 ||
        buffer.arenaOffset > plan.arenas[buffer.arena].getBytes() -
                                 buffer.getBytes())
      return mlir::emitError(getStepLoc(), "internal error: the storage plan "
                                           "places buffer #")
             << index << " of " << buffer.getBytes()
             << " bytes outside arena #" << buffer.arena;
    if (alone.contains(index) && buffersIn[buffer.arena] > 1)
      return mlir::emitError(getStepLoc(), "internal error: the storage plan "
                                           "lets buffer #")
             << index << " share arena #" << buffer.arena
             << ", though it holds a step input, parameters or padding";
  }
  return success();
}

LogicalResult StorageValidator::checkNoLiveOverlap() const {
  // Per arena, in order of their first byte: a sweep finds each pair whose
  // bytes overlap; such a pair is right only if one is a view of the other
  // or their lives do not meet. A value's bytes in its arena are its bytes
  // in its buffer past the buffer's offset.
  auto getArenaBegin = [&](const PlacedValue *value) {
    return plan.buffers[value->storage.index].arenaOffset + value->begin();
  };
  auto getArenaEnd = [&](const PlacedValue *value) {
    return plan.buffers[value->storage.index].arenaOffset + value->end();
  };
  llvm::DenseMap<unsigned, llvm::SmallVector<const PlacedValue *>> byArena;
  for (const PlacedValue &value : placed)
    if (value.storage.kind == Storage::Kind::Buffer && value.bytes > 0)
      byArena[plan.buffers[value.storage.index].arena].push_back(&value);
  for (auto &[arena, values] : byArena) {
    llvm::stable_sort(values, [&](const PlacedValue *a, const PlacedValue *b) {
      return getArenaBegin(a) < getArenaBegin(b);
    });
    for (auto [index, first] : llvm::enumerate(values)) {
      for (const PlacedValue *second : llvm::drop_begin(values, index + 1)) {
        if (getArenaBegin(second) >= getArenaEnd(first))
          break;
        bool livesMeet = first->defined <= second->lastRead &&
                         second->defined <= first->lastRead;
        if (!livesMeet || isViewOf(first->value, second->value) ||
            isViewOf(second->value, first->value) ||
            areChunksOfOneTensor(first->value, second->value) ||
            isInPlaceCollective(*first, *second))
          continue;
        InFlightDiagnostic diag = emitError(second->value)
                                  << "gives this value bytes ["
                                  << getArenaBegin(second) << ", "
                                  << getArenaEnd(second) << ") of arena #"
                                  << arena
                                  << " while another value, live at the same "
                                     "time, holds bytes ["
                                  << getArenaBegin(first) << ", "
                                  << getArenaEnd(first) << ")";
        Operation *other = first->value.getDefiningOp();
        diag.attachNote(other ? other->getLoc() : getStepLoc())
            << "the other value";
        return diag;
      }
    }
  }
  return success();
}

LogicalResult StorageValidator::checkParamReadsBeforeUpdates() const {
  llvm::DenseMap<unsigned, llvm::SmallVector<unsigned>> updates;
  for (Operation &op : getStepBlock()) {
    FlatSymbolRefAttr param;
    if (auto sgd = dyn_cast<SGDOp>(op))
      param = sgd.getParamAttr();
    else if (auto adam = dyn_cast<AdamOp>(op))
      param = adam.getParamAttr();
    if (param)
      updates[plan.getParamIndex(param)].push_back(position.lookup(&op));
    if (auto setParams = dyn_cast<SetParamsOp>(op))
      for (auto name : setParams.getParams().getAsRange<FlatSymbolRefAttr>())
        updates[plan.getParamIndex(name)].push_back(position.lookup(&op));
    if (auto setShard = dyn_cast<SetParamShardOp>(op))
      for (auto name : setShard.getParams().getAsRange<FlatSymbolRefAttr>())
        updates[plan.getParamIndex(name)].push_back(position.lookup(&op));
  }
  // A parameter stored in a buffer is also written by every value placed
  // over its bytes, from that value's definition to the end of the op that
  // writes it (an asynchronous all-gather writes until its wait).
  llvm::DenseMap<unsigned, llvm::SmallVector<std::pair<unsigned, unsigned>>>
      writes;
  for (auto [index, param] : llvm::enumerate(plan.params)) {
    if (!param.inBucket)
      continue;
    const Storage &slot = *param.inBucket;
    int64_t bytes = PlannedBuffer{param.dtype, param.numel}.getBytes();
    std::optional<int64_t> capacity = getCapacity(slot);
    if (slot.kind != Storage::Kind::Buffer || slot.isRankView() ||
        !capacity || slot.byteOffset < 0 ||
        slot.byteOffset + bytes > *capacity)
      return mlir::emitError(ParamOp(param.op).getLoc(),
                             "internal error: the storage plan stores this "
                             "parameter outside buffer #")
             << slot.index;
    for (const PlacedValue &value : placed) {
      Operation *writer = value.value.getDefiningOp();
      if (writer && value.storage.kind == Storage::Kind::Buffer &&
          value.storage.index == slot.index &&
          value.begin() < slot.byteOffset + bytes &&
          slot.byteOffset < value.end())
        writes[index].push_back({value.defined, getReadEnd(writer)});
    }
  }
  for (const PlacedValue &value : placed) {
    if (value.storage.kind != Storage::Kind::Param)
      continue;
    bool overwritten = llvm::any_of(
        updates.lookup(value.storage.index), [&](unsigned update) {
          return value.defined < update && update < value.lastRead;
        });
    overwritten |= llvm::any_of(
        writes.lookup(value.storage.index), [&](auto write) {
          return value.defined < write.second && write.first < value.lastRead;
        });
    if (overwritten) {
      ParamOp param = plan.params[value.storage.index].op;
      return emitError(value.value)
             << "lets this value alias parameter @" << param.getSymName()
             << ", which the optimizer overwrites before its last read";
    }
  }
  return success();
}

LogicalResult StorageValidator::run() {
  numberOps();
  collectViews();
  auto place = [&](Value value, unsigned defined) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      return success();
    auto found = plan.storage.find(value);
    if (found == plan.storage.end())
      return emitError(value) << "gives this value no storage";
    PlacedValue entry{value, found->second, getInterleavedSpan(plan, value),
                      defined, defined};
    if (std::optional<unsigned> group = entry.storage.rankGroup) {
      if (*group >= plan.groupSizes.size())
        return emitError(value) << "makes this value a rank view in group #"
                                << *group << ", which does not exist";
      entry.groupSize = plan.groupSizes[*group];
    }
    for (Operation *user : value.getUsers())
      entry.lastRead = std::max(entry.lastRead, getReadEnd(user));
    if (Operation *writer = value.getDefiningOp())
      entry.lastRead = std::max(entry.lastRead, getReadEnd(writer));
    if (failed(checkInsideStorage(entry)))
      return failure();
    placed.push_back(entry);
    return success();
  };
  Block &body = getStepBlock();
  for (BlockArgument argument : body.getArguments())
    if (failed(place(argument, 0)))
      return failure();
  for (Operation &op : body)
    for (Value result : op.getResults())
      if (failed(place(result, position.lookup(&op))))
        return failure();
  return failure(failed(checkArenas()) || failed(checkViewsInsideBases()) ||
                 failed(checkNoLiveOverlap()) ||
                 failed(checkParamReadsBeforeUpdates()));
}

LogicalResult ddp::verifyStoragePlan(const StoragePlan &plan) {
  return StorageValidator(plan).run();
}
