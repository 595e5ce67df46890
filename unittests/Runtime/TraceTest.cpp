//===- TraceTest.cpp - The Chrome trace writer ----------------------------===//

#include "Trace.h"
#include "JsonReader.h"

#include "gtest/gtest.h"

using namespace ddprt;
using ddprt::test::JsonValue;

namespace {

TEST(TraceTest, WritesTheSharedTraceFormat) {
  TraceRecorder recorder;
  recorder.enable();
  recorder.record({"gemm \"fc1\"\n", TraceCategory::Compute, 0, 1.5, 2.25,
                   TraceArgs().add("m", int64_t(64)).str()});
  recorder.record({"all_reduce", TraceCategory::Comm, 1, 2.0, 10.0,
                   TraceArgs().add("group", "dp").add("ratio", 0.5).str()});
  recorder.record({"wait", TraceCategory::Wait, 0, 4.0, 8.0, ""});
  std::string text = TraceRecorder::mergeRanks(
      {recorder.serialize(0, 1), recorder.serialize(1, 1)});

  JsonValue trace;
  std::string error;
  ASSERT_TRUE(ddprt::test::parseJson(text, trace, error)) << error << text;
  EXPECT_EQ(trace.at("displayTimeUnit").string, "ms");
  const std::vector<JsonValue> &events = trace.at("traceEvents").array;
  // Per rank: process_name, two thread_names, three ops.
  ASSERT_EQ(events.size(), 12u);
  EXPECT_EQ(events[0].at("name").string, "process_name");
  EXPECT_EQ(events[0].at("ph").string, "M");
  EXPECT_EQ(events[0].at("args").at("name").string, "rank 0");
  EXPECT_EQ(events[1].at("args").at("name").string, "compute");
  EXPECT_EQ(events[2].at("args").at("name").string, "comm0");
  EXPECT_EQ(events[2].at("tid").number, 1);
  const JsonValue &gemm = events[3];
  EXPECT_EQ(gemm.at("name").string, "gemm \"fc1\"\n");
  EXPECT_EQ(gemm.at("cat").string, "compute");
  EXPECT_EQ(gemm.at("ph").string, "X");
  EXPECT_EQ(gemm.at("ts").number, 1.5);
  EXPECT_EQ(gemm.at("dur").number, 2.25);
  EXPECT_EQ(gemm.at("pid").number, 0);
  EXPECT_EQ(gemm.at("tid").number, 0);
  EXPECT_EQ(gemm.at("args").at("m").number, 64);
  EXPECT_EQ(events[4].at("cat").string, "comm");
  EXPECT_EQ(events[4].at("args").at("ratio").number, 0.5);
  EXPECT_EQ(events[5].at("cat").string, "wait");
  EXPECT_TRUE(events[5].at("args").object.empty());
  EXPECT_EQ(events[6].at("args").at("name").string, "rank 1");
  EXPECT_EQ(events[9].at("pid").number, 1);
}

TEST(TraceTest, SpansRecordOnlyWhenEnabled) {
  TraceRecorder recorder;
  { TraceSpan span(recorder, "ignored", TraceCategory::Compute, 0); }
  recorder.enable();
  {
    TraceSpan span(recorder, "kept", TraceCategory::Compute, 0);
    span.args().add("k", int64_t(1));
  }
  JsonValue trace;
  std::string error;
  ASSERT_TRUE(ddprt::test::parseJson(
      TraceRecorder::mergeRanks({recorder.serialize(3, 1)}), trace, error))
      << error;
  const std::vector<JsonValue> &events = trace.at("traceEvents").array;
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[3].at("name").string, "kept");
  EXPECT_EQ(events[3].at("pid").number, 3);
  EXPECT_GE(events[3].at("dur").number, 0);
}

TEST(TraceTest, ReaderRejectsMalformedJson) {
  JsonValue value;
  std::string error;
  EXPECT_FALSE(ddprt::test::parseJson("{\"a\": 1,}", value, error));
  EXPECT_FALSE(ddprt::test::parseJson("{\"a\": 1} x", value, error));
  EXPECT_FALSE(ddprt::test::parseJson("[1, 2", value, error));
  EXPECT_FALSE(ddprt::test::parseJson("{\"a\": 1, \"a\": 2}", value, error));
  EXPECT_TRUE(
      ddprt::test::parseJson("[true, false, null, -1e3]", value, error));
}

} // namespace
