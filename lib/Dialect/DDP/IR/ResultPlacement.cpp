//===- ResultPlacement.cpp - Which results the lowering writes in place ---===//

#include "ddp/Dialect/DDP/IR/ResultPlacement.h"

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
  auto gemm = dyn_cast<GemmOp>(producer);
  if (!gemm || !input.hasOneUse())
    return false;
  auto lhsChunk = gemm.getLhs().getDefiningOp<ChunkOp>();
  return !lhsChunk || lhsChunk.getInterleave() == 1;
}
