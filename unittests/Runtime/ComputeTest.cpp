//===- ComputeTest.cpp - GEMMs, elementwise ops, parameters, optimizers ---===//

#include "RuntimeTestSupport.h"

#include <cmath>
#include <limits>

using namespace ddprt::test;

namespace {

const int32_t allDTypes[] = {DDPRT_DTYPE_F16, DDPRT_DTYPE_BF16, DDPRT_DTYPE_F32,
                             DDPRT_DTYPE_F64};

std::vector<double> smallIntegers(int64_t numel, int salt) {
  std::vector<double> values(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i)
    values[size_t(i)] = double((i * 5 + salt) % 7) - 3.0;
  return values;
}

using GemmParams = std::tuple<int32_t, bool, bool>;

class GemmTest : public RuntimeSuite,
                 public ::testing::WithParamInterface<GemmParams> {};

TEST_P(GemmTest, MatchesTheNaiveProduct) {
  auto [dtype, transposeLhs, transposeRhs] = GetParam();
  const int64_t m = 19, n = 23, k = 37;
  std::vector<double> lhs = smallIntegers(m * k, 1);
  std::vector<double> rhs = smallIntegers(k * n, 2);
  // Element (row, col) of op(X) where X is stored row-major.
  auto lhsAt = [&](int64_t row, int64_t col) {
    return transposeLhs ? lhs[size_t(col * m + row)]
                        : lhs[size_t(row * k + col)];
  };
  auto rhsAt = [&](int64_t row, int64_t col) {
    return transposeRhs ? rhs[size_t(col * k + row)]
                        : rhs[size_t(row * n + col)];
  };
  std::vector<double> expected(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        expected[size_t(i * n + j)] += lhsAt(i, p) * rhsAt(p, j);

  void *lhsBuffer = upload(dtype, lhs);
  void *rhsBuffer = upload(dtype, rhs);
  void *result = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, m * n, &result));
  DDPRT_EXPECT_OK(context,
                  ddprt_gemm(context, dtype, transposeLhs, transposeRhs, m, n,
                             k, lhsBuffer, rhsBuffer, result, "test gemm"));
  EXPECT_EQ(download(dtype, result, m * n), expected);
  for (void *buffer : {lhsBuffer, rhsBuffer, result})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

INSTANTIATE_TEST_SUITE_P(All, GemmTest,
                         ::testing::Combine(::testing::ValuesIn(allDTypes),
                                            ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<GemmParams> &info) {
                           int32_t dtype = std::get<0>(info.param);
                           bool a = std::get<1>(info.param);
                           bool b = std::get<2>(info.param);
                           return std::string(dtypeLabel(dtype)) +
                                  (a ? "_lhsT" : "_lhsN") +
                                  (b ? "_rhsT" : "_rhsN");
                         });

/// Suites that run the compute stand-in over inputs of three types.
class StandInSuite : public RuntimeSuite {
protected:
  /// ddprt_compute over f32 {1, ..., 6}, bf16 {10, 20} and f64 {100, 200,
  /// `last`} into an f16 result of 7 elements and an f64 one of 4: both
  /// results.
  static std::pair<std::vector<double>, std::vector<double>>
  computeThreeInputs(double last) {
    void *a = upload(DDPRT_DTYPE_F32, {1, 2, 3, 4, 5, 6});
    void *b = upload(DDPRT_DTYPE_BF16, {10, 20});
    void *c = upload(DDPRT_DTYPE_F64, {100, 200, last});
    void *r16 = nullptr, *r64 = nullptr;
    EXPECT_EQ(ddprt_alloc(context, DDPRT_DTYPE_F16, 7, &r16), DDPRT_OK);
    EXPECT_EQ(ddprt_alloc(context, DDPRT_DTYPE_F64, 4, &r64), DDPRT_OK);
    ddprt_tensor inputs[] = {{a, 6, DDPRT_DTYPE_F32, 0},
                             {b, 2, DDPRT_DTYPE_BF16, 0},
                             {c, 3, DDPRT_DTYPE_F64, 0}};
    ddprt_tensor results[] = {{r16, 7, DDPRT_DTYPE_F16, 0},
                              {r64, 4, DDPRT_DTYPE_F64, 0}};
    DDPRT_EXPECT_OK(context, ddprt_compute(context, "attention", 0, 0, inputs,
                                           3, results, 2));
    std::pair<std::vector<double>, std::vector<double>> values{
        download(DDPRT_DTYPE_F16, r16, 7), download(DDPRT_DTYPE_F64, r64, 4)};
    for (void *buffer : {a, b, c, r16, r64})
      DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
    return values;
  }
};

class ComputeOpsTest : public StandInSuite {};

TEST_F(ComputeOpsTest, SixteenBitGemmRoundsOnlyTheResult) {
  // 1 x 3 times 3 x 1 in bf16: 256 + 1 + 1 = 258 in f32 (representable);
  // rounded after each add it would stay 256.
  void *lhs = upload(DDPRT_DTYPE_BF16, {256, 1, 1});
  void *rhs = upload(DDPRT_DTYPE_BF16, {1, 1, 1});
  void *result = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_BF16, 1, &result));
  DDPRT_EXPECT_OK(context, ddprt_gemm(context, DDPRT_DTYPE_BF16, 0, 0, 1, 1, 3,
                                      lhs, rhs, result, nullptr));
  EXPECT_EQ(download(DDPRT_DTYPE_BF16, result, 1), std::vector<double>{258});
  for (void *buffer : {lhs, rhs, result})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST_F(ComputeOpsTest, GemmWithEmptyContractionIsZero) {
  void *result = upload(DDPRT_DTYPE_F32, {7, 7, 7, 7});
  DDPRT_EXPECT_OK(context, ddprt_gemm(context, DDPRT_DTYPE_F32, 0, 0, 2, 2, 0,
                                      nullptr, nullptr, result, nullptr));
  EXPECT_EQ(download(DDPRT_DTYPE_F32, result, 4),
            (std::vector<double>{0, 0, 0, 0}));
  DDPRT_EXPECT_OK(context, ddprt_free(context, result));
}

TEST_F(ComputeOpsTest, ComputeStandInSumsInputsModuloTheirSize) {
  // i -> a[i % 6] + b[i % 2] + c[i % 3]
  auto [r16, r64] = computeThreeInputs(300);
  EXPECT_EQ(r16, (std::vector<double>{111, 222, 313, 124, 215, 326, 111}));
  EXPECT_EQ(r64, (std::vector<double>{111, 222, 313, 124}));
  // No inputs: zeros (over what the result held before).
  void *result = upload(DDPRT_DTYPE_F16, std::vector<double>(7, 5.0));
  ddprt_tensor results[] = {{result, 7, DDPRT_DTYPE_F16, 0}};
  DDPRT_EXPECT_OK(context,
                  ddprt_compute(context, "init", 0, 0, nullptr, 0, results, 1));
  EXPECT_EQ(download(DDPRT_DTYPE_F16, result, 7), std::vector<double>(7, 0.0));
  DDPRT_EXPECT_OK(context, ddprt_free(context, result));
}

TEST_F(ComputeOpsTest, AccumulateScaleAndCast) {
  for (int32_t dtype : allDTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    void *a = upload(dtype, {1, -2, 3.5, 100});
    void *b = upload(dtype, {4, 2, -0.5, 28});
    void *sum = nullptr;
    DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, 4, &sum));
    DDPRT_EXPECT_OK(context, ddprt_accumulate(context, dtype, 4, a, b, sum));
    EXPECT_EQ(download(dtype, sum, 4), (std::vector<double>{5, 0, 3, 128}));
    DDPRT_EXPECT_OK(context, ddprt_scale(context, dtype, 4, sum, 0.25, sum));
    EXPECT_EQ(download(dtype, sum, 4),
              (std::vector<double>{1.25, 0, 0.75, 32}));
    for (void *buffer : {a, b, sum})
      DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
  }
  // A factor that is not exact: f32 multiplies by float(0.1).
  void *x = upload(DDPRT_DTYPE_F32, {3});
  DDPRT_EXPECT_OK(context, ddprt_scale(context, DDPRT_DTYPE_F32, 1, x, 0.1, x));
  EXPECT_EQ(download(DDPRT_DTYPE_F32, x, 1)[0], double(3.0f * 0.1f));
  // f32 -> bf16 rounds to nearest even; f64 -> f16 rounds once.
  void *wide =
      upload(DDPRT_DTYPE_F64,
             {257, 259, 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
  void *narrow = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_BF16, 3, &narrow));
  DDPRT_EXPECT_OK(context, ddprt_cast(context, DDPRT_DTYPE_F64, wide,
                                      DDPRT_DTYPE_BF16, narrow, 2));
  EXPECT_EQ(download(DDPRT_DTYPE_BF16, narrow, 2),
            (std::vector<double>{256, 260}));
  void *half = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F16, 3, &half));
  DDPRT_EXPECT_OK(context, ddprt_cast(context, DDPRT_DTYPE_F64, wide,
                                      DDPRT_DTYPE_F16, half, 3));
  // 1 + 2^-11 + 2^-40 is just above the f16 tie between 1 and 1 + 2^-10.
  EXPECT_EQ(download(DDPRT_DTYPE_F16, half, 3)[2], 1 + std::ldexp(1.0, -10));
  for (void *buffer : {x, wide, narrow, half})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST_F(ComputeOpsTest, CheckFiniteNamesTheBufferAndElement) {
  void *clean = upload(DDPRT_DTYPE_F32, {1, 2, 3});
  DDPRT_EXPECT_OK(context, ddprt_check_finite(context, DDPRT_DTYPE_F32, 3,
                                              clean, "bucket0", nullptr));
  for (int32_t dtype : allDTypes) {
    double bad = dtype == DDPRT_DTYPE_F64
                     ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
    void *buffer = upload(dtype, {1, 2, bad, 4});
    EXPECT_EQ(ddprt_check_finite(context, dtype, 4, buffer, "bucket3",
                                 "layers.0.fc1.weight,layers.0.fc1.bias"),
              DDPRT_ERROR_NONFINITE);
    std::string message = ddprt_last_error(context);
    EXPECT_NE(message.find("at element 2 of buffer 'bucket3'"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("parameters: layers.0.fc1.weight,layers.0.fc1.bias"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("rank " + std::to_string(ddprt::test::worldRank())),
              std::string::npos)
        << message;
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
  }
  DDPRT_EXPECT_OK(context, ddprt_free(context, clean));
}

TEST_F(ComputeOpsTest, CopyAndFill) {
  void *a = nullptr, *b = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 64, &a));
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 64, &b));
  // Fresh buffers are zero.
  EXPECT_EQ(download(DDPRT_DTYPE_F32, a, 64), std::vector<double>(64, 0.0));
  DDPRT_EXPECT_OK(context,
                  ddprt_fill_input(context, a, DDPRT_DTYPE_F32, 64, 9));
  std::vector<double> first = download(DDPRT_DTYPE_F32, a, 64);
  for (double value : first) {
    EXPECT_EQ(value, std::floor(value));
    EXPECT_GE(value, -2);
    EXPECT_LE(value, 2);
  }
  DDPRT_EXPECT_OK(context, ddprt_copy(context, b, a, 64 * 4));
  EXPECT_EQ(download(DDPRT_DTYPE_F32, b, 64), first);
  // The same seed again gives the same data; another seed other data.
  DDPRT_EXPECT_OK(context,
                  ddprt_fill_input(context, a, DDPRT_DTYPE_F32, 64, 9));
  EXPECT_EQ(download(DDPRT_DTYPE_F32, a, 64), first);
  DDPRT_EXPECT_OK(context,
                  ddprt_fill_input(context, a, DDPRT_DTYPE_F32, 64, 10));
  EXPECT_NE(download(DDPRT_DTYPE_F32, a, 64), first);

  // Step inputs differ between ranks: gather rank 0's and compare.
  DDPRT_EXPECT_OK(context,
                  ddprt_fill_input(context, a, DDPRT_DTYPE_F32, 64, 9));
  void *gathered = nullptr;
  int32_t world = groupOf("dp,tp");
  int size = ddprt::test::worldSize();
  DDPRT_ASSERT_OK(context,
                  ddprt_alloc(context, DDPRT_DTYPE_F32, 64 * size, &gathered));
  DDPRT_EXPECT_OK(context, ddprt_all_gather(context, world, DDPRT_DTYPE_F32, 64,
                                            a, gathered, nullptr));
  std::vector<double> all = download(DDPRT_DTYPE_F32, gathered, 64 * size);
  for (int rank = 1; rank < size; ++rank)
    EXPECT_NE(std::vector<double>(all.begin() + rank * 64,
                                  all.begin() + (rank + 1) * 64),
              std::vector<double>(all.begin(), all.begin() + 64));
  for (void *buffer : {a, b, gathered})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

class ParamTest : public RuntimeSuite {};

TEST_F(ParamTest, RegisteredParametersAreIdenticalOnEveryRank) {
  int32_t first = -1, second = -1;
  DDPRT_ASSERT_OK(context,
                  ddprt_param_register(context, "p.weight", DDPRT_DTYPE_BF16,
                                       300, 1, &first));
  DDPRT_ASSERT_OK(context,
                  ddprt_param_register(context, "p.bias", DDPRT_DTYPE_F32, 300,
                                       1, &second));
  EXPECT_EQ(second, first + 1);
  int32_t found = -1, count = 0;
  DDPRT_EXPECT_OK(context, ddprt_param_lookup(context, "p.bias", &found));
  EXPECT_EQ(found, second);
  DDPRT_EXPECT_OK(context, ddprt_param_count(context, &count));
  EXPECT_GE(count, 2);
  const char *name = nullptr;
  int32_t dtype = 0;
  int64_t numel = 0;
  DDPRT_EXPECT_OK(context,
                  ddprt_param_info(context, first, &name, &dtype, &numel));
  EXPECT_STREQ(name, "p.weight");
  EXPECT_EQ(dtype, DDPRT_DTYPE_BF16);
  EXPECT_EQ(numel, 300);

  std::vector<char> weightBytes(600), biasBytes(1200);
  DDPRT_EXPECT_OK(context,
                  ddprt_param_read(context, first, weightBytes.data(), 600));
  DDPRT_EXPECT_OK(context,
                  ddprt_param_read(context, second, biasBytes.data(), 1200));
  std::vector<double> weight = decode(DDPRT_DTYPE_BF16, weightBytes);
  std::vector<double> bias = decode(DDPRT_DTYPE_F32, biasBytes);
  for (double value : weight) {
    EXPECT_EQ(value, std::floor(value));
    EXPECT_GE(value, -2);
    EXPECT_LE(value, 2);
  }
  EXPECT_NE(weight, bias); // The name takes part in the seed.

  // Every rank holds the same values: all-gather them and compare.
  void *data = nullptr;
  DDPRT_EXPECT_OK(context, ddprt_param_data(context, second, &data));
  int size = ddprt::test::worldSize();
  void *gathered = nullptr;
  DDPRT_ASSERT_OK(context,
                  ddprt_alloc(context, DDPRT_DTYPE_F32, 300 * size, &gathered));
  DDPRT_EXPECT_OK(context,
                  ddprt_all_gather(context, groupOf("dp,tp"), DDPRT_DTYPE_F32,
                                   300, data, gathered, nullptr));
  std::vector<double> all = download(DDPRT_DTYPE_F32, gathered, 300 * size);
  for (int rank = 0; rank < size; ++rank)
    EXPECT_EQ(std::vector<double>(all.begin() + rank * 300,
                                  all.begin() + (rank + 1) * 300),
              bias);
  DDPRT_EXPECT_OK(context, ddprt_free(context, gathered));

  // Errors: a second registration, a wrong size, a parameter's storage freed.
  int32_t again = -1;
  EXPECT_EQ(
      ddprt_param_register(context, "p.bias", DDPRT_DTYPE_F32, 1, 1, &again),
      DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(context)).find("registered already"),
            std::string::npos);
  EXPECT_EQ(ddprt_param_read(context, second, biasBytes.data(), 4),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(context)).find("has 1200"),
            std::string::npos);
  EXPECT_EQ(ddprt_free(context, data), DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ddprt_param_lookup(context, "p.missing", &found),
            DDPRT_ERROR_INVALID_ARGUMENT);
}

// A parameter stored in a slice of a buffer (the bucket its all-gather
// fills) holds the values ddprt_param_register would give it, is the slice,
// and goes with the buffer; storage outside a buffer or over another
// parameter is refused.
TEST_F(ParamTest, ParametersStoredInABufferSliceGoWithTheBuffer) {
  int32_t own = -1, inside = -1;
  DDPRT_ASSERT_OK(context, ddprt_param_register(context, "slice.own",
                                                DDPRT_DTYPE_BF16, 64, 7, &own));
  void *bucket = nullptr;
  DDPRT_ASSERT_OK(context,
                  ddprt_alloc(context, DDPRT_DTYPE_BF16, 256, &bucket));
  void *slice = static_cast<char *>(bucket) + 2 * 100;
  DDPRT_ASSERT_OK(context,
                  ddprt_param_register_in(context, "slice.in", DDPRT_DTYPE_BF16,
                                          64, 7, slice, &inside));
  void *data = nullptr;
  DDPRT_EXPECT_OK(context, ddprt_param_data(context, inside, &data));
  EXPECT_EQ(data, slice);
  // The same name and seed give the same values wherever they are stored.
  int32_t reference = -1;
  DDPRT_ASSERT_OK(context,
                  ddprt_param_register_in(context, "slice.in.ref",
                                          DDPRT_DTYPE_BF16, 64, 7, nullptr,
                                          &reference));
  std::vector<char> a(128), b(128);
  DDPRT_EXPECT_OK(context, ddprt_param_read(context, inside, a.data(), 128));
  DDPRT_EXPECT_OK(context, ddprt_read(context, b.data(), slice, 128));
  EXPECT_EQ(a, b);

  // Errors: storage that is no buffer's, that runs past its buffer, or that
  // overlaps a parameter.
  int32_t bad = -1;
  std::vector<char> host(128);
  EXPECT_EQ(ddprt_param_register_in(context, "slice.host", DDPRT_DTYPE_BF16,
                                    64, 7, host.data(), &bad),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ddprt_param_register_in(context, "slice.past", DDPRT_DTYPE_BF16,
                                    64, 7, static_cast<char *>(bucket) + 400,
                                    &bad),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(context)).find("past the end"),
            std::string::npos);
  EXPECT_EQ(ddprt_param_register_in(context, "slice.overlap", DDPRT_DTYPE_BF16,
                                    64, 7, static_cast<char *>(slice) + 2,
                                    &bad),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(context))
                .find("overlaps parameter 'slice.in'"),
            std::string::npos);

  // The buffer can be freed (a program's teardown does); the parameter
  // stored in it is gone with it, the one with its own storage is not.
  DDPRT_EXPECT_OK(context, ddprt_free(context, bucket));
  EXPECT_EQ(ddprt_param_read(context, inside, a.data(), 128),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(context))
                .find("'slice.in' was stored in a buffer that ddprt_free "
                      "released"),
            std::string::npos);
  DDPRT_EXPECT_OK(context, ddprt_param_read(context, own, a.data(), 128));
}

// A 16-bit parameter is updated through an fp32 main copy (Megatron's
// mixed-precision optimizer): steps of lr * grad = 2^-10 on a bf16 1.0 each
// round back to 1.0 on their own (the bf16 below 1.0 is 1 - 2^-8), but the
// main copy accumulates them: after three it is 1 - 3 * 2^-10, nearer
// 1 - 2^-8 than 1.0. The shard optimizer keeps its own main copy of the
// elements in its shard and gives the same bits.
TEST_F(ParamTest, SixteenBitParametersAreUpdatedThroughAnFp32MainCopy) {
  int32_t whole = -1, sharded = -1;
  DDPRT_ASSERT_OK(context, ddprt_param_register(context, "main.w",
                                                DDPRT_DTYPE_BF16, 4, 1, &whole));
  DDPRT_ASSERT_OK(context,
                  ddprt_param_register(context, "main.shard.w",
                                       DDPRT_DTYPE_BF16, 4, 1, &sharded));
  std::vector<double> ones(4, 1.0);
  for (int32_t param : {whole, sharded}) {
    void *data = nullptr;
    DDPRT_ASSERT_OK(context, ddprt_param_data(context, param, &data));
    void *values = upload(DDPRT_DTYPE_BF16, ones);
    DDPRT_ASSERT_OK(context, ddprt_copy(context, data, values, 8));
    DDPRT_EXPECT_OK(context, ddprt_free(context, values));
  }
  // The bucket is the world's shards of 4 elements; the parameter is placed
  // in this rank's.
  int32_t self = groupOf("dp,tp");
  int32_t groupRank = 0, groupSize = 0;
  DDPRT_ASSERT_OK(context,
                  ddprt_group_info(context, self, &groupRank, &groupSize));
  void *grad = upload(DDPRT_DTYPE_F32, std::vector<double>(4 * groupSize, 1.0));
  void *shard = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_BF16, 4, &shard));
  for (int step = 1; step <= 3; ++step) {
    DDPRT_EXPECT_OK(context,
                    ddprt_sgd(context, whole, DDPRT_DTYPE_F32, grad, 0x1p-10));
    DDPRT_EXPECT_OK(context, ddprt_shard_sgd(context, self, sharded,
                                             4 * groupRank, DDPRT_DTYPE_F32,
                                             grad, 4, shard, 0x1p-10));
    std::vector<char> wholeBytes(8), shardBytes(8);
    DDPRT_EXPECT_OK(context,
                    ddprt_param_read(context, whole, wholeBytes.data(), 8));
    DDPRT_EXPECT_OK(context,
                    ddprt_read(context, shardBytes.data(), shard, 8));
    double expected = step < 3 ? 1.0 : 1.0 - 0x1p-8;
    for (double value : decode(DDPRT_DTYPE_BF16, wholeBytes))
      EXPECT_EQ(value, expected) << "step " << step;
    EXPECT_EQ(shardBytes, wholeBytes) << "step " << step;
    // ddp.set_params: the parameter takes the gathered shard.
    void *data = nullptr;
    DDPRT_ASSERT_OK(context, ddprt_param_data(context, sharded, &data));
    DDPRT_EXPECT_OK(context, ddprt_copy(context, data, shard, 8));
  }
  for (void *buffer : {grad, shard})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

// overlap-param-gather: a parameter of 6 elements at offset 1 of a bucket
// whose shards over the world are just large enough to hold it. get_param_shard reads the parameter's
// elements in this rank's shard into their places, set_param_shard writes
// them back and leaves the others, and finish_param_sync gives every rank
// every other rank's shard.
TEST_F(ParamTest, ParamShardsAreGatheredByFinishParamSync) {
  int32_t param = -1;
  DDPRT_ASSERT_OK(context, ddprt_param_register(context, "shard.gather.w",
                                                DDPRT_DTYPE_F32, 6, 1, &param));
  int32_t world = groupOf("dp,tp");
  int32_t rank = 0, size = 0;
  DDPRT_ASSERT_OK(context, ddprt_group_info(context, world, &rank, &size));
  const int64_t offset = 1, shardNumel = (6 + offset + size - 1) / size;
  // Parameter element i is bucket element i + 1; this rank's differ.
  std::vector<double> own(6);
  for (int i = 0; i < 6; ++i)
    own[size_t(i)] = 100 * rank + i;
  void *data = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_param_data(context, param, &data));
  void *values = upload(DDPRT_DTYPE_F32, own);
  DDPRT_ASSERT_OK(context, ddprt_copy(context, data, values, 24));

  void *shard =
      upload(DDPRT_DTYPE_F32, std::vector<double>(size_t(shardNumel), -1.0));
  DDPRT_EXPECT_OK(context, ddprt_get_param_shard(context, world, param, offset,
                                                 shardNumel, shard));
  std::vector<double> read = download(DDPRT_DTYPE_F32, shard, shardNumel);
  for (int64_t index = 0; index < shardNumel; ++index) {
    int64_t element = rank * shardNumel + index - offset;
    double expected = element >= 0 && element < 6 ? own[size_t(element)] : -1;
    EXPECT_EQ(read[size_t(index)], expected) << "shard element " << index;
  }

  // The update of this rank's shard: 1000 + the bucket element.
  std::vector<double> update(static_cast<size_t>(shardNumel));
  for (int64_t index = 0; index < shardNumel; ++index)
    update[size_t(index)] = 1000 + rank * shardNumel + index;
  void *updated = upload(DDPRT_DTYPE_F32, update);
  DDPRT_EXPECT_OK(context, ddprt_set_param_shard(context, world, param, offset,
                                                 shardNumel, updated));
  std::vector<char> bytes(24);
  DDPRT_EXPECT_OK(context, ddprt_param_read(context, param, bytes.data(), 24));
  std::vector<double> written = decode(DDPRT_DTYPE_F32, bytes);
  for (int64_t i = 0; i < 6; ++i) {
    bool inShard = (i + offset) / shardNumel == rank;
    EXPECT_EQ(written[size_t(i)], inShard ? 1000 + i + offset : own[size_t(i)])
        << "element " << i;
  }

  DDPRT_EXPECT_OK(context, ddprt_finish_param_sync(context));
  DDPRT_EXPECT_OK(context, ddprt_param_read(context, param, bytes.data(), 24));
  std::vector<double> gathered = decode(DDPRT_DTYPE_F32, bytes);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(gathered[size_t(i)], 1000 + i + offset) << "element " << i;
  // Nothing is left to gather.
  DDPRT_EXPECT_OK(context, ddprt_finish_param_sync(context));
  for (void *buffer : {values, shard, updated})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST_F(ParamTest, SgdAndAdamUpdateEveryRankIdentically) {
  int32_t sgdParam = -1, adamParam = -1;
  DDPRT_ASSERT_OK(context,
                  ddprt_param_register(context, "sgd.w", DDPRT_DTYPE_F32, 128,
                                       5, &sgdParam));
  DDPRT_ASSERT_OK(context,
                  ddprt_param_register(context, "adam.w", DDPRT_DTYPE_BF16, 128,
                                       5, &adamParam));
  std::vector<double> gradient = smallIntegers(128, 3);
  void *grad = upload(DDPRT_DTYPE_F32, gradient);
  std::vector<char> before(512);
  DDPRT_EXPECT_OK(context,
                  ddprt_param_read(context, sgdParam, before.data(), 512));
  DDPRT_EXPECT_OK(context,
                  ddprt_sgd(context, sgdParam, DDPRT_DTYPE_F32, grad, 0.5));
  std::vector<char> after(512);
  DDPRT_EXPECT_OK(context,
                  ddprt_param_read(context, sgdParam, after.data(), 512));
  std::vector<double> p0 = decode(DDPRT_DTYPE_F32, before);
  std::vector<double> p1 = decode(DDPRT_DTYPE_F32, after);
  for (size_t i = 0; i < p0.size(); ++i)
    EXPECT_EQ(p1[i], p0[i] - 0.5 * gradient[i]);

  // Adam, two steps: the first moves each element by about lr against the
  // gradient's sign (m / sqrt(v) = g / |g| after bias correction).
  std::vector<char> adamBefore(256), adamAfter(256);
  DDPRT_EXPECT_OK(context,
                  ddprt_param_read(context, adamParam, adamBefore.data(), 256));
  DDPRT_EXPECT_OK(context, ddprt_adam(context, adamParam, DDPRT_DTYPE_F32, grad,
                                      0.25, 0.9, 0.999, 1e-8));
  DDPRT_EXPECT_OK(context,
                  ddprt_param_read(context, adamParam, adamAfter.data(), 256));
  std::vector<double> a0 = decode(DDPRT_DTYPE_BF16, adamBefore);
  std::vector<double> a1 = decode(DDPRT_DTYPE_BF16, adamAfter);
  for (size_t i = 0; i < a0.size(); ++i) {
    double sign = gradient[i] > 0 ? 1 : gradient[i] < 0 ? -1 : 0;
    EXPECT_NEAR(a1[i], a0[i] - 0.25 * sign, 1e-6) << i;
  }
  DDPRT_EXPECT_OK(context, ddprt_adam(context, adamParam, DDPRT_DTYPE_F32, grad,
                                      0.25, 0.9, 0.999, 1e-8));

  // Bitwise the same on every rank.
  for (int32_t param : {sgdParam, adamParam}) {
    void *data = nullptr;
    int32_t dtype = 0;
    DDPRT_EXPECT_OK(context, ddprt_param_data(context, param, &data));
    DDPRT_EXPECT_OK(context,
                    ddprt_param_info(context, param, nullptr, &dtype, nullptr));
    int size = ddprt::test::worldSize();
    void *gathered = nullptr;
    DDPRT_ASSERT_OK(context,
                    ddprt_alloc(context, dtype, 128 * size, &gathered));
    DDPRT_EXPECT_OK(context, ddprt_all_gather(context, groupOf("dp,tp"), dtype,
                                              128, data, gathered, nullptr));
    std::vector<char> bytes(size_t(128 * size * dtypeSize(dtype)));
    DDPRT_EXPECT_OK(context, ddprt_read(context, bytes.data(), gathered,
                                        int64_t(bytes.size())));
    size_t slice = size_t(128 * dtypeSize(dtype));
    for (int rank = 1; rank < size; ++rank)
      EXPECT_EQ(std::memcmp(bytes.data(), bytes.data() + rank * slice, slice),
                0);
    DDPRT_EXPECT_OK(context, ddprt_free(context, gathered));
  }
  EXPECT_EQ(ddprt_adam(context, adamParam, DDPRT_DTYPE_F32, grad, 0.1, 1.0,
                       0.999, 1e-8),
            DDPRT_ERROR_INVALID_ARGUMENT);
  DDPRT_EXPECT_OK(context, ddprt_free(context, grad));
}

} // namespace

namespace {

class BoundedValuesTest : public StandInSuite {
protected:
  static void SetUpTestSuite() {
    startContext(DDPRT_FLAG_RETURN_ERRORS | DDPRT_FLAG_FIXED_ORDER_GEMM |
                 DDPRT_FLAG_BOUNDED_VALUES);
  }
};

/// `value` less its nearest multiple of 8, ties to even.
double bounded(double value) { return value - 8 * std::nearbyint(value / 8); }

// DDPRT_FLAG_BOUNDED_VALUES: a GEMM's exact sums, each less its nearest
// multiple of 8, and only then rounded to the result's type. Depth 61 of
// values up to 3 gives sums above 256, which bf16 would round to a multiple
// of 2 before any bound; the bounded ones are exact in every type.
TEST_F(BoundedValuesTest, GemmBoundsEachSumBeforeItsRounding) {
  const int64_t m = 5, n = 6, k = 61;
  std::vector<double> lhs(size_t(m * k)), rhs(size_t(k * n));
  for (size_t i = 0; i < lhs.size(); ++i)
    lhs[i] = i % 3 == 0 ? 2 : 3;
  for (size_t i = 0; i < rhs.size(); ++i)
    rhs[i] = i % 5 == 0 ? -1 : 3;
  std::vector<double> expected(size_t(m * n), 0.0);
  double largest = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += lhs[size_t(i * k + p)] * rhs[size_t(p * n + j)];
      largest = std::max(largest, std::fabs(sum));
      expected[size_t(i * n + j)] = bounded(sum);
    }
  ASSERT_GT(largest, 256);
  for (int32_t dtype : allDTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    void *a = upload(dtype, lhs), *b = upload(dtype, rhs), *c = nullptr;
    DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, m * n, &c));
    DDPRT_EXPECT_OK(context, ddprt_gemm(context, dtype, 0, 0, m, n, k, a, b, c,
                                        "bounded gemm"));
    EXPECT_EQ(download(dtype, c, m * n), expected);
    for (void *buffer : {a, b, c})
      DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
  }
}

// The stand-in's sums too, with input j weighed by j + 1 and result r
// offset by r (so that swapped inputs or results show): i -> a[i % 6] +
// 2 b[i % 2] + 3 c[i % 3] + r, less its nearest multiple of 8.
TEST_F(BoundedValuesTest, ComputeStandInBoundsItsSums) {
  // Result 0: 321 -> 1, 642 -> 2, 924.5 -> -3.5, 344 -> 0 (43 x 8), 625
  // -> 1, 947.5 -> 3.5, 321 -> 1; result 1 one more before the bound.
  auto [r16, r64] = computeThreeInputs(300.5);
  EXPECT_EQ(r16, (std::vector<double>{1, 2, -3.5, 0, 1, 3.5, 1}));
  EXPECT_EQ(r64, (std::vector<double>{2, 3, -2.5, 1}));
  // A tie rounds to even: 12 -> -4 (12/8 = 1.5 rounds to 2), 4 -> 4.
  void *twelve = upload(DDPRT_DTYPE_F32, {12, 4});
  void *tie = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 2, &tie));
  ddprt_tensor one[] = {{twelve, 2, DDPRT_DTYPE_F32, 0}};
  ddprt_tensor tieResult[] = {{tie, 2, DDPRT_DTYPE_F32, 0}};
  DDPRT_EXPECT_OK(context,
                  ddprt_compute(context, "norm", 0, 0, one, 1, tieResult, 1));
  EXPECT_EQ(download(DDPRT_DTYPE_F32, tie, 2), (std::vector<double>{-4, 4}));
  for (void *buffer : {twelve, tie})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

} // namespace

namespace {

class FractionalDataTest : public RuntimeSuite {
protected:
  static void SetUpTestSuite() {
    startContext(DDPRT_FLAG_RETURN_ERRORS | DDPRT_FLAG_FRACTIONAL_DATA);
  }
};

// DDPRT_FLAG_FRACTIONAL_DATA: multiples of 2^-28 in [-1/32, 1/32), most of
// them no multiple of 2^-22 (every mantissa bit in use), spread as an
// initialisation with Megatron's init_method_std (0.02) is, the same for
// the same seed.
TEST_F(FractionalDataTest, InputsAreFractionsThatUseTheMantissa) {
  void *a = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 256, &a));
  DDPRT_EXPECT_OK(context,
                  ddprt_fill_input(context, a, DDPRT_DTYPE_F32, 256, 9));
  std::vector<double> values = download(DDPRT_DTYPE_F32, a, 256);
  int coarse = 0;
  double squares = 0;
  for (double value : values) {
    EXPECT_GE(value, -1.0 / 32);
    EXPECT_LT(value, 1.0 / 32);
    double scaled = value * 268435456.0;
    EXPECT_EQ(scaled, std::floor(scaled));
    coarse += scaled / 64 == std::floor(scaled / 64);
    squares += value * value;
  }
  EXPECT_LE(coarse, 16);
  // Uniform in [-1/32, 1/32): a standard deviation of 0.018.
  double deviation = std::sqrt(squares / double(values.size()));
  EXPECT_GT(deviation, 0.015);
  EXPECT_LT(deviation, 0.021);
  DDPRT_EXPECT_OK(context,
                  ddprt_fill_input(context, a, DDPRT_DTYPE_F32, 256, 9));
  EXPECT_EQ(download(DDPRT_DTYPE_F32, a, 256), values);
  DDPRT_EXPECT_OK(context, ddprt_free(context, a));
}

// CUDA graphs are the CUDA backend's; the CPU backend says so.
TEST_F(FractionalDataTest, TheCpuBackendRefusesGraphs) {
  EXPECT_EQ(ddprt_graph_begin(context), DDPRT_ERROR_UNAVAILABLE);
  EXPECT_NE(std::string(ddprt_last_error(context))
                .find("ddprt_graph_begin: CUDA graphs need the CUDA backend"),
            std::string::npos)
      << ddprt_last_error(context);
  EXPECT_EQ(ddprt_graph_end(context), DDPRT_ERROR_UNAVAILABLE);
  EXPECT_EQ(ddprt_graph_launch(context), DDPRT_ERROR_UNAVAILABLE);
}

} // namespace
