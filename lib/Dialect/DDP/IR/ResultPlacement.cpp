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
  // Block r of the product is rows [r m, (r + 1) m) of the lhs: a
  // transposed lhs stores them as columns, which one GEMM call cannot take.
  auto gemm = dyn_cast<GemmOp>(producer);
  if (!gemm || !input.hasOneUse() || gemm.getTransposeLhs())
    return false;
  auto lhsChunk = gemm.getLhs().getDefiningOp<ChunkOp>();
  return !lhsChunk || lhsChunk.getInterleave() == 1;
}
