//===- StoragePlanTest.cpp - Storage plans of full-width steps ------------===//
//
// Every preset at full width (one layer, a short sequence), unscheduled and
// under every bucketing policy with and without overlap, gets a storage plan
// the independent validator accepts; and the validator rejects plans broken
// in each way it checks, so its acceptance means something.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
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
                             "grad-reduce-in-fp32=true",
                             "policy=megatron use-distributed-optimizer=true "
                             "overlap-grad-reduce=true "
                             "overlap-param-gather=true",
                             // Interleaved chunks and stacks, fully
                             // sharded units.
                             "policy=megatron tp-comm-overlap=true",
                             "use-distributed-optimizer=true "
                             "data-parallel-sharding-strategy="
                             "optim_grads_params"};
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
      // The distributed optimizer's collectives run in place: each bucket's
      // all-gather, and its reduce-scatter (whose input, the bucket or its
      // f32 cast, nothing reads after it).
      if (StringRef(options).contains("use-distributed-optimizer")) {
        EXPECT_GT(plan->numInPlaceReduceScatters, 0);
        EXPECT_GT(plan->numInPlaceAllGathers, 0);
      } else {
        // A bucket's all-reduce, as Megatron-LM's, in place; unscheduled,
        // each gradient's (through its ddp.grad_ready).
        EXPECT_GT(plan->numInPlaceAllReduces, 0);
      }
      for (const PlannedBuffer &buffer : plan->buffers)
        largestBuffer = std::max(largestBuffer, buffer.getBytes());
      // The first microbatch's activations die in its backward: the
      // second's take their bytes.
      FailureOr<RuntimeMemory> memory = estimateRuntimeMemory(*plan);
      ASSERT_TRUE(succeeded(memory)) << allMessages();
      EXPECT_LT(memory->bufferBytes, memory->unsharedBufferBytes);

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
  void SetUp() override { parse(kStep); }

  void parse(const char *step) {
    module = parseSourceString<ModuleOp>(step, &context);
    ASSERT_TRUE(module) << allMessages();
    FailureOr<StoragePlan> built = StoragePlan::build(*module);
    ASSERT_TRUE(succeeded(built)) << allMessages();
    plan = std::move(*built);
    ASSERT_TRUE(succeeded(verifyStoragePlan(plan))) << allMessages();
    ops.clear();
    for (Operation &op : plan.step.getBody().front())
      ops.push_back(&op);
  }

  Value result(unsigned opIndex, unsigned resultIndex = 0) {
    return ops[opIndex]->getResult(resultIndex);
  }

  void expectRejected(const std::string &fragment) {
    messages.clear();
    EXPECT_TRUE(failed(verifyStoragePlan(plan)));
    EXPECT_NE(allMessages().find(fragment), std::string::npos)
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

/// %y lives over positions 1 to 3 (its last reader, the bias gradient),
/// the bucket from 2 (the wgrad written into it) to 10, %late 11 to 12.
TEST_F(BrokenPlanTest, BuffersApartInTimeMayShareAnArena) {
  // Too small to save bytes once aligned, so the plan keeps them apart.
  ASSERT_EQ(plan.arenas.size(), plan.buffers.size());
  unsigned y = plan.storage[result(1)].index;
  unsigned late = plan.storage[result(11)].index;
  plan.buffers[late].arena = plan.buffers[y].arena;
  EXPECT_TRUE(succeeded(verifyStoragePlan(plan))) << allMessages();
}

TEST_F(BrokenPlanTest, BuffersLiveTogetherShareArenaBytes) {
  unsigned y = plan.storage[result(1)].index;
  unsigned bucket = plan.storage[result(6)].index;
  plan.buffers[y].arena = plan.buffers[bucket].arena;
  expectRejected("gives this value bytes [0, 64) of arena #" +
                 std::to_string(plan.buffers[bucket].arena) +
                 " while another value, live at the same time, holds bytes "
                 "[0, 64)");
}

TEST_F(BrokenPlanTest, BufferPastTheEndOfItsArena) {
  unsigned y = plan.storage[result(1)].index;
  plan.buffers[y].arenaOffset = 16;
  expectRejected("places buffer #" + std::to_string(y) +
                 " of 64 bytes outside arena #" +
                 std::to_string(plan.buffers[y].arena));
}

TEST_F(BrokenPlanTest, AnInputSharesAnArena) {
  // The setup fills %x once; every step reads it.
  unsigned x = plan.storage[plan.step.getArgument(0)].index;
  unsigned late = plan.storage[result(11)].index;
  plan.buffers[x].arena = plan.buffers[late].arena;
  expectRejected("lets buffer #" + std::to_string(x) + " share arena #" +
                 std::to_string(plan.buffers[late].arena) +
                 ", though it holds a step input, parameters or padding");
}

TEST_F(BrokenPlanTest, ValueOverALaterBlockOfAnInterleavedChunk) {
  // The GEMM reads the chunk's two pieces, bytes [0, 32) and [64, 96) of
  // %x, after %x's own last read (the chunk): a value written over the
  // second piece meanwhile breaks it, though it misses the first.
  parse(R"mlir(
    ddp.mesh @world(dp = 2)
    ddp.param @w : tensor<4x4xf32>
    func.func @step(%x: tensor<8x4xf32>) -> (tensor<4x4xf32>, tensor<8xf32>) {
      %w = ddp.get_param @w : tensor<4x4xf32>
      %c = ddp.chunk %x[0 of 2] interleave 2 : tensor<8x4xf32> -> tensor<4x4xf32>
      %t = ddp.compute "t"(%w) flops 1.0 bytes 1.0 : (tensor<4x4xf32>) -> tensor<8xf32>
      %y = ddp.gemm fwd %c, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
      return %y, %t : tensor<4x4xf32>, tensor<8xf32>
    }
  )mlir");
  Storage overSecondPiece = plan.storage[plan.step.getArgument(0)];
  overSecondPiece.byteOffset = 64;
  plan.storage[result(2)] = overSecondPiece;
  expectRejected("gives this value bytes [64, 96) of arena #0 while another "
                 "value, live at the same time, holds bytes [0, 96)");
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

/// The distributed optimizer's step over four ranks: the reduce-scatter's
/// input is read by it only and the shard optimizer's result by the
/// all-gather only, so both collectives run in place.
constexpr const char *kShardedStep = R"mlir(
  ddp.mesh @world(dp = 4)
  ddp.param @a : tensor<8xf32>
  ddp.param @b : tensor<2x4xf32>
  func.func @step(%x: tensor<16xf32>) {
    %bucket = ddp.scale %x by 2.5e-01 : tensor<16xf32>
    %g, %t = ddp.reduce_scatter sum %bucket over @world[dp] async : tensor<16xf32> -> tensor<4xf32>
    ddp.wait %t
    %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
    %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<16xf32>
    ddp.set_params %w params [@a, @b] offsets [0, 8] : tensor<16xf32>
    return
  }
)mlir";

class ShardedPlanTest : public BrokenPlanTest {
protected:
  void SetUp() override { parse(kShardedStep); }

  Value bucket() { return result(0); }
  Value gradShard() { return result(1); }
  Value paramShard() { return result(3); }
  Value gathered() { return result(4); }
};

TEST_F(ShardedPlanTest, CollectivesRunInPlace) {
  EXPECT_EQ(plan.numInPlaceReduceScatters, 1);
  EXPECT_EQ(plan.numInPlaceAllGathers, 1);
  // The step input, the scaled bucket and the gathered bucket.
  EXPECT_EQ(plan.buffers.size(), 3u);
  ASSERT_EQ(plan.groupSizes, SmallVector<int64_t>{4});

  Storage bucketStorage = plan.storage.lookup(bucket());
  Storage grad = plan.storage.lookup(gradShard());
  EXPECT_EQ(grad.index, bucketStorage.index);
  EXPECT_EQ(grad.byteOffset, 0);
  EXPECT_EQ(grad.rankGroup, std::optional<unsigned>(0));
  EXPECT_EQ(grad.rankStride, 16);
  EXPECT_EQ(grad.getByteOffset(3), 48);

  Storage param = plan.storage.lookup(paramShard());
  EXPECT_EQ(param.index, plan.storage.lookup(gathered()).index);
  EXPECT_NE(param.index, bucketStorage.index);
  EXPECT_EQ(param.rankGroup, std::optional<unsigned>(0));
  EXPECT_EQ(param.rankStride, 16);
}

TEST_F(ShardedPlanTest, RankViewPastTheEndOnTheLastRank) {
  // Shards 32 bytes apart: ranks 0 and 1 fit in the 64-byte bucket, rank
  // 2's does not.
  plan.storage[gradShard()].rankStride = 32;
  expectRejected("places a value of 16 bytes at byte 64 of buffer #2 on rank "
                 "2 of group 'dp', which holds 64 bytes");
}

TEST_F(ShardedPlanTest, ReduceScatterIntoAnotherRanksShard) {
  // Shifted by one shard: not the in-place form, so the result overwrites
  // bytes of the input another rank's shard still needs.
  Storage &grad = plan.storage[gradShard()];
  grad.byteOffset = 16;
  grad.rankStride = 0;
  expectRejected("while another value, live at the same time, holds bytes");
}

TEST_F(ShardedPlanTest, AllGatherFromAStrideOtherThanItsShard) {
  plan.storage[paramShard()].rankStride = 12;
  expectRejected("while another value, live at the same time, holds bytes");
}

TEST_F(ShardedPlanTest, RankViewInAGroupThatDoesNotExist) {
  plan.storage[paramShard()].rankGroup = 1;
  expectRejected("makes this value a rank view in group #1, which does not "
                 "exist");
}

TEST_F(ShardedPlanTest, ParametersAreStoredInTheGatheredBucket) {
  // @a at byte 0 and @b at byte 32 of the gathered bucket, which the shard
  // optimizer's result is the rank's shard of.
  EXPECT_EQ(plan.numParamsInBuckets, 2);
  unsigned gatheredIndex = plan.storage.lookup(gathered()).index;
  for (auto [param, byteOffset] :
       llvm::zip_equal(plan.params, SmallVector<int64_t>{0, 32})) {
    ASSERT_TRUE(param.inBucket);
    EXPECT_EQ(param.inBucket->kind, Storage::Kind::Buffer);
    EXPECT_EQ(param.inBucket->index, gatheredIndex);
    EXPECT_EQ(param.inBucket->byteOffset, byteOffset);
    EXPECT_FALSE(param.inBucket->isRankView());
  }
}

TEST_F(ShardedPlanTest, StoredParameterOutsideItsBucket) {
  plan.params[1].inBucket->byteOffset = 40;
  expectRejected("stores this parameter outside buffer #");
}

/// @a is stored in the gathered bucket, which the shard optimizer writes
/// (the rank's shard of @a's elements) before ddp.set_params: %a, read by
/// the scale after that write, cannot alias @a.
constexpr const char *kAliasReadAfterTheShardOptimizer = R"mlir(
  ddp.mesh @world(dp = 4)
  ddp.param @a : tensor<8xf32>
  ddp.param @b : tensor<2x4xf32>
  func.func @step(%x: tensor<16xf32>) -> tensor<8xf32> {
    %a = ddp.get_param @a : tensor<8xf32>
    %g = ddp.reduce_scatter sum %x over @world[dp] : tensor<16xf32> -> tensor<4xf32>
    %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
    %twice = ddp.scale %a by 2.0 : tensor<8xf32>
    %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<16xf32>
    ddp.set_params %w params [@a, @b] offsets [0, 8] : tensor<16xf32>
    return %twice : tensor<8xf32>
  }
)mlir";

TEST_F(BrokenPlanTest, AliasOfAStoredParameterReadAfterTheBucketIsWritten) {
  parse(kAliasReadAfterTheShardOptimizer);
  EXPECT_EQ(plan.numParamsInBuckets, 2);
  ASSERT_EQ(plan.copiedParams.size(), 1u);
  plan.storage[result(0)] = {Storage::Kind::Param, 0, 0};
  expectRejected("lets this value alias parameter @a, which the optimizer "
                 "overwrites before its last read");
}

/// A parameter read between the first write into its gathered bucket and
/// ddp.set_params keeps storage of its own; the rest of the bucket is
/// stored in it.
constexpr const char *kParamsThatKeepTheirStorage = R"mlir(
  ddp.mesh @world(dp = 4)
  ddp.param @a : tensor<8xf32>
  ddp.param @b : tensor<2x4xf32>
  func.func @step(%x: tensor<16xf32>) -> tensor<8xf32> {
    %g = ddp.reduce_scatter sum %x over @world[dp] : tensor<16xf32> -> tensor<4xf32>
    %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
    %a = ddp.get_param @a : tensor<8xf32>
    %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<16xf32>
    ddp.set_params %w params [@a, @b] offsets [0, 8] : tensor<16xf32>
    return %a : tensor<8xf32>
  }
)mlir";

TEST_F(BrokenPlanTest, ParametersReadBeforeTheirSetParamsKeepTheirStorage) {
  parse(kParamsThatKeepTheirStorage);
  EXPECT_EQ(plan.numParamsInBuckets, 1);
  EXPECT_FALSE(plan.params[0].inBucket);
  ASSERT_TRUE(plan.params[1].inBucket);
  EXPECT_EQ(plan.params[1].inBucket->byteOffset, 32);
}

/// The reduce-scatter's input is read after it, so its result cannot be the
/// rank's shard of the input.
constexpr const char *kInputReadAfterReduceScatter = R"mlir(
  ddp.mesh @world(dp = 4)
  func.func @step(%x: tensor<16xf32>) -> tensor<16xf32> {
    %bucket = ddp.scale %x by 2.5e-01 : tensor<16xf32>
    %g = ddp.reduce_scatter sum %bucket over @world[dp] : tensor<16xf32> -> tensor<4xf32>
    %later = ddp.scale %bucket by 2.0 : tensor<16xf32>
    return %later : tensor<16xf32>
  }
)mlir";

TEST_F(BrokenPlanTest, ReduceScatterInPlaceOverAnInputReadAfterIt) {
  parse(kInputReadAfterReduceScatter);
  Value bucket = result(0), grad = result(1);
  EXPECT_EQ(plan.numInPlaceReduceScatters, 0);
  Storage view = plan.storage.lookup(bucket);
  view.rankGroup = 0;
  view.rankStride = 16;
  plan.storage[grad] = view;
  expectRejected("while another value, live at the same time, holds bytes");
}

/// Megatron's default reduction of a bucket, scale by 1/n then sum, both
/// in place in the bucket; and an unscheduled gradient's all-reduce in
/// place through its ddp.grad_ready.
static const char *const kInPlace = R"mlir(
  ddp.mesh @world(dp = 4)
  ddp.param @w : tensor<4xf32>
  ddp.param @v : tensor<4xf32>
  func.func @step(%x: tensor<4xf32>) {
    %w = ddp.get_param @w : tensor<4xf32>
    %dw = ddp.compute "grad"(%x, %w) flops 4.0 bytes 32.0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %g = ddp.grad_ready @w, %dw : tensor<4xf32>
    %b = ddp.bucket_pack %g offsets [0] : tensor<4xf32> -> tensor<4xf32>
    %s = ddp.scale %b by 2.5e-01 : tensor<4xf32>
    %r = ddp.all_reduce sum %s over @world[dp] : tensor<4xf32>
    %u = ddp.bucket_unpack %r offsets [0] : tensor<4xf32> -> tensor<4xf32>
    ddp.sgd @w, %u lr 0.5 : tensor<4xf32>
    %v = ddp.get_param @v : tensor<4xf32>
    %dv = ddp.compute "grad"(%x, %v) flops 4.0 bytes 32.0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %gv = ddp.grad_ready @v, %dv : tensor<4xf32>
    %rv = ddp.all_reduce avg %gv over @world[dp] : tensor<4xf32>
    ddp.sgd @v, %rv lr 0.5 : tensor<4xf32>
    return
  }
)mlir";

TEST_F(BrokenPlanTest, ScaleAndAllReduceRunInPlace) {
  parse(kInPlace);
  EXPECT_EQ(plan.numInPlaceScales, 1);
  EXPECT_EQ(plan.numInPlaceAllReduces, 2);
  auto offsetIn = [&](Value value) {
    Storage storage = plan.storage.lookup(value);
    return std::make_pair(storage.index, storage.byteOffset);
  };
  Value bucket = result(3), scaled = result(4), reduced = result(5);
  EXPECT_EQ(offsetIn(scaled), offsetIn(bucket));
  EXPECT_EQ(offsetIn(reduced), offsetIn(bucket));
  EXPECT_EQ(offsetIn(result(11)), offsetIn(result(9)));
}

/// A gradient scaled before its ddp.grad_ready is produced in its bucket's
/// slice (rule 2); the scale keeps that place rather than its input's
/// bytes, so packing copies nothing.
static const char *const kScaledGradientInBucket = R"mlir(
  ddp.mesh @world(dp = 2)
  ddp.param @w : tensor<4xf32>
  func.func @step(%x: tensor<4xf32>) {
    %w = ddp.get_param @w : tensor<4xf32>
    %d = ddp.compute "grad"(%x, %w) flops 4.0 bytes 32.0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = ddp.scale %d by 5.0e-01 : tensor<4xf32>
    %g = ddp.grad_ready @w, %s : tensor<4xf32>
    %b = ddp.bucket_pack %g offsets [0] : tensor<4xf32> -> tensor<4xf32>
    %r = ddp.all_reduce sum %b over @world[dp] : tensor<4xf32>
    %u = ddp.bucket_unpack %r offsets [0] : tensor<4xf32> -> tensor<4xf32>
    ddp.sgd @w, %u lr 0.5 : tensor<4xf32>
    return
  }
)mlir";

TEST_F(BrokenPlanTest, AScaleProducedInItsBucketStaysThere) {
  parse(kScaledGradientInBucket);
  EXPECT_EQ(plan.numGradientsInBuckets, 1);
  EXPECT_EQ(plan.numInPlaceScales, 0);
  EXPECT_TRUE(plan.packCopies.empty());
  Storage scaled = plan.storage.lookup(result(2));
  Storage bucket = plan.storage.lookup(result(4));
  EXPECT_EQ(scaled.index, bucket.index);
  EXPECT_EQ(scaled.byteOffset, bucket.byteOffset);
}

/// An asynchronous all-reduce whose input another op reads before its
/// wait: the planner gives it a buffer of its own, and the validator
/// refuses the result in the input's bytes.
static const char *const kInputReadBesideAllReduce = R"mlir(
  ddp.mesh @world(dp = 4)
  func.func @step(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
    %y = ddp.scale %x by 5.0e-01 : tensor<16xf32>
    %r, %t = ddp.all_reduce sum %y over @world[dp] async : tensor<16xf32>
    %z = ddp.scale %y by 2.0 : tensor<16xf32>
    ddp.wait %t
    return %r, %z : tensor<16xf32>, tensor<16xf32>
  }
)mlir";

TEST_F(BrokenPlanTest, AllReduceInPlaceOverAnInputReadBesideIt) {
  parse(kInputReadBesideAllReduce);
  EXPECT_EQ(plan.numInPlaceAllReduces, 0);
  plan.storage[result(1)] = plan.storage.lookup(result(0));
  expectRejected("while another value, live at the same time, holds bytes");
}

} // namespace

/// FSDP's unit: @a and @b are named only by their shards of one bucket, so
/// the plan stores them as the rank's shard (rule 10), @c is read whole; a
/// value placed in a sharded parameter's storage is rejected.
TEST_F(BrokenPlanTest, AValueInAParameterStoredAsItsShard) {
  parse(R"mlir(
    ddp.mesh @world(dp = 3)
    ddp.param @a : tensor<8xf32>
    ddp.param @b : tensor<2x2xf32>
    ddp.param @c : tensor<4xf32>
    func.func @step(%g: tensor<4xf32>) -> tensor<4xf32> {
      %s = ddp.get_param_shard params [@a, @b] offsets [0, 8] over @world[dp] : tensor<4xf32>
      %w = ddp.all_gather %s over @world[dp] : tensor<4xf32> -> tensor<12xf32>
      %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
      ddp.set_param_shard %p params [@a, @b] offsets [0, 8] over @world[dp] : tensor<4xf32>
      %c = ddp.get_param @c : tensor<4xf32>
      return %c : tensor<4xf32>
    }
  )mlir");
  ASSERT_TRUE(plan.params[0].storedShard && plan.params[1].storedShard);
  EXPECT_FALSE(plan.params[2].storedShard);
  EXPECT_EQ(plan.params[1].storedShard->offset, 8);
  EXPECT_EQ(plan.params[1].storedShard->shardNumel, 4);
  EXPECT_EQ(plan.getNumShardStoredParams(), 2);
  // Ranks 0 and 1 keep halves of @a, rank 2 all of @b.
  EXPECT_EQ(plan.getStoredNumel(plan.params[0], 1), 4);
  EXPECT_EQ(plan.getStoredNumel(plan.params[0], 2), 0);
  EXPECT_EQ(plan.getStoredNumel(plan.params[1], 2), 4);
  plan.storage[result(0)] = {Storage::Kind::Param, 0, 0};
  expectRejected("places a value in parameter #0, which the runtime stores "
                 "as this rank's shard only");
}
