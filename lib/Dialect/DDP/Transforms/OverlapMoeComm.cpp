//===- OverlapMoeComm.cpp - The expert all-to-alls beside compute --------===//
//
// Makes each synchronous ddp.all_to_all and ddp.all_to_all_v asynchronous
// and waits for it right before the first op of its block that reads its
// result: the ops issued in between (the shared experts, the
// probabilities' all-to-all) run beside it.
// Only waits are added, so the order of the collectives stays what it was
// on every rank.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace ddp {
#define GEN_PASS_DEF_OVERLAPMOECOMM
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

class OverlapMoeCommPass
    : public ddp::impl::OverlapMoeCommBase<OverlapMoeCommPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (!sharedExpertOverlap)
      return;
    // The all-to-alls, counted or not (the count exchange among them).
    SmallVector<Operation *> synchronous;
    getOperation().walk([&](Operation *op) {
      if (isa<AllToAllOp, AllToAllVOp>(op) &&
          !cast<AsyncOpInterface>(op).isAsync())
        synchronous.push_back(op);
    });
    for (Operation *op : synchronous) {
      // The first reader in the op's block (readers nested in an op of the
      // block count as that op).
      Operation *firstReader = nullptr;
      for (Operation *user : op->getResult(0).getUsers()) {
        Operation *reader = op->getBlock()->findAncestorOpInBlock(*user);
        if (reader && (!firstReader || reader->isBeforeInBlock(firstReader)))
          firstReader = reader;
      }
      // Read nowhere, or by the next op: nothing would run beside it.
      if (!firstReader || firstReader == op->getNextNode())
        continue;
      OpBuilder builder(op);
      Operation *async = createAsyncCollective(builder, op);
      async->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      op->getResult(0).replaceAllUsesWith(async->getResult(0));
      Value token = cast<AsyncOpInterface>(async).getAsyncToken();
      op->erase();
      builder.setInsertionPoint(firstReader);
      WaitOp::create(builder, async->getLoc(), token);
      ++numAllToAllsMadeAsync;
    }
  }
};

} // namespace
