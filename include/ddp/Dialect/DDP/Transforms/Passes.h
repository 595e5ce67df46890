//===- Passes.h - Passes of the ddp dialect ---------------------*- C++ -*-===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_PASSES_H
#define DDP_DIALECT_DDP_TRANSFORMS_PASSES_H

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/Transforms/TpCommNumSplits.h"
#include "ddp/Timing/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace ddp {

/// The values of the `policy` option of ddp-assign-buckets and ddp-schedule,
/// as `--help` lists them.
inline llvm::cl::ValuesClass getBucketPolicyOptionValues() {
  return llvm::cl::values(
      clEnumValN(BucketPolicy::Megatron, "megatron",
                 "Megatron-Core's _ParamAndGradBuffer layout"),
      clEnumValN(BucketPolicy::PyTorch, "pytorch",
                 "PyTorch DDP's compute_bucket_assignment_by_size"),
      clEnumValN(BucketPolicy::Size, "size",
                 "close a bucket at bucket-size elements or bucket-bytes"),
      clEnumValN(BucketPolicy::Auto, "auto",
                 "the layout of least simulated step time on hw"),
      clEnumValN(BucketPolicy::Unit, "unit",
                 "one bucket per FSDP unit (a transformer layer) and buffer"));
}

/// How ddp-schedule-compute (and ddp-schedule) orders the weight-gradient
/// GEMMs of the transformer layers.
enum class WgradSchedule {
  /// Where the importer put them, beside their dgrad.
  InPlace,
  /// Every layer's held back into the waits after it (the fixed rule).
  Delayed,
  /// Held back only in the layers where that fills a wait and ends the
  /// simulated step sooner.
  Auto,
};

/// Megatron's data_parallel_sharding_strategy (ddp-schedule's
/// data-parallel-sharding-strategy): what the data-parallel ranks shard.
enum class ShardingStrategy {
  /// Nothing: every rank keeps the whole model state.
  NoShard,
  /// The optimizer state and main parameters (the distributed optimizer).
  Optim,
  /// And the gradients; ddp's step reduces them once, as with Optim.
  OptimGrads,
  /// And the parameters: each FSDP unit gathered where it is used
  /// (ddp-shard-params).
  OptimGradsParams,
};

/// Megatron's name of `strategy`.
inline llvm::StringRef getShardingStrategyName(ShardingStrategy strategy) {
  switch (strategy) {
  case ShardingStrategy::NoShard:
    return "no_shard";
  case ShardingStrategy::Optim:
    return "optim";
  case ShardingStrategy::OptimGrads:
    return "optim_grads";
  case ShardingStrategy::OptimGradsParams:
    return "optim_grads_params";
  }
  llvm_unreachable("a sharding strategy");
}

/// The values of the data-parallel-sharding-strategy option.
inline llvm::cl::ValuesClass getShardingStrategyOptionValues() {
  auto value = [](ShardingStrategy strategy, llvm::StringRef description) {
    return llvm::cl::OptionEnumValue{getShardingStrategyName(strategy),
                                     int(strategy), description};
  };
  return llvm::cl::values(
      value(ShardingStrategy::NoShard,
            "every rank keeps the whole model state"),
      value(ShardingStrategy::Optim,
            "the distributed optimizer's sharded optimizer state"),
      value(ShardingStrategy::OptimGrads,
            "and sharded gradients (the same step here)"),
      value(ShardingStrategy::OptimGradsParams,
            "and sharded parameters, gathered per FSDP unit"));
}

/// The values of outer-dp-sharding-strategy: what Megatron-FSDP shards
/// across instances (arguments.py L3193-3198 at d98e8a6).
inline llvm::cl::ValuesClass getOuterShardingStrategyOptionValues() {
  auto value = [](ShardingStrategy strategy, llvm::StringRef description) {
    return llvm::cl::OptionEnumValue{getShardingStrategyName(strategy),
                                     int(strategy), description};
  };
  return llvm::cl::values(
      value(ShardingStrategy::NoShard, "replicated across instances (HSDP)"),
      value(ShardingStrategy::Optim,
            "the optimizer state sharded across them (hybrid FSDP)"));
}

#define GEN_PASS_DECL
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"

/// What ddp-assign-buckets rejects in its options before it reads any IR (a
/// negative size, the size policy without a budget, both a bucket size and
/// a number of buckets for the megatron layout, fewer than one instance,
/// instances or overlap-param-gather without the distributed optimizer, a
/// hw that names no profile or file).
/// ddp-schedule checks with it the options a module records, to report
/// their errors at the module.
llvm::Error checkAssignBucketsOptions(const AssignBucketsOptions &options);

/// The part of checkAssignBucketsOptions about each option's value on its
/// own (a negative size, fewer than one instance, a hw that names no
/// profile or file): what no other option, given or recorded in the
/// module, can make right. ddp-schedule's option parsers report these.
llvm::Error
checkAssignBucketsOptionValues(const AssignBucketsOptions &options);

/// ddp-schedule-compute's memory-cap-gib: a number of GiB from 0 (no cap)
/// to 8e9. ddp-schedule reports it where its options are parsed.
llvm::Error checkMemoryCapGib(double gib);

#define GEN_PASS_REGISTRATION
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"

} // namespace ddp

#endif // DDP_DIALECT_DDP_TRANSFORMS_PASSES_H
