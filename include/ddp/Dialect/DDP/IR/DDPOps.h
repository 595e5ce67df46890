//===- DDPOps.h - Operations of the ddp dialect -----------------*- C++ -*-===//

#ifndef DDP_DIALECT_DDP_IR_DDPOPS_H
#define DDP_DIALECT_DDP_IR_DDPOPS_H

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Runtime/CollectiveKind.h"
#include "ddp/Support/CheckedCount.h"
#include "ddp/Support/ElementType.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <array>

namespace ddp::detail {
/// The token rules every collective shares: CollectiveOpInterface's
/// verifier (DDPOpVerifiers.cpp).
llvm::LogicalResult verifyAsyncCollective(mlir::Operation *op);
} // namespace ddp::detail

#include "ddp/Dialect/DDP/IR/DDPInterfaces.h.inc"

/// The checks DDP_CollectiveOp's generated verifiers call
/// (DDPOpVerifiers.cpp), so that a collective's own checks are written in
/// its ODS definition.
namespace ddp::detail {
/// The op's group is a valid group of a ddp.mesh; then the op's
/// verifyGroupSize with its size.
llvm::LogicalResult
verifyCollectiveGroup(CollectiveOpInterface op,
                      mlir::SymbolTableCollection &symbolTable);
/// Both shapes have the same rank and agree everywhere but in dimension 0,
/// where `gathered` is `groupSize` times `scattered`.
llvm::LogicalResult verifyScatteredShape(mlir::Operation *op,
                                         mlir::RankedTensorType gathered,
                                         mlir::RankedTensorType scattered,
                                         int64_t groupSize);
/// A point-to-point op's peer, `offset` places away, is another rank.
llvm::LogicalResult verifyPeerOffset(mlir::Operation *op, int64_t offset,
                                     int64_t groupSize);
/// A broadcast's root is a rank of its group.
llvm::LogicalResult verifyBroadcastRoot(mlir::Operation *op, uint64_t root,
                                        int64_t groupSize);
/// ddp.all_to_all_v: counts of n x s f32 row counts (s >= 1) and an input
/// whose dimension 0 cuts into n x s equal sub-blocks.
llvm::LogicalResult verifyCountedAllToAll(mlir::Operation *op,
                                          mlir::RankedTensorType input,
                                          mlir::RankedTensorType counts,
                                          int64_t groupSize);
/// An all-to-all's dimension 0 splits into one equal block per rank.
llvm::LogicalResult verifyAllToAllBlocks(mlir::Operation *op,
                                         mlir::RankedTensorType type,
                                         int64_t groupSize);
} // namespace ddp::detail

namespace ddp {

/// The compute stream. Ops issued on it read and write it, which keeps
/// generic passes from merging, dropping or reordering them: block order is
/// the schedule.
struct ComputeStreamResource
    : mlir::SideEffects::Resource::Base<ComputeStreamResource> {
  llvm::StringRef getName() final { return "ddp::ComputeStream"; }
};

/// The values of the parameters: ddp.get_param reads them, the optimizer
/// writes them, so reads on either side of an update stay distinct.
struct ParamStateResource
    : mlir::SideEffects::Resource::Base<ParamStateResource> {
  llvm::StringRef getName() final { return "ddp::ParamState"; }
};

} // namespace ddp

#define GET_OP_CLASSES
#include "ddp/Dialect/DDP/IR/DDPOps.h.inc"

namespace ddp {

/// The number of ranks in the process group spanned by `axes` of `mesh`, or
/// -1 when an axis is not in the mesh. A verified mesh's ranks fit in int64,
/// so the product cannot overflow.
int64_t getGroupSize(MeshOp mesh, mlir::ArrayAttr axes);

/// The ElementType of a float type (or of a shaped type's elements); nullopt
/// for element types the dialect does not carry (f8, integers).
std::optional<ElementType> getElementTypeOf(mlir::Type type);

/// The MLIR float type of `type`.
mlir::FloatType getFloatType(mlir::MLIRContext *context, ElementType type);

/// The size in bytes of a statically shaped tensor of a ddp element type, or
/// nullopt when it has another shape or element type or its size does not
/// fit in int64. Operand, result and parameter types of the dialect must have
/// one, so code after the verifier may multiply element counts by element
/// sizes without checking.
std::optional<int64_t> getTensorSizeInBytes(mlir::Type type);

/// Calls `fn` with the root of each symbol `op` and the ops nested in it
/// name in their attributes, as SymbolTable::getSymbolUses reports them
/// (not looking into nested symbol tables), without building each op's
/// attribute dictionary: an op with properties makes one anew per call,
/// which took a sixth of planning a 400k-op pipelined step. A symbol named
/// in two attributes of one op is reported twice. Returns false where
/// getSymbolUses gives up: an unregistered op with one region (which may
/// be a symbol table) was met, whose own references are reported and not
/// its region's.
bool forEachNamedSymbol(mlir::Operation *op,
                        llvm::function_ref<void(mlir::StringAttr)> fn);

/// Creates, at `builder`'s insertion point, the asynchronous form of the
/// synchronous collective `collective`: the same operands and inherent
/// attributes, and a token, issued after the ops of `dependencies`. The
/// discardable attributes are the caller's to carry over.
mlir::Operation *createAsyncCollective(mlir::OpBuilder &builder,
                                       mlir::Operation *collective,
                                       mlir::ValueRange dependencies = {});

/// The most experts a routing kernel lets a token choose (the runtime's
/// DDPRT_ROUTE_MAX_TOPK: its kernels keep a token's routes on the stack).
constexpr int64_t kMaxRoutingTopK = 32;

/// The (M, N, K) the cost model prices `gemm` at: its own, with the routed
/// rows scaled by its `ddp.routed_fill` (DecisionAttributes.cpp).
std::array<int64_t, 3> getCostedGemmShape(GemmOp gemm);

/// Element count of a statically shaped tensor type.
inline int64_t getNumElements(mlir::Type type) {
  return mlir::cast<mlir::ShapedType>(type).getNumElements();
}

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_DDPOPS_H
