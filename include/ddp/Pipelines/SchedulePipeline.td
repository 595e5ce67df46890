//===- SchedulePipeline.td - ddp-schedule's options ------*- tablegen -*-===//
//
// The options of the ddp-schedule pipeline: those its passes declare in
// Passes.td, with the same name, default and description, and the few of
// its own. ddp-tblgen -gen-pipeline-options turns them into
// SchedulePipelineOptions' members and into the passes' option structs.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_PIPELINES_SCHEDULEPIPELINE_TD
#define DDP_PIPELINES_SCHEDULEPIPELINE_TD

include "ddp/Dialect/DDP/Transforms/Passes.td"
include "ddp/Pipelines/PipelineBase.td"

def SchedulePipelineOptions : PipelineOptions {
  // ddp-print-bucket-layout is not here: its `output` is
  // print-bucket-layout below.
  let passes = [PipelineStages, AssignBuckets, DistributeOptimizer,
                OverlapParamGather, ShardParams, SplitBatch, OverlapTpComm,
                OverlapMoeComm, Combined1F1B, ScheduleCompute];
  // Megatron's defaults; the passes alone are the opt-in.
  let defaults = [PipelineDefault<"tp-comm-overlap", "false">,
                  PipelineDefault<"moe-shared-expert-overlap", "false">,
                  PipelineDefault<"overlap-moe-expert-parallel-comm",
                                  "false">];
  let options = [
    Option<"dataParallelShardingStrategy", "data-parallel-sharding-strategy",
           "::ddp::ShardingStrategy",
           /*default=*/"::ddp::ShardingStrategy::NoShard",
           "What the data-parallel ranks shard (Megatron's "
           "data_parallel_sharding_strategy); optim and after need "
           "use-distributed-optimizer=true; optim_grads_params buckets each "
           "FSDP unit (policy=unit) and runs ddp-shard-params",
           "::ddp::getShardingStrategyOptionValues()">,
    Option<"printBucketLayout", "print-bucket-layout", "std::string",
           /*default=*/"\"\"",
           "Write the bucket layout as JSON to this file ('-': stdout; "
           "empty: do not)">,
    Option<"moeImbalance", "moe-imbalance", "double", /*default=*/"1.0",
           "policy=auto prices the MoE overlap choices with the busiest "
           "rank's routed tokens over the balanced share (ddp-simulate's "
           "moe-imbalance; 1: balanced)">,
  ];
  // Megatron's command-line flags where their names differ from the
  // fields.
  let aliases = [
    OptionAlias<"megatronBucketSize", "ddp-bucket-size", "bucket-size",
                "Megatron's --ddp-bucket-size: bucket-size">,
    OptionAlias<"megatronNumBuckets", "ddp-num-buckets", "num-buckets",
                "Megatron's --ddp-num-buckets: num-buckets">,
    OptionAlias<"megatronPadBuckets", "ddp-pad-buckets-for-high-nccl-busbw",
                "pad-buckets-for-high-nccl-busbw",
                "Megatron's --ddp-pad-buckets-for-high-nccl-busbw">,
    OptionAlias<"megatronAverageInCollective", "ddp-average-in-collective",
                "average-in-collective",
                "Megatron's --ddp-average-in-collective">,
    OptionAlias<"megatronGradReduceInFp32",
                "accumulate-allreduce-grads-in-fp32", "grad-reduce-in-fp32",
                "Megatron's --accumulate-allreduce-grads-in-fp32: "
                "grad-reduce-in-fp32">,
    OptionAlias<"megatronCheckForNan", "check-for-nan-in-loss-and-grad",
                "check-for-nan-in-grad",
                "Megatron's --check-for-nan-in-loss-and-grad: "
                "check-for-nan-in-grad">,
    OptionAlias<"megatronDisableTpCommOverlapAg", "disable-tp-comm-overlap-ag",
                "tp-comm-overlap-ag", "Megatron's --disable-tp-comm-overlap-ag",
                /*negated=*/1>,
    OptionAlias<"megatronDisableTpCommOverlapRs", "disable-tp-comm-overlap-rs",
                "tp-comm-overlap-rs", "Megatron's --disable-tp-comm-overlap-rs",
                /*negated=*/1>,
    OptionAlias<"megatronDisableTpCommBulkDgrad", "disable-tp-comm-bulk-dgrad",
                "tp-comm-bulk-dgrad", "Megatron's --disable-tp-comm-bulk-dgrad",
                /*negated=*/1>,
    OptionAlias<"megatronDisableTpCommBulkWgrad", "disable-tp-comm-bulk-wgrad",
                "tp-comm-bulk-wgrad", "Megatron's --disable-tp-comm-bulk-wgrad",
                /*negated=*/1>,
  ];
}

#endif // DDP_PIPELINES_SCHEDULEPIPELINE_TD
