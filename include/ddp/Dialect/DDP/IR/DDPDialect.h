//===- DDPDialect.h - The ddp dialect, its types and attributes -*- C++ -*-===//

#ifndef DDP_DIALECT_DDP_IR_DDPDIALECT_H
#define DDP_DIALECT_DDP_IR_DDPDIALECT_H

#include "ddp/Dialect/DDP/IR/ActivationBytes.h"
#include "ddp/Stages/Combined1F1B.h"
#include "ddp/Stages/PipelineSchedule.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include <optional>

#include "ddp/Dialect/DDP/IR/DDPDialect.h.inc"
#include "ddp/Dialect/DDP/IR/DDPEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "ddp/Dialect/DDP/IR/DDPTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ddp/Dialect/DDP/IR/DDPAttrs.h.inc"

namespace ddp {
/// The module attribute that records the schedule a step was configured
/// with: a dictionary from ddp-schedule option names (`overlap-grad-reduce`,
/// `bucket-size`, ...) to their values. The importer writes it, the
/// schedule pipeline reads it.
constexpr llvm::StringLiteral kScheduleOptionsAttrName = "ddp.schedule_options";

// Typed access to the decisions DDPDialect.td declares as discardable
// attributes (`DDPDialect::<Name>AttrHelper::getNameStr()` is each name).
// The dialect verifies them, so a value read here is in range.

/// `ddp.bucket`: the bucket a gradient or a bucket's op belongs to.
std::optional<int64_t> getBucketIndex(mlir::Operation *op);
void setBucketIndex(mlir::Operation *op, int64_t index);
/// `ddp.bucket_offset`: a gradient's first element in its bucket.
std::optional<int64_t> getBucketOffset(mlir::Operation *op);
void setBucketOffset(mlir::Operation *op, int64_t offset);
/// `ddp.fsdp_unit`: the FSDP unit, in forward order, a ddp.get_param_shard
/// is gathered for.
std::optional<int64_t> getFsdpUnit(mlir::Operation *op);
void setFsdpUnit(mlir::Operation *op, int64_t unit);
/// `ddp.tp_comm_splits`: the row chunks of a ddp.gemm.
std::optional<int64_t> getTpCommSplits(mlir::Operation *op);
void setTpCommSplits(mlir::Operation *op, int64_t splits);
/// `ddp.tp_comm_bulk`: marks a collective made bulk.
bool isTpCommBulk(mlir::Operation *op);
void setTpCommBulk(mlir::Operation *op);
/// `ddp.tp_comm_predicted_step_us`: on the step, auto's predicted time.
std::optional<double> getTpCommPredictedStepUs(mlir::Operation *op);
void setTpCommPredictedStepUs(mlir::Operation *op, double microseconds);
bool isDelayedWgrad(mlir::Operation *op);
void setDelayedWgrad(mlir::Operation *op);
std::optional<double> getComputePredictedStepUs(mlir::Operation *op);
void setComputePredictedStepUs(mlir::Operation *op, double microseconds);
void setBatchSplit(mlir::Operation *func, int64_t count);
std::optional<int64_t> getBatchSplit(mlir::Operation *func);

/// The pipeline rank whose step a function is (`ddp.pipeline_stage`).
std::optional<int64_t> getPipelineStage(mlir::Operation *func);
void setPipelineStage(mlir::Operation *func, int64_t stage);
/// `ddp.keeps_pipeline_outputs`: a stage program that holds the forward
/// outputs it sends until their backwards.
bool keepsPipelineOutputs(mlir::Operation *func);
void setKeepsPipelineOutputs(mlir::Operation *func);

/// The (phase, microbatch, chunk) an op of a pipelined step belongs to
/// (`ddp.task`).
std::optional<PipelineTask> getPipelineTask(mlir::Operation *op);
void setPipelineTask(mlir::Operation *op, const PipelineTask &task);
/// `ddp.schedule_node`: the op's node of Megatron's combined 1F1B schedule.
std::optional<ScheduleNode> getScheduleNode(mlir::Operation *op);
void setScheduleNode(mlir::Operation *op, const ScheduleNode &node);
/// `ddp.routed`: the op works on the tokens routed to this rank's experts;
/// the value caps how far imbalance can raise its rows (0: no cap).
std::optional<double> getRoutedLimit(mlir::Operation *op);
void setRoutedLimit(mlir::Operation *op, double limit);
/// `ddp.routed_fill`: the fraction of the op's routed rows balanced routing
/// fills (1 when absent: its rows are sized for balanced routing).
double getRoutedFill(mlir::Operation *op);
void setRoutedFill(mlir::Operation *op, double fill);
/// The factor `moe-imbalance` (the busiest rank's routed tokens over the
/// balanced share, >= 1) raises the op's balanced rows by: 1 for an op not
/// routed.
double getRoutedImbalanceFactor(mlir::Operation *op, double imbalance);
/// What the cost model scales an op's cost by, for an op whose cost is
/// linear in its rows: its fill times its imbalance factor.
double getRoutedCostFactor(mlir::Operation *op, double imbalance);

/// `ddp.activation_bytes` on the module, `{layer = .., embedding = ..,
/// output = ..}`: what one microbatch keeps for its backward, which the
/// importer records.
std::optional<ActivationBytes> getActivationBytes(mlir::Operation *module);
void setActivationBytes(mlir::Operation *module, const ActivationBytes &bytes);
} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_DDPDIALECT_H
