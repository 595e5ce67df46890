//===- SchedulePipelineTest.cpp - ddp-schedule on imported steps ----------===//
//
// Every policy x option combination gives IR that verifies and passes the
// order check; the auto policy's predicted step time is the simulator's on
// the scheduled IR, and never above the megatron and pytorch layouts'.
//
//===----------------------------------------------------------------------===//

#include "ddp/Pipelines/SchedulePipeline.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Import/Import.h"
#include "ddp/ScheduleModel/ScheduleModel.h"
#include "ddp/Sim/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"

#include "gtest/gtest.h"

#include <optional>

using namespace mlir;
using namespace ddp;

namespace {

class SchedulePipelineTest : public ::testing::Test {
protected:
  SchedulePipelineTest() {
    context.loadDialect<DDPDialect, func::FuncDialect>();
  }

  OwningOpRef<ModuleOp> importPreset(StringRef name) {
    const ModelPreset *preset = lookupModelPreset(name);
    EXPECT_TRUE(preset) << name.str();
    return importModel(context, preset->config);
  }

  /// A preset at data-parallel size `dp`, cut to `numLayers` layers (0
  /// keeps them all).
  OwningOpRef<ModuleOp> importPreset(StringRef name, int64_t dp,
                                     int64_t numLayers) {
    const ModelPreset *preset = lookupModelPreset(name);
    EXPECT_TRUE(preset) << name.str();
    ModelConfig config = preset->config;
    config.dataParallelSize = dp;
    if (numLayers > 0)
      config.numLayers = numLayers;
    return importModel(context, config);
  }

  /// Preset `name`'s config cut to `numLayers` layers, at tensor-parallel
  /// size `tp` with or without sequence parallelism and data-parallel size
  /// `dp`.
  static ModelConfig shapeConfig(StringRef name, int64_t numLayers, int64_t tp,
                                 bool sequenceParallel, int64_t dp) {
    const ModelPreset *preset = lookupModelPreset(name);
    EXPECT_TRUE(preset) << name.str();
    ModelConfig config = preset ? preset->config : ModelConfig();
    config.numLayers = numLayers;
    config.tensorModelParallelSize = tp;
    config.sequenceParallel = sequenceParallel;
    config.dataParallelSize = dp;
    return config;
  }

  /// bf16 and f32 parameters, a shared embedding and experts over their own
  /// group, ready in an order that is not the reverse of registration.
  OwningOpRef<ModuleOp> importMixedInventory() {
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(R"({
      "tokens_per_microbatch": 32, "num_microbatches": 2,
      "data_parallel_size": 4, "expert_model_parallel_size": 2,
      "params": [
        {"name": "emb", "shape": [64, 16], "dtype": "bf16", "shared_embedding": true},
        {"name": "l0.w", "shape": [16, 64], "dtype": "bf16"},
        {"name": "l0.norm", "shape": [16], "dtype": "f32"},
        {"name": "e0.w", "shape": [16, 16], "dtype": "bf16", "expert": true},
        {"name": "e1.w", "shape": [16, 16], "dtype": "bf16", "expert": true},
        {"name": "l1.w", "shape": [16, 16], "dtype": "bf16"},
        {"name": "l1.norm", "shape": [16], "dtype": "f32"}],
      "ready_order": ["l1.norm", "e1.w", "l1.w", "e0.w", "l0.norm", "l0.w", "emb"]})");
    EXPECT_TRUE(bool(json));
    llvm::Expected<ParamInventory> inventory =
        parseParamInventory(*json, "mixed");
    EXPECT_TRUE(bool(inventory)) << llvm::toString(inventory.takeError());
    return importInventory(context, *inventory);
  }

  LogicalResult schedule(ModuleOp module, StringRef options) {
    SchedulePipelineOptions parsed;
    if (failed(parsed.parseFromString(options))) {
      ADD_FAILURE() << "bad options: " << options.str();
      return failure();
    }
    PassManager pm(&context);
    populateDDPSchedulePipeline(pm, parsed);
    return pm.run(module);
  }

  double simulate(ModuleOp module, StringRef hw, int64_t dp = 0) {
    llvm::Expected<timing::HardwareProfile> profile =
        timing::lookupHardwareProfile(hw);
    EXPECT_TRUE(bool(profile));
    timing::CostModel model(std::move(*profile));
    sim::SimOptions options;
    options.dataParallelSize = dp;
    options.recordEvents = false;
    FailureOr<sim::SimResult> result = sim::simulateStep(
        *module.getOps<func::FuncOp>().begin(), model, options);
    EXPECT_TRUE(succeeded(result));
    return succeeded(result) ? result->stepTime : 0;
  }

  /// The ops the simulator does not price, comma-separated.
  std::string unmodeledOps(ModuleOp module, StringRef hw, int64_t dp) {
    timing::CostModel model(*timing::lookupHardwareProfile(hw));
    sim::SimOptions options;
    options.dataParallelSize = dp;
    options.recordEvents = false;
    FailureOr<sim::SimResult> result =
        sim::simulateStep(getStep(module), model, options);
    return succeeded(result) ? llvm::join(result->unmodeledOps, ",")
                             : "failed";
  }

  /// The step time (seconds) the auto policy predicted for the step it laid
  /// out, or nullopt when the step has no such record.
  static std::optional<double> getAutoPrediction(ModuleOp module) {
    auto policy =
        getStep(module)->getAttrOfType<BucketPolicyAttr>(kBucketPolicyAttrName);
    if (!policy || !policy.getPredictedStepTimeUs())
      return std::nullopt;
    return policy.getPredictedStepTimeUs().getValueAsDouble() * 1e-6;
  }

  static func::FuncOp getStep(ModuleOp module) {
    return *module.getOps<func::FuncOp>().begin();
  }

  MLIRContext context;
};

TEST_F(SchedulePipelineTest,
       EveryPolicyAndOptionVerifiesAndPassesTheOrderCheck) {
  const char *policies[] = {"megatron", "pytorch", "size bucket-bytes=20000",
                            "auto"};
  for (StringRef input : {"tiny", "tiny-moe", "mixed"}) {
    for (const char *policy : policies) {
      for (unsigned flags = 0; flags < 32; ++flags) {
        std::string options =
            llvm::formatv("policy={0} overlap-grad-reduce={1} "
                          "average-in-collective={2} grad-reduce-in-fp32={3} "
                          "check-for-nan-in-grad={4} "
                          "use-distributed-optimizer={5}",
                          policy, bool(flags & 1), bool(flags & 2),
                          bool(flags & 4), bool(flags & 8), bool(flags & 16))
                .str();
        SCOPED_TRACE(input.str() + ": " + options);
        OwningOpRef<ModuleOp> module =
            input == "mixed" ? importMixedInventory() : importPreset(input);
        ASSERT_TRUE(succeeded(schedule(*module, options)));
        ASSERT_TRUE(succeeded(verify(*module)));
        // Every gradient went into a bucket, and with overlap every bucket's
        // collective is asynchronous; the distributed optimizer reduces each
        // bucket with a reduce-scatter.
        size_t buckets = 0, async = 0, waits = 0;
        getStep(*module).walk([&](Operation *op) {
          if (auto ready = dyn_cast<GradReadyOp>(op)) {
            EXPECT_TRUE(getBucketIndex(ready).has_value());
          }
          if (isa<CollectiveOpInterface>(op) && getBucketIndex(op)) {
            ++buckets;
            async += cast<AsyncOpInterface>(op).isAsync();
            EXPECT_EQ(isa<ReduceScatterOp>(op), bool(flags & 16));
            EXPECT_FALSE(isa<AllGatherOp>(op));
          }
          waits += isa<WaitOp>(op);
        });
        EXPECT_GT(buckets, 0u);
        EXPECT_EQ(async, (flags & 1) ? buckets : 0u);
        EXPECT_EQ(waits, async);
      }
    }
  }
}

TEST_F(SchedulePipelineTest, AutoPredictsTheSimulatedStepTime) {
  for (StringRef input : {"tiny", "tiny-moe", "mixed"}) {
    for (StringRef hw : {"h100-sxm-ib400", "a100-sxm-ib200"}) {
      for (int64_t dp : {0, 64}) {
        // With the distributed optimizer auto replays the reduce-scatters,
        // the shard optimizers and the all-gathers; with
        // overlap-param-gather the all-gathers in the forward, chained or
        // aligned.
        for (StringRef extra :
             {"", " grad-reduce-in-fp32=true", " use-distributed-optimizer=true",
              " use-distributed-optimizer=true grad-reduce-in-fp32=true",
              " use-distributed-optimizer=true overlap-param-gather=true",
              " use-distributed-optimizer=true overlap-param-gather=true "
              "grad-reduce-in-fp32=true",
              " use-distributed-optimizer=true overlap-param-gather=true "
              "align-param-gather=true"}) {
          // The compute schedule's choices, which policy=auto also makes,
          // pinned: the buckets' prediction is the data-parallel step's.
          std::string options =
              ("policy=auto wgrad-schedule=in-place batch-split=1 hw=" + hw +
               " dp=" + std::to_string(dp) + extra)
                  .str();
          SCOPED_TRACE(input.str() + ": " + options);
          OwningOpRef<ModuleOp> module =
              input == "mixed" ? importMixedInventory() : importPreset(input);
          ASSERT_TRUE(succeeded(schedule(*module, options)));
          std::optional<double> predicted = getAutoPrediction(*module);
          ASSERT_TRUE(predicted);
          double simulated = simulate(*module, hw, dp);
          EXPECT_NEAR(*predicted, simulated, 1e-9 * simulated);
          // Every op of the distributed optimizer's step is priced.
          EXPECT_EQ(unmodeledOps(*module, hw, dp), "");

          // The defaults, scheduled the same way, are never faster.
          for (StringRef baseline : {"policy=megatron", "policy=pytorch"}) {
            OwningOpRef<ModuleOp> other =
                input == "mixed" ? importMixedInventory() : importPreset(input);
            ASSERT_TRUE(succeeded(schedule(
                *other,
                (baseline + " dp=" + std::to_string(dp) + extra).str())));
            EXPECT_LE(*predicted, simulate(*other, hw, dp) * (1 + 1e-12))
                << baseline.str();
          }
        }
      }
    }
  }
}

TEST_F(SchedulePipelineTest, TpCommOverlapPredictsTheSimulatedStepTime) {
  // ddp-overlap-tp-comm's auto prices each GEMM's split count op by op on
  // the simulator's clock; the simulation of the step it builds must end
  // exactly where its walk did, with or without the data-parallel schedule
  // and sequence parallelism, and it is never slower than no overlap nor
  // than Transformer Engine's fixed 4 splits. Splitting pays only where a
  // GEMM is long against the latency each extra collective adds (NCCL's
  // ring: 2 (n - 1) hops of 3.4 us for an all-reduce over NVLink): on
  // llama2-70b's layers, not on the small ones nor on gpt-8.3b's at tp 8.
  struct Shape {
    StringRef preset;
    int64_t numLayers, tp;
    bool sequenceParallel, splits;
  };
  for (Shape shape : {Shape{"tiny", 2, 2, true, false},
                      Shape{"tiny", 2, 2, false, false},
                      Shape{"tiny-moe", 2, 4, true, false},
                      Shape{"gpt-8.3b", 1, 8, true, false},
                      Shape{"gpt-8.3b", 1, 8, false, false},
                      Shape{"llama2-70b", 1, 8, true, true}}) {
    for (StringRef hw : {"h100-sxm-ib400", "a100-sxm-ib200"}) {
      for (StringRef extra :
           {"", " policy=auto wgrad-schedule=in-place batch-split=1",
            " use-distributed-optimizer=true overlap-param-gather=true"}) {
        std::string options =
            ("tp-comm-overlap=true dp=8 hw=" + hw + extra).str();
        SCOPED_TRACE(shape.preset.str() + " tp " + std::to_string(shape.tp) +
                     (shape.sequenceParallel ? " sp: " : ": ") + options);
        ModelConfig config =
            shapeConfig(shape.preset, shape.numLayers, shape.tp,
                        shape.sequenceParallel, /*dp=*/2);
        OwningOpRef<ModuleOp> module = importModel(context, config);
        ASSERT_TRUE(module);
        ASSERT_TRUE(succeeded(schedule(*module, options)));
        std::optional<double> predicted =
            getTpCommPredictedStepUs(getStep(*module));
        ASSERT_TRUE(predicted);
        double simulated = simulate(*module, hw, 8);
        EXPECT_NEAR(*predicted * 1e-6, simulated, 1e-9 * simulated);
        EXPECT_EQ(unmodeledOps(*module, hw, 8), "");
        size_t chunks = 0;
        getStep(*module).walk([&](ChunkOp) { ++chunks; });
        if (shape.splits) {
          EXPECT_GT(chunks, 0u);
        }

        OwningOpRef<ModuleOp> whole = importModel(context, config);
        ASSERT_TRUE(succeeded(schedule(*whole, ("dp=8 hw=" + hw + extra).str())));
        EXPECT_LE(simulated, simulate(*whole, hw, 8) * (1 + 1e-12));
        OwningOpRef<ModuleOp> fixed = importModel(context, config);
        ASSERT_TRUE(
            succeeded(schedule(*fixed, options + " tp-comm-num-splits=4")));
        EXPECT_LE(simulated, simulate(*fixed, hw, 8) * (1 + 1e-12));
      }
    }
  }
}

TEST_F(SchedulePipelineTest, AutoComputeChoicesPredictTheSimulatedStepTime) {
  // policy=auto also chooses the batch split and the delayed weight
  // gradients (docs/ComputeScheduling.md). The last pass records the step
  // time it chose on, which the simulation of the result reproduces; and
  // the step is never slower than with either choice pinned off.
  struct Shape {
    StringRef preset;
    int64_t numLayers, tp;
    bool sequenceParallel;
  };
  for (Shape shape : {Shape{"tiny", 2, 2, true}, Shape{"tiny", 2, 2, false},
                      Shape{"gpt-8.3b", 2, 8, false},
                      Shape{"llama2-70b", 1, 8, true}}) {
    for (StringRef hw : {"h100-sxm-ib400", "a100-sxm-ib200"}) {
      std::string options =
          ("policy=auto tp-comm-overlap=true dp=8 hw=" + hw).str();
      SCOPED_TRACE(shape.preset.str() + " tp " + std::to_string(shape.tp) +
                   (shape.sequenceParallel ? " sp: " : ": ") + options);
      ModelConfig config = shapeConfig(shape.preset, shape.numLayers, shape.tp,
                                       shape.sequenceParallel, /*dp=*/2);
      OwningOpRef<ModuleOp> module = importModel(context, config);
      ASSERT_TRUE(module);
      ASSERT_TRUE(succeeded(schedule(*module, options)));
      std::optional<double> predicted =
          getComputePredictedStepUs(getStep(*module));
      ASSERT_TRUE(predicted);
      double simulated = simulate(*module, hw, 8);
      EXPECT_NEAR(*predicted * 1e-6, simulated, 1e-9 * simulated);
      EXPECT_EQ(unmodeledOps(*module, hw, 8), "");
      for (StringRef pinned :
           {" wgrad-schedule=in-place", " batch-split=1",
            " wgrad-schedule=in-place batch-split=1"}) {
        OwningOpRef<ModuleOp> other = importModel(context, config);
        ASSERT_TRUE(succeeded(schedule(*other, options + pinned.str())));
        EXPECT_LE(simulated, simulate(*other, hw, 8) * (1 + 1e-12))
            << pinned.str();
      }
    }
  }
}

TEST_F(SchedulePipelineTest, AutoFsdpIsNeverSlowerThanTheDefaultsAtNoMoreMemory) {
  // policy=auto with optim_grads_params chooses fsdp-prefetch and
  // reshard-after-forward (docs/FullySharded.md): never slower than FSDP2's
  // defaults (prefetch 1, resharding), never holding more live tensors, and
  // never slower than any candidate that holds no more.
  auto livePeak = [](ModuleOp module) {
    return schedule::getLiveTensorPeak(getStep(module));
  };
  // (Named, not bound: a lambda below captures them, which C++17 does not
  // allow of structured bindings.)
  for (auto shape : {std::pair{"tiny", 2}, {"llama2-7b", 3}}) {
    StringRef preset = shape.first;
    int64_t layers = shape.second;
    for (StringRef hw : {"h100-sxm-ib400", "a100-sxm-ib200"}) {
      std::string options =
          ("policy=auto use-distributed-optimizer=true "
           "data-parallel-sharding-strategy=optim_grads_params dp=64 hw=" +
           hw)
              .str();
      SCOPED_TRACE(std::string(preset) + ": " + options);
      auto scheduled = [&](StringRef extra) {
        OwningOpRef<ModuleOp> module = importModel(
            context, shapeConfig(preset, layers, /*tp=*/1,
                                 /*sequenceParallel=*/false, /*dp=*/8));
        EXPECT_TRUE(succeeded(schedule(*module, options + extra.str())));
        return module;
      };
      OwningOpRef<ModuleOp> chosen = scheduled("");
      double time = simulate(*chosen, hw, 64);
      int64_t peak = livePeak(*chosen);
      OwningOpRef<ModuleOp> defaults = scheduled(
          " fsdp-prefetch=1 reshard-after-forward=true fsdp-keep-last-units=0");
      EXPECT_LE(time, simulate(*defaults, hw, 64) * (1 + 1e-12));
      EXPECT_LE(peak, livePeak(*defaults));
      for (unsigned prefetch : {0, 1, 2})
        for (bool reshard : {true, false}) {
          OwningOpRef<ModuleOp> other = scheduled(
              llvm::formatv(" fsdp-prefetch={0} reshard-after-forward={1} "
                            "fsdp-keep-last-units=0",
                            prefetch, reshard)
                  .str());
          if (livePeak(*other) <= livePeak(*defaults)) {
            EXPECT_LE(time, simulate(*other, hw, 64) * (1 + 1e-12))
                << prefetch << " " << reshard;
          }
        }
      // With room for the parameters gathered through the backward, auto
      // keeps them (one gather a unit per microbatch fewer): faster.
      OwningOpRef<ModuleOp> roomy = scheduled(" memory-cap-gib=1000");
      EXPECT_LT(simulate(*roomy, hw, 64), simulate(*defaults, hw, 64));
      // A cap below the defaults' peak that a slower candidate meets (no
      // prefetch): auto takes it.
      OwningOpRef<ModuleOp> unprefetched = scheduled(
          " fsdp-prefetch=0 reshard-after-forward=true fsdp-keep-last-units=0");
      int64_t low = livePeak(*unprefetched), high = livePeak(*defaults);
      ASSERT_LT(low, high);
      double capGib = double(low + high) / 2 / double(1ll << 30);
      OwningOpRef<ModuleOp> capped =
          scheduled(llvm::formatv(" memory-cap-gib={0:f12}", capGib).str());
      EXPECT_LE(double(livePeak(*capped)), capGib * double(1ll << 30));
      // A cap that keeps some units' parameters through the backward, not
      // all (fsdp-keep-last-units): auto keeps no fewer.
      OwningOpRef<ModuleOp> someKept = scheduled(
          " fsdp-prefetch=1 reshard-after-forward=true fsdp-keep-last-units=2");
      // A hair above its peak: the option is read in GiB.
      double someGib =
          double(livePeak(*someKept)) * (1 + 1e-9) / double(1ll << 30);
      OwningOpRef<ModuleOp> cappedKept =
          scheduled(llvm::formatv(" memory-cap-gib={0:f12}", someGib).str());
      EXPECT_LE(double(livePeak(*cappedKept)), someGib * double(1ll << 30));
      EXPECT_LE(simulate(*cappedKept, hw, 64),
                simulate(*someKept, hw, 64) * (1 + 1e-12));
    }
  }
}

TEST_F(SchedulePipelineTest, AutoFsdpGathersSomeUnitsAheadUnderACap) {
  // Under a cap between the peaks of prefetch 0 and 1, no single depth is
  // both fast and within it; auto gathers the units that wait one run ahead
  // as far as the cap allows (fsdp-unit-prefetch): faster than prefetch 0,
  // within the cap, and the recorded depths give the same step again.
  auto livePeak = [](ModuleOp module) {
    return schedule::getLiveTensorPeak(getStep(module));
  };
  for (StringRef hw : {"h100-sxm-ib400", "a100-sxm-ib200"}) {
    std::string options =
        ("use-distributed-optimizer=true "
         "data-parallel-sharding-strategy=optim_grads_params dp=8 hw=" +
         hw)
            .str();
    SCOPED_TRACE(options);
    auto scheduled = [&](StringRef extra) {
      OwningOpRef<ModuleOp> module = importModel(
          context, shapeConfig("llama2-7b", 3, /*tp=*/1,
                               /*sequenceParallel=*/false, /*dp=*/8));
      EXPECT_TRUE(succeeded(schedule(*module, options + extra.str())));
      return module;
    };
    OwningOpRef<ModuleOp> none = scheduled(" fsdp-prefetch=0");
    OwningOpRef<ModuleOp> one = scheduled(" fsdp-prefetch=1");
    int64_t low = livePeak(*none), high = livePeak(*one);
    ASSERT_LT(low, high);
    double capGib = double(low + high) / 2 / double(1ll << 30);
    OwningOpRef<ModuleOp> capped = scheduled(
        llvm::formatv(" policy=auto memory-cap-gib={0:f12}", capGib).str());
    EXPECT_LE(double(livePeak(*capped)), capGib * double(1ll << 30));
    double time = simulate(*capped, hw, 8);
    EXPECT_LT(time, simulate(*none, hw, 8) * (1 - 1e-3));
    auto recorded = (*capped)->getAttrOfType<DictionaryAttr>(
        kScheduleOptionsAttrName);
    ASSERT_TRUE(recorded);
    auto depths = recorded.getAs<StringAttr>("fsdp-unit-prefetch");
    ASSERT_TRUE(depths);
    EXPECT_TRUE(depths.getValue().contains('0') &&
                depths.getValue().contains('1'))
        << depths.getValue().str();
    OwningOpRef<ModuleOp> again = scheduled(
        llvm::formatv(" policy=auto memory-cap-gib={0:f12} "
                      "reshard-after-forward=true fsdp-keep-last-units=0 "
                      "fsdp-unit-prefetch={1}",
                      capGib, depths.getValue())
            .str());
    EXPECT_EQ(simulate(*again, hw, 8), time);
  }
}

TEST_F(SchedulePipelineTest, AutoPredictsTheSimulatedStepTimeWithInstances) {
  // Each bucket reduce-scattered within an instance of dp/k ranks, the shard
  // all-reduced across the k instances on its own stream, the all-gathers
  // within the instance; instances of a size that is not a power of two
  // too. The last case lays out for dp 64 a mesh of dp 8, which the
  // simulator resizes by its instance axis.
  struct Case {
    const char *preset;
    int64_t numLayers, meshDp, dp, numInstances;
  };
  const Case cases[] = {{"tiny", 0, 64, 0, 2},      {"tiny", 0, 64, 0, 4},
                        {"tiny", 0, 8, 0, 2},       {"tiny", 0, 6, 0, 2},
                        {"tiny", 0, 6, 0, 3},       {"tiny", 0, 12, 0, 3},
                        {"llama2-7b", 1, 8, 0, 2},  {"llama2-7b", 1, 64, 0, 4},
                        {"llama2-7b", 1, 12, 0, 3}, {"gpt-8.3b", 1, 64, 0, 2},
                        {"gpt-8.3b", 1, 6, 0, 3},   {"tiny", 0, 8, 64, 2}};
  for (const Case &c : cases) {
    for (StringRef hw : {"h100-sxm-ib400", "a100-sxm-ib200"}) {
      for (StringRef extra :
           {"", " grad-reduce-in-fp32=true", " overlap-param-gather=true",
            " overlap-param-gather=true align-param-gather=true"}) {
        std::string common =
            llvm::formatv(" dp={0} use-distributed-optimizer=true "
                          "num-distributed-optimizer-instances={1}{2}",
                          c.dp, c.numInstances, extra)
                .str();
        std::string options =
            ("policy=auto wgrad-schedule=in-place batch-split=1 hw=" + hw +
             common)
                .str();
        SCOPED_TRACE(llvm::formatv("{0} (layers: {1}, 0 for all) on dp {2}: "
                                   "{3}",
                                   c.preset, c.numLayers, c.meshDp, options)
                         .str());
        OwningOpRef<ModuleOp> module =
            importPreset(c.preset, c.meshDp, c.numLayers);
        ASSERT_TRUE(succeeded(schedule(*module, options)));
        std::optional<double> predicted = getAutoPrediction(*module);
        ASSERT_TRUE(predicted);
        double simulated = simulate(*module, hw, c.dp);
        EXPECT_NEAR(*predicted, simulated, 1e-9 * simulated);

        OwningOpRef<ModuleOp> megatron =
            importPreset(c.preset, c.meshDp, c.numLayers);
        ASSERT_TRUE(succeeded(schedule(*megatron, "policy=megatron" + common)));
        EXPECT_LE(*predicted, simulate(*megatron, hw, c.dp) * (1 + 1e-12));
      }
    }
  }
}

TEST_F(SchedulePipelineTest,
       RecordedOptionsAreDefaultsThatParsedOptionsOverride) {
  // What ddp-import --megatron-args records: the module's defaults. An
  // option parsed from a pipeline string wins, under either of its names;
  // a field assigned in code is a default like the pipeline's own.
  OwningOpRef<ModuleOp> module = importPreset("tiny");
  ASSERT_TRUE(module);
  Builder builder(&context);
  (*module)->setAttr(
      "ddp.schedule_options",
      builder.getDictionaryAttr(
          {builder.getNamedAttr("bucket-size", builder.getI64IntegerAttr(40)),
           builder.getNamedAttr("check-for-nan-in-grad",
                                builder.getBoolAttr(true)),
           builder.getNamedAttr("overlap-param-gather",
                                builder.getBoolAttr(true)),
           builder.getNamedAttr("use-distributed-optimizer",
                                builder.getBoolAttr(true))}));

  SchedulePipelineOptions given;
  ASSERT_TRUE(succeeded(
      given.parseFromString("ddp-bucket-size=64 check-for-nan-in-grad=false")));
  given.overlapParamGather = false;
  EXPECT_EQ(given.getGivenOptionNames().size(), 2u);

  SchedulePipelineOptions merged;
  merged.copyOptionValuesFrom(given);
  ASSERT_TRUE(succeeded(applyRecordedScheduleOptions(
      *module, given.getGivenOptionNames(), merged)));
  EXPECT_TRUE(merged.useDistributedOptimizer);
  EXPECT_TRUE(merged.overlapParamGather);
  EXPECT_FALSE(merged.checkForNanInGrad);
  // The recorded bucket-size is dropped for the flag given in its place.
  EXPECT_FALSE(merged.bucketSize.hasValue());
  EXPECT_EQ(merged.megatronBucketSize, 64);

  // The pipeline schedules with the merged options: a 64-element Megatron
  // layout with the distributed optimizer and no NaN check.
  PassManager pm(&context);
  populateDDPSchedulePipeline(pm, given);
  ASSERT_TRUE(succeeded(pm.run(*module)));
  size_t reduceScatters = 0, checks = 0;
  getStep(*module).walk([&](Operation *op) {
    reduceScatters += isa<ReduceScatterOp>(op);
    checks += isa<CheckFiniteOp>(op);
  });
  EXPECT_GT(reduceScatters, 0u);
  EXPECT_EQ(checks, 0u);
}

} // namespace
