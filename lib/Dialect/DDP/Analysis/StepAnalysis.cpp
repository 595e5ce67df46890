//===- StepAnalysis.cpp - Positions and lives in a step to lower ----------===//

#include "StepAnalysis.h"

#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/TensorBytes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace ddp;

/// Whether `type` is a tensor the runtime can hold.
static bool isLowerableTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         getRuntimeDType(tensor.getElementType()) != 0;
}

/// Whether `type` is a value only ddp ops may use in a step: the runtime
/// holds tensors in its buffers and tokens as handles.
static bool isRuntimeValue(Type type) {
  return isa<TensorType, TokenType>(type);
}

LogicalResult StepAnalysis::verifyLowerable() {
  Region &body = step.getBody();
  if (!body.hasOneBlock())
    return step.emitError("cannot lower step @")
           << step.getSymName() << ": it has " << body.getBlocks().size()
           << " blocks; the runtime runs straight-line steps only";
  for (auto [index, type] : llvm::enumerate(step.getArgumentTypes()))
    if (!isLowerableTensor(type))
      return step.emitError("cannot lower step @")
             << step.getSymName() << ": argument #" << index << " has type "
             << type
             << "; step inputs must be statically shaped tensors of f16, "
                "bf16, f32 or f64";
    else if (!getTensorSizeInBytes(type))
      // The dialect bounds its own values; the step's inputs are func's.
      return step.emitError("cannot lower step @")
             << step.getSymName() << ": argument #" << index << " of type "
             << type << " takes 2^63 bytes or more; no rank can hold it";
  // Which ddp ops can be lowered is the conversion's business: one without
  // a pattern fails it. Here: what a step returns (the importer returns the
  // losses) is computed and left in its buffers, and ops of other dialects
  // may compute scalars (lowered by the patterns the conversion has, e.g.
  // arith and func calls) but not touch the runtime's values.
  for (Operation &op : body.front()) {
    // An interleaved chunk is one row range per block: only a GEMM that
    // multiplies it block by block reads it without a copy.
    if (auto chunk = dyn_cast<ChunkOp>(op); chunk && chunk.getInterleave() > 1)
      for (OpOperand &use : chunk.getResult().getUses()) {
        auto gemm = dyn_cast<GemmOp>(use.getOwner());
        if (!gemm || use.getOperandNumber() != 0 || gemm.getTransposeLhs())
          return use.getOwner()->emitError("'")
                 << use.getOwner()->getName()
                 << "' cannot be lowered: it reads an interleaved ddp.chunk, "
                    "whose rows are not contiguous; only a ddp.gemm can, as "
                    "its lhs, not transposed";
      }
    if (isa_and_present<DDPDialect>(op.getDialect()) || isa<func::ReturnOp>(op))
      continue;
    if (op.getNumRegions() != 0)
      return op.emitError("'")
             << op.getName()
             << "' cannot be lowered to the runtime: it has regions; the "
                "runtime runs straight-line steps only";
    if (llvm::any_of(op.getOperandTypes(), isRuntimeValue) ||
        llvm::any_of(op.getResultTypes(), isRuntimeValue))
      return op.emitError("'")
             << op.getName()
             << "' cannot be lowered to the runtime: only ddp ops may use "
                "the step's tensors and tokens";
  }
  return success();
}

void StepAnalysis::numberOps() {
  for (auto [index, op] : llvm::enumerate(step.getBody().front())) {
    position[&op] = index;
    StringAttr param;
    if (auto sgd = dyn_cast<SGDOp>(op))
      param = sgd.getParamAttr().getAttr();
    else if (auto adam = dyn_cast<AdamOp>(op))
      param = adam.getParamAttr().getAttr();
    if (param)
      updates[param].push_back(index);
    if (auto setParams = dyn_cast<SetParamsOp>(op))
      for (auto name : setParams.getParams().getAsRange<FlatSymbolRefAttr>())
        updates[name.getAttr()].push_back(index);
    if (auto setShard = dyn_cast<SetParamShardOp>(op))
      for (auto name : setShard.getParams().getAsRange<FlatSymbolRefAttr>())
        updates[name.getAttr()].push_back(index);
  }
}

std::optional<unsigned> StepAnalysis::getNextUpdate(StringAttr param,
                                                    unsigned position) const {
  auto found = updates.find(param);
  if (found == updates.end())
    return std::nullopt;
  const unsigned *next = llvm::upper_bound(found->second, position);
  if (next == found->second.end())
    return std::nullopt;
  return *next;
}

unsigned StepAnalysis::getCompletion(Value token) const {
  // The verifier guarantees one consumer: a wait, a join, or an op issued
  // after the token's op, whose own completion covers it.
  Operation *consumer = *token.user_begin();
  if (auto join = dyn_cast<JoinOp>(consumer))
    return getCompletion(join.getResult());
  if (auto dependent = dyn_cast<AsyncOpInterface>(consumer))
    return getCompletion(dependent.getAsyncToken());
  return getPosition(consumer);
}

unsigned StepAnalysis::getUseEnd(Operation *user) const {
  if (auto async = dyn_cast<AsyncOpInterface>(user))
    if (Value token = async.getAsyncToken(); token && !token.use_empty())
      return getCompletion(token);
  return getPosition(user);
}

unsigned StepAnalysis::getLastUse(Value value) const {
  unsigned last = 0;
  for (Operation *user : value.getUsers()) {
    last = std::max(last, getUseEnd(user));
    // A marked gradient and a chunk are the same storage read later.
    if (auto gradReady = dyn_cast<GradReadyOp>(user))
      last = std::max(last, getLastUse(gradReady.getResult()));
    if (auto chunk = dyn_cast<ChunkOp>(user))
      last = std::max(last, getLastUse(chunk.getResult()));
  }
  return last;
}

