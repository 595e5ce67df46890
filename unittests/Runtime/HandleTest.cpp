//===- HandleTest.cpp - Lifetimes of asynchronous handles -----------------===//

#include "RuntimeTestSupport.h"

using namespace ddprt::test;

namespace {

class HandleTest : public RuntimeSuite {
protected:
  /// An async all-reduce (sum over all ranks) of a buffer of ones.
  ddprt_handle issue(void *&buffer, int64_t numel = 256) {
    buffer = upload(DDPRT_DTYPE_F32, std::vector<double>(size_t(numel), 1.0));
    ddprt_handle handle = 0;
    EXPECT_EQ(ddprt_all_reduce(context, groupOf("dp,tp"), DDPRT_REDUCTION_SUM,
                               DDPRT_DTYPE_F32, numel, buffer, buffer, &handle),
              DDPRT_OK)
        << ddprt_last_error(context);
    return handle;
  }

  void expectSummed(void *buffer, int64_t numel = 256) {
    EXPECT_EQ(
        download(DDPRT_DTYPE_F32, buffer, numel),
        std::vector<double>(size_t(numel), double(ddprt::test::worldSize())));
  }
};

TEST_F(HandleTest, WaitingTwiceIsAnError) {
  void *buffer = nullptr;
  ddprt_handle handle = issue(buffer);
  DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  expectSummed(buffer);
  EXPECT_EQ(ddprt_wait(context, handle), DDPRT_ERROR_BAD_HANDLE);
  EXPECT_NE(std::string(ddprt_last_error(context)).find("already waited"),
            std::string::npos)
      << ddprt_last_error(context);
  EXPECT_EQ(ddprt_wait(context, 0), DDPRT_ERROR_BAD_HANDLE);
  EXPECT_NE(std::string(ddprt_last_error(context)).find("never issued"),
            std::string::npos);
  EXPECT_EQ(ddprt_wait(context, handle + 1000), DDPRT_ERROR_BAD_HANDLE);
  DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST_F(HandleTest, ManyInFlightWaitedInAnyOrder) {
  std::vector<void *> buffers(8);
  std::vector<ddprt_handle> handles;
  for (size_t i = 0; i < buffers.size(); ++i)
    handles.push_back(issue(buffers[i], 1000 + int64_t(i)));
  for (size_t i = buffers.size(); i-- > 0;) {
    DDPRT_EXPECT_OK(context, ddprt_wait(context, handles[i]));
    expectSummed(buffers[i], 1000 + int64_t(i));
  }
  for (void *buffer : buffers)
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST_F(HandleTest, JoinConsumesItsHandles) {
  void *a = nullptr, *b = nullptr, *c = nullptr;
  ddprt_handle handles[] = {issue(a), issue(b)};
  ddprt_handle joined = 0;
  DDPRT_EXPECT_OK(context, ddprt_join(context, handles, 2, &joined));
  EXPECT_NE(joined, 0u);
  // The joined handles are gone; the join is waited once.
  EXPECT_EQ(ddprt_wait(context, handles[0]), DDPRT_ERROR_BAD_HANDLE);
  DDPRT_EXPECT_OK(context, ddprt_wait(context, joined));
  expectSummed(a);
  expectSummed(b);
  EXPECT_EQ(ddprt_wait(context, joined), DDPRT_ERROR_BAD_HANDLE);

  // A join of a join.
  ddprt_handle inner[] = {issue(c)};
  ddprt_handle first = 0, outer = 0;
  DDPRT_EXPECT_OK(context, ddprt_join(context, inner, 1, &first));
  DDPRT_EXPECT_OK(context, ddprt_join(context, &first, 1, &outer));
  DDPRT_EXPECT_OK(context, ddprt_wait(context, outer));
  expectSummed(c);
  for (void *buffer : {a, b, c})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST_F(HandleTest, FailedJoinConsumesNothing) {
  void *a = nullptr;
  ddprt_handle live = issue(a);
  ddprt_handle withStale[] = {live, 987654};
  ddprt_handle joined = 0;
  EXPECT_EQ(ddprt_join(context, withStale, 2, &joined), DDPRT_ERROR_BAD_HANDLE);
  EXPECT_EQ(joined, 0u);
  ddprt_handle twice[] = {live, live};
  EXPECT_EQ(ddprt_join(context, twice, 2, &joined), DDPRT_ERROR_BAD_HANDLE);
  EXPECT_NE(std::string(ddprt_last_error(context)).find("joined twice"),
            std::string::npos);
  // `live` is still outstanding.
  DDPRT_EXPECT_OK(context, ddprt_wait(context, live));
  expectSummed(a);
  EXPECT_EQ(ddprt_join(context, nullptr, 1, &joined),
            DDPRT_ERROR_INVALID_ARGUMENT);
  DDPRT_EXPECT_OK(context, ddprt_free(context, a));
}

// ddp's `async after`: an all-reduce issued after a reduce-scatter reads its
// result with no wait between them. Without ddprt_comm_wait the CPU
// backend's communication thread would start the all-reduce while the
// reduce-scatter is still posted, and read the shard before it is written.
TEST_F(HandleTest, CommWaitOrdersTheNextCollectiveAfterAnOp) {
  int world = ddprt::test::worldSize();
  int32_t group = groupOf("dp,tp");
  for (int64_t numel : {int64_t(1), int64_t(4096), int64_t(1) << 18}) {
    void *input = upload(DDPRT_DTYPE_F32,
                         std::vector<double>(size_t(numel * world), 1.0));
    void *shard = upload(DDPRT_DTYPE_F32, std::vector<double>(size_t(numel)));
    ddprt_handle handles[2] = {0, 0};
    DDPRT_EXPECT_OK(context, ddprt_reduce_scatter(
                                 context, group, DDPRT_REDUCTION_SUM,
                                 DDPRT_DTYPE_F32, numel, input, shard,
                                 &handles[0]));
    DDPRT_EXPECT_OK(context, ddprt_comm_wait(context, handles[0]));
    DDPRT_EXPECT_OK(context, ddprt_all_reduce(context, group,
                                              DDPRT_REDUCTION_SUM,
                                              DDPRT_DTYPE_F32, numel, shard,
                                              shard, &handles[1]));
    // The handle ordered after is still outstanding; one join consumes both.
    ddprt_handle joined = 0;
    DDPRT_EXPECT_OK(context, ddprt_join(context, handles, 2, &joined));
    DDPRT_EXPECT_OK(context, ddprt_wait(context, joined));
    EXPECT_EQ(download(DDPRT_DTYPE_F32, shard, numel),
              std::vector<double>(size_t(numel), double(world) * world))
        << numel << " elements";
    for (void *buffer : {input, shard})
      DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
  }
}

TEST_F(HandleTest, CommWaitAfterAJoinAndOnStaleHandles) {
  void *a = nullptr, *b = nullptr, *c = nullptr;
  ddprt_handle handles[] = {issue(a), issue(b)};
  ddprt_handle joined = 0;
  DDPRT_EXPECT_OK(context, ddprt_join(context, handles, 2, &joined));
  DDPRT_EXPECT_OK(context, ddprt_comm_wait(context, joined));
  ddprt_handle after = issue(c);
  DDPRT_EXPECT_OK(context, ddprt_wait(context, after));
  DDPRT_EXPECT_OK(context, ddprt_wait(context, joined));
  for (void *buffer : {a, b, c})
    expectSummed(buffer);
  // A consumed handle and one never issued are errors that name it.
  EXPECT_EQ(ddprt_comm_wait(context, joined), DDPRT_ERROR_BAD_HANDLE);
  EXPECT_NE(std::string(ddprt_last_error(context))
                .find("ddprt_comm_wait: handle " + std::to_string(joined) +
                      " is not outstanding"),
            std::string::npos)
      << ddprt_last_error(context);
  EXPECT_EQ(ddprt_comm_wait(context, 0), DDPRT_ERROR_BAD_HANDLE);
  for (void *buffer : {a, b, c})
    DDPRT_EXPECT_OK(context, ddprt_free(context, buffer));
}

TEST(HandleLifetimeTest, FinalizeReportsHandlesNeverWaited) {
  ddprt_context *context = nullptr;
  ASSERT_EQ(ddprt_init(DDPRT_ABI_VERSION, meshForWorld().c_str(),
                       DDPRT_BACKEND_CPU, DDPRT_FLAG_RETURN_ERRORS, 3000,
                       nullptr, &context),
            DDPRT_OK)
      << ddprt_last_error(nullptr);
  int32_t world = -1;
  DDPRT_ASSERT_OK(context, ddprt_group_create(context, "dp,tp", &world));
  void *buffer = nullptr;
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F64, 64, &buffer));
  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context, ddprt_all_reduce(context, world, DDPRT_REDUCTION_AVG,
                                            DDPRT_DTYPE_F64, 64, buffer, buffer,
                                            &handle));
  // The op is drained (no rank hangs) and the leak is reported.
  EXPECT_EQ(ddprt_finalize(context), DDPRT_ERROR_BAD_HANDLE);
  std::string message = ddprt_last_error(nullptr);
  EXPECT_NE(message.find("1 handle(s) were never waited or joined: " +
                         std::to_string(handle)),
            std::string::npos)
      << message;
}

} // namespace
