//===- Combined1F1BOrder.h - Ops in Megatron's combined order ---*- C++ -*-===//
//
// Shared by ddp-combined-1f1b (a step without pipeline stages: every
// microbatch's forward beside the previous one's backward) and
// ddp-pipeline-stages (each steady-state step of the interleaved schedule
// with overlap-moe-expert-parallel-comm): where each op of a tagged step
// goes, given where each schedule node goes (ddp/Stages/Combined1F1B.h).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_COMBINED1F1BORDER_H
#define DDP_DIALECT_DDP_TRANSFORMS_COMBINED1F1BORDER_H

#include "ddp/Stages/Combined1F1B.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <map>

namespace ddp::combined {

/// TransformerConfig's asserts on the step overlap_moe_expert_parallel_comm
/// runs on (transformer_config.py, "only supported with expert model
/// parallelism", "only supported with bf16 or fp16 model"; the importer
/// checks the config's other fields): some mesh of `module` has an
/// expert-parallel size above 1, and every parameter is 16-bit; else an
/// error at `step`.
mlir::LogicalResult checkBatchLevelOverlapStep(mlir::ModuleOp module,
                                               mlir::Operation *step);

/// The backward's weight-gradient ops that delay_wgrad_compute moves out of
/// their nodes: the wgrad GEMMs TE's backward_dw computes (not the
/// router's: TopKRouter's weight is a plain parameter, its gradient made at
/// once), and what their node computes from them (the sums into the
/// gradient, its grad_ready).
llvm::DenseSet<mlir::Operation *> findDelayedWgradOps(mlir::Block &body);

/// Where a node's ops go: its key, given whether the op follows the
/// node's last collective in a forward combine node (`tail`) and whether
/// it is a delayed weight-gradient op.
using NodeKeyFn = llvm::function_ref<Combined1F1BKey(
    const ScheduleNode &node, bool tail, bool delayedWgrad)>;

/// The places of `ops` (in program order): a tagged op at its node's key,
/// a delayed weight-gradient op at its delayed key, an untagged op where
/// the latest delayed op it reads went, else where the tagged op before it
/// went. The untagged ops before the first tagged one go to `before`.
void placeByNodes(
    llvm::ArrayRef<mlir::Operation *> ops, NodeKeyFn keyOf,
    const llvm::DenseSet<mlir::Operation *> &delayedWgrads,
    std::map<Combined1F1BKey, llvm::SmallVector<mlir::Operation *>> &places,
    llvm::SmallVectorImpl<mlir::Operation *> &before);

/// One steady-state step of the interleaved schedule with the overlap
/// (combined_1f1b_schedule_for_interleaved_pipelining): the ops of a
/// forward task and of the backward task run beside it, each in program
/// order, in the combined order. Each task's layers count from its model
/// chunk's first, and the forward's i-th layer runs beside the backward's
/// i-th from last, the layers one chunk has more after
/// (TransformerModelChunkSchedulePlan.run, model_chunk_schedule_plan.py
/// L556-594 at d98e8a6).
struct CombinedStep {
  llvm::SmallVector<mlir::Operation *> ops;
  /// Where the step's tail begins in `ops` (the backward's last delayed
  /// wgrads, the forward's post-process, the backward's pre-process), or
  /// its size: Megatron issues the step's p2p calls there (L596-610).
  size_t tail = 0;
};
CombinedStep
orderCombinedStep(llvm::ArrayRef<mlir::Operation *> forward,
                  llvm::ArrayRef<mlir::Operation *> backward,
                  const llvm::DenseSet<mlir::Operation *> &delayedWgrads);

} // namespace ddp::combined

#endif // DDP_DIALECT_DDP_TRANSFORMS_COMBINED1F1BORDER_H
