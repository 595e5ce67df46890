//===- DDPOpVerifiers.cpp - Verifiers of the ddp dialect's ops ------------===//
//
// The ops' verifiers (DDPOps.cpp has their syntax). Checks that need another
// symbol (the mesh of a process group, the parameter an op names) live in
// verifySymbolUses so that they use the verifier's cached symbol tables: a
// step has thousands of them.
//
// The buckets' and the optimizers' verifiers are in OptimizerVerifiers.cpp;
// the checks both use are declared in VerifierUtils.h.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Support/FormatNumber.h"

#include "VerifierUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace ddp;
using namespace ddp::detail;

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

static bool isIdentifier(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  return llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

std::string ddp::detail::formatDouble(double value) {
  return ddp::formatShortest(value);
}

static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleave(shape, os, "x");
  return out;
}

/// A token must be consumed exactly once, by a wait, a join or an
/// asynchronous op issued after it: a token never waited leaves a collective
/// that may still be writing its result, one waited twice means a schedule
/// that lost track of it.
static LogicalResult verifyTokenUses(Operation *op, Value token) {
  if (!token)
    return success();
  size_t numUses = std::distance(token.use_begin(), token.use_end());
  if (numUses == 0)
    return op->emitOpError("returns a token that is never waited");
  if (numUses > 1)
    return op->emitOpError("returns a token that is used ")
           << numUses << " times; it must be waited exactly once";
  Operation *user = *token.user_begin();
  auto dependent = dyn_cast<AsyncOpInterface>(user);
  if (!isa<WaitOp, JoinOp>(user) &&
      !(dependent && llvm::is_contained(dependent.getAsyncDependencies(), token)))
    return op->emitOpError("returns a token consumed by '")
           << user->getName()
           << "'; only ddp.wait, ddp.join and an asynchronous op issued "
              "after it may consume a token";
  return success();
}

/// A collective's token rules: its own token is consumed exactly once, and
/// only an asynchronous collective can be issued after other ops (a
/// synchronous one runs on the compute stream, which would have to wait).
LogicalResult ddp::detail::verifyAsyncCollective(Operation *op) {
  auto async = cast<AsyncOpInterface>(op);
  OperandRange dependencies = async.getAsyncDependencies();
  if (!async.isAsync() && !dependencies.empty())
    return op->emitOpError("is issued after ")
           << dependencies.size()
           << " token(s) but is synchronous; only an 'async' collective can "
              "be issued after other asynchronous ops";
  // A send completes only once its peer's receive is posted: holding a
  // send or a receive back behind another op lets both ranks of a pair wait
  // for each other (and NCCL needs a pair issued together).
  if (isa<SendOp, RecvOp>(op) && !dependencies.empty())
    return op->emitOpError("cannot be issued after other asynchronous ops: "
                           "a send and its receive must be issued together, "
                           "which holding one back can deadlock; wait for "
                           "the ops first");
  // As for ddp.wait: a token passed in from outside the step could not be
  // checked for being consumed exactly once.
  for (Value dependency : dependencies)
    if (!dependency.getDefiningOp())
      return op->emitOpError("is issued after a block argument; tokens must "
                             "come from an asynchronous op or a ddp.join");
  return verifyTokenUses(op, async.getAsyncToken());
}

FailureOr<ParamOp>
ddp::detail::lookupParam(Operation *op, FlatSymbolRefAttr name,
                         SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(op, name);
  if (!param)
    return op->emitOpError("refers to ") << name << ", which is not a ddp.param";
  return param;
}

LogicalResult
ddp::detail::verifyParamShape(Operation *op, FlatSymbolRefAttr name, Type value,
                              StringRef what,
                              SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param = lookupParam(op, name, symbolTable);
  if (failed(param))
    return failure();
  ArrayRef<int64_t> expected = param->getTensorType().getShape();
  ArrayRef<int64_t> actual = cast<RankedTensorType>(value).getShape();
  if (expected != actual)
    return op->emitOpError() << what << " has shape " << formatShape(actual)
                             << " but " << name << " has shape "
                             << formatShape(expected);
  return success();
}

FailureOr<int64_t>
ddp::detail::verifyGroup(Operation *op, FlatSymbolRefAttr meshName,
                         ArrayAttr axes, SymbolTableCollection &symbolTable) {
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(op, meshName);
  if (!mesh)
    return op->emitOpError("refers to ")
           << meshName << ", which is not a ddp.mesh";
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis for its group");
  llvm::StringSet<> seen;
  for (Attribute axis : axes) {
    StringRef name = cast<StringAttr>(axis).getValue();
    if (mesh.getAxisSize(name) < 0)
      return op->emitOpError("uses axis '")
             << name << "', which mesh " << meshName << " does not have";
    if (!seen.insert(name).second)
      return op->emitOpError("names axis '") << name << "' twice";
  }
  return getGroupSize(mesh, axes);
}

LogicalResult
ddp::detail::verifyCollectiveGroup(CollectiveOpInterface op,
                                   SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> groupSize =
      verifyGroup(op, op.getMeshAttr(), op.getAxesAttr(), symbolTable);
  if (failed(groupSize))
    return failure();
  return op.verifyGroupSize(*groupSize);
}

LogicalResult ddp::detail::verifyScatteredShape(Operation *op,
                                                RankedTensorType gathered,
                                                RankedTensorType scattered,
                                                int64_t groupSize) {
  if (gathered.getElementType() != scattered.getElementType())
    return op->emitOpError("changes the element type from ")
           << gathered.getElementType() << " to " << scattered.getElementType();
  if (gathered.getRank() != scattered.getRank() || gathered.getRank() == 0)
    return op->emitOpError("needs input and result of the same non-zero rank");
  if (gathered.getShape().drop_front() != scattered.getShape().drop_front())
    return op->emitOpError("may only change dimension 0");
  std::optional<int64_t> expected =
      llvm::checkedMul(scattered.getDimSize(0), groupSize);
  if (gathered.getDimSize(0) != expected)
    return op->emitOpError("over a group of ")
           << groupSize << " ranks needs dimension 0 of "
           << gathered.getDimSize(0) << " = " << groupSize << " x "
           << scattered.getDimSize(0);
  return success();
}

LogicalResult ddp::detail::verifyPeerOffset(Operation *op, int64_t offset,
                                            int64_t groupSize) {
  if (groupSize < 2)
    return op->emitOpError("needs a group of at least 2 ranks");
  if (offset % groupSize == 0)
    return op->emitOpError("offset ")
           << offset << " addresses the rank itself in a group of "
           << groupSize;
  return success();
}

LogicalResult ddp::detail::verifyBroadcastRoot(Operation *op, uint64_t root,
                                               int64_t groupSize) {
  // ODS keeps the root non-negative; its getter is unsigned.
  if (root >= static_cast<uint64_t>(groupSize))
    return op->emitOpError("root ")
           << root << " is not a rank of its group of " << groupSize
           << "; group ranks are 0 to " << groupSize - 1;
  return success();
}

LogicalResult ddp::detail::verifyAllToAllBlocks(Operation *op,
                                                RankedTensorType type,
                                                int64_t groupSize) {
  if (type.getRank() == 0 || type.getDimSize(0) % groupSize != 0)
    return op->emitOpError("over a group of ")
           << groupSize << " ranks needs dimension 0 to be a multiple of "
           << groupSize << " (one equal block per rank), got "
           << (type.getRank() == 0 ? std::string("a scalar")
                                   : std::to_string(type.getDimSize(0)));
  return success();
}

LogicalResult ddp::detail::verifyCountedAllToAll(Operation *op,
                                                 RankedTensorType input,
                                                 RankedTensorType counts,
                                                 int64_t groupSize) {
  int64_t numCounts = counts.getRank() == 1 ? counts.getDimSize(0) : 0;
  if (counts.getRank() != 1 || !counts.getElementType().isF32() ||
      numCounts == 0 || numCounts % groupSize != 0)
    return op->emitOpError("over a group of ")
           << groupSize << " ranks needs counts of " << groupSize
           << " x sub-blocks f32 row counts, e.g. tensor<" << groupSize
           << "xf32>, got " << RankedTensorType(counts);
  if (input.getRank() == 0 || input.getDimSize(0) % numCounts != 0)
    return op->emitOpError("needs dimension 0 to cut into ")
           << numCounts << " equal sub-blocks (" << groupSize << " ranks x "
           << numCounts / groupSize << "), got "
           << (input.getRank() == 0 ? std::string("a scalar")
                                    : std::to_string(input.getDimSize(0)));
  // The runtime moves whole rows of at least one element; counts are f32,
  // exact below 2^24.
  if (input.getNumElements() == 0)
    return op->emitOpError("moves rows of at least one element, got ")
           << RankedTensorType(input);
  if (input.getDimSize(0) / numCounts >= (int64_t(1) << 24))
    return op->emitOpError("needs sub-blocks of fewer than 2^24 rows (its "
                           "counts are f32), got ")
           << input.getDimSize(0) / numCounts;
  return success();
}

LogicalResult ddp::detail::verifyBucketExtents(
    Operation *op, ArrayRef<int64_t> numels, ArrayRef<int64_t> offsets,
    int64_t bucketSize, llvm::function_ref<std::string(size_t)> describe) {
  struct Extent {
    int64_t begin, end;
    size_t index;
  };
  SmallVector<Extent> extents;
  for (auto [index, numel, offset] : llvm::enumerate(numels, offsets)) {
    if (offset < 0)
      return op->emitOpError() << describe(index) << " has negative offset "
                               << offset;
    std::optional<int64_t> checkedEnd = llvm::checkedAdd(offset, numel);
    if (!checkedEnd)
      return op->emitOpError()
             << describe(index) << " at offset " << offset << " with "
             << numel << " elements ends past the " << bucketSize
             << " elements of the bucket";
    int64_t end = *checkedEnd;
    if (end > bucketSize)
      return op->emitOpError()
             << describe(index) << " ends at element " << end << ", past the "
             << bucketSize << " elements of the bucket";
    extents.push_back({offset, end, index});
  }
  llvm::sort(extents, [](const Extent &a, const Extent &b) {
    return a.begin < b.begin;
  });
  for (auto [prev, next] : llvm::zip(extents, llvm::drop_begin(extents)))
    if (next.begin < prev.end)
      return op->emitOpError()
             << describe(next.index) << " (elements [" << next.begin << ", "
             << next.end << ")) overlaps " << describe(prev.index)
             << " (elements [" << prev.begin << ", " << prev.end << "))";
  return success();
}

//===----------------------------------------------------------------------===//
// MeshOp, ParamOp, GetParamOp
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  if (getAxisNames().empty())
    return emitOpError("needs at least one axis");
  if (getAxisNames().size() != getShape().size())
    return emitOpError("has ") << getAxisNames().size() << " axis names but "
                               << getShape().size() << " sizes";
  llvm::StringSet<> seen;
  for (auto [name, size] : llvm::zip(getAxisNames(), getShape())) {
    StringRef axis = cast<StringAttr>(name).getValue();
    if (!isIdentifier(axis))
      return emitOpError("axis name '") << axis << "' is not an identifier";
    if (!seen.insert(axis).second)
      return emitOpError("has axis '") << axis << "' twice";
    if (size < 1)
      return emitOpError("axis '") << axis << "' has size " << size
                                   << "; sizes must be at least 1";
  }
  // Group sizes are products of axis sizes; bounding the whole product
  // bounds all of them.
  int64_t ranks = 1;
  for (int64_t size : getShape())
    if (llvm::MulOverflow(ranks, size, ranks))
      return emitOpError("axis sizes ")
             << formatShape(getShape())
             << " multiply to more ranks than fit in int64";
  return success();
}

LogicalResult ParamOp::verify() {
  if (std::optional<int64_t> layer = getLayer(); layer && *layer < 0)
    return emitOpError("has negative layer ") << *layer;
  if (std::optional<int64_t> dim = getTpDim();
      dim && (*dim < 0 || *dim >= getTensorType().getRank()))
    return emitOpError("tp_dim ")
           << *dim << " is not a dimension of " << getTensorType();
  return success();
}

LogicalResult
GetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param = lookupParam(*this, getParamAttr(), symbolTable);
  if (failed(param))
    return failure();
  if (param->getTensorType() != getType())
    return emitOpError("result type ")
           << getType() << " differs from " << getParamAttr() << "'s type "
           << param->getTensorType();
  return success();
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::verify() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType(),
                   result = getResult().getType();
  if (lhs.getElementType() != rhs.getElementType() ||
      lhs.getElementType() != result.getElementType())
    return emitOpError("operands and result must share one element type, got ")
           << lhs.getElementType() << ", " << rhs.getElementType() << " -> "
           << result.getElementType();
  int64_t rhsK = rhs.getDimSize(getTransposeRhs() ? 1 : 0);
  if (getK() != rhsK)
    return emitOpError("contraction sizes differ: lhs has K = ")
           << getK() << ", rhs has K = " << rhsK;
  if (result.getShape() != ArrayRef<int64_t>{getM(), getN()})
    return emitOpError("result shape ")
           << formatShape(result.getShape()) << " is not M x N = " << getM()
           << "x" << getN();
  if (std::optional<int64_t> layer = getLayer(); layer && *layer < 0)
    return emitOpError("has negative layer ") << *layer;
  return success();
}

LogicalResult ComputeOp::verify() {
  if (getKind().empty())
    return emitOpError("needs a non-empty kind");
  double flops = getFlops().convertToDouble();
  double bytes = getBytes().convertToDouble();
  if (!(flops >= 0.0) || !std::isfinite(flops))
    return emitOpError("flops must be finite and non-negative, got ")
           << formatDouble(flops);
  if (!(bytes >= 0.0) || !std::isfinite(bytes))
    return emitOpError("bytes must be finite and non-negative, got ")
           << formatDouble(bytes);
  if (getResults().empty())
    return emitOpError("needs at least one result");
  if (std::optional<int64_t> layer = getLayer(); layer && *layer < 0)
    return emitOpError("has negative layer ") << *layer;
  return verifyRouting(*this);
}

LogicalResult ScaleOp::verify() {
  if (!std::isfinite(getFactor().convertToDouble()))
    return emitOpError("needs a finite factor");
  return success();
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError("may only change the element type, not the shape");
  return success();
}

LogicalResult
GradReadyOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyParamShape(*this, getParamAttr(), getGrad().getType(),
                          "gradient", symbolTable);
}

LogicalResult WaitOp::verify() {
  // Tokens are born in the step itself; one passed in from outside could not
  // be checked for being waited exactly once.
  if (!getToken().getDefiningOp())
    return emitOpError("waits on a block argument; tokens must come from an "
                       "asynchronous op or a ddp.join");
  return success();
}

LogicalResult JoinOp::verify() {
  if (getTokens().empty())
    return emitOpError("needs at least one token");
  return verifyTokenUses(*this, getResult());
}

//===----------------------------------------------------------------------===//
// Row chunks
//===----------------------------------------------------------------------===//

LogicalResult ChunkOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  // I64Attr reads back unsigned; the sign is in the attribute.
  int64_t index = getIndexAttr().getInt(), count = getCountAttr().getInt();
  int64_t interleave = getInterleaveAttr().getInt();
  if (count < 1)
    return emitOpError("needs a chunk count of at least 1, got ") << count;
  if (index < 0 || index >= count)
    return emitOpError("takes chunk ")
           << index << " of " << count << "; it must be in [0, " << count
           << ")";
  if (interleave < 1)
    return emitOpError("needs an interleave of at least 1, got ")
           << interleave;
  if (input.getRank() < 1)
    return emitOpError("needs a tensor with rows, got a scalar");
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  int64_t rows = input.getDimSize(0);
  // The product of two large attributes must not wrap (to 0, a division by
  // zero, or to a divisor of the rows).
  int64_t parts = 0;
  if (llvm::MulOverflow(count, interleave, parts) || rows % parts != 0)
    return emitOpError("splits ")
           << rows << " rows into " << interleave << " x " << count
           << " chunks; the rows must divide evenly";
  SmallVector<int64_t> expected(input.getShape());
  expected[0] = rows / count;
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result must have shape ")
           << formatShape(expected) << ", got "
           << formatShape(result.getShape());
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  auto result = cast<RankedTensorType>(getResult().getType());
  if (result.getRank() < 1)
    return emitOpError("needs a result with rows, got a scalar");
  // I64Attr reads back unsigned; the sign is in the attribute.
  int64_t interleave = getInterleaveAttr().getInt();
  if (interleave < 1)
    return emitOpError("needs an interleave of at least 1, got ")
           << interleave;
  int64_t rows = 0;
  for (auto [index, type] : llvm::enumerate(getInputs().getTypes())) {
    auto input = cast<RankedTensorType>(type);
    if (input.getElementType() != result.getElementType() ||
        input.getRank() != result.getRank() ||
        input.getShape().drop_front() != result.getShape().drop_front())
      return emitOpError("operand #")
             << index << " of type " << type
             << " does not stack into the result " << result
             << ": every dimension but the first and the element type must "
                "match";
    if (input.getDimSize(0) % interleave != 0)
      return emitOpError("operand #")
             << index << " has " << input.getDimSize(0)
             << " rows, which do not split into " << interleave
             << " interleaved blocks";
    // Operands of 2^62 rows each would wrap the count into the result's.
    if (llvm::AddOverflow(rows, input.getDimSize(0), rows))
      return emitOpError("stacks more rows than fit in int64");
  }
  if (rows != result.getDimSize(0))
    return emitOpError("stacks ")
           << rows << " rows into a result of " << result.getDimSize(0);
  return success();
}
