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

/// Which marks of a schedule to look for.
enum class ScheduleMarks {
  /// What the bucketing and sharding passes leave: the layout
  /// ddp-assign-buckets records, gradients assigned to buckets, the bucket
  /// and shard ops, and a gradient's reduction made asynchronous. A
  /// hand-written step may well have asynchronous collectives of its own
  /// (an input's broadcast) and still be unscheduled.
  Bucketing,
  /// Those, and the asynchronous collectives and the ops the overlap passes
  /// make: for ddp-import's steps, whose collectives are all synchronous
  /// (docs/Architecture.md).
  Any,
};

/// What shows that `step` has been scheduled already, and where; nullopt
/// for an unscheduled step.
std::optional<std::pair<mlir::Location, std::string>>
findScheduleMark(mlir::func::FuncOp step, ScheduleMarks marks);

} // namespace ddp

#endif // DDP_DIALECT_DDP_TRANSFORMS_SCHEDULEMARK_H
