//===- MeshLookup.h - The mesh a step's groups are over ---------*- C++ -*-===//
//
// Below the passes, so that the schedule model (ddp/ScheduleModel) and the
// passes find a step's mesh alike. Defined in DDPOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_IR_MESHLOOKUP_H
#define DDP_DIALECT_DDP_IR_MESHLOOKUP_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"

namespace ddp {

/// The `ddp.mesh` named `name` in the module of `step`, or null. Only the
/// module's ddp.mesh ops are read: the bucketing passes run on each step
/// function, possibly in parallel, and a symbol table of the module would
/// read the sibling steps that other threads are rewriting.
MeshOp lookupMesh(mlir::Operation *step, mlir::FlatSymbolRefAttr name);

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_MESHLOOKUP_H
