//===- ResultPlacement.h - Which results the lowering writes in place -*- C++ -*-===//
//
// The lowering's placement rules that the simulator must price the same way:
// which ops write their results wherever the storage plan puts them, and
// which operands of a ddp.concat are produced in their rows of the result
// rather than copied there (docs/Lowering.md, Storage, rule 7), and which
// parameters live in the bucket their all-gather fills (rule 8).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_IR_RESULTPLACEMENT_H
#define DDP_DIALECT_DDP_IR_RESULTPLACEMENT_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "llvm/ADT/DenseMap.h"

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

/// Where a parameter lives when it is stored in a gathered bucket: element
/// `offset` of the result of `gather`.
struct GatheredParam {
  AllGatherOp gather;
  int64_t offset = 0;
};

/// The distributed optimizer's parameters stored in the bucket their
/// ddp.all_gather fills, as Megatron-Core keeps them in its parameter
/// buffer: the all-gather then updates them, and ddp.set_params,
/// ddp.get_param_shard and ddp.set_param_shard copy nothing for them.
///
/// A parameter is stored so when exactly one ddp.set_params of the step
/// names it, that op's values are a ddp.all_gather whose only reader it is,
/// no ddp.sgd or ddp.adam updates it, and nothing reads it between the first
/// write into the bucket (the op that produces the gathered shard, or the
/// all-gather) and the ddp.set_params: there the bucket already holds values
/// that the step gives the parameter only at the ddp.set_params.
class ParamsInGathers {
public:
  explicit ParamsInGathers(mlir::Block &step);

  /// Where `param` is stored, or null if it has storage of its own.
  const GatheredParam *lookup(mlir::StringAttr param) const;

  /// Whether parameter `index` of `op` is stored at its slice of `op`'s
  /// values, so that `op` copies nothing for it.
  bool isStoredInPlace(SetParamsOp op, unsigned index) const;

  /// The all-gather whose bucket stores every parameter of `params` at the
  /// element offsets `offsets`, or null.
  AllGatherOp getStoringGather(mlir::ArrayAttr params,
                               llvm::ArrayRef<int64_t> offsets) const;

  /// Whether the shard `op` reads out of the parameters is already the
  /// rank's shard of the gathered bucket that stores them: its only reader
  /// is that all-gather, over the same group.
  bool isInPlace(GetParamShardOp op) const;

  /// The gathered bucket whose rank shard the shard that `op` writes into
  /// the parameters is produced in, or null: the shard is a shard
  /// optimizer's result read by `op` only, the bucket stores `op`'s
  /// parameters at its offsets and is gathered over `op`'s group, and
  /// nothing reads those parameters between the shard optimizer and `op`.
  AllGatherOp getShardBucket(SetParamShardOp op) const;

  /// The position of `op` in the step's block.
  unsigned getPosition(mlir::Operation *op) const {
    return position.lookup(op);
  }

  /// The first op that writes into the bucket of `gather`: the producer of
  /// its shard, or the all-gather.
  mlir::Operation *getFirstWrite(AllGatherOp gather) const;

private:
  /// Whether an op other than a ddp.set_params or ddp.set_param_shard reads
  /// one of `params` strictly between positions `begin` and `end`.
  bool isReadBetween(mlir::ArrayAttr params, unsigned begin,
                     unsigned end) const;

  llvm::DenseMap<mlir::Operation *, unsigned> position;
  /// The positions of the ops that read each parameter's value.
  llvm::DenseMap<mlir::StringAttr, llvm::SmallVector<unsigned>> reads;
  llvm::DenseMap<mlir::StringAttr, GatheredParam> stored;
};

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_RESULTPLACEMENT_H
