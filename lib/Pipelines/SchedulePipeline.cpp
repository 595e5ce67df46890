//===- SchedulePipeline.cpp - The ddp-schedule pass pipeline --------------===//

#include "ddp/Pipelines/SchedulePipeline.h"

#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void ddp::populateDDPSchedulePipeline(OpPassManager &pm,
                                      const SchedulePipelineOptions &options) {
  // A Megatron flag given on its own counts as its field; a field wins when
  // both are given.
  auto either = [](const auto &field, const auto &flag) {
    return field.getNumOccurrences() ? field.getValue() : flag.getValue();
  };
  AssignBucketsOptions assign;
  assign.policy = options.policy;
  assign.hardware = options.hardware;
  assign.dataParallelSize = options.dataParallelSize;
  assign.overlapGradReduce = options.overlapGradReduce;
  assign.bucketSize = either(options.bucketSize, options.megatronBucketSize);
  assign.bucketBytes = options.bucketBytes;
  assign.numBuckets = either(options.numBuckets, options.megatronNumBuckets);
  assign.useDistributedOptimizer = options.useDistributedOptimizer;
  assign.overlapParamGather = options.overlapParamGather;
  assign.alignParamGather = options.alignParamGather;
  assign.numDistributedOptimizerInstances =
      options.numDistributedOptimizerInstances;
  assign.padBucketsForHighNcclBusbw =
      options.padBucketsForHighNcclBusbw || options.megatronPadBuckets;
  assign.gradReduceInFp32 =
      options.gradReduceInFp32 || options.megatronGradReduceInFp32;
  assign.averageInCollective =
      options.averageInCollective || options.megatronAverageInCollective;
  assign.checkForNanInGrad =
      options.checkForNanInGrad || options.megatronCheckForNan;
  assign.firstBucketBytes = options.firstBucketBytes;
  assign.bucketCapBytes = options.bucketCapBytes;
  assign.maxBucketGradients = options.maxBucketGradients;
  pm.addNestedPass<func::FuncOp>(createAssignBuckets(assign));
  if (!options.printBucketLayout.empty()) {
    PrintBucketLayoutOptions print;
    print.outputPath = options.printBucketLayout;
    print.useDistributedOptimizer = options.useDistributedOptimizer;
    pm.addPass(createPrintBucketLayout(print));
  }
  pm.addNestedPass<func::FuncOp>(createBucketize());
  // A module pass: with several instances it splits the mesh's axis.
  if (options.useDistributedOptimizer) {
    DistributeOptimizerOptions distribute;
    distribute.numInstances = options.numDistributedOptimizerInstances;
    pm.addPass(createDistributeOptimizer(distribute));
  }
  if (options.overlapGradReduce)
    pm.addNestedPass<func::FuncOp>(createOverlapGradReduce());
  // Last on the step: the gathers go before the first use of their
  // parameters in the final order of the other ops.
  if (options.overlapParamGather) {
    OverlapParamGatherOptions gather;
    gather.alignParamGather = options.alignParamGather;
    pm.addNestedPass<func::FuncOp>(createOverlapParamGather(gather));
  }
  // After the data-parallel schedule, so that auto prices each GEMM's
  // split count beside the gradient reductions it will run with.
  if (options.tpCommOverlap) {
    OverlapTpCommOptions tp;
    tp.overlapAg =
        options.tpCommOverlapAg && !options.megatronDisableTpCommOverlapAg;
    tp.overlapRs =
        options.tpCommOverlapRs && !options.megatronDisableTpCommOverlapRs;
    tp.overlapRsDgrad = options.tpCommOverlapRsDgrad;
    tp.bulkDgrad =
        options.tpCommBulkDgrad && !options.megatronDisableTpCommBulkDgrad;
    tp.bulkWgrad =
        options.tpCommBulkWgrad && !options.megatronDisableTpCommBulkWgrad;
    tp.disableQkv = options.tpCommOverlapDisableQkv;
    tp.disableFc1 = options.tpCommOverlapDisableFc1;
    tp.numSplits = options.tpCommNumSplits;
    tp.hardware = options.hardware;
    tp.dataParallelSize = options.dataParallelSize;
    pm.addNestedPass<func::FuncOp>(createOverlapTpComm(tp));
  }
  pm.addPass(createVerifyCollectiveOrder());
}

void ddp::registerDDPSchedulePipeline() {
  PassPipelineRegistration<SchedulePipelineOptions>(
      "ddp-schedule",
      "Bucket the data-parallel gradient reduction, overlap it with the "
      "backward pass and check the result (docs/Scheduling.md)",
      populateDDPSchedulePipeline);
}
