//===- SchedulePipelineFuzzer.cpp - Fuzz scheduling, simulation, lowering -===//
//
// Input: one byte of options, then MLIR text. Input that parses and verifies
// goes through the ddp-schedule pipeline (which ends with the collective
// order check), the simulator and the lowering to runtime calls. A pass may
// reject the input with a diagnostic; it must not crash.
//
// The options byte: bits 0-1 pick the policy (megatron, pytorch, size,
// auto); bit 2 use-distributed-optimizer; bit 3 overlap-grad-reduce=false;
// bit 4 check-for-nan-in-grad; bit 5 grad-reduce-in-fp32; bit 6
// pad-buckets-for-high-nccl-busbw; bit 7 average-in-collective.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

static void setOptions(ddp::SchedulePipelineOptions &options, uint8_t bits) {
  static const ddp::BucketPolicy policies[] = {
      ddp::BucketPolicy::Megatron, ddp::BucketPolicy::PyTorch,
      ddp::BucketPolicy::Size, ddp::BucketPolicy::Auto};
  options.policy = policies[bits & 3];
  options.useDistributedOptimizer = bits & 4;
  options.overlapGradReduce = !(bits & 8);
  options.checkForNanInGrad = bits & 16;
  options.gradReduceInFp32 = bits & 32;
  options.padBucketsForHighNcclBusbw = bits & 64;
  options.averageInCollective = bits & 128;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return -1;
  // A copy: the tools read files NUL-terminated, which MLIR's lexer relies
  // on at the end of the buffer; libFuzzer's input is not.
  std::string text = ddp::fuzz::asText(data + 1, size - 1).str();
  if (ddp::fuzz::crashesUpstreamParser(text))
    return -1;
  MLIRContext *context = &ddp::fuzz::getContext();
  ddp::fuzz::SilenceDiagnostics silence(context);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(context));
  if (!module)
    return 0;

  PassManager pm(context);
  ddp::SchedulePipelineOptions options;
  setOptions(options, data[0]);
  ddp::populateDDPSchedulePipeline(pm, options);
  ddp::SimulateOptions simulate;
  simulate.outputPath = "";
  simulate.reportPath = "/dev/null";
  pm.addPass(ddp::createSimulate(simulate));
  pm.addPass(ddp::createLowerDDPToRuntime());
  (void)pm.run(*module);
  return 0;
}
