//===- SchedulePipeline.h - The ddp-schedule pass pipeline ------*- C++ -*-===//
//
// Bucketing and overlap of the data-parallel gradient reduction as one
// pipeline with one options struct, for ddp-opt (`--ddp-schedule="..."`) and
// for embedders (populateDDPSchedulePipeline). Option names are Megatron-
// Core's DistributedDataParallelConfig fields; Megatron's command-line flag
// names are accepted too where they differ (docs/Scheduling.md).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_PIPELINES_SCHEDULEPIPELINE_H
#define DDP_PIPELINES_SCHEDULEPIPELINE_H

#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/StringSet.h"

namespace ddp {

struct SchedulePipelineOptions
    : public mlir::PassPipelineOptions<SchedulePipelineOptions> {
  Option<BucketPolicy> policy{*this, "policy",
                              llvm::cl::desc("Bucketing policy"),
                              llvm::cl::init(BucketPolicy::Megatron),
                              getBucketPolicyOptionValues()};
  Option<std::string> hardware{
      *this, "hw",
      llvm::cl::desc("Hardware profile for the auto policy (built-in name or "
                     "JSON file)"),
      llvm::cl::init("h100-sxm-ib400")};
  Option<int64_t> dataParallelSize{
      *this, "dp",
      llvm::cl::desc("Lay out and optimise for this data-parallel size "
                     "instead of the mesh's (0: the mesh's)"),
      llvm::cl::init(0)};
  Option<bool> overlapGradReduce{
      *this, "overlap-grad-reduce",
      llvm::cl::desc("Overlap bucket reductions with the backward pass "
                     "(Megatron's --overlap-grad-reduce); false reduces "
                     "synchronously at the end"),
      llvm::cl::init(true)};
  Option<int64_t> bucketSize{
      *this, "bucket-size",
      llvm::cl::desc("Elements per bucket (Megatron's bucket_size; the size "
                     "policy's budget); 0: the policy's default"),
      llvm::cl::init(0)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("The size policy's budget in bytes"), llvm::cl::init(0)};
  Option<int64_t> numBuckets{
      *this, "num-buckets",
      llvm::cl::desc("Bucket size = parameter elements / this (megatron)"),
      llvm::cl::init(0)};
  Option<bool> useDistributedOptimizer{
      *this, "use-distributed-optimizer",
      llvm::cl::desc("Megatron's distributed-optimizer padding and shared "
                     "embedding bucket"),
      llvm::cl::init(false)};
  Option<bool> overlapParamGather{
      *this, "overlap-param-gather",
      llvm::cl::desc("Gather the distributed optimizer's updated parameters "
                     "asynchronously in the next forward, each before its "
                     "first use (Megatron's --overlap-param-gather); false "
                     "gathers them synchronously after the optimizer"),
      llvm::cl::init(false)};
  Option<bool> alignParamGather{
      *this, "align-param-gather",
      llvm::cl::desc("With overlap-param-gather, issue every parameter "
                     "gather at the start of the step instead of chaining "
                     "each to the previous one's wait"),
      llvm::cl::init(false)};
  Option<int64_t> numDistributedOptimizerInstances{
      *this, "num-distributed-optimizer-instances",
      llvm::cl::desc("With use-distributed-optimizer: split the "
                     "data-parallel group into this many instances, each "
                     "sharding the optimizer, the shard all-reduced across "
                     "them (Megatron's partial distributed optimizer)"),
      llvm::cl::init(1)};
  Option<bool> padBucketsForHighNcclBusbw{
      *this, "pad-buckets-for-high-nccl-busbw",
      llvm::cl::desc("Pad bucket ends to lcm(n, 128, 2^16)"),
      llvm::cl::init(false)};
  Option<bool> gradReduceInFp32{
      *this, "grad-reduce-in-fp32",
      llvm::cl::desc("Reduce 16-bit gradients in f32 buckets"),
      llvm::cl::init(false)};
  Option<bool> averageInCollective{
      *this, "average-in-collective",
      llvm::cl::desc("Average in the collective instead of pre-scaling by "
                     "1/n"),
      llvm::cl::init(false)};
  Option<bool> checkForNanInGrad{
      *this, "check-for-nan-in-grad",
      llvm::cl::desc("Check every bucket for NaN and Inf before reducing it"),
      llvm::cl::init(false)};
  Option<int64_t> firstBucketBytes{
      *this, "first-bucket-bytes",
      llvm::cl::desc("PyTorch's first bucket cap in bytes (0: 1 MiB, or "
                     "bucket-cap-bytes when given, as torch 2.x)"),
      llvm::cl::init(0)};
  Option<int64_t> bucketCapBytes{
      *this, "bucket-cap-bytes",
      llvm::cl::desc("PyTorch's bucket cap in bytes (bucket_cap_mb; 0: "
                     "25 MiB)"),
      llvm::cl::init(0)};
  Option<int64_t> maxBucketGradients{
      *this, "max-bucket-gradients",
      llvm::cl::desc("The auto policy's longest bucket in gradients (0: no "
                     "limit)"),
      llvm::cl::init(0)};
  // Tensor-parallel overlap (ddp-overlap-tp-comm), Megatron's
  // TransformerConfig fields with their defaults.
  Option<bool> tpCommOverlap{
      *this, "tp-comm-overlap",
      llvm::cl::desc("Overlap the tensor-parallel collectives with the GEMMs "
                     "beside them (Megatron's --tp-comm-overlap)"),
      llvm::cl::init(false)};
  Option<bool> tpCommOverlapAg{
      *this, "tp-comm-overlap-ag",
      llvm::cl::desc("Pipeline the all-gather before a GEMM with the GEMM's "
                     "row chunks"),
      llvm::cl::init(true)};
  Option<bool> tpCommOverlapRs{
      *this, "tp-comm-overlap-rs",
      llvm::cl::desc("Pipeline forward GEMMs with the reduction of their "
                     "result"),
      llvm::cl::init(true)};
  Option<bool> tpCommOverlapRsDgrad{
      *this, "tp-comm-overlap-rs-dgrad",
      llvm::cl::desc("Pipeline dgrad GEMMs with the reduction of their "
                     "result"),
      llvm::cl::init(false)};
  Option<bool> tpCommBulkDgrad{
      *this, "tp-comm-bulk-dgrad",
      llvm::cl::desc("Run the all-gather of a layer's input for its wgrad "
                     "beside its dgrad GEMM"),
      llvm::cl::init(true)};
  Option<bool> tpCommBulkWgrad{
      *this, "tp-comm-bulk-wgrad",
      llvm::cl::desc("Run the reduction of a dgrad result beside the wgrad "
                     "GEMM"),
      llvm::cl::init(true)};
  Option<bool> tpCommOverlapDisableQkv{
      *this, "tp-comm-overlap-disable-qkv",
      llvm::cl::desc("Leave the QKV projection's collectives alone"),
      llvm::cl::init(false)};
  Option<bool> tpCommOverlapDisableFc1{
      *this, "tp-comm-overlap-disable-fc1",
      llvm::cl::desc("Leave the MLP's first projection's collectives alone"),
      llvm::cl::init(false)};
  Option<TpCommNumSplits> tpCommNumSplits{
      *this, "tp-comm-num-splits",
      llvm::cl::desc("Chunks per pipelined GEMM: a positive number, or auto "
                     "(the cost model picks each GEMM's)"),
      llvm::cl::init(TpCommNumSplits::getAuto())};
  Option<std::string> printBucketLayout{
      *this, "print-bucket-layout",
      llvm::cl::desc("Write the bucket layout as JSON to this file ('-': "
                     "stdout; empty: do not)"),
      llvm::cl::init("")};

  // Megatron's command-line flags where their names differ from the fields.
  Option<int64_t> megatronBucketSize{
      *this, "ddp-bucket-size",
      llvm::cl::desc("Megatron's --ddp-bucket-size: bucket-size"),
      llvm::cl::init(0)};
  Option<int64_t> megatronNumBuckets{
      *this, "ddp-num-buckets",
      llvm::cl::desc("Megatron's --ddp-num-buckets: num-buckets"),
      llvm::cl::init(0)};
  Option<bool> megatronPadBuckets{
      *this, "ddp-pad-buckets-for-high-nccl-busbw",
      llvm::cl::desc("Megatron's --ddp-pad-buckets-for-high-nccl-busbw"),
      llvm::cl::init(false)};
  Option<bool> megatronAverageInCollective{
      *this, "ddp-average-in-collective",
      llvm::cl::desc("Megatron's --ddp-average-in-collective"),
      llvm::cl::init(false)};
  Option<bool> megatronGradReduceInFp32{
      *this, "accumulate-allreduce-grads-in-fp32",
      llvm::cl::desc("Megatron's --accumulate-allreduce-grads-in-fp32: "
                     "grad-reduce-in-fp32"),
      llvm::cl::init(false)};
  Option<bool> megatronCheckForNan{
      *this, "check-for-nan-in-loss-and-grad",
      llvm::cl::desc("Megatron's --check-for-nan-in-loss-and-grad: "
                     "check-for-nan-in-grad"),
      llvm::cl::init(false)};
  Option<bool> megatronDisableTpCommOverlapAg{
      *this, "disable-tp-comm-overlap-ag",
      llvm::cl::desc("Megatron's --disable-tp-comm-overlap-ag"),
      llvm::cl::init(false)};
  Option<bool> megatronDisableTpCommOverlapRs{
      *this, "disable-tp-comm-overlap-rs",
      llvm::cl::desc("Megatron's --disable-tp-comm-overlap-rs"),
      llvm::cl::init(false)};
  Option<bool> megatronDisableTpCommBulkDgrad{
      *this, "disable-tp-comm-bulk-dgrad",
      llvm::cl::desc("Megatron's --disable-tp-comm-bulk-dgrad"),
      llvm::cl::init(false)};
  Option<bool> megatronDisableTpCommBulkWgrad{
      *this, "disable-tp-comm-bulk-wgrad",
      llvm::cl::desc("Megatron's --disable-tp-comm-bulk-wgrad"),
      llvm::cl::init(false)};

  /// Whether this struct has an option named `name`.
  bool hasOption(llvm::StringRef name) const;
  /// The options parsed from a pipeline string (`--ddp-schedule="name=..."`
  /// or parseFromString), i.e. given explicitly. Values assigned in code do
  /// not count: they are the embedder's defaults.
  llvm::StringSet<> getGivenOptionNames() const;
};

/// Adds to `pm` (on a module) one module pass that schedules the module
/// with `options`, where the options recorded in the module's
/// `ddp.schedule_options` (ddp-import --megatron-args) are the defaults: an
/// option parsed from a pipeline string overrides the recorded one. It runs
/// ddp-assign-buckets on each function, ddp-print-bucket-layout when asked,
/// ddp-bucketize and, unless overlap-grad-reduce=false,
/// ddp-overlap-grad-reduce on each function, ddp-overlap-param-gather when
/// asked, ddp-overlap-tp-comm with tp-comm-overlap, and
/// ddp-verify-collective-order.
void populateDDPSchedulePipeline(mlir::OpPassManager &pm,
                                 const SchedulePipelineOptions &options);

/// Parses the options recorded in `module`'s `ddp.schedule_options` into
/// `options` with the pipeline's own parser, except those named in
/// `givenNames` (under either of their names): those were given explicitly
/// and keep their value. Emits an error at the module for an attribute that
/// is not a dictionary, an unknown option or a malformed value.
mlir::LogicalResult
applyRecordedScheduleOptions(mlir::ModuleOp module,
                             const llvm::StringSet<> &givenNames,
                             SchedulePipelineOptions &options);

/// The options of ddp-assign-buckets that `options` give, each Megatron
/// flag merged into its field as the pipeline merges them (a field with a
/// value wins over its flag; a boolean is on when either is): what the
/// pipeline lays the buckets out with, and what decides whether a schedule
/// can equal the unscheduled step bitwise (ddp-run --verify).
AssignBucketsOptions
getAssignBucketsOptions(const SchedulePipelineOptions &options);

/// What the passes `options` ask for reject before they read any IR
/// (checkAssignBucketsOptions of the merged options; a bad value of one
/// option is rejected when it is parsed). The pipeline reports it for the
/// options a module records; ddp-import --megatron-args for a run's options
/// before it imports the run.
llvm::Error
checkSchedulePipelineOptions(const SchedulePipelineOptions &options);

/// Registers `ddp-schedule` with the pass pipeline registry.
void registerDDPSchedulePipeline();

} // namespace ddp

#endif // DDP_PIPELINES_SCHEDULEPIPELINE_H
