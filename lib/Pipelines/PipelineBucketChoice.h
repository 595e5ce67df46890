//===- PipelineBucketChoice.h - policy=auto's buckets in a pipeline -*- C++ -*-===//
//
// policy=auto lays out each pipeline rank's buckets with its program priced
// alone, which sees no bubble: the gaps a rank waits in during the
// pipeline's drain are room for reductions that it does not count. So on a
// pipelined step ddp-schedule also schedules Megatron's layout (bucketing
// only on the first rank's first chunk) and keeps, rank by rank, the layout
// under which the whole pipeline simulates faster.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_PIPELINES_PIPELINEBUCKETCHOICE_H
#define DDP_LIB_PIPELINES_PIPELINEBUCKETCHOICE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace ddp {

/// Schedules `module` (a pipelined step) with `schedule(useAuto, candidate)`
/// both ways in copies, simulates the pipeline with hardware profile
/// `hardware` at data-parallel size `dataParallelSize` (0: the mesh's),
/// starts from the faster and switches one rank at a time to the other
/// layout while that makes the step faster. Replaces the module's body
/// with the result; each program's ddp.bucket_policy names the layout it
/// kept. Fails, leaving the module as it was, when either candidate fails
/// to schedule or simulate.
mlir::LogicalResult choosePipelineBuckets(
    mlir::ModuleOp module, llvm::StringRef hardware, int64_t dataParallelSize,
    llvm::function_ref<mlir::LogicalResult(bool, mlir::ModuleOp)> schedule);

} // namespace ddp

#endif // DDP_LIB_PIPELINES_PIPELINEBUCKETCHOICE_H
