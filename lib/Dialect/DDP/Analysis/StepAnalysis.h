//===- StepAnalysis.h - Positions and lives in a step to lower --*- C++ -*-===//
//
// What the storage planner and the buffer reuse need to know of a step: that
// it can be lowered, each op's position, where each value is read for the
// last time, and when each parameter is next overwritten. Internal to
// DDPAnalysis; the validator derives the same on its own on purpose.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_DIALECT_DDP_ANALYSIS_STEPANALYSIS_H
#define LIB_DIALECT_DDP_ANALYSIS_STEPANALYSIS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ddp {

/// The checks and the positions the planner needs.
class StepAnalysis {
public:
  explicit StepAnalysis(mlir::func::FuncOp step) : step(step) {}

  mlir::LogicalResult verifyLowerable();
  void numberOps();

  /// The position of `op` in the step's block.
  unsigned getPosition(mlir::Operation *op) const { return position.lookup(op); }

  /// Where `user` stops reading its operands: its own position, or for an
  /// asynchronous op the wait that completes it.
  unsigned getUseEnd(mlir::Operation *user) const;

  /// The last position at which the storage of `value` is read, counting
  /// the values that alias it through ddp.grad_ready.
  unsigned getLastUse(mlir::Value value) const;

  /// The position of the first update of `param` after `position`, if any.
  std::optional<unsigned> getNextUpdate(mlir::StringAttr param,
                                        unsigned position) const;
  /// Records that the op at `position` writes `param`'s storage (a write
  /// into the bucket that stores it).
  void addUpdate(mlir::StringAttr param, unsigned position) {
    llvm::SmallVector<unsigned> &positions = updates[param];
    positions.insert(llvm::upper_bound(positions, position), position);
  }

private:
  unsigned getCompletion(mlir::Value token) const;

  mlir::func::FuncOp step;
  llvm::DenseMap<mlir::Operation *, unsigned> position;
  /// The positions of each parameter's optimizer updates, in order.
  llvm::DenseMap<mlir::StringAttr, llvm::SmallVector<unsigned>> updates;
};

class StoragePlan;

/// Places the buffers of `plan` in its arenas (BufferReuse.h): with
/// `reuseBuffers`, every buffer that may share bytes in one arena by its
/// life in the step, the others (step inputs, which the setup fills once;
/// buckets that store parameters from step to step; buckets with padding,
/// which must stay zero) and all without `reuseBuffers` in arenas of their
/// own.
void placeBuffersInArenas(StoragePlan &plan, const StepAnalysis &analysis,
                          bool reuseBuffers);

} // namespace ddp

#endif // LIB_DIALECT_DDP_ANALYSIS_STEPANALYSIS_H
