//===- CudaTest.cpp - The CUDA backend against the CPU backend ------------===//
//
// Runs as one rank. Every test is skipped, with the reason, where the CUDA
// backend cannot start (no GPU, or a library built without it). Results are
// compared bitwise with the CPU backend on the same integer-valued data.
//
//===----------------------------------------------------------------------===//

#include "JsonReader.h"
#include "RuntimeTestSupport.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <utility>

using namespace ddprt::test;

namespace {

const int32_t allDTypes[] = {DDPRT_DTYPE_F16, DDPRT_DTYPE_BF16, DDPRT_DTYPE_F32,
                             DDPRT_DTYPE_F64};

/// A compute stand-in's inputs and results, (dtype, numel) each.
struct StandInCase {
  std::vector<std::pair<int32_t, int64_t>> inputs, results;
  double flops = 0, bytes = 0;
};

class CudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    ddprt_status status =
        ddprt_init(DDPRT_ABI_VERSION, "dp=1", DDPRT_BACKEND_CUDA,
                   DDPRT_FLAG_RETURN_ERRORS, 20000, nullptr, &gpu);
    if (status == DDPRT_ERROR_UNAVAILABLE)
      GTEST_SKIP() << "CUDA backend unavailable: " << ddprt_last_error(nullptr);
    ASSERT_EQ(status, DDPRT_OK) << ddprt_last_error(nullptr);
    ASSERT_EQ(ddprt_init(DDPRT_ABI_VERSION, "dp=1", DDPRT_BACKEND_CPU,
                         DDPRT_FLAG_RETURN_ERRORS, 20000, nullptr, &cpu),
              DDPRT_OK)
        << ddprt_last_error(nullptr);
    DDPRT_ASSERT_OK(gpu, ddprt_group_create(gpu, "dp", &gpuGroup));
    DDPRT_ASSERT_OK(cpu, ddprt_group_create(cpu, "dp", &cpuGroup));
    int32_t backend = 0;
    DDPRT_ASSERT_OK(gpu, ddprt_get_backend(gpu, &backend));
    ASSERT_EQ(backend, DDPRT_BACKEND_CUDA);
  }

  void TearDown() override {
    if (gpu) {
      EXPECT_EQ(ddprt_finalize(gpu), DDPRT_OK) << ddprt_last_error(nullptr);
    }
    if (cpu) {
      EXPECT_EQ(ddprt_finalize(cpu), DDPRT_OK) << ddprt_last_error(nullptr);
    }
  }

  static void *put(ddprt_context *context, int32_t dtype,
                   const std::vector<double> &values) {
    void *data = nullptr;
    EXPECT_EQ(ddprt_alloc(context, dtype, int64_t(values.size()), &data),
              DDPRT_OK);
    std::vector<char> bytes = encode(dtype, values);
    EXPECT_EQ(ddprt_write(context, data, bytes.data(), int64_t(bytes.size())),
              DDPRT_OK)
        << ddprt_last_error(context);
    return data;
  }

  static std::vector<char> get(ddprt_context *context, const void *data,
                               int64_t bytes) {
    std::vector<char> out(static_cast<size_t>(bytes));
    EXPECT_EQ(ddprt_read(context, out.data(), data, bytes), DDPRT_OK)
        << ddprt_last_error(context);
    return out;
  }

  /// An m x n x k GEMM in every dtype and transposition on operands from
  /// `values(numel, salt)`: the GPU's result bitwise the CPU's.
  void expectGemmsEqual(
      int64_t m, int64_t n, int64_t k,
      const std::function<std::vector<double>(int64_t, int)> &values) {
    for (int32_t dtype : allDTypes) {
      for (int transposeLhs = 0; transposeLhs < 2; ++transposeLhs) {
        for (int transposeRhs = 0; transposeRhs < 2; ++transposeRhs) {
          SCOPED_TRACE(std::string(dtypeLabel(dtype)) + " " +
                       std::to_string(m) + "x" + std::to_string(n) + "x" +
                       std::to_string(k) + " lhsT=" +
                       std::to_string(transposeLhs) +
                       " rhsT=" + std::to_string(transposeRhs));
          std::vector<char> results[2];
          ddprt_context *contexts[2] = {cpu, gpu};
          for (int which = 0; which < 2; ++which) {
            ddprt_context *context = contexts[which];
            void *lhs = put(context, dtype, values(m * k, 1));
            void *rhs = put(context, dtype, values(k * n, 2));
            void *out = nullptr;
            DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, m * n, &out));
            DDPRT_EXPECT_OK(context, ddprt_gemm(context, dtype, transposeLhs,
                                                transposeRhs, m, n, k, lhs, rhs,
                                                out, nullptr));
            results[which] = get(context, out, m * n * dtypeSize(dtype));
            for (void *buffer : {lhs, rhs, out})
              DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
          }
          EXPECT_TRUE(results[0] == results[1]);
        }
      }
    }
  }

  /// Each case's stand-in on inputs from fractions() times `scale`: the
  /// GPU's results bitwise the CPU's.
  void expectStandInsEqual(const std::vector<StandInCase> &cases, double scale);

  /// Both contexts started again with `flags`.
  void restart(int32_t flags) {
    for (auto [context, backend] : {std::pair{&gpu, DDPRT_BACKEND_CUDA},
                                    std::pair{&cpu, DDPRT_BACKEND_CPU}}) {
      ASSERT_EQ(ddprt_finalize(*context), DDPRT_OK)
          << ddprt_last_error(nullptr);
      *context = nullptr;
      ASSERT_EQ(ddprt_init(DDPRT_ABI_VERSION, "dp=1", backend,
                           DDPRT_FLAG_RETURN_ERRORS | flags, 20000, nullptr,
                           context),
                DDPRT_OK)
          << ddprt_last_error(nullptr);
    }
  }

  ddprt_context *gpu = nullptr, *cpu = nullptr;
  int32_t gpuGroup = -1, cpuGroup = -1;
};

std::vector<double> integers(int64_t numel, int salt) {
  std::vector<double> values(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i)
    values[size_t(i)] = double((i * 7 + salt) % 9) - 4.0;
  return values;
}

TEST_F(CudaTest, GemmsEqualTheCpuResult) {
  expectGemmsEqual(67, 45, 129, integers);
}

/// Values with all their mantissa bits in use, in [-2, 2): sums of their
/// products round, so only one order of summation gives the CPU's bits.
std::vector<double> fractions(int64_t numel, uint32_t salt) {
  std::vector<double> values(static_cast<size_t>(numel));
  uint32_t state = salt * 2654435761u + 1;
  for (double &value : values) {
    state = state * 1664525u + 1013904223u;
    value = double(state >> 8) / double(1u << 22) - 2.0;
  }
  return values;
}

TEST_F(CudaTest, FixedOrderGemmsEqualTheCpuResultOnFractions) {
  // Both backends again, now with the fixed-order kernel (the CPU's default
  // is OpenBLAS, which sums in an order of its own).
  ASSERT_NO_FATAL_FAILURE(restart(DDPRT_FLAG_FIXED_ORDER_GEMM));
  // One tile and a partial k slice; several tiles each way with k not a
  // multiple of the slice; one term; a shape as wide as a real layer's.
  const int64_t shapes[][3] = {
      {67, 45, 129}, {130, 200, 300}, {5, 3, 1}, {96, 1024, 513}};
  for (const auto &shape : shapes)
    expectGemmsEqual(shape[0], shape[1], shape[2],
                     [](int64_t numel, int salt) {
                       return fractions(numel, uint32_t(salt));
                     });
}

// DDPRT_FLAG_BOUNDED_VALUES (what ddp-run --verify runs with): GEMMs whose
// sums reach hundreds (integers up to 4, depth 129) and stand-ins on values
// 50 times fractions() are bounded by both backends to the same bits: the
// GEMM kernel, and the element-wise stand-in that the 16-byte cases and
// the nine-input one (by input) take.
TEST_F(CudaTest, BoundedGemmsAndStandInsEqualTheCpuResult) {
  ASSERT_NO_FATAL_FAILURE(
      restart(DDPRT_FLAG_FIXED_ORDER_GEMM | DDPRT_FLAG_BOUNDED_VALUES));
  expectGemmsEqual(67, 45, 129, integers);
  expectGemmsEqual(96, 1024, 513, [](int64_t numel, int salt) {
    return fractions(numel, uint32_t(salt));
  });
  const std::vector<StandInCase> cases = {
      {{{DDPRT_DTYPE_BF16, 5000}, {DDPRT_DTYPE_F32, 300}},
       {{DDPRT_DTYPE_BF16, 1000}, {DDPRT_DTYPE_F64, 2500}}},
      {{{DDPRT_DTYPE_BF16, 4096}, {DDPRT_DTYPE_F32, 64}, {DDPRT_DTYPE_F16, 8}},
       {{DDPRT_DTYPE_BF16, 4096}, {DDPRT_DTYPE_F32, 4096}}},
      {{{DDPRT_DTYPE_BF16, 16000}, {DDPRT_DTYPE_BF16, 2400}},
       {{DDPRT_DTYPE_BF16, 16000}}},
      {std::vector<std::pair<int32_t, int64_t>>(9, {DDPRT_DTYPE_F32, 333}),
       {{DDPRT_DTYPE_BF16, 1000}, {DDPRT_DTYPE_F64, 10}}},
  };
  expectStandInsEqual(cases, 50);
}

TEST_F(CudaTest, ElementwiseOpsAndOptimizersEqualTheCpuResult) {
  // Integers, then values whose every operation rounds; a length that
  // takes the kernels that load 8 or 16 bytes at a time (accumulate, Adam
  // on an f32 main copy) and one that does not.
  for (int64_t numel : {1000, 999})
  for (bool useFractions : {false, true})
  for (int32_t dtype : allDTypes) {
    SCOPED_TRACE(std::string(dtypeLabel(dtype)) +
                 (useFractions ? " fractions" : " integers") + ", " +
                 std::to_string(numel));
    auto values = [&](int64_t count, int salt) {
      return useFractions ? fractions(count, uint32_t(salt))
                          : integers(count, salt);
    };
    std::vector<char> outputs[2];
    ddprt_context *contexts[2] = {cpu, gpu};
    for (int which = 0; which < 2; ++which) {
      ddprt_context *context = contexts[which];
      void *a = put(context, dtype, values(numel, 3));
      void *b = put(context, DDPRT_DTYPE_BF16, values(77, 4));
      void *r = nullptr, *c = nullptr;
      DDPRT_ASSERT_OK(context, ddprt_alloc(context, dtype, numel, &r));
      DDPRT_ASSERT_OK(context,
                      ddprt_alloc(context, DDPRT_DTYPE_F16, numel, &c));
      ddprt_tensor inputs[] = {{a, numel, dtype, 0},
                               {b, 77, DDPRT_DTYPE_BF16, 0}};
      ddprt_tensor results[] = {{r, numel, dtype, 0}};
      DDPRT_EXPECT_OK(context,
                      ddprt_compute(context, "norm", 0, 0, inputs, 2, results, 1));
      DDPRT_EXPECT_OK(context,
                      ddprt_accumulate(context, dtype, numel, r, a, r));
      DDPRT_EXPECT_OK(context, ddprt_scale(context, dtype, numel, r, 0.1, r));
      DDPRT_EXPECT_OK(context,
                      ddprt_cast(context, dtype, r, DDPRT_DTYPE_F16, c, numel));
      int32_t param = -1;
      std::string name = std::string(useFractions ? "f." : "w.") +
                         dtypeLabel(dtype) + "." + std::to_string(numel);
      DDPRT_EXPECT_OK(context, ddprt_param_register(context, name.c_str(),
                                                    dtype, numel, 42, &param));
      DDPRT_EXPECT_OK(context, ddprt_sgd(context, param, dtype, a, 0.01));
      for (int step = 0; step < 3; ++step)
        DDPRT_EXPECT_OK(context, ddprt_adam(context, param, DDPRT_DTYPE_F16, c,
                                            1e-3, 0.9, 0.999, 1e-8));
      std::vector<char> bytes = get(context, r, numel * dtypeSize(dtype));
      std::vector<char> half = get(context, c, numel * 2);
      std::vector<char> weights(size_t(numel * dtypeSize(dtype)));
      DDPRT_EXPECT_OK(context, ddprt_param_read(context, param, weights.data(),
                                                int64_t(weights.size())));
      bytes.insert(bytes.end(), half.begin(), half.end());
      bytes.insert(bytes.end(), weights.begin(), weights.end());
      // The state ddp-run --verify compares, read from device memory: the
      // moments and, for a 16-bit parameter, the main copy.
      for (int32_t state :
           {DDPRT_OPTIMIZER_STATE_MAIN, DDPRT_OPTIMIZER_STATE_ADAM_M,
            DDPRT_OPTIMIZER_STATE_ADAM_V}) {
        int64_t begin = -1, count = -1, steps = -1;
        std::vector<float> kept(static_cast<size_t>(numel));
        DDPRT_EXPECT_OK(context, ddprt_param_optimizer_state(
                                     context, param, state, &begin, &count,
                                     &steps, kept.data(), 4 * numel));
        // Moments always; a main copy for 16-bit parameters only.
        bool kept16 = dtype == DDPRT_DTYPE_F16 || dtype == DDPRT_DTYPE_BF16;
        EXPECT_EQ(count,
                  state != DDPRT_OPTIMIZER_STATE_MAIN || kept16 ? numel : 0);
        kept.resize(size_t(std::max<int64_t>(count, 0)));
        EXPECT_EQ(steps, 3);
        const char *raw = reinterpret_cast<const char *>(kept.data());
        bytes.insert(bytes.end(), raw, raw + 4 * kept.size());
      }
      outputs[which] = bytes;
      for (void *buffer : {a, b, r, c})
        DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
    }
    EXPECT_EQ(outputs[0], outputs[1]);
  }
}

// The one-pass stand-in (up to 8 operands each way) and the one with a pass
// per input (more): inputs longer and shorter than the results, results of
// several lengths and dtypes (an f64 one sums in f64), no input at all;
// with a price in bytes beyond the pass (read from scratch) and in FLOPs
// (GEMMs on scratch), which must not touch the results.
TEST_F(CudaTest, ComputeStandInsEqualTheCpuResult) {
  const std::vector<StandInCase> cases = {
      {{{DDPRT_DTYPE_BF16, 5000}, {DDPRT_DTYPE_F32, 300}},
       {{DDPRT_DTYPE_BF16, 1000},
        {DDPRT_DTYPE_F64, 2500},
        {DDPRT_DTYPE_F16, 7}},
       0,
       3e8},
      {{}, {{DDPRT_DTYPE_F32, 100}}},
      // Eight elements at a time, as 16-byte vectors: results of one
      // length, inputs that cover it or wrap by multiples of 8.
      {{{DDPRT_DTYPE_BF16, 4096}, {DDPRT_DTYPE_F32, 64}, {DDPRT_DTYPE_F16, 8}},
       {{DDPRT_DTYPE_BF16, 4096}, {DDPRT_DTYPE_F32, 4096}}},
      {{{DDPRT_DTYPE_F64, 2048}, {DDPRT_DTYPE_BF16, 4096}},
       {{DDPRT_DTYPE_F64, 2048}}},
      // Results shorter than the span (a norm's weight gradient), an f64
      // input summed in f32, a span of an odd number of octets.
      {{{DDPRT_DTYPE_F64, 4096}, {DDPRT_DTYPE_BF16, 4096}},
       {{DDPRT_DTYPE_F32, 4096}, {DDPRT_DTYPE_BF16, 64}}},
      {{{DDPRT_DTYPE_BF16, 4104}, {DDPRT_DTYPE_F64, 8}},
       {{DDPRT_DTYPE_BF16, 4104}, {DDPRT_DTYPE_F16, 16}}},
      // Results of one 16-bit type, inputs of it or f32 (the kernel that
      // loads ahead): a norm's gradient, a cross-entropy's, an f16 span of
      // an odd number of octets, one input.
      {{{DDPRT_DTYPE_BF16, 4096},
        {DDPRT_DTYPE_BF16, 4096},
        {DDPRT_DTYPE_BF16, 64}},
       {{DDPRT_DTYPE_BF16, 4096}, {DDPRT_DTYPE_BF16, 64}}},
      {{{DDPRT_DTYPE_BF16, 4096},
        {DDPRT_DTYPE_F32, 64},
        {DDPRT_DTYPE_F32, 8},
        {DDPRT_DTYPE_BF16, 2048}},
       {{DDPRT_DTYPE_BF16, 4096}}},
      {{{DDPRT_DTYPE_F16, 4104}, {DDPRT_DTYPE_F16, 8}},
       {{DDPRT_DTYPE_F16, 4104}}},
      // A 6 MB input that the result wraps 4 times (an embedding's
      // gradient's form), in both 16-byte kernels.
      {{{DDPRT_DTYPE_BF16, int64_t(3) << 20}, {DDPRT_DTYPE_F32, 4096}},
       {{DDPRT_DTYPE_BF16, int64_t(12) << 20}}},
      {{{DDPRT_DTYPE_BF16, int64_t(3) << 20}, {DDPRT_DTYPE_F32, 4096}},
       {{DDPRT_DTYPE_F32, int64_t(12) << 20}}},
      {{{DDPRT_DTYPE_BF16, 512}}, {{DDPRT_DTYPE_BF16, 4096}}},
      // An f32 input as long as the span, past whose end the last block's
      // second octets must not read (compute-sanitizer), and no input at
      // all in the 16-byte pass: zeros.
      {{{DDPRT_DTYPE_BF16, 4104}, {DDPRT_DTYPE_F32, 4104}},
       {{DDPRT_DTYPE_BF16, 4104}}},
      {{}, {{DDPRT_DTYPE_F32, 104}}},
      // The pass by rows of the longest short input (16-bit results, some
      // input wrapping): an f32 input whose 7 octets do not divide the
      // 300-octet row (read at its wrapped octet every row), a last row
      // 2/3 full; a row widened to a block (5 octets, 52 times), a
      // shorter second result; 3000 rows in bands of 3 (a thread's rows
      // past the two it loads together), three held f32 inputs.
      {{{DDPRT_DTYPE_BF16, 16000},
        {DDPRT_DTYPE_BF16, 2400},
        {DDPRT_DTYPE_F32, 56}},
       {{DDPRT_DTYPE_BF16, 16000}}},
      {{{DDPRT_DTYPE_F32, 4000}, {DDPRT_DTYPE_F16, 40}},
       {{DDPRT_DTYPE_F16, 4000}, {DDPRT_DTYPE_F16, 800}}},
      {{{DDPRT_DTYPE_BF16, int64_t(4096) * 3000},
        {DDPRT_DTYPE_F32, 4096},
        {DDPRT_DTYPE_F32, 4096},
        {DDPRT_DTYPE_F32, 4096}},
       {{DDPRT_DTYPE_BF16, int64_t(4096) * 3000}}},
      {{{DDPRT_DTYPE_F16, 4096}}, {{DDPRT_DTYPE_F32, 1}}, 3e11, 1e6},
      {std::vector<std::pair<int32_t, int64_t>>(9, {DDPRT_DTYPE_F32, 333}),
       {{DDPRT_DTYPE_BF16, 1000}}},
  };
  expectStandInsEqual(cases, 1);
}

void CudaTest::expectStandInsEqual(const std::vector<StandInCase> &cases,
                                   double scale) {
  auto values = [&](int64_t numel, uint32_t salt) {
    std::vector<double> out = fractions(numel, salt);
    for (double &value : out)
      value *= scale;
    return out;
  };
  int salt = 0;
  for (const StandInCase &c : cases) {
    SCOPED_TRACE("case with " + std::to_string(c.inputs.size()) + " inputs");
    std::vector<char> outputs[2];
    ddprt_context *contexts[2] = {cpu, gpu};
    for (int which = 0; which < 2; ++which) {
      ddprt_context *context = contexts[which];
      std::vector<ddprt_tensor> inputs, results;
      for (auto [dtype, numel] : c.inputs)
        inputs.push_back({put(context, dtype, values(numel, uint32_t(++salt))),
                          numel, dtype, 0});
      // Results start as other values, so that an element left unwritten
      // (or a zero that was not computed) shows.
      for (auto [dtype, numel] : c.results)
        results.push_back(
            {put(context, dtype, fractions(numel, 1000u + uint32_t(numel))),
             numel, dtype, 0});
      DDPRT_EXPECT_OK(context, ddprt_compute(context, "stand_in", c.flops,
                                             c.bytes, inputs.data(),
                                             int32_t(inputs.size()),
                                             results.data(),
                                             int32_t(results.size())));
      for (const ddprt_tensor &result : results) {
        std::vector<char> bytes =
            get(context, result.data, result.numel * dtypeSize(result.dtype));
        outputs[which].insert(outputs[which].end(), bytes.begin(), bytes.end());
      }
      for (const ddprt_tensor &tensor : inputs)
        DDPRT_EXPECT_OK(context, ddprt_free(context, tensor.data));
      for (const ddprt_tensor &tensor : results)
        DDPRT_EXPECT_OK(context, ddprt_free(context, tensor.data));
      salt -= int(c.inputs.size()) * (which == 0);
    }
    EXPECT_TRUE(outputs[0] == outputs[1]);
  }
}

// A result that shares bytes with its inputs (in place, and over a wrapped
// input inside it) is computed as the CPU orders it: all inputs read, then
// the result written.
TEST_F(CudaTest, ComputeStandInInPlaceEqualsTheCpuResult) {
  std::vector<char> outputs[2];
  ddprt_context *contexts[2] = {cpu, gpu};
  for (int which = 0; which < 2; ++which) {
    ddprt_context *context = contexts[which];
    float *buffer =
        static_cast<float *>(put(context, DDPRT_DTYPE_F32, fractions(1024, 3)));
    ddprt_tensor inputs[] = {{buffer, 1024, DDPRT_DTYPE_F32, 0},
                             {buffer + 512, 64, DDPRT_DTYPE_F32, 0}};
    ddprt_tensor results[] = {{buffer, 1024, DDPRT_DTYPE_F32, 0}};
    DDPRT_EXPECT_OK(context, ddprt_compute(context, "in_place", 0, 0, inputs,
                                           2, results, 1));
    outputs[which] = get(context, buffer, 1024 * 4);
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
  }
  EXPECT_TRUE(outputs[0] == outputs[1]);
}

// In place over a covering input, beside a wrapped one, in the pass by
// rows: each octet read before it is written, by the thread that writes it.
TEST_F(CudaTest, ComputeStandInInPlaceBesideAWrappedInputEqualsTheCpuResult) {
  std::vector<char> outputs[2];
  ddprt_context *contexts[2] = {cpu, gpu};
  for (int which = 0; which < 2; ++which) {
    ddprt_context *context = contexts[which];
    void *activation = put(context, DDPRT_DTYPE_BF16, fractions(40960, 5));
    void *weight = put(context, DDPRT_DTYPE_BF16, fractions(4096, 6));
    ddprt_tensor inputs[] = {{activation, 40960, DDPRT_DTYPE_BF16, 0},
                             {weight, 4096, DDPRT_DTYPE_BF16, 0}};
    ddprt_tensor results[] = {{activation, 40960, DDPRT_DTYPE_BF16, 0}};
    DDPRT_EXPECT_OK(context, ddprt_compute(context, "norm_in_place", 0, 0,
                                           inputs, 2, results, 1));
    outputs[which] = get(context, activation, 40960 * 2);
    DDPRT_EXPECT_OK(context, ddprt_free(context, activation));
    DDPRT_EXPECT_OK(context, ddprt_free(context, weight));
  }
  EXPECT_TRUE(outputs[0] == outputs[1]);
}

// Rounding to bf16 in the 16-byte passes, on the values where a rounding
// can differ: ties (to even), the largest float (to infinity), infinities,
// a NaN (the CPU quiets its payload), subnormals, -0; as long as the
// result (one pass) and 8 times shorter (a wrapped input every row holds).
TEST_F(CudaTest, ComputeStandInRoundsSpecialValuesAsTheCpu) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> specials = {
      1 + std::ldexp(1.0, -8), 1 + 3 * std::ldexp(1.0, -8),
      -(1 + std::ldexp(1.0, -8)), 3.4028234663852886e38, inf, -inf,
      std::nan(""), std::ldexp(1.0, -140), -std::ldexp(1.0, -149),
      std::ldexp(1.0, -126) * (1 - std::ldexp(1.0, -9)), -0.0, 0.0, 1.5,
      -2.75, 65504, 1e-3};
  for (int64_t resultNumel : {int64_t(16), int64_t(128)}) {
    SCOPED_TRACE("result of " + std::to_string(resultNumel));
    std::vector<char> outputs[2];
    ddprt_context *contexts[2] = {cpu, gpu};
    for (int which = 0; which < 2; ++which) {
      ddprt_context *context = contexts[which];
      void *input = put(context, DDPRT_DTYPE_F32, specials);
      void *result = put(context, DDPRT_DTYPE_BF16,
                         std::vector<double>(size_t(resultNumel), 7.0));
      ddprt_tensor inputs[] = {{input, 16, DDPRT_DTYPE_F32, 0}};
      ddprt_tensor results[] = {{result, resultNumel, DDPRT_DTYPE_BF16, 0}};
      DDPRT_EXPECT_OK(context, ddprt_compute(context, "round", 0, 0, inputs,
                                             1, results, 1));
      outputs[which] = get(context, result, resultNumel * 2);
      DDPRT_EXPECT_OK(context, ddprt_free(context, input));
      DDPRT_EXPECT_OK(context, ddprt_free(context, result));
    }
    EXPECT_TRUE(outputs[0] == outputs[1]);
  }
}

/// A small step: a compute stand-in, a cast, an asynchronous all-reduce
/// waited for, Adam on a bf16 and an f32 parameter.
struct SmallStep {
  void *input = nullptr, *activation = nullptr, *grad16 = nullptr,
       *grad32 = nullptr;
  int32_t group = -1, param16 = -1, param32 = -1;

  void setUp(ddprt_context *context) {
    const int64_t numel = 1000;
    std::vector<char> bytes = encode(DDPRT_DTYPE_F32, fractions(256, 9));
    DDPRT_ASSERT_OK(context,
                    ddprt_alloc(context, DDPRT_DTYPE_F32, 256, &input));
    DDPRT_ASSERT_OK(context, ddprt_write(context, input, bytes.data(),
                                         int64_t(bytes.size())));
    DDPRT_ASSERT_OK(context,
                    ddprt_alloc(context, DDPRT_DTYPE_F32, numel, &activation));
    DDPRT_ASSERT_OK(context,
                    ddprt_alloc(context, DDPRT_DTYPE_BF16, numel, &grad16));
    DDPRT_ASSERT_OK(context,
                    ddprt_alloc(context, DDPRT_DTYPE_F32, numel, &grad32));
    DDPRT_ASSERT_OK(context, ddprt_group_create(context, "dp", &group));
    DDPRT_ASSERT_OK(context, ddprt_param_register(context, "w16",
                                                  DDPRT_DTYPE_BF16, numel, 5,
                                                  &param16));
    DDPRT_ASSERT_OK(context, ddprt_param_register(context, "w32",
                                                  DDPRT_DTYPE_F32, numel, 6,
                                                  &param32));
  }

  void issue(ddprt_context *context) {
    const int64_t numel = 1000;
    ddprt_tensor inputs[] = {{input, 256, DDPRT_DTYPE_F32, 0}};
    ddprt_tensor results[] = {{activation, numel, DDPRT_DTYPE_F32, 0}};
    DDPRT_EXPECT_OK(context,
                    ddprt_compute(context, "layer", 0, 0, inputs, 1, results, 1));
    DDPRT_EXPECT_OK(context, ddprt_cast(context, DDPRT_DTYPE_F32, activation,
                                        DDPRT_DTYPE_BF16, grad16, numel));
    ddprt_handle handle = 0;
    DDPRT_EXPECT_OK(context, ddprt_all_reduce(context, group,
                                              DDPRT_REDUCTION_SUM,
                                              DDPRT_DTYPE_F32, numel,
                                              activation, grad32, &handle));
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
    DDPRT_EXPECT_OK(context, ddprt_adam(context, param16, DDPRT_DTYPE_BF16,
                                        grad16, 1e-3, 0.9, 0.95, 1e-8));
    DDPRT_EXPECT_OK(context, ddprt_adam(context, param32, DDPRT_DTYPE_F32,
                                        grad32, 1e-3, 0.9, 0.95, 1e-8));
  }

  std::vector<char> params(ddprt_context *context) {
    std::vector<char> bytes(1000 * 2 + 1000 * 4);
    DDPRT_EXPECT_OK(context,
                    ddprt_param_read(context, param16, bytes.data(), 2000));
    DDPRT_EXPECT_OK(context, ddprt_param_read(context, param32,
                                              bytes.data() + 2000, 4000));
    return bytes;
  }
};

// The routing kernels (ddprt_route) on fractional logits with ties and a
// NaN: the router (an expert over its capacity), its backward, the row
// kernels on what it chose, and the counts with a counted all-to-all of
// one rank (the device-to-host copy of the counts, the zeroed rows), bitwise
// the CPU's.
TEST_F(CudaTest, RoutingKernelsEqualTheCpuResult) {
  const int64_t tokens = 37, experts = 6, topk = 2, capacity = 9, width = 5;
  const int64_t slots = experts * capacity;
  for (int32_t dtype : {DDPRT_DTYPE_BF16, DDPRT_DTYPE_F32}) {
    SCOPED_TRACE(dtypeLabel(dtype));
    std::vector<double> logits = fractions(tokens * experts, 5);
    logits[7] = logits[8];
    logits[13] = std::numeric_limits<double>::quiet_NaN();
    std::vector<char> outputs[2];
    ddprt_context *contexts[2] = {cpu, gpu};
    for (int which = 0; which < 2; ++which) {
      ddprt_context *context = contexts[which];
      std::vector<void *> buffers;
      auto alloc = [&](int32_t type, int64_t numel) {
        void *data = nullptr;
        EXPECT_EQ(ddprt_alloc(context, type, numel, &data), DDPRT_OK);
        buffers.push_back(data);
        return ddprt_tensor{data, numel, type, 0};
      };
      auto upload = [&](int32_t type, const std::vector<double> &values) {
        void *data = put(context, type, values);
        buffers.push_back(data);
        return ddprt_tensor{data, int64_t(values.size()), type, 0};
      };
      ddprt_tensor in = upload(dtype, logits);
      ddprt_tensor probs = alloc(DDPRT_DTYPE_F32, slots),
                   rows = alloc(DDPRT_DTYPE_F32, slots),
                   routes = alloc(DDPRT_DTYPE_F32, tokens * topk);
      ddprt_tensor tokensIn = upload(dtype, integers(tokens * width, 2));
      ddprt_tensor permuted = alloc(dtype, slots * width),
                   combined = alloc(dtype, tokens * width),
                   gradLogits = alloc(dtype, tokens * experts);
      int64_t selectParams[] = {topk, capacity};
      ddprt_tensor selectOut[] = {probs, rows, routes};
      DDPRT_EXPECT_OK(context, ddprt_route(context, DDPRT_ROUTE_SELECT, "r",
                                           selectParams, 2, &in, 1, selectOut,
                                           3));
      ddprt_tensor gatherIn[] = {tokensIn, rows};
      DDPRT_EXPECT_OK(context, ddprt_route(context, DDPRT_ROUTE_GATHER, "g",
                                           nullptr, 0, gatherIn, 2, &permuted,
                                           1));
      ddprt_tensor combineIn[] = {permuted, routes};
      DDPRT_EXPECT_OK(context, ddprt_route(context, DDPRT_ROUTE_COMBINE, "c",
                                           selectParams, 1, combineIn, 2,
                                           &combined, 1));
      ddprt_tensor gradIn[] = {probs, in, routes};
      DDPRT_EXPECT_OK(context, ddprt_route(context, DDPRT_ROUTE_SELECT_GRAD,
                                           "s", selectParams, 1, gradIn, 3,
                                           &gradLogits, 1));
      // The permuted rows as 3 ranks x 2 experts x capacity 9 blocks,
      // sorted into one tensor per expert and back.
      ddprt_tensor perExpert[] = {alloc(dtype, slots * width / 2),
                                  alloc(dtype, slots * width / 2)};
      ddprt_tensor unsorted = alloc(dtype, slots * width);
      int64_t chunkParams[] = {3, capacity};
      DDPRT_EXPECT_OK(context, ddprt_route(context, DDPRT_ROUTE_SORT_CHUNKS,
                                           "s", chunkParams, 2, &permuted, 1,
                                           perExpert, 2));
      DDPRT_EXPECT_OK(context, ddprt_route(context, DDPRT_ROUTE_UNSORT_CHUNKS,
                                           "u", chunkParams, 2, perExpert, 2,
                                           &unsorted, 1));
      // Each expert's rows, and the counted all-to-all of the permuted
      // rows over one rank: its counted rows, then zeros.
      ddprt_tensor counts = alloc(DDPRT_DTYPE_F32, experts);
      ddprt_tensor moved = alloc(dtype, slots * width);
      int64_t countParams[] = {capacity};
      DDPRT_EXPECT_OK(context, ddprt_route(context, DDPRT_ROUTE_COUNT, "n",
                                           countParams, 1, &rows, 1, &counts,
                                           1));
      DDPRT_EXPECT_OK(
          context,
          ddprt_all_to_all_v(context, which == 0 ? cpuGroup : gpuGroup,
                             experts, width, dtype, slots * width,
                             permuted.data, counts.data, counts.data,
                             moved.data, nullptr));
      for (const ddprt_tensor &tensor :
           {probs, rows, routes, permuted, combined, gradLogits, perExpert[0],
            perExpert[1], unsorted, counts, moved}) {
        std::vector<char> bytes =
            get(context, tensor.data, tensor.numel * dtypeSize(tensor.dtype));
        outputs[which].insert(outputs[which].end(), bytes.begin(),
                              bytes.end());
      }
      for (void *buffer : buffers)
        DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
    }
    EXPECT_TRUE(outputs[0] == outputs[1]);
  }
}

// One step as issued, then the second recorded and launched four times:
// bitwise the CPU's five steps, Adam's bias correction included (its step
// count advances on the device at each launch).
TEST_F(CudaTest, RecordedStepReplaysEqualTheCpuSteps) {
  SmallStep onCpu, onGpu;
  onCpu.setUp(cpu);
  onGpu.setUp(gpu);
  for (int step = 0; step < 5; ++step)
    onCpu.issue(cpu);
  onGpu.issue(gpu);
  DDPRT_ASSERT_OK(gpu, ddprt_graph_begin(gpu));
  onGpu.issue(gpu);
  DDPRT_ASSERT_OK(gpu, ddprt_graph_end(gpu));
  for (int launch = 0; launch < 4; ++launch)
    DDPRT_ASSERT_OK(gpu, ddprt_graph_launch(gpu));
  DDPRT_ASSERT_OK(gpu, ddprt_synchronize(gpu));
  EXPECT_TRUE(onCpu.params(cpu) == onGpu.params(gpu));
}

TEST_F(CudaTest, RecordingRefusesHostAccessAndUnwaitedCollectives) {
  EXPECT_EQ(ddprt_graph_launch(gpu), DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(gpu)).find("no graph has been recorded"),
            std::string::npos)
      << ddprt_last_error(gpu);
  void *buffer = nullptr;
  DDPRT_ASSERT_OK(gpu, ddprt_alloc(gpu, DDPRT_DTYPE_F32, 64, &buffer));
  DDPRT_ASSERT_OK(gpu, ddprt_graph_begin(gpu));
  float host[64];
  EXPECT_EQ(ddprt_read(gpu, host, buffer, sizeof(host)),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(gpu))
                .find("reading device memory while a CUDA graph is being "
                      "recorded"),
            std::string::npos)
      << ddprt_last_error(gpu);
  // The read failed; the recording goes on. Communication not waited for
  // before the end (a collective, and the ordering of ddprt_comm_wait)
  // leaves the communication stream unjoined.
  void *other = nullptr;
  EXPECT_EQ(ddprt_alloc(gpu, DDPRT_DTYPE_F32, 64, &other),
            DDPRT_ERROR_INVALID_ARGUMENT);
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(gpu, ddprt_all_reduce(gpu, gpuGroup, DDPRT_REDUCTION_SUM,
                                        DDPRT_DTYPE_F32, 32, buffer,
                                        static_cast<float *>(buffer) + 32,
                                        &handle));
  DDPRT_EXPECT_OK(gpu, ddprt_comm_wait(gpu, handle));
  EXPECT_EQ(ddprt_graph_end(gpu), DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(gpu)).find("was not waited for"),
            std::string::npos)
      << ddprt_last_error(gpu);
  // The handle is still to be consumed; what waiting on an event of an
  // abandoned recording returns is CUDA's business.
  ddprt_wait(gpu, handle);
  DDPRT_EXPECT_OK(gpu, ddprt_free(gpu, buffer));
}

TEST_F(CudaTest, SingleRankNcclCollectives) {
  for (int32_t dtype : allDTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    std::vector<double> values = integers(4097, 5);
    for (int32_t reduction :
         {DDPRT_REDUCTION_SUM, DDPRT_REDUCTION_AVG, DDPRT_REDUCTION_MAX}) {
      void *in = put(gpu, dtype, values);
      void *out = nullptr;
      DDPRT_ASSERT_OK(gpu, ddprt_alloc(gpu, dtype, 4097, &out));
      ddprt_handle handle = 0;
      DDPRT_EXPECT_OK(gpu, ddprt_all_reduce(gpu, gpuGroup, reduction, dtype,
                                            4097, in, out, &handle));
      DDPRT_EXPECT_OK(gpu, ddprt_wait(gpu, handle));
      EXPECT_EQ(decode(dtype, get(gpu, out, 4097 * dtypeSize(dtype))), values);
      DDPRT_EXPECT_OK(gpu, ddprt_reduce_scatter(gpu, gpuGroup, reduction, dtype,
                                                4097, in, in, nullptr));
      EXPECT_EQ(decode(dtype, get(gpu, in, 4097 * dtypeSize(dtype))), values);
      DDPRT_EXPECT_OK(
          gpu, ddprt_all_gather(gpu, gpuGroup, dtype, 4097, in, out, nullptr));
      EXPECT_EQ(decode(dtype, get(gpu, out, 4097 * dtypeSize(dtype))), values);
      DDPRT_EXPECT_OK(gpu, ddprt_free(gpu, in));
      DDPRT_EXPECT_OK(gpu, ddprt_free(gpu, out));
    }
  }
}

/// One rank's all-to-all keeps its one block. Separate buffers take the
/// one-rank copy; a result that partly overlaps the input goes through a
/// copy of the input and NCCL's send and receive to this rank itself, the
/// path of every multi-rank all-to-all.
TEST_F(CudaTest, SingleRankAllToAll) {
  for (int32_t dtype : allDTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    const int64_t numel = 4097, shift = 5;
    std::vector<double> values = integers(numel, 7);
    std::vector<double> padded = values;
    padded.resize(size_t(numel + shift), 0.0);
    void *in = put(gpu, dtype, padded);
    void *out = nullptr;
    DDPRT_ASSERT_OK(gpu, ddprt_alloc(gpu, dtype, numel, &out));
    ddprt_handle handle = 0;
    DDPRT_EXPECT_OK(gpu, ddprt_all_to_all(gpu, gpuGroup, dtype, numel, in,
                                          out, &handle));
    DDPRT_EXPECT_OK(gpu, ddprt_wait(gpu, handle));
    EXPECT_EQ(decode(dtype, get(gpu, out, numel * dtypeSize(dtype))), values);
    void *shifted = static_cast<char *>(in) + shift * dtypeSize(dtype);
    DDPRT_EXPECT_OK(gpu, ddprt_all_to_all(gpu, gpuGroup, dtype, numel, in,
                                          shifted, nullptr));
    EXPECT_EQ(decode(dtype, get(gpu, shifted, numel * dtypeSize(dtype))),
              values);
    DDPRT_EXPECT_OK(gpu, ddprt_free(gpu, in));
    DDPRT_EXPECT_OK(gpu, ddprt_free(gpu, out));
  }
}

/// The collective must wait for the GEMM that produces its input (an event
/// orders the streams), and the scale after ddprt_wait for the collective.
TEST_F(CudaTest, EventsOrderTheStreams) {
  const int64_t size = 2048;
  void *lhs = put(gpu, DDPRT_DTYPE_F32, integers(size * size, 6));
  void *rhs = put(gpu, DDPRT_DTYPE_F32, integers(size * size, 7));
  void *product = nullptr, *reduced = nullptr;
  DDPRT_ASSERT_OK(gpu,
                  ddprt_alloc(gpu, DDPRT_DTYPE_F32, size * size, &product));
  DDPRT_ASSERT_OK(gpu,
                  ddprt_alloc(gpu, DDPRT_DTYPE_F32, size * size, &reduced));
  for (int round = 0; round < 3; ++round) {
    DDPRT_EXPECT_OK(gpu, ddprt_gemm(gpu, DDPRT_DTYPE_F32, 0, 1, size, size,
                                    size, lhs, rhs, product, nullptr));
    ddprt_handle handle = 0;
    DDPRT_EXPECT_OK(gpu, ddprt_all_reduce(gpu, gpuGroup, DDPRT_REDUCTION_SUM,
                                          DDPRT_DTYPE_F32, size * size, product,
                                          reduced, &handle));
    DDPRT_EXPECT_OK(gpu, ddprt_wait(gpu, handle));
    DDPRT_EXPECT_OK(gpu, ddprt_scale(gpu, DDPRT_DTYPE_F32, size * size, reduced,
                                     2.0, reduced));
    std::vector<char> expected = get(gpu, product, size * size * 4);
    std::vector<double> twice = decode(DDPRT_DTYPE_F32, expected);
    for (double &value : twice)
      value *= 2;
    EXPECT_EQ(decode(DDPRT_DTYPE_F32, get(gpu, reduced, size * size * 4)),
              twice);
    DDPRT_EXPECT_OK(gpu, ddprt_scale(gpu, DDPRT_DTYPE_F32, size * size, reduced,
                                     0.0, reduced));
  }
  for (void *buffer : {lhs, rhs, product, reduced})
    DDPRT_EXPECT_OK(gpu, ddprt_free(gpu, buffer));
}

/// GPU ops are traced from CUDA events: a GEMM on the compute stream (tid 0)
/// and the all-reduce on the communication stream (tid 1), after it.
TEST_F(CudaTest, TraceHasBothStreams) {
  std::string path = "ddprt-cuda-trace.json";
  ddprt_context *traced = nullptr;
  ASSERT_EQ(ddprt_init(DDPRT_ABI_VERSION, "dp=1", DDPRT_BACKEND_CUDA,
                       DDPRT_FLAG_RETURN_ERRORS, 20000, path.c_str(), &traced),
            DDPRT_OK)
      << ddprt_last_error(nullptr);
  int32_t group = -1;
  DDPRT_ASSERT_OK(traced, ddprt_group_create(traced, "dp", &group));
  const int64_t size = 1024;
  void *lhs = put(traced, DDPRT_DTYPE_F32, integers(size * size, 1));
  void *out = nullptr;
  DDPRT_ASSERT_OK(traced,
                  ddprt_alloc(traced, DDPRT_DTYPE_F32, size * size, &out));
  DDPRT_EXPECT_OK(traced, ddprt_gemm(traced, DDPRT_DTYPE_F32, 0, 0, size, size,
                                     size, lhs, lhs, out, "wgrad"));
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(traced, ddprt_all_reduce(traced, group, DDPRT_REDUCTION_SUM,
                                           DDPRT_DTYPE_F32, size * size, out,
                                           out, &handle));
  DDPRT_EXPECT_OK(traced, ddprt_wait(traced, handle));
  ASSERT_EQ(ddprt_finalize(traced), DDPRT_OK) << ddprt_last_error(nullptr);

  std::ifstream file(path);
  ASSERT_TRUE(file) << "no trace at " << path;
  std::stringstream text;
  text << file.rdbuf();
  JsonValue trace;
  std::string error;
  ASSERT_TRUE(ddprt::test::parseJson(text.str(), trace, error)) << error;
  double gemmEnd = -1, reduceStart = -1;
  for (const JsonValue &event : trace.at("traceEvents").array) {
    if (event.at("ph").string != "X")
      continue;
    EXPECT_GE(event.at("dur").number, 0);
    if (event.at("name").string == "wgrad") {
      EXPECT_EQ(event.at("tid").number, 0);
      gemmEnd = event.at("ts").number + event.at("dur").number;
    }
    if (event.at("name").string == "all_reduce") {
      EXPECT_EQ(event.at("tid").number, 1);
      EXPECT_EQ(event.at("cat").string, "comm");
      reduceStart = event.at("ts").number;
    }
  }
  ASSERT_GE(gemmEnd, 0) << "no GEMM event";
  ASSERT_GE(reduceStart, 0) << "no all_reduce event";
  // The all-reduce waited for the GEMM that produced its input (1 us of
  // slack for the events' resolution).
  EXPECT_GE(reduceStart + 1.0, gemmEnd);
  std::remove(path.c_str());
}

} // namespace
