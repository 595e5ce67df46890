//===- PatternOrderTest.cpp - The lowering's patterns need no order -------===//
//
// Whichever of the program's ops (mesh, a parameter, the step) the
// conversion driver visits first lowers the whole program from the plan, so
// that no pattern waits for another. This test starts the conversion at
// each of them in turn and checks that the IR is the pass's, byte for byte.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Import/Import.h"
#include "ddp/Import/ModelConfig.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace ddp;

namespace {

std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// Lowers `module` as ddp-lower-to-runtime does, but converts `first`
/// alone before the rest: the driver visits it before any other op.
LogicalResult lowerStartingAt(ModuleOp module, Operation *first) {
  MLIRContext *context = module.getContext();
  FailureOr<std::unique_ptr<ProgramLowering>> program =
      ProgramLowering::plan(module, {});
  if (failed(program))
    return failure();
  LLVMTypeConverter converter(context);
  populateDDPToLLVMTypeConversions(converter);
  RewritePatternSet patterns(context);
  populateDDPToLLVMConversionPatterns(converter, patterns, **program);
  FrozenRewritePatternSet frozen(std::move(patterns));
  LLVMConversionTarget target(*context);
  target.addLegalOp<ModuleOp>();
  configureDDPToLLVMConversionTarget(target);
  if (failed(applyPartialConversion(first, target, frozen)) ||
      failed(applyFullConversion(module, target, frozen)))
    return failure();
  (*program)->finalize(module);
  return success();
}

TEST(PatternOrder, AnyFirstOpLowersTheSameProgram) {
  MLIRContext context;
  context.loadDialect<DDPDialect, func::FuncDialect, LLVM::LLVMDialect>();
  ModelConfig config = lookupModelPreset("tiny")->config;
  config.numLayers = 1;
  config.seqLength = 16;
  // Rank views, shard updates and parameters stored in their buckets; and
  // packs, casts and checks.
  const char *schedules[] = {
      "policy=megatron use-distributed-optimizer=true "
      "overlap-param-gather=true",
      "policy=size bucket-bytes=1000000 grad-reduce-in-fp32=true "
      "check-for-nan-in-grad=true"};
  for (const char *options : schedules) {
    SCOPED_TRACE(options);
    OwningOpRef<ModuleOp> scheduled = importModel(context, config);
    ASSERT_TRUE(scheduled);
    SchedulePipelineOptions pipelineOptions;
    ASSERT_TRUE(succeeded(pipelineOptions.parseFromString(options)));
    PassManager schedule(&context);
    populateDDPSchedulePipeline(schedule, pipelineOptions);
    ASSERT_TRUE(succeeded(schedule.run(*scheduled)));

    OwningOpRef<ModuleOp> reference = scheduled->clone();
    PassManager lower(&context);
    lower.addPass(createLowerDDPToRuntime());
    ASSERT_TRUE(succeeded(lower.run(*reference)));
    std::string expected = print(*reference);

    const char *firsts[] = {"ddp.mesh", "ddp.param", "func.func"};
    for (const char *first : firsts) {
      SCOPED_TRACE(std::string("starting at ") + first);
      OwningOpRef<ModuleOp> module = scheduled->clone();
      Operation *firstOp = nullptr;
      for (Operation &op : module->getBody()->getOperations())
        if (!firstOp && op.getName().getStringRef() == first)
          firstOp = &op;
      ASSERT_TRUE(firstOp);
      ASSERT_TRUE(succeeded(lowerStartingAt(*module, firstOp)));
      EXPECT_EQ(print(*module), expected);
    }
  }
}

} // namespace
