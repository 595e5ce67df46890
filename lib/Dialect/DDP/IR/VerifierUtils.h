//===- VerifierUtils.h - Checks shared by the ops' verifiers ----*- C++ -*-===//
//
// Private to the dialect's verifiers (DDPOpVerifiers.cpp,
// OptimizerVerifiers.cpp): each emits its diagnostic on `op`.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_DIALECT_DDP_IR_VERIFIERUTILS_H
#define DDP_LIB_DIALECT_DDP_IR_VERIFIERUTILS_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace ddp::detail {

/// Every digit the value needs, so that diagnostics read `got -0.001` and
/// `got inf` (`%g` would print a beta of 1.0000001 as 1).
std::string formatDouble(double value);

mlir::FailureOr<ParamOp> lookupParam(mlir::Operation *op,
                                     mlir::FlatSymbolRefAttr name,
                                     mlir::SymbolTableCollection &symbolTable);

/// The parameter named by `op` must exist and have the shape of `value`.
mlir::LogicalResult verifyParamShape(mlir::Operation *op,
                                     mlir::FlatSymbolRefAttr name,
                                     mlir::Type value, llvm::StringRef what,
                                     mlir::SymbolTableCollection &symbolTable);

/// Resolves the process group of a collective: the mesh must exist and the
/// axes must be distinct axes of it. Returns the number of ranks in the group.
mlir::FailureOr<int64_t> verifyGroup(mlir::Operation *op,
                                     mlir::FlatSymbolRefAttr meshName,
                                     mlir::ArrayAttr axes,
                                     mlir::SymbolTableCollection &symbolTable);

/// Entries `[offsets[i], offsets[i] + numels[i])` lie inside a bucket of
/// `bucketSize` elements and do not overlap. `describe` names entry `i` in a
/// diagnostic ("gradient #1", "parameter @w").
mlir::LogicalResult
verifyBucketExtents(mlir::Operation *op, llvm::ArrayRef<int64_t> numels,
                    llvm::ArrayRef<int64_t> offsets, int64_t bucketSize,
                    llvm::function_ref<std::string(size_t)> describe);

/// The operands of a ddp.compute's routing kernel (RoutingVerifier.cpp).
mlir::LogicalResult verifyRouting(ComputeOp op);

} // namespace ddp::detail

#endif // DDP_LIB_DIALECT_DDP_IR_VERIFIERUTILS_H
