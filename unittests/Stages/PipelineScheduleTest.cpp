//===- PipelineScheduleTest.cpp - Megatron's per-stage compute order ------===//
//
// The expected orders are what Megatron-Core's schedules.py runs; the cases
// in MegatronOrders are printed by a transcription of its loops (see
// docs/Pipeline.md) and checked here entry by entry.
//
//===----------------------------------------------------------------------===//

#include "MegatronOrders.h"

#include "ddp/Stages/PipelineSchedule.h"

#include "llvm/ADT/STLExtras.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace ddp;

namespace {

std::vector<std::string> order(PipelineScheduleKind kind, PipelineShape shape,
                               int64_t rank) {
  std::vector<std::string> result;
  for (const PipelineTask &task : getStageOrder(kind, shape, rank))
    result.push_back(task.str());
  return result;
}

std::string checkMessage(PipelineScheduleKind kind, PipelineShape shape) {
  llvm::Error error = checkPipelineSchedule(kind, shape);
  return error ? llvm::toString(std::move(error)) : "";
}

TEST(PipelineTaskTest, PrintsAndParsesTheScheduleForm) {
  PipelineTask task{PipelineTask::Phase::Backward, 12, 3};
  EXPECT_EQ(task.str(), "B12.3");
  EXPECT_EQ(PipelineTask::parse("B12.3"), task);
  EXPECT_EQ(PipelineTask::parse("W0.0")->phase,
            PipelineTask::Phase::WeightGrad);
  for (const char *bad : {"", "F", "F1", "F1.", "X1.0", "F-1.0", "F1.+2",
                          "F1.0.0", "F 1.0", "F1234567890123456789.0"})
    EXPECT_FALSE(PipelineTask::parse(bad).has_value()) << bad;
}

// The example in get_schedule_table's docstring (schedules.py): PP2 with
// N3M5 and VP2.
TEST(PipelineScheduleTest, ScheduleTableOfMegatronsDocstring) {
  std::vector<std::pair<int64_t, int64_t>> expected = {
      {0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1},
      {2, 1}, {3, 0}, {4, 0}, {3, 1}, {4, 1}};
  EXPECT_EQ(getScheduleTable(5, 2, 3), expected);
}

TEST(PipelineScheduleTest, OneFOneBWarmsUpWithTheStagesAfterIt) {
  PipelineShape shape{4, 1, 8, 0};
  auto kind = PipelineScheduleKind::OneFOneB;
  EXPECT_THAT(order(kind, shape, 0),
              testing::ElementsAre("F0.0", "F1.0", "F2.0", "F3.0", "B0.0",
                                   "F4.0", "B1.0", "F5.0", "B2.0", "F6.0",
                                   "B3.0", "F7.0", "B4.0", "B5.0", "B6.0",
                                   "B7.0"));
  EXPECT_THAT(order(kind, shape, 3),
              testing::ElementsAre("F0.0", "B0.0", "F1.0", "B1.0", "F2.0",
                                   "B2.0", "F3.0", "B3.0", "F4.0", "B4.0",
                                   "F5.0", "B5.0", "F6.0", "B6.0", "F7.0",
                                   "B7.0"));
  // Fewer microbatches than stages: warmup is capped at the microbatches.
  EXPECT_THAT(order(kind, {4, 1, 2, 0}, 0),
              testing::ElementsAre("F0.0", "F1.0", "B0.0", "B1.0"));
  EXPECT_THAT(order(kind, {4, 1, 2, 0}, 2),
              testing::ElementsAre("F0.0", "F1.0", "B0.0", "B1.0"));
  EXPECT_THAT(order(kind, {4, 1, 2, 0}, 3),
              testing::ElementsAre("F0.0", "B0.0", "F1.0", "B1.0"));
}

TEST(PipelineScheduleTest, GPipeRunsEveryForwardFirst) {
  EXPECT_THAT(order(PipelineScheduleKind::GPipe, {3, 1, 3, 0}, 2),
              testing::ElementsAre("F0.0", "F1.0", "F2.0", "B0.0", "B1.0",
                                   "B2.0"));
}

// PaddlePaddle's pipeline_scheduler_ZBH1 job list (_create_job_list) for
// 4 stages and 6 microbatches, written out by hand: a whole backward is
// its B then its W.
TEST(PipelineScheduleTest, ZeroBubbleH1RunsSomeWPassesLast) {
  PipelineShape shape{4, 1, 6, 0};
  auto kind = PipelineScheduleKind::ZeroBubbleH1;
  EXPECT_EQ(getWarmupCount(kind, shape, 0), 4);
  EXPECT_EQ(getWarmupCount(kind, shape, 3), 1);
  EXPECT_THAT(order(kind, shape, 0),
              testing::ElementsAre("F0.0", "F1.0", "F2.0", "F3.0", "B0.0",
                                   "W0.0", "F4.0", "B1.0", "W1.0", "F5.0",
                                   "B2.0", "W2.0", "B3.0", "W3.0", "B4.0",
                                   "W4.0", "B5.0", "W5.0"));
  EXPECT_THAT(order(kind, shape, 1),
              testing::ElementsAre("F0.0", "F1.0", "F2.0", "B0.0", "F3.0",
                                   "B1.0", "W1.0", "F4.0", "B2.0", "W2.0",
                                   "F5.0", "B3.0", "W3.0", "B4.0", "W4.0",
                                   "B5.0", "W5.0", "W0.0"));
  EXPECT_THAT(order(kind, shape, 3),
              testing::ElementsAre("F0.0", "B0.0", "F1.0", "B1.0", "F2.0",
                                   "B2.0", "F3.0", "B3.0", "W3.0", "F4.0",
                                   "B4.0", "W4.0", "F5.0", "B5.0", "W5.0",
                                   "W0.0", "W1.0", "W2.0"));
  // As many microbatches as stages: no steady phase.
  EXPECT_THAT(order(kind, {2, 1, 2, 0}, 1),
              testing::ElementsAre("F0.0", "B0.0", "F1.0", "B1.0", "W1.0",
                                   "W0.0"));
  // Every F, B and W once; each B after its F, each W after its B.
  for (PipelineShape each : {PipelineShape{5, 1, 5, 0}, PipelineShape{3, 1, 7, 0}})
    for (int64_t rank = 0; rank < each.stages; ++rank) {
      std::vector<int> seen(3 * each.microbatches, -1);
      for (auto [index, task] :
           llvm::enumerate(getStageOrder(kind, each, rank))) {
        int &at = seen[3 * task.microbatch + int(task.phase)];
        EXPECT_EQ(at, -1) << task.str();
        at = int(index);
      }
      for (int64_t m = 0; m < each.microbatches; ++m) {
        EXPECT_LT(seen[3 * m], seen[3 * m + 1]) << rank;
        EXPECT_LT(seen[3 * m + 1], seen[3 * m + 2]) << rank;
      }
    }
}

TEST(PipelineScheduleTest, ChecksNameWhatToChange) {
  auto interleaved = PipelineScheduleKind::Interleaved;
  EXPECT_THAT(checkMessage(PipelineScheduleKind::OneFOneB, {2, 2, 4, 0}),
              testing::HasSubstr("use the interleaved schedule"));
  EXPECT_THAT(checkMessage(PipelineScheduleKind::GPipe, {2, 1, 4, 2}),
              testing::HasSubstr("drop it (microbatch-group-size)"));
  EXPECT_THAT(checkMessage(interleaved, {2, 1, 4, 0}),
              testing::HasSubstr("virtual_pipeline_model_parallel_size"));
  EXPECT_THAT(checkMessage(interleaved, {4, 2, 8, 3}),
              testing::HasSubstr("set it in [4, 8]"));
  EXPECT_THAT(checkMessage(interleaved, {4, 2, 8, 9}),
              testing::HasSubstr("set it in [4, 8]"));
  EXPECT_THAT(
      checkMessage(interleaved, {4, 2, 3, 0}),
      testing::HasSubstr("at least as many microbatches as pipeline stages"));
  EXPECT_EQ(checkMessage(interleaved, {4, 2, 8, 8}), "");
  EXPECT_EQ(checkMessage(interleaved, {2, 3, 6, 2}), "");
  EXPECT_THAT(checkMessage(interleaved, {2, 3, 5, 2}),
              testing::HasSubstr("last group of 1"));
  EXPECT_THAT(checkMessage(PipelineScheduleKind::GPipe, {2, 1, 0, 0}),
              testing::HasSubstr("at least 1 stage"));
  auto zeroBubble = PipelineScheduleKind::ZeroBubbleH1;
  EXPECT_THAT(checkMessage(zeroBubble, {4, 1, 3, 0}),
              testing::HasSubstr("at least as many microbatches as stages"));
  EXPECT_THAT(checkMessage(zeroBubble, {4, 2, 8, 0}),
              testing::HasSubstr("one model chunk per stage"));
  EXPECT_EQ(checkMessage(zeroBubble, {4, 1, 4, 0}), "");
  EXPECT_EQ(parsePipelineScheduleKind("zb-h1"), zeroBubble);
  EXPECT_EQ(stringifyPipelineScheduleKind(zeroBubble), "zb-h1");
}

// Every rank runs every (microbatch, chunk) forward once and backward once,
// each backward after its forward, and per chunk the microbatches in order.
TEST(PipelineScheduleTest, EveryScheduleRunsEachTaskOnceInOrder) {
  struct Case {
    PipelineScheduleKind kind;
    PipelineShape shape;
  };
  for (Case c : {Case{PipelineScheduleKind::OneFOneB, {5, 1, 3, 0}},
                 Case{PipelineScheduleKind::OneFOneB, {3, 1, 7, 0}},
                 Case{PipelineScheduleKind::GPipe, {6, 1, 4, 0}},
                 Case{PipelineScheduleKind::Interleaved, {3, 2, 7, 4}},
                 Case{PipelineScheduleKind::Interleaved, {2, 3, 5, 3}},
                 Case{PipelineScheduleKind::Interleaved, {4, 4, 9, 5}}}) {
    ASSERT_FALSE(checkPipelineSchedule(c.kind, c.shape));
    for (int64_t rank = 0; rank < c.shape.stages; ++rank) {
      int64_t chunks = c.shape.virtualStages;
      std::vector<int64_t> forwards(chunks), backwards(chunks);
      for (const PipelineTask &task : getStageOrder(c.kind, c.shape, rank)) {
        if (task.phase == PipelineTask::Phase::Forward) {
          EXPECT_EQ(task.microbatch, forwards[task.chunk]++);
        } else {
          EXPECT_EQ(task.microbatch, backwards[task.chunk]++);
          EXPECT_LT(task.microbatch, forwards[task.chunk]);
        }
      }
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        EXPECT_EQ(forwards[chunk], c.shape.microbatches);
        EXPECT_EQ(backwards[chunk], c.shape.microbatches);
      }
    }
  }
}

} // namespace

namespace {

TEST(PipelineScheduleTest, EveryRankRunsWhatMegatronRuns) {
  for (const ddp::megatron::MegatronOrder &expected :
       ddp::megatron::getMegatronOrders()) {
    PipelineShape shape{expected.stages, expected.virtualStages,
                        expected.microbatches, expected.groupSize};
    auto kind = expected.virtualStages > 1 ? PipelineScheduleKind::Interleaved
                                           : PipelineScheduleKind::OneFOneB;
    ASSERT_EQ(checkMessage(kind, shape), "") << expected.name;
    ASSERT_EQ(expected.ranks.size(), size_t(expected.stages)) << expected.name;
    for (int64_t rank = 0; rank < expected.stages; ++rank) {
      std::string joined;
      for (const std::string &task : order(kind, shape, rank))
        joined += (joined.empty() ? "" : " ") + task;
      EXPECT_EQ(joined, expected.ranks[rank])
          << expected.name << ", rank " << rank;
    }
  }
}

TEST(PipelineScheduleTest, RejectsWhatMegatronRejects) {
  for (const ddp::megatron::MegatronRejection &rejected :
       ddp::megatron::getMegatronRejections())
    EXPECT_THAT(checkMessage(PipelineScheduleKind::Interleaved,
                             {rejected.stages, rejected.virtualStages,
                              rejected.microbatches, rejected.groupSize}),
                testing::HasSubstr(rejected.phrase))
        << rejected.name;
}

} // namespace

// overlap_moe_expert_parallel_comm on the interleaved schedule:
// get_pp_rank_microbatches adds one warmup forward (schedules.py L965-970
// at d98e8a6), capped at every virtual microbatch as without it; the
// steady loop pairs forward k + warmup with backward k (L1733-1902).
TEST(PipelineScheduleTest, CombinedInterleavedWarmsUpOneMore) {
  auto kind = PipelineScheduleKind::Interleaved;
  PipelineShape plain{4, 2, 8, 0}, combined{4, 2, 8, 0, true};
  for (int64_t rank = 0; rank < 4; ++rank)
    EXPECT_EQ(getWarmupCount(kind, combined, rank),
              getWarmupCount(kind, plain, rank) + 1);
  // Rank 0: (4 - 0 - 1) x 2 + (2 - 1) x 4 + 1 = 11 of 16.
  EXPECT_EQ(getWarmupCount(kind, combined, 0), 11);
  // 2 ranks, 2 chunks, 2 microbatches: rank 0's 2 + 2 + 1 = 5 exceed the 4
  // virtual microbatches, so all are warmup and nothing is combined.
  EXPECT_EQ(getWarmupCount(kind, {2, 2, 2, 0, true}, 0), 4);
  EXPECT_TRUE(getCombinedPairs(kind, {2, 2, 2, 0, true}, 0).empty());
  std::vector<PipelineTask> tasks = getStageOrder(kind, combined, 3);
  std::vector<size_t> pairs = getCombinedPairs(kind, combined, 3);
  // Rank 3: 0 x 2 + 4 + 1 = 5 warmup forwards, then 11 combined steps.
  ASSERT_EQ(pairs.size(), 11u);
  for (auto [k, index] : llvm::enumerate(pairs)) {
    EXPECT_EQ(index, 5 + 2 * k);
    EXPECT_EQ(tasks[index].phase, PipelineTask::Phase::Forward);
    EXPECT_EQ(tasks[index + 1].phase, PipelineTask::Phase::Backward);
  }
  EXPECT_THAT(order(kind, combined, 3),
              testing::ElementsAre(
                  "F0.0", "F1.0", "F2.0", "F3.0", "F0.1", "F1.1", "B0.1",
                  "F2.1", "B1.1", "F3.1", "B2.1", "F4.0", "B3.1", "F5.0",
                  "B0.0", "F6.0", "B1.0", "F7.0", "B2.0", "F4.1", "B3.0",
                  "F5.1", "B4.1", "F6.1", "B5.1", "F7.1", "B6.1", "B7.1",
                  "B4.0", "B5.0", "B6.0", "B7.0"));
  // Without the flag, or on another schedule, no pairs.
  EXPECT_TRUE(getCombinedPairs(kind, plain, 3).empty());
  EXPECT_TRUE(
      getCombinedPairs(PipelineScheduleKind::OneFOneB, {4, 1, 8, 0, true}, 0)
          .empty());
  // Megatron asserts a virtual size with pipeline stages.
  llvm::Error error = checkPipelineSchedule(PipelineScheduleKind::OneFOneB,
                                            {4, 1, 8, 0, true});
  EXPECT_NE(llvm::toString(std::move(error))
                .find("combined_1f1b_schedule_for_interleaved_pipelining"),
            std::string::npos);
}
