//===- ModelStateTest.cpp - Model state per rank against Megatron's docs --===//
//
// Megatron-LM's distributed optimizer docs count the model state per
// parameter on a rank: 18 bytes for 16-bit parameters with fp32 gradients
// (2 parameter + 4 gradient + 4 main parameter + 8 Adam moments), 6 + 12/d
// with the distributed optimizer over d data-parallel ranks; 16 and 8 + 8/d
// for fp32 parameters, which need no main copy. ddp's counterpart of fp32
// gradients is grad-reduce-in-fp32. Checked on every preset, in integers:
// the gradients exclude bucket padding (counted apart), and the sharded
// state is counted summed over the group, whose ranks each keep 1/d of it.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/StepStats.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Import/Import.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <algorithm>

using namespace mlir;
using namespace ddp;

namespace {

class ModelStateTest : public ::testing::Test {
protected:
  ModelStateTest() { context.loadDialect<DDPDialect, func::FuncDialect>(); }

  /// `config` imported, scheduled with `options` and summarised.
  StepStats scheduleAndSummarise(const ModelConfig &config, StringRef options) {
    EXPECT_FALSE(bool(validateModelConfig(config, "test")));
    OwningOpRef<ModuleOp> module = importModel(context, config);
    SchedulePipelineOptions parsed;
    EXPECT_TRUE(succeeded(parsed.parseFromString(options)));
    PassManager pm(&context);
    populateDDPSchedulePipeline(pm, parsed);
    EXPECT_TRUE(succeeded(pm.run(*module))) << options.str();
    FailureOr<StepStats> stats = computeStepStats(*module);
    EXPECT_TRUE(succeeded(stats));
    return succeeded(stats) ? *stats : StepStats();
  }

  MLIRContext context;
};

TEST_F(ModelStateTest, EveryPresetCountsMegatronsBytesPerParameter) {
  for (const ModelPreset &preset : getModelPresets()) {
    ModelConfig config = preset.config;
    // One layer keeps the test cheap (60 ms for all presets; full size,
    // 3 s, passes too); every kind of parameter is there.
    config.numLayers = 1;
    bool sixteenBit = config.paramsDtype != ElementType::F32;
    // Parameter and gradient bytes, and main parameters plus moments.
    int64_t paramAndGrad = sixteenBit ? 2 + 4 : 4 + 4;
    int64_t optimizer = sixteenBit ? 4 + 8 : 8;
    for (int64_t d : {8, 64, 512}) {
      config.dataParallelSize = d;
      // Expert parallelism within the data-parallel ranks (qwen3-30b-a3b's
      // EP 16 at dp 8 becomes EP 8).
      config.expertModelParallelSize =
          std::min(preset.config.expertModelParallelSize, d);
      SCOPED_TRACE(preset.name.str() + " dp " + std::to_string(d));

      StepStats whole =
          scheduleAndSummarise(config, "grad-reduce-in-fp32=true");
      int64_t params = whole.localParamElements;
      ASSERT_GT(params, 0);
      EXPECT_EQ(whole.modelState.paramElements, params);
      const ModelState &state = whole.modelState;
      EXPECT_EQ(state.paramBytes, (paramAndGrad - 4) * params);
      EXPECT_EQ(state.gradBytes, 4 * params);
      EXPECT_EQ(state.mainParamBytes + state.optimizerStateBytes,
                optimizer * params);
      EXPECT_TRUE(state.sharded.empty());
      // 18 bytes per parameter (16 for fp32).
      EXPECT_EQ(state.getReplicatedBytes(),
                (paramAndGrad + optimizer) * params);

      StepStats sharded = scheduleAndSummarise(
          config, "grad-reduce-in-fp32=true use-distributed-optimizer=true");
      ASSERT_EQ(sharded.localParamElements, params);
      const ModelState &shardedState = sharded.modelState;
      EXPECT_EQ(shardedState.getReplicatedBytes(), paramAndGrad * params);
      EXPECT_EQ(shardedState.gradPaddingBytes % 4, 0);
      // Every parameter is updated by a shard optimizer; each group keeps
      // the 12 (8) bytes of its parameters, a rank 1/groupSize of them.
      int64_t shardedElements = 0;
      for (const auto &[axes, entry] : shardedState.sharded) {
        EXPECT_EQ(entry.mainParamBytes + entry.optimizerStateBytes,
                  optimizer * entry.paramElements);
        shardedElements += entry.paramElements;
      }
      EXPECT_EQ(shardedElements, params);
      if (!config.isMoE()) {
        // d * (6 + 12/d) * P: all of it sharded over the d ranks.
        ASSERT_EQ(shardedState.sharded.size(), 1u);
        const auto &[axes, entry] = *shardedState.sharded.begin();
        EXPECT_EQ(axes, "dp");
        EXPECT_EQ(entry.groupSize, d);
        EXPECT_EQ(d * shardedState.getReplicatedBytes() + entry.mainParamBytes +
                      entry.optimizerStateBytes,
                  (paramAndGrad * d + optimizer) * params);
      }
    }
  }
}

/// Fully sharded (optim_grads_params, docs/FullySharded.md#memory): the
/// layers' parameters are counted sharded over the group (a rank keeps 1/d
/// of their 2 bytes, 4 in fp32), the parameters outside the units whole; the
/// gradients whole, since ddp reduces them once (4 bytes with
/// grad-reduce-in-fp32, where Megatron-FSDP's sharded main gradients are
/// 4/d); main parameters and moments 12 (8) bytes, sharded: 4 + 14/d per
/// layer parameter in bf16. With hybrid FSDP (outer-dp-sharding-strategy=
/// optim) the parameters are sharded within an instance and the optimizer
/// over all d ranks.
TEST_F(ModelStateTest, FullyShardedStepsCountTheirShards) {
  for (const ModelPreset &preset : getModelPresets()) {
    if (preset.config.isMoE())
      continue;
    ModelConfig config = preset.config;
    config.numLayers = 1;
    int64_t paramBytesPerElement =
        config.paramsDtype != ElementType::F32 ? 2 : 4;
    int64_t optimizer = config.paramsDtype != ElementType::F32 ? 4 + 8 : 8;
    for (int64_t d : {8, 64}) {
      config.dataParallelSize = d;
      SCOPED_TRACE(preset.name.str() + " dp " + std::to_string(d));
      const char *fsdp = "grad-reduce-in-fp32=true "
                         "use-distributed-optimizer=true "
                         "data-parallel-sharding-strategy=optim_grads_params";
      StepStats stats = scheduleAndSummarise(config, fsdp);
      int64_t params = stats.localParamElements;
      const ModelState &state = stats.modelState;
      EXPECT_EQ(state.gradBytes, 4 * params);
      ASSERT_EQ(state.sharded.size(), 1u);
      const auto &[axes, entry] = *state.sharded.begin();
      EXPECT_EQ(axes, "dp");
      EXPECT_EQ(entry.groupSize, d);
      EXPECT_GT(entry.paramBytes, 0);
      EXPECT_EQ(state.paramBytes + entry.paramBytes,
                paramBytesPerElement * params);
      EXPECT_EQ(entry.mainParamBytes + entry.optimizerStateBytes,
                optimizer * params);

      // Two instances, the optimizer sharded across them too.
      StepStats hybrid = scheduleAndSummarise(
          config, std::string(fsdp) + " num-distributed-optimizer-instances=2 "
                                      "outer-dp-sharding-strategy=optim");
      const ModelState &hybridState = hybrid.modelState;
      ASSERT_EQ(hybridState.sharded.size(), 2u);
      const ModelState::Sharded &inner =
          hybridState.sharded.at("dp_shard");
      const ModelState::Sharded &all =
          hybridState.sharded.at("dp_shard,dp_replicate");
      EXPECT_EQ(inner.groupSize, d / 2);
      EXPECT_EQ(all.groupSize, d);
      EXPECT_EQ(inner.paramBytes, entry.paramBytes);
      EXPECT_EQ(inner.mainParamBytes + inner.optimizerStateBytes, 0);
      EXPECT_EQ(all.paramBytes, 0);
      EXPECT_EQ(all.mainParamBytes + all.optimizerStateBytes,
                optimizer * params);
    }
  }
}

} // namespace
