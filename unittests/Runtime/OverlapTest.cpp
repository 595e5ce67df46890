//===- OverlapTest.cpp - Asynchronous collectives overlap compute ---------===//
//
// Runs an asynchronous all-reduce beside a GEMM with tracing on, then reads
// the trace file back: on every rank the all-reduce must have started before
// the GEMM ended and ended after it started (it ran while the GEMM ran).
//
//===----------------------------------------------------------------------===//

#include "JsonReader.h"
#include "RuntimeTestSupport.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace ddprt::test;

namespace {

std::string tracePath() {
  // One name for all ranks (rank 0 writes), unique per job.
  int nonce = 0;
  if (ddprt::test::worldRank() == 0)
    nonce = int(::getpid());
  MPI_Bcast(&nonce, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return "ddprt-overlap-" + std::to_string(nonce) + ".json";
}

struct Interval {
  double start = -1, end = -1;
};

TEST(OverlapTest, CollectiveRunsWhileTheGemmRuns) {
  std::string path = tracePath();
  ddprt_context *context = nullptr;
  ASSERT_EQ(ddprt_init(DDPRT_ABI_VERSION, meshForWorld().c_str(),
                       DDPRT_BACKEND_CPU, DDPRT_FLAG_RETURN_ERRORS, 10000,
                       path.c_str(), &context),
            DDPRT_OK)
      << ddprt_last_error(nullptr);
  int32_t world = -1;
  DDPRT_ASSERT_OK(context, ddprt_group_create(context, "dp,tp", &world));
  const int64_t bucket = 4 << 20, m = 512, n = 512, k = 1024;
  void *gradients = nullptr, *lhs = nullptr, *rhs = nullptr, *out = nullptr;
  DDPRT_ASSERT_OK(context,
                  ddprt_alloc(context, DDPRT_DTYPE_F32, bucket, &gradients));
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, m * k, &lhs));
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, k * n, &rhs));
  DDPRT_ASSERT_OK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, m * n, &out));
  DDPRT_EXPECT_OK(context, ddprt_fill_input(context, gradients, DDPRT_DTYPE_F32,
                                            bucket, 1));
  DDPRT_EXPECT_OK(context,
                  ddprt_fill_input(context, lhs, DDPRT_DTYPE_F32, m * k, 2));
  DDPRT_EXPECT_OK(context,
                  ddprt_fill_input(context, rhs, DDPRT_DTYPE_F32, k * n, 3));

  ddprt_handle handle = 0;
  DDPRT_EXPECT_OK(context, ddprt_all_reduce(context, world, DDPRT_REDUCTION_SUM,
                                            DDPRT_DTYPE_F32, bucket, gradients,
                                            gradients, &handle));
  for (int i = 0; i < 3; ++i)
    DDPRT_EXPECT_OK(context, ddprt_gemm(context, DDPRT_DTYPE_F32, 0, 0, m, n, k,
                                        lhs, rhs, out, "wgrad"));
  DDPRT_EXPECT_OK(context, ddprt_wait(context, handle));
  ASSERT_EQ(ddprt_finalize(context), DDPRT_OK) << ddprt_last_error(nullptr);

  int size = ddprt::test::worldSize();
  if (ddprt::test::worldRank() == 0) {
    std::ifstream file(path);
    ASSERT_TRUE(file) << "no trace at " << path;
    std::stringstream text;
    text << file.rdbuf();
    JsonValue trace;
    std::string error;
    ASSERT_TRUE(ddprt::test::parseJson(text.str(), trace, error)) << error;
    EXPECT_EQ(trace.at("displayTimeUnit").string, "ms");
    std::vector<Interval> allReduce(static_cast<size_t>(size));
    std::vector<Interval> gemms(static_cast<size_t>(size));
    std::vector<int> processNames(static_cast<size_t>(size), 0);
    std::vector<int> threadNames(static_cast<size_t>(size), 0);
    for (const JsonValue &event : trace.at("traceEvents").array) {
      int pid = int(event.at("pid").number);
      ASSERT_GE(pid, 0);
      ASSERT_LT(pid, size);
      const std::string &phase = event.at("ph").string;
      if (phase == "M") {
        const std::string &name = event.at("name").string;
        if (name == "process_name") {
          EXPECT_EQ(event.at("args").at("name").string,
                    "rank " + std::to_string(pid));
          ++processNames[size_t(pid)];
        } else {
          EXPECT_EQ(name, "thread_name");
          std::string expected =
              event.at("tid").number == 0 ? "compute" : "comm0";
          EXPECT_EQ(event.at("args").at("name").string, expected);
          ++threadNames[size_t(pid)];
        }
        continue;
      }
      ASSERT_EQ(phase, "X");
      const std::string &category = event.at("cat").string;
      EXPECT_TRUE(category == "compute" || category == "comm" ||
                  category == "wait")
          << category;
      int tid = int(event.at("tid").number);
      EXPECT_EQ(tid, category == "comm" ? 1 : 0);
      double start = event.at("ts").number;
      double end = start + event.at("dur").number;
      EXPECT_GE(event.at("dur").number, 0);
      const std::string &name = event.at("name").string;
      if (name == "all_reduce" && category == "comm") {
        EXPECT_EQ(event.at("args").at("async").number, 1);
        EXPECT_EQ(event.at("args").at("bytes").number, double(bucket * 4));
        allReduce[size_t(pid)] = {start, end};
      }
      if (name == "wgrad") {
        Interval &interval = gemms[size_t(pid)];
        if (interval.start < 0)
          interval = {start, end};
        interval.end = end; // Span all three GEMMs.
      }
    }
    for (int rank = 0; rank < size; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      EXPECT_EQ(processNames[size_t(rank)], 1);
      EXPECT_EQ(threadNames[size_t(rank)], 2);
      Interval comm = allReduce[size_t(rank)], gemm = gemms[size_t(rank)];
      ASSERT_GE(comm.start, 0) << "no all_reduce event";
      ASSERT_GE(gemm.start, 0) << "no gemm event";
      EXPECT_LT(comm.start, gemm.end)
          << "the all-reduce started only after the GEMMs ended";
      EXPECT_GT(comm.end, gemm.start)
          << "the all-reduce ended before the GEMMs started";
    }
    std::remove(path.c_str());
  }
}

} // namespace
