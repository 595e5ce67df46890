//===- PointToPointPairing.h - Pairing of sends and receives ----*- C++ -*-===//
//
// Part of ddp-verify-collective-order: the sends and receives of a function
// pair up the same way on every rank and cannot deadlock.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_POINTTOPOINTPAIRING_H
#define DDP_DIALECT_DDP_TRANSFORMS_POINTTOPOINTPAIRING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace ddp {

/// Checks the `ddp.send`s and `ddp.recv`s at the top level of `func`, a
/// function with one block whose collectives every rank issues. The `i`-th
/// send to offset `d` over a group must meet the `i`-th receive from offset
/// `-d` (modulo the group size) over the same group with as many elements of
/// the same type, and the two must be issued in one batch: with no wait, no
/// other collective and no `callsCollectives` op between them, and the first
/// one asynchronous. Emits an error per failure; adds the number of pairs to
/// `numPairs`. In a pipeline stage program the sends and receives over `pp`
/// go to other programs: verifyPipelineOrder checks them.
mlir::LogicalResult verifyPointToPointPairs(
    mlir::func::FuncOp func,
    llvm::function_ref<bool(mlir::Operation *)> callsCollectives,
    uint64_t &numPairs);

/// Runs the pipeline stage programs of `module` (functions with
/// `ddp.pipeline_stage`) together and fails, naming where each rank waits,
/// if their sends and receives over `pp` can hang, or do not pair up with
/// the same elements (PipelineOrderCheck.cpp); a call in a stage program
/// that `callsCollectives` is refused. Adds the pairs to `numPairs`.
mlir::LogicalResult verifyPipelineOrder(
    mlir::ModuleOp module,
    llvm::function_ref<bool(mlir::Operation *)> callsCollectives,
    uint64_t &numPairs);

} // namespace ddp

#endif // DDP_DIALECT_DDP_TRANSFORMS_POINTTOPOINTPAIRING_H
