//===- PipelinePrograms.h - The stage programs of a pipeline ----*- C++ -*-===//
//
// What the order check and the pipeline simulator both read of a module of
// stage programs (ddp-pipeline-stages): one program per rank of the mesh's
// `pp` axis, and which rank each send or receive over `[pp]` addresses.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_IR_PIPELINEPROGRAMS_H
#define DDP_DIALECT_DDP_IR_PIPELINEPROGRAMS_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace ddp {

struct PipelinePrograms {
  MeshOp mesh;
  int64_t stages = 0;
  /// Rank r's program, each with a body.
  llvm::SmallVector<mlir::func::FuncOp> byRank;
};

/// The stage programs of `module`: none when no function has
/// `ddp.pipeline_stage`; an error at the offending function when one has no
/// body, two share a rank, no mesh has a `pp` axis, or a rank of that axis
/// has no program or a program names a rank beyond it.
mlir::FailureOr<std::optional<PipelinePrograms>>
getPipelinePrograms(mlir::ModuleOp module);

/// Whether `func` is a pipelined step not yet split into stage programs:
/// ops of its body name the pipeline rank that runs them
/// (`ddp.pipeline_stage`), as the importer's reference step does.
bool isUnsplitPipelineStep(mlir::func::FuncOp func);

/// The one pipeline rank's program that ddp-extract-pipeline-stage left of
/// `module` (it records every program's groups, `ddp.program_groups`); null
/// for any other module. Its sends and receives pair with programs the
/// module no longer holds, so what checks or simulates the whole pipeline
/// refuses it.
mlir::func::FuncOp getExtractedStageProgram(mlir::ModuleOp module);

/// Whether `op` is a send or receive whose group includes the `pp` axis.
bool isPipelineMessage(mlir::Operation *op);

/// The pipeline rank that `message` (a send or receive over [pp]) on rank
/// `rank` of `stages` addresses; computed without overflow for any offset.
int64_t getPipelinePeer(mlir::Operation *message, int64_t rank,
                        int64_t stages);

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_PIPELINEPROGRAMS_H
