//===- ResultPlacement.cpp - Which results the lowering writes in place ---===//

#include "ddp/Dialect/DDP/IR/ResultPlacement.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ddp;

bool ddp::writesItsResults(Operation *op) {
  return isa_and_present<DDPDialect>(op->getDialect()) &&
         !isa<GetParamOp, GradReadyOp, BucketPackOp, BucketUnpackOp, ChunkOp,
              ConcatOp>(op);
}

bool ddp::canProduceInPlace(ConcatOp concat, unsigned index) {
  Value input = concat.getInputs()[index];
  Operation *producer = input.getDefiningOp();
  if (!producer || !writesItsResults(producer))
    return false;
  if (concat.getInterleave() == 1)
    return true;
  // Block r of the product is rows [r m, (r + 1) m) of the lhs: a
  // transposed lhs stores them as columns, which one GEMM call cannot take.
  auto gemm = dyn_cast<GemmOp>(producer);
  if (!gemm || !input.hasOneUse() || gemm.getTransposeLhs())
    return false;
  auto lhsChunk = gemm.getLhs().getDefiningOp<ChunkOp>();
  return !lhsChunk || lhsChunk.getInterleave() == 1;
}

/// The parameters an op reads the value of, other than to replace it.
static void forEachParamRead(Operation &op,
                             llvm::function_ref<void(StringAttr)> callback) {
  auto each = [&](ArrayAttr params) {
    for (auto name : params.getAsRange<FlatSymbolRefAttr>())
      callback(name.getAttr());
  };
  llvm::TypeSwitch<Operation *>(&op)
      .Case([&](GetParamOp get) { callback(get.getParamAttr().getAttr()); })
      .Case([&](SGDOp sgd) { callback(sgd.getParamAttr().getAttr()); })
      .Case([&](AdamOp adam) { callback(adam.getParamAttr().getAttr()); })
      .Case([&](GetParamShardOp get) { each(get.getParams()); })
      .Case([&](ShardSGDOp shard) { each(shard.getParams()); })
      .Case([&](ShardAdamOp shard) { each(shard.getParams()); });
}

ParamsInGathers::ParamsInGathers(Block &step) {
  llvm::DenseMap<StringAttr, unsigned> setters;
  llvm::DenseSet<StringAttr> updatedWhole;
  for (auto entry : llvm::enumerate(step)) {
    // Named, not bound: the lambda below captures the index.
    unsigned index = entry.index();
    Operation &op = entry.value();
    position[&op] = index;
    forEachParamRead(op, [&](StringAttr param) {
      reads[param].push_back(index);
    });
    if (auto sgd = dyn_cast<SGDOp>(op))
      updatedWhole.insert(sgd.getParamAttr().getAttr());
    if (auto adam = dyn_cast<AdamOp>(op))
      updatedWhole.insert(adam.getParamAttr().getAttr());
    if (auto set = dyn_cast<SetParamsOp>(op))
      for (auto name : set.getParams().getAsRange<FlatSymbolRefAttr>())
        ++setters[name.getAttr()];
  }
  for (auto set : step.getOps<SetParamsOp>()) {
    auto gather = set.getValues().getDefiningOp<AllGatherOp>();
    if (!gather || !gather.getResult().hasOneUse() ||
        gather->getBlock() != &step)
      continue;
    unsigned begin = getPosition(getFirstWrite(gather));
    unsigned end = getPosition(set);
    for (auto [name, offset] :
         llvm::zip_equal(set.getParams().getAsRange<FlatSymbolRefAttr>(),
                         set.getOffsets())) {
      StringAttr param = name.getAttr();
      if (setters.lookup(param) != 1 || updatedWhole.contains(param) ||
          isReadBetween(ArrayAttr::get(set.getContext(), {name}), begin, end))
        continue;
      stored[param] = {gather, offset};
    }
  }
}

Operation *ParamsInGathers::getFirstWrite(AllGatherOp gather) const {
  Operation *producer = gather.getInput().getDefiningOp();
  if (producer && producer->getBlock() == gather->getBlock())
    return producer;
  return gather;
}

bool ParamsInGathers::isReadBetween(ArrayAttr params, unsigned begin,
                                    unsigned end) const {
  for (auto name : params.getAsRange<FlatSymbolRefAttr>()) {
    auto found = reads.find(name.getAttr());
    if (found == reads.end())
      continue;
    const unsigned *next = llvm::upper_bound(found->second, begin);
    if (next != found->second.end() && *next < end)
      return true;
  }
  return false;
}

const GatheredParam *ParamsInGathers::lookup(StringAttr param) const {
  auto found = stored.find(param);
  return found == stored.end() ? nullptr : &found->second;
}

bool ParamsInGathers::isStoredInPlace(SetParamsOp op, unsigned index) const {
  auto name = cast<FlatSymbolRefAttr>(op.getParams()[index]);
  const GatheredParam *slot = lookup(name.getAttr());
  return slot && AllGatherOp(slot->gather).getResult() == op.getValues() &&
         slot->offset == op.getOffsets()[index];
}

AllGatherOp ParamsInGathers::getStoringGather(ArrayAttr params,
                                              ArrayRef<int64_t> offsets) const {
  AllGatherOp gather;
  for (auto [name, offset] :
       llvm::zip_equal(params.getAsRange<FlatSymbolRefAttr>(), offsets)) {
    const GatheredParam *slot = lookup(name.getAttr());
    if (!slot || slot->offset != offset || (gather && slot->gather != gather))
      return {};
    gather = slot->gather;
  }
  return gather;
}

bool ParamsInGathers::isInPlace(GetParamShardOp op) const {
  if (!op.getResult().hasOneUse())
    return false;
  auto gather = dyn_cast<AllGatherOp>(*op.getResult().user_begin());
  return gather && gather.getAxesAttr() == op.getAxesAttr() &&
         getStoringGather(op.getParams(), op.getOffsets()) == gather;
}

AllGatherOp ParamsInGathers::getShardBucket(SetParamShardOp op) const {
  Value shard = op.getShard();
  Operation *producer = shard.getDefiningOp();
  if (!isa_and_present<ShardSGDOp, ShardAdamOp>(producer) ||
      !shard.hasOneUse() || producer->getBlock() != op->getBlock())
    return {};
  AllGatherOp gather = getStoringGather(op.getParams(), op.getOffsets());
  if (!gather || gather.getAxesAttr() != op.getAxesAttr() ||
      gather.getInput().getType() != shard.getType() ||
      isReadBetween(op.getParams(), getPosition(producer), getPosition(op)))
    return {};
  return gather;
}
