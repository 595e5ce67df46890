//===- ResultPlacement.h - Which results the lowering writes in place -*- C++ -*-===//
//
// The lowering's placement rules that the simulator must price the same way:
// which ops write their results wherever the storage plan puts them, and
// which operands of a ddp.concat are produced in their rows of the result
// rather than copied there (docs/Lowering.md, Storage, rule 7).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_IR_RESULTPLACEMENT_H
#define DDP_DIALECT_DDP_IR_RESULTPLACEMENT_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"

namespace ddp {

/// Whether the runtime call that lowers `op` writes its tensor results, so
/// that they can be placed anywhere, including inside a bucket or a
/// ddp.concat: every ddp op but those whose results are views of, or
/// stacks of, other values.
bool writesItsResults(mlir::Operation *op);

/// Whether operand `index` of `concat` can be produced in its rows of the
/// result, so that the concat copies nothing for it. Contiguous: any op that
/// writes its results. Interleaved, the operand's rows are one range per
/// block: only a ddp.gemm whose lhs is contiguous and not transposed and
/// whose result nothing else reads, lowered block by block. (The storage
/// plan also copies an operand it has already placed elsewhere, which the
/// simulator does not see; ddp-overlap-tp-comm never stacks such a value.)
bool canProduceInPlace(ConcatOp concat, unsigned index);

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_RESULTPLACEMENT_H
