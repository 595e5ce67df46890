//===- ArgumentTest.cpp - Bad arguments are errors with a message ---------===//

#include "RuntimeTestSupport.h"

#include <cmath>
#include <filesystem>

using namespace ddprt::test;

namespace {

class ArgumentTest : public RuntimeSuite {
protected:
  /// The call returned `code` and the message contains `text`.
  void expectError(ddprt_status status, ddprt_status code,
                   const std::string &text) {
    EXPECT_EQ(status, code);
    std::string message = ddprt_last_error(context);
    EXPECT_NE(message.find(text), std::string::npos)
        << "message: " << message << "\nexpected to contain: " << text;
    EXPECT_NE(message.find("rank " + std::to_string(ddprt::test::worldRank())),
              std::string::npos)
        << message;
  }
};

TEST_F(ArgumentTest, NullContext) {
  EXPECT_EQ(ddprt_wait(nullptr, 1), DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(nullptr))
                .find("ddprt_wait: the "
                      "context is NULL"),
            std::string::npos);
  EXPECT_EQ(ddprt_finalize(nullptr), DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ddprt_comm_wait(nullptr, 1), DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(nullptr))
                .find("ddprt_comm_wait: the context is NULL"),
            std::string::npos);
}

TEST_F(ArgumentTest, BadDTypesCountsAndPointers) {
  void *data = nullptr;
  expectError(ddprt_alloc(context, 0, 4, &data), DDPRT_ERROR_INVALID_ARGUMENT,
              "ddprt_alloc: dtype 0 is not a DDPRT_DTYPE_*");
  expectError(ddprt_alloc(context, 9, 4, &data), DDPRT_ERROR_INVALID_ARGUMENT,
              "dtype 9");
  expectError(ddprt_alloc(context, DDPRT_DTYPE_F32, -1, &data),
              DDPRT_ERROR_INVALID_ARGUMENT, "numel is negative (-1)");
  expectError(ddprt_alloc(context, DDPRT_DTYPE_F32, 4, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "output pointer 'data' is NULL");
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 16, &data));
  expectError(
      ddprt_accumulate(context, DDPRT_DTYPE_F32, 16, data, nullptr, data),
      DDPRT_ERROR_INVALID_ARGUMENT, "ddprt_accumulate: 'rhs' is NULL");
  expectError(ddprt_scale(context, DDPRT_DTYPE_F32, 16, data, HUGE_VAL, data),
              DDPRT_ERROR_INVALID_ARGUMENT, "is not finite");
  expectError(ddprt_gemm(context, DDPRT_DTYPE_F32, 2, 0, 2, 2, 2, data, data,
                         data, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "must be 0 or 1");
  expectError(ddprt_gemm(context, DDPRT_DTYPE_F32, 0, 0, int64_t(1) << 40, 2,
                         int64_t(1) << 40, data, data, data, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "m x k = 1099511627776 x "
              "1099511627776 overflows");
  expectError(ddprt_gemm(context, DDPRT_DTYPE_F32, 0, 0, 2, 2, 2, data,
                         static_cast<float *>(data) + 4, data, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "result overlaps an operand");
  expectError(ddprt_compute(context, "k", 0, 0, nullptr, 1, nullptr, 0),
              DDPRT_ERROR_INVALID_ARGUMENT, "'inputs' is NULL");
  ddprt_tensor reserved[] = {{data, 16, DDPRT_DTYPE_F32, 7}};
  expectError(ddprt_compute(context, "k", 0, 0, reserved, 1, nullptr, 0),
              DDPRT_ERROR_INVALID_ARGUMENT, "'reserved' must be 0");
  ddprt_tensor empty[] = {{data, 0, DDPRT_DTYPE_F32, 0}};
  ddprt_tensor out[] = {{data, 16, DDPRT_DTYPE_F32, 0}};
  expectError(ddprt_compute(context, "k", 0, 0, empty, 1, out, 1),
              DDPRT_ERROR_INVALID_ARGUMENT, "input #0 has no elements");
  expectError(ddprt_compute(context, nullptr, 0, 0, nullptr, 0, out, 1),
              DDPRT_ERROR_INVALID_ARGUMENT, "'kind' is NULL");
  expectError(ddprt_compute(context, "k", -1, 0, nullptr, 0, out, 1),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "ddprt_compute: flops -1 is not from 0 to 1e18");
  expectError(ddprt_compute(context, "k", 0, std::nan(""), nullptr, 0, out, 1),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "ddprt_compute: bytes nan is not from 0 to 1e18");
  expectError(ddprt_compute(context, "k", 2e18, 0, nullptr, 0, out, 1),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "ddprt_compute: flops 2e+18 is not from 0 to 1e18");
  DDPRT_EXPECT_OK(context, ddprt_free(context, data));
}

TEST_F(ArgumentTest, BuffersMustBeTheRuntimes) {
  void *data = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 16, &data));
  // A view that runs past its bucket: a wrong offset in generated code.
  float *view = static_cast<float *>(data) + 12;
  expectError(ddprt_all_reduce(context, groupOf("dp"), DDPRT_REDUCTION_SUM,
                               DDPRT_DTYPE_F32, 8, view, view, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "runs 16 bytes past the end");
  float host[4] = {};
  expectError(ddprt_scale(context, DDPRT_DTYPE_F32, 4, host, 2.0, data),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "is not inside a buffer from ddprt_alloc");
  DDPRT_EXPECT_OK(context, ddprt_free(context, data));
  expectError(ddprt_free(context, data), DDPRT_ERROR_INVALID_ARGUMENT,
              "is not a buffer from ddprt_alloc (or was freed already)");
  expectError(ddprt_read(context, host, data, 16), DDPRT_ERROR_INVALID_ARGUMENT,
              "not inside a buffer");
  DDPRT_EXPECT_OK(context, ddprt_free(context, nullptr));
}

TEST_F(ArgumentTest, GroupsAndPeers) {
  void *data = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 16, &data));
  expectError(ddprt_all_reduce(context, 99, DDPRT_REDUCTION_SUM,
                               DDPRT_DTYPE_F32, 16, data, data, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "group 99 does not exist");
  expectError(ddprt_all_reduce(context, groupOf("dp"), 5, DDPRT_DTYPE_F32, 16,
                               data, data, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "reduction 5 is not a DDPRT_REDUCTION_*");
  expectError(
      ddprt_send(context, groupOf("dp"), 2, DDPRT_DTYPE_F32, 16, data, nullptr),
      DDPRT_ERROR_INVALID_ARGUMENT,
      "offset 2 addresses this rank itself in group 'dp' of 2");
  // Group 'dp' has 2 ranks whatever the world size (dpSizeForWorld).
  expectError(ddprt_broadcast(context, groupOf("dp"), 2, DDPRT_DTYPE_F32, 16,
                              data, data, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "root 2 is not a rank of group 'dp' of 2 rank(s)");
  expectError(ddprt_broadcast(context, groupOf("dp"), -1, DDPRT_DTYPE_F32, 16,
                              data, data, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "root -1 is not a rank");
  expectError(ddprt_all_to_all(context, groupOf("dp"), DDPRT_DTYPE_F32, 15,
                               data, data, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "numel 15 does not split into 2 equal blocks for group 'dp' of "
              "2 rank(s)");
  // On 2 ranks tp has one rank: no peer at all.
  if (ddprt::test::worldSize() == 2)
    expectError(ddprt_recv(context, groupOf("tp"), 1, DDPRT_DTYPE_F32, 16, data,
                           nullptr),
                DDPRT_ERROR_INVALID_ARGUMENT, "of 1 rank(s)");
  int32_t group = -1;
  expectError(ddprt_group_create(context, "dp,pp", &group),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "axis 'pp' is not an axis of mesh " + meshForWorld());
  expectError(ddprt_group_create(context, "", &group),
              DDPRT_ERROR_INVALID_ARGUMENT, "'axes' is empty");
  // The same axes give the same group, without a new communicator.
  int32_t again = -1;
  DDPRT_EXPECT_OK(context, ddprt_group_create(context, "tp", &again));
  EXPECT_EQ(again, groupOf("tp"));
  int32_t rank = -1, size = -1;
  DDPRT_EXPECT_OK(context,
                  ddprt_group_info(context, groupOf("tp,dp"), &rank, &size));
  EXPECT_EQ(rank, expectedGroup("tp,dp").rank);
  EXPECT_EQ(size, ddprt::test::worldSize());
  DDPRT_EXPECT_OK(context, ddprt_free(context, data));
}

/// The counted all-to-all's layout at the entry point, and its counts when
/// the transfer starts: every rank gets the same bad count here, so every
/// rank fails before MPI is called and none waits for another.
TEST_F(ArgumentTest, CountedAllToAll) {
  // Group 'dp' has 2 ranks: 2 blocks of 1 sub-block of 2 rows of 4.
  void *data = nullptr, *counts = nullptr, *result = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 16, &data));
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 16, &result));
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, 2, &counts));
  int32_t dp = groupOf("dp");
  expectError(ddprt_all_to_all_v(context, dp, 1, 3, DDPRT_DTYPE_F32, 16, data,
                                 counts, counts, result, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "numel 16 is not group size (2) x sub_blocks (1) x row_numel "
              "(3) x whole rows");
  expectError(ddprt_all_to_all_v(context, dp, 0, 4, DDPRT_DTYPE_F32, 16, data,
                                 counts, counts, result, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "sub_blocks (0) and row_numel (4) must be positive");
  // Two sub-blocks need 4 counts; the buffer holds 2.
  expectError(ddprt_all_to_all_v(context, dp, 2, 2, DDPRT_DTYPE_F32, 16, data,
                                 counts, counts, result, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "send_counts");
  expectError(ddprt_all_to_all_v(context, dp, 1, 4, DDPRT_DTYPE_F32, 16, data,
                                 counts, counts, counts, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "result");
  // Counts inside the result would change while they are read.
  expectError(ddprt_all_to_all_v(context, dp, 1, 4, DDPRT_DTYPE_F32, 16, data,
                                 result, counts, result, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "the result overlaps send_counts or recv_counts");
  float bad[2] = {1.0f, 3.0f}; // a sub-block has 2 rows
  DDPRT_ASSERT_OK(context, ddprt_write(context, counts, bad, sizeof bad));
  expectError(ddprt_all_to_all_v(context, dp, 1, 4, DDPRT_DTYPE_F32, 16, data,
                                 counts, counts, result, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT,
              "send count 1 (group rank 1, sub-block 0) is 3, not a whole "
              "number of rows from 0 to 2");
  bad[1] = 0.5f;
  DDPRT_ASSERT_OK(context, ddprt_write(context, counts, bad, sizeof bad));
  expectError(ddprt_all_to_all_v(context, dp, 1, 4, DDPRT_DTYPE_F32, 16, data,
                                 counts, counts, result, nullptr),
              DDPRT_ERROR_INVALID_ARGUMENT, "is 0.5, not a whole number");
  for (void *buffer : {data, counts, result})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST(InitTest, RejectsAnotherAbiVersion) {
  ddprt_context *context = reinterpret_cast<ddprt_context *>(0x1);
  EXPECT_EQ(ddprt_init(DDPRT_ABI_VERSION + 1, meshForWorld().c_str(),
                       DDPRT_BACKEND_CPU, DDPRT_FLAG_RETURN_ERRORS, 0, nullptr,
                       &context),
            DDPRT_ERROR_ABI_MISMATCH);
  EXPECT_EQ(context, nullptr);
  std::string message = ddprt_last_error(nullptr);
  EXPECT_NE(message.find("built for ABI version " +
                         std::to_string(DDPRT_ABI_VERSION + 1) +
                         " but this libddprt implements version " +
                         std::to_string(DDPRT_ABI_VERSION)),
            std::string::npos)
      << message;
}

TEST(InitTest, RejectsAMeshOfAnotherSize) {
  ddprt_context *context = nullptr;
  std::string mesh = "dp=" + std::to_string(ddprt::test::worldSize() + 1);
  EXPECT_EQ(ddprt_init(DDPRT_ABI_VERSION, mesh.c_str(), DDPRT_BACKEND_CPU,
                       DDPRT_FLAG_RETURN_ERRORS, 0, nullptr, &context),
            DDPRT_ERROR_INVALID_ARGUMENT);
  std::string message = ddprt_last_error(nullptr);
  EXPECT_NE(message.find("has " + std::to_string(ddprt::test::worldSize() + 1) +
                         " ranks but the job has " +
                         std::to_string(ddprt::test::worldSize())),
            std::string::npos)
      << message;
}

TEST(InitTest, RejectsBadArguments) {
  ddprt_context *context = nullptr;
  auto init = [&](const char *mesh, int32_t backend, int32_t flags,
                  int32_t timeout) {
    return ddprt_init(DDPRT_ABI_VERSION, mesh, backend,
                      flags | DDPRT_FLAG_RETURN_ERRORS, timeout, nullptr,
                      &context);
  };
  EXPECT_EQ(init("dp=2,,", DDPRT_BACKEND_CPU, 0, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(nullptr)).find("mesh 'dp=2,,'"),
            std::string::npos);
  EXPECT_EQ(init(nullptr, DDPRT_BACKEND_CPU, 0, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(init("dp=1", 7, 0, 0), DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(nullptr)).find("backend 7"),
            std::string::npos);
  EXPECT_EQ(init("dp=1", DDPRT_BACKEND_CPU, 0x20, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(nullptr)).find("unknown flags 0x20"),
            std::string::npos);
  EXPECT_EQ(init("dp=1", DDPRT_BACKEND_CPU, DDPRT_FLAG_BOUNDED_VALUES, 0),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(nullptr))
                .find("DDPRT_FLAG_BOUNDED_VALUES needs "
                      "DDPRT_FLAG_FIXED_ORDER_GEMM"),
            std::string::npos);
  EXPECT_EQ(init("dp=1", DDPRT_BACKEND_CPU, 0, -5),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ddprt_init(DDPRT_ABI_VERSION, "dp=1", DDPRT_BACKEND_CPU,
                       DDPRT_FLAG_RETURN_ERRORS, 0, nullptr, nullptr),
            DDPRT_ERROR_INVALID_ARGUMENT);
}

TEST(InitTest, RejectsABadTimeoutInTheEnvironment) {
  ddprt_context *context = nullptr;
  setenv("DDPRT_TIMEOUT", "soon", 1);
  EXPECT_EQ(ddprt_init(DDPRT_ABI_VERSION, meshForWorld().c_str(),
                       DDPRT_BACKEND_CPU, DDPRT_FLAG_RETURN_ERRORS, 0, nullptr,
                       &context),
            DDPRT_ERROR_INVALID_ARGUMENT);
  unsetenv("DDPRT_TIMEOUT");
  EXPECT_NE(std::string(ddprt_last_error(nullptr))
                .find("DDPRT_TIMEOUT='soon' is not a positive number"),
            std::string::npos);
}

/// Rank-ordered reductions exist on the CPU backend only; asking for them
/// with the CUDA backend says so whether or not a GPU is present.
TEST(InitTest, DeterministicReductionsAreForTheCpuBackend) {
  ddprt_context *context = nullptr;
  EXPECT_EQ(ddprt_init(DDPRT_ABI_VERSION, meshForWorld().c_str(),
                       DDPRT_BACKEND_CUDA,
                       DDPRT_FLAG_RETURN_ERRORS |
                           DDPRT_FLAG_DETERMINISTIC_REDUCTIONS,
                       0, nullptr, &context),
            DDPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ddprt_last_error(nullptr))
                .find("DDPRT_FLAG_DETERMINISTIC_REDUCTIONS is implemented by "
                      "the CPU backend only"),
            std::string::npos)
      << ddprt_last_error(nullptr);
}

/// Whether the NVIDIA driver reports a GPU, asked without CUDA so that the
/// answer does not depend on the runtime under test.
static bool hasNvidiaGpu() {
  std::error_code error;
  std::filesystem::directory_iterator gpus("/proc/driver/nvidia/gpus", error);
  return !error && gpus != std::filesystem::directory_iterator();
}

/// Asking for the CUDA backend where it cannot run is a clear error.
TEST(InitTest, CudaBackendWithoutADeviceIsUnavailable) {
  // With a GPU, several ranks of this test share it, and whether NCCL accepts
  // that is not this test's subject; ddprt-cuda-tests covers the GPU.
  if (hasNvidiaGpu())
    GTEST_SKIP() << "a GPU is present; covered by ddprt-cuda-tests";
  ddprt_context *context = nullptr;
  ddprt_status status =
      ddprt_init(DDPRT_ABI_VERSION, meshForWorld().c_str(), DDPRT_BACKEND_CUDA,
                 DDPRT_FLAG_RETURN_ERRORS, 0, nullptr, &context);
  if (status == DDPRT_OK) {
    EXPECT_EQ(ddprt_finalize(context), DDPRT_OK);
  }
  EXPECT_EQ(status, DDPRT_ERROR_UNAVAILABLE);
  std::string message = ddprt_last_error(nullptr);
  EXPECT_TRUE(message.find("without the CUDA backend") != std::string::npos ||
              message.find("no CUDA device") != std::string::npos)
      << message;
}

} // namespace
