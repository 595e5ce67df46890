//===- OptimizerStateTest.cpp - ddprt_param_optimizer_state ---------------===//
//
// What ddp-run --verify compares beside the parameters: the main copy and
// Adam's moments, kept whole by ddprt_adam and per shard by ddprt_shard_adam.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestSupport.h"

#include <cmath>
#include <cstring>

using namespace ddprt::test;

namespace {

class OptimizerStateTest : public RuntimeSuite {
protected:
  static std::string lastError() { return ddprt_last_error(context); }

  struct State {
    int64_t begin = -1, numel = -1, adamSteps = -1;
    std::vector<float> values;
  };

  static State read(int32_t param, int32_t state) {
    State result;
    EXPECT_EQ(ddprt_param_optimizer_state(context, param, state, &result.begin,
                                          &result.numel, &result.adamSteps,
                                          nullptr, 0),
              DDPRT_OK)
        << lastError();
    result.values.resize(size_t(result.numel));
    EXPECT_EQ(ddprt_param_optimizer_state(
                  context, param, state, &result.begin, &result.numel,
                  &result.adamSteps, result.values.data(), 4 * result.numel),
              DDPRT_OK)
        << lastError();
    return result;
  }

  static int32_t registerParam(const char *name, int32_t dtype, int64_t numel) {
    int32_t param = -1;
    EXPECT_EQ(ddprt_param_register(context, name, dtype, numel, 7, &param),
              DDPRT_OK)
        << lastError();
    return param;
  }
};

// Adam with beta1 = 1/2 and beta2 = 3/4 on a gradient of small integers
// keeps m = g / 2 and v = g^2 / 4 exactly after its first step. A bf16
// parameter's main copy is what it was rounded from: a step of 2^-10 moves
// the main copy and leaves most bf16 values where they were.
TEST_F(OptimizerStateTest, WholeAdamKeepsMomentsAndTheMainCopy) {
  const int64_t numel = 40;
  int32_t param = registerParam("state.bf16.w", DDPRT_DTYPE_BF16, numel);
  int32_t single = registerParam("state.f32.w", DDPRT_DTYPE_F32, numel);
  for (int32_t state :
       {DDPRT_OPTIMIZER_STATE_MAIN, DDPRT_OPTIMIZER_STATE_ADAM_M,
        DDPRT_OPTIMIZER_STATE_ADAM_V}) {
    State before = read(param, state);
    EXPECT_EQ(before.numel, 0) << "state " << state;
    EXPECT_EQ(before.adamSteps, 0);
  }
  std::vector<double> gradient(numel);
  for (int64_t i = 0; i < numel; ++i)
    gradient[size_t(i)] = double(i % 5) - 2;
  void *grad = upload(DDPRT_DTYPE_F32, gradient);
  for (int32_t target : {param, single})
    DDPRT_EXPECT_OK(context, ddprt_adam(context, target, DDPRT_DTYPE_F32, grad,
                                        0x1p-10, 0.5, 0.75, 1e-8));
  State m = read(param, DDPRT_OPTIMIZER_STATE_ADAM_M);
  State v = read(param, DDPRT_OPTIMIZER_STATE_ADAM_V);
  State main = read(param, DDPRT_OPTIMIZER_STATE_MAIN);
  ASSERT_EQ(m.numel, numel);
  ASSERT_EQ(v.numel, numel);
  ASSERT_EQ(main.numel, numel);
  EXPECT_EQ(m.begin, 0);
  EXPECT_EQ(m.adamSteps, 1);
  std::vector<char> bytes(size_t(2 * numel));
  DDPRT_EXPECT_OK(context, ddprt_param_read(context, param, bytes.data(),
                                            int64_t(bytes.size())));
  std::vector<double> rounded = decode(DDPRT_DTYPE_BF16, bytes);
  int moved = 0;
  for (int64_t i = 0; i < numel; ++i) {
    double g = gradient[size_t(i)];
    EXPECT_EQ(m.values[size_t(i)], float(g / 2)) << i;
    EXPECT_EQ(v.values[size_t(i)], float(g * g / 4)) << i;
    // The main copy rounds to the parameter (bf16 keeps 8 bits: adding
    // half an ulp's worth of bits and truncating rounds to nearest).
    uint32_t bits;
    std::memcpy(&bits, &main.values[size_t(i)], 4);
    uint32_t roundedBits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
    float back;
    std::memcpy(&back, &roundedBits, 4);
    EXPECT_EQ(double(back), rounded[size_t(i)]) << i;
    moved += double(main.values[size_t(i)]) != rounded[size_t(i)];
  }
  EXPECT_GT(moved, 0) << "the main copy holds what bf16 rounds away";
  // An f32 parameter is its own main copy.
  EXPECT_EQ(read(single, DDPRT_OPTIMIZER_STATE_MAIN).numel, 0);
  EXPECT_EQ(read(single, DDPRT_OPTIMIZER_STATE_ADAM_M).values, m.values);
  DDPRT_EXPECT_OK(context, ddprt_free(context, grad));
}

// SGD keeps a 16-bit parameter's main copy and no moments, an f32
// parameter's nothing.
TEST_F(OptimizerStateTest, SgdKeepsTheMainCopyOnly) {
  int32_t half = registerParam("state.sgd.bf16.w", DDPRT_DTYPE_BF16, 8);
  int32_t single = registerParam("state.sgd.f32.w", DDPRT_DTYPE_F32, 8);
  void *grad = upload(DDPRT_DTYPE_F32, std::vector<double>(8, 1.0));
  for (int32_t param : {half, single})
    DDPRT_EXPECT_OK(context,
                    ddprt_sgd(context, param, DDPRT_DTYPE_F32, grad, 0x1p-10));
  State main = read(half, DDPRT_OPTIMIZER_STATE_MAIN);
  EXPECT_EQ(main.numel, 8);
  EXPECT_EQ(main.adamSteps, 0);
  for (int32_t state :
       {DDPRT_OPTIMIZER_STATE_ADAM_M, DDPRT_OPTIMIZER_STATE_ADAM_V}) {
    EXPECT_EQ(read(half, state).numel, 0) << "state " << state;
    EXPECT_EQ(read(single, state).numel, 0) << "state " << state;
  }
  EXPECT_EQ(read(single, DDPRT_OPTIMIZER_STATE_MAIN).numel, 0);
  DDPRT_EXPECT_OK(context, ddprt_free(context, grad));
}

// The distributed optimizer keeps the state of the parameter's elements in
// this rank's shard, the same bits as a whole update's there: a parameter
// of 6 elements at offset 1 of a bucket of 4 elements a rank.
TEST_F(OptimizerStateTest, ShardAdamKeepsTheSliceOfItsShard) {
  int32_t world = groupOf("dp,tp");
  int32_t rank = 0, size = 0;
  DDPRT_ASSERT_OK(context, ddprt_group_info(context, world, &rank, &size));
  const int64_t numel = 6, offset = 1, shardNumel = 4;
  int32_t whole = registerParam("state.whole.w", DDPRT_DTYPE_BF16, numel);
  int32_t sharded = registerParam("state.sharded.w", DDPRT_DTYPE_BF16, numel);
  // A parameter is seeded from its name: both start from the first's.
  std::vector<char> initial(size_t(2 * numel));
  DDPRT_EXPECT_OK(context,
                  ddprt_param_read(context, whole, initial.data(), 2 * numel));
  DDPRT_EXPECT_OK(
      context, ddprt_param_write(context, sharded, initial.data(), 2 * numel));
  std::vector<double> gradient(numel), shardGradient(shardNumel, 0.0);
  for (int64_t i = 0; i < numel; ++i)
    gradient[size_t(i)] = double(i % 3) + 1;
  int64_t first = std::max<int64_t>(0, rank * shardNumel - offset);
  int64_t last = std::min<int64_t>(numel, (rank + 1) * shardNumel - offset);
  for (int64_t i = first; i < last; ++i)
    shardGradient[size_t(i + offset - rank * shardNumel)] = gradient[size_t(i)];
  void *grad = upload(DDPRT_DTYPE_F32, gradient);
  void *gradShard = upload(DDPRT_DTYPE_F32, shardGradient);
  void *paramShard = nullptr;
  DDPRT_ASSERT_OK(
      context, ddprt_alloc(context, DDPRT_DTYPE_BF16, shardNumel, &paramShard));
  for (int step = 0; step < 2; ++step) {
    DDPRT_EXPECT_OK(context, ddprt_adam(context, whole, DDPRT_DTYPE_F32, grad,
                                        0.01, 0.9, 0.999, 1e-8));
    DDPRT_EXPECT_OK(context,
                    ddprt_shard_adam(context, world, sharded, offset,
                                     DDPRT_DTYPE_F32, gradShard, shardNumel,
                                     paramShard, 0.01, 0.9, 0.999, 1e-8));
  }
  for (int32_t state :
       {DDPRT_OPTIMIZER_STATE_MAIN, DDPRT_OPTIMIZER_STATE_ADAM_M,
        DDPRT_OPTIMIZER_STATE_ADAM_V}) {
    State expected = read(whole, state);
    State actual = read(sharded, state);
    if (last <= first) {
      EXPECT_EQ(actual.numel, 0) << "rank " << rank << " holds none";
      continue;
    }
    EXPECT_EQ(actual.begin, first) << "state " << state;
    ASSERT_EQ(actual.numel, last - first) << "state " << state;
    EXPECT_EQ(actual.adamSteps, 2);
    EXPECT_EQ(std::memcmp(actual.values.data(), expected.values.data() + first,
                          size_t(4 * actual.numel)),
              0)
        << "state " << state;
  }
  for (void *buffer : {grad, gradShard, paramShard})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST_F(OptimizerStateTest, BadStatesSizesAndMixedUpdatesAreErrors) {
  int32_t param = registerParam("state.errors.w", DDPRT_DTYPE_F32, 8);
  int64_t begin = 0, numel = 0, steps = 0;
  EXPECT_EQ(ddprt_param_optimizer_state(context, param, 3, &begin, &numel,
                                        &steps, nullptr, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("state 3 is none of"), std::string::npos)
      << lastError();
  EXPECT_EQ(ddprt_param_optimizer_state(context, param,
                                        DDPRT_OPTIMIZER_STATE_ADAM_M, nullptr,
                                        &numel, &steps, nullptr, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("begin"), std::string::npos) << lastError();
  EXPECT_EQ(ddprt_param_optimizer_state(context, param,
                                        DDPRT_OPTIMIZER_STATE_ADAM_M, &begin,
                                        &numel, nullptr, nullptr, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("adam_steps"), std::string::npos) << lastError();
  EXPECT_EQ(ddprt_param_optimizer_state(context, param + 1000,
                                        DDPRT_OPTIMIZER_STATE_ADAM_M, &begin,
                                        &numel, &steps, nullptr, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);

  void *grad = upload(DDPRT_DTYPE_F32, std::vector<double>(8, 1.0));
  DDPRT_EXPECT_OK(context, ddprt_adam(context, param, DDPRT_DTYPE_F32, grad,
                                      0.1, 0.9, 0.999, 1e-8));
  std::vector<float> small(7);
  EXPECT_EQ(ddprt_param_optimizer_state(context, param,
                                        DDPRT_OPTIMIZER_STATE_ADAM_V, &begin,
                                        &numel, &steps, small.data(), 28),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("bytes 28 is less than the 32"), std::string::npos)
      << lastError();

  // The same parameter updated by a shard optimizer too: which state would
  // be the parameter's is not known.
  int32_t world = groupOf("dp,tp");
  int32_t rank = 0, size = 0;
  DDPRT_ASSERT_OK(context, ddprt_group_info(context, world, &rank, &size));
  void *gradShard = upload(DDPRT_DTYPE_F32, std::vector<double>(8, 1.0));
  void *paramShard = nullptr;
  DDPRT_ASSERT_OK(context,
                  ddprt_alloc(context, DDPRT_DTYPE_F32, 8, &paramShard));
  // Every rank's shard holds the whole parameter at its start: offset
  // rank * 8 puts it there.
  DDPRT_EXPECT_OK(context, ddprt_shard_adam(context, world, param, rank * 8,
                                            DDPRT_DTYPE_F32, gradShard, 8,
                                            paramShard, 0.1, 0.9, 0.999, 1e-8));
  EXPECT_EQ(ddprt_param_optimizer_state(context, param,
                                        DDPRT_OPTIMIZER_STATE_ADAM_M, &begin,
                                        &numel, &steps, nullptr, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("'state.errors.w' was updated both whole and by "
                             "shards"),
            std::string::npos)
      << lastError();
  for (void *buffer : {grad, gradShard, paramShard})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

} // namespace
