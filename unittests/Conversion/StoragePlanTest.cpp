//===- StoragePlanTest.cpp - Storage plans of full-width steps ------------===//
//
// Every preset at full width (one layer, a short sequence), unscheduled and
// under every bucketing policy with and without overlap, gets a storage plan
// the independent validator accepts; and the validator rejects plans broken
// in each way it checks, so its acceptance means something.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/StoragePlan.h"
#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Import/Import.h"
#include "ddp/Import/ModelConfig.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace ddp;

namespace {

class StoragePlanTest : public ::testing::Test {
protected:
  StoragePlanTest() : handler(&context, [this](Diagnostic &diagnostic) {
    messages.push_back(diagnostic.str());
    return success();
  }) {
    context.loadDialect<DDPDialect, func::FuncDialect>();
  }

  OwningOpRef<ModuleOp> importFullWidth(const ModelPreset &preset) {
    ModelConfig config = preset.config;
    config.numLayers = 1;
    config.seqLength = 16;
    config.microBatchSize = 1;
    config.numMicrobatches = 2;
    return importModel(context, config);
  }

  LogicalResult schedule(ModuleOp module, StringRef options) {
    SchedulePipelineOptions pipelineOptions;
    if (failed(pipelineOptions.parseFromString(options)))
      return failure();
    PassManager pm(&context);
    populateDDPSchedulePipeline(pm, pipelineOptions);
    return pm.run(module);
  }

  std::string allMessages() const {
    std::string all;
    for (const std::string &message : messages)
      all += message + "\n";
    return all;
  }

  MLIRContext context;
  ScopedDiagnosticHandler handler;
  std::vector<std::string> messages;
};

TEST_F(StoragePlanTest, EveryPresetAtFullWidthHasAValidPlan) {
  // Some presets hold buckets past 2^28 bytes: the size at which the
  // lowering once wrapped its offsets.
  const char *schedules[] = {"",
                             "policy=megatron overlap-grad-reduce=true",
                             "policy=megatron overlap-grad-reduce=false",
                             "policy=pytorch overlap-grad-reduce=true",
                             "policy=pytorch overlap-grad-reduce=false",
                             "policy=size bucket-size=40000000 "
                             "overlap-grad-reduce=true",
                             "policy=size bucket-bytes=1048576 "
                             "overlap-grad-reduce=false",
                             "policy=auto overlap-grad-reduce=true",
                             "policy=auto overlap-grad-reduce=false",
                             "policy=megatron use-distributed-optimizer=true "
                             "grad-reduce-in-fp32=true"};
  int64_t largestBuffer = 0;
  for (const ModelPreset &preset : getModelPresets()) {
    for (const char *options : schedules) {
      SCOPED_TRACE(std::string(preset.name) + " schedule '" + options + "'");
      OwningOpRef<ModuleOp> module = importFullWidth(preset);
      ASSERT_TRUE(module);
      // Braces: gtest's assertion macros end in an if/else.
      if (*options) {
        ASSERT_TRUE(succeeded(schedule(*module, options))) << allMessages();
      }
      FailureOr<StoragePlan> plan = StoragePlan::build(*module);
      ASSERT_TRUE(succeeded(plan)) << allMessages();
      EXPECT_TRUE(succeeded(verifyStoragePlan(*plan))) << allMessages();
      for (const PlannedBuffer &buffer : plan->buffers)
        largestBuffer = std::max(largestBuffer, buffer.getBytes());

      // The plan is right only if the lowering emits its offsets as they
      // are: no byte offset from a buffer's start is negative.
      PassManager pm(&context);
      pm.addPass(createLowerDDPToRuntime());
      ASSERT_TRUE(succeeded(pm.run(*module))) << allMessages();
      module->walk([&](LLVM::GEPOp gep) {
        if (!gep.getElemType().isInteger(8))
          return;
        for (int32_t index : gep.getRawConstantIndices())
          if (index != LLVM::GEPOp::kDynamicIndex) {
            EXPECT_GE(index, 0) << "a byte offset wrapped";
          }
      });
    }
  }
  EXPECT_GT(largestBuffer, int64_t(1) << 28);
}

/// A step with two gradients in one bucket, a value read after its
/// parameter's update (so the plan copies it), and enough fresh buffers to
/// break the plan in each way the validator checks.
constexpr const char *kStep = R"mlir(
  ddp.mesh @world(dp = 2)
  ddp.param @w : tensor<4x4xf32>
  ddp.param @b : tensor<4xf32>
  func.func @step(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %w = ddp.get_param @w : tensor<4x4xf32>
    %y = ddp.gemm fwd %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %dw = ddp.gemm wgrad %x transposed, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %db = ddp.compute "bias_grad"(%y) flops 16.0 bytes 80.0 : (tensor<4x4xf32>) -> tensor<4xf32>
    %gw = ddp.grad_ready @w, %dw : tensor<4x4xf32>
    %gb = ddp.grad_ready @b, %db : tensor<4xf32>
    %bucket = ddp.bucket_pack %gw, %gb offsets [0, 16] : tensor<4x4xf32>, tensor<4xf32> -> tensor<20xf32>
    %r = ddp.all_reduce avg %bucket over @world[dp] : tensor<20xf32>
    %u:2 = ddp.bucket_unpack %r offsets [0, 16] : tensor<20xf32> -> tensor<4x4xf32>, tensor<4xf32>
    ddp.sgd @w, %u#0 lr 0.5 : tensor<4x4xf32>
    ddp.sgd @b, %u#1 lr 0.5 : tensor<4xf32>
    %late = ddp.gemm fwd %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    return %late : tensor<4x4xf32>
  }
)mlir";

class BrokenPlanTest : public StoragePlanTest {
protected:
  void SetUp() override {
    module = parseSourceString<ModuleOp>(kStep, &context);
    ASSERT_TRUE(module) << allMessages();
    FailureOr<StoragePlan> built = StoragePlan::build(*module);
    ASSERT_TRUE(succeeded(built)) << allMessages();
    plan = std::move(*built);
    ASSERT_TRUE(succeeded(verifyStoragePlan(plan))) << allMessages();
    for (Operation &op : plan.step.getBody().front())
      ops.push_back(&op);
  }

  Value result(unsigned opIndex, unsigned resultIndex = 0) {
    return ops[opIndex]->getResult(resultIndex);
  }

  void expectRejected(llvm::StringRef fragment) {
    messages.clear();
    EXPECT_TRUE(failed(verifyStoragePlan(plan)));
    EXPECT_NE(allMessages().find(fragment.str()), std::string::npos)
        << allMessages();
  }

  OwningOpRef<ModuleOp> module;
  StoragePlan plan;
  std::vector<Operation *> ops;
};

TEST_F(BrokenPlanTest, ValuePastTheEndOfItsBuffer) {
  Value y = result(1);
  Storage &storage = plan.storage[y];
  storage.byteOffset = plan.buffers[storage.index].getBytes() - 4;
  expectRejected("places a value of 64 bytes at byte 60 of buffer");
}

TEST_F(BrokenPlanTest, TwoLiveValuesShareBytes) {
  // The step input %x is read to the end; %y is written while it lives.
  plan.storage[result(1)] = plan.storage[plan.step.getArgument(0)];
  expectRejected("while another value, live at the same time, holds bytes");
}

TEST_F(BrokenPlanTest, ViewOutsideItsBase) {
  // ddp.grad_ready returns its operand's storage; here it points elsewhere.
  plan.storage[result(5)] = plan.storage[result(1)];
  expectRejected("places a view (bytes [0, 16)) outside its base (bytes "
                 "[64, 80) of another buffer)");
}

TEST_F(BrokenPlanTest, ParameterAliasReadAfterItsUpdate) {
  // %w is read by the last gemm, after sgd @w: the plan copies it.
  ASSERT_EQ(plan.copiedParams.size(), 1u);
  plan.storage[result(0)] = {Storage::Kind::Param, 0, 0};
  expectRejected("lets this value alias parameter @w, which the optimizer "
                 "overwrites before its last read");
}

} // namespace
