//===- ScheduleMark.h - Whether a step is scheduled already -----*- C++ -*-===//
//
// ddp-schedule and ddp-plan take the unscheduled step (ddp-import's output).
// A scheduled one would be left as it is: its gradients are no longer
// reduced by the synchronous all-reduces the pipeline buckets, so new
// options would be ignored without a word.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_SCHEDULEMARK_H
#define DDP_DIALECT_DDP_TRANSFORMS_SCHEDULEMARK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <utility>

namespace ddp {

/// What shows that `step` has been scheduled already, and where; nullopt
/// for an unscheduled step. The marks are what the schedule passes leave:
/// the layout ddp-assign-buckets records, and the ops and asynchronous
/// collectives that only the rewrites after it create (an unscheduled step
/// has its collectives synchronous, docs/Architecture.md).
std::optional<std::pair<mlir::Location, std::string>>
findScheduleMark(mlir::func::FuncOp step);

} // namespace ddp

#endif // DDP_DIALECT_DDP_TRANSFORMS_SCHEDULEMARK_H
