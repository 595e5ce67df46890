//===- PipelineExchangeTest.cpp - Megatron's stage-to-stage calls ---------===//
//
// The expected calls are what Megatron-Core's schedules.py issues, printed
// by running its functions (MegatronExchanges.h says how); checked here
// event by event on every rank.
//
//===----------------------------------------------------------------------===//

#include "MegatronExchanges.h"

#include "ddp/Stages/PipelineExchange.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <set>
#include <sstream>

using namespace ddp;

namespace {

std::vector<std::string> split(const char *text) {
  std::vector<std::string> events;
  std::istringstream stream(text);
  for (std::string event; stream >> event;)
    events.push_back(event);
  return events;
}

TEST(PipelineExchangeTest, EqualsWhatMegatronIssues) {
  for (const megatron::MegatronExchange &expected :
       megatron::getMegatronExchanges()) {
    PipelineShape shape{expected.stages, expected.virtualStages,
                        expected.microbatches, expected.groupSize};
    PipelineExchangeOptions options{expected.batch, expected.overlap,
                                    expected.warmupFlush, expected.deallocate};
    ASSERT_FALSE(bool(checkPipelineSchedule(expected.kind, shape)))
        << expected.name;
    ASSERT_FALSE(bool(checkPipelineExchange(expected.kind, options)))
        << expected.name;
    std::vector<std::vector<std::string>> described =
        describeStageExchanges(expected.kind, shape, options);
    ASSERT_EQ(described.size(), expected.ranks.size()) << expected.name;
    for (auto [rank, text] : llvm::enumerate(expected.ranks))
      EXPECT_EQ(described[rank], split(text))
          << expected.name << ", pipeline rank " << rank;
  }
}

// The tasks among the events are getStageOrder's, whatever the flags.
TEST(PipelineExchangeTest, RunsTheScheduleOrder) {
  PipelineShape shape{3, 2, 7, 4};
  for (bool overlap : {false, true})
    for (bool flush : {false, true}) {
      if (flush && !overlap)
        continue;
      PipelineExchangeOptions options{!overlap, overlap, flush};
      for (int64_t rank = 0; rank < 3; ++rank) {
        std::vector<PipelineTask> tasks;
        for (const ExchangeEvent &event : getStageExchanges(
                 PipelineScheduleKind::Interleaved, shape, options, rank))
          if (event.kind == ExchangeEvent::Kind::Run)
            tasks.push_back(event.task);
        EXPECT_EQ(tasks, getStageOrder(PipelineScheduleKind::Interleaved,
                                       shape, rank));
      }
    }
}

// Every receive meets a send: no "?" in the resolved form, and each rank
// waits every async part at most once.
TEST(PipelineExchangeTest, EveryReceiveHasItsSend) {
  for (int64_t stages : {2, 3, 5})
    for (int64_t microbatches : {stages, 2 * stages + 1}) {
      PipelineShape shape{stages, 2, microbatches, 0};
      PipelineExchangeOptions options{false, true, true};
      for (const std::vector<std::string> &rank : describeStageExchanges(
               PipelineScheduleKind::Interleaved, shape, options)) {
        std::set<std::string> waited;
        for (const std::string &event : rank) {
          EXPECT_EQ(event.find('?'), std::string::npos) << event;
          if (event[0] == 'W') {
            EXPECT_TRUE(waited.insert(event).second) << event;
          }
        }
      }
    }
  // GPipe: each forward's input, then each backward's gradient.
  std::vector<std::vector<std::string>> gpipe = describeStageExchanges(
      PipelineScheduleKind::GPipe, PipelineShape{2, 1, 2, 0},
      PipelineExchangeOptions());
  EXPECT_THAT(gpipe[1],
              testing::ElementsAre("C(rp=F0.0;wait)", "F0.0",
                                   "C(rp=F1.0;wait)", "F1.0", "B0.0",
                                   "C(sp=B0.0;wait)", "B1.0",
                                   "C(sp=B1.0;wait)"));
}

TEST(PipelineExchangeTest, ChecksTheWarmupFlush) {
  auto message = [](PipelineScheduleKind kind,
                    PipelineExchangeOptions options) {
    llvm::Error error = checkPipelineExchange(kind, options);
    return error ? llvm::toString(std::move(error)) : std::string();
  };
  EXPECT_THAT(message(PipelineScheduleKind::Interleaved, {false, false, true}),
              testing::HasSubstr("set overlap-p2p-comm=true too"));
  EXPECT_THAT(message(PipelineScheduleKind::OneFOneB, {false, true, true}),
              testing::HasSubstr("a mode of the interleaved schedule"));
  EXPECT_EQ(message(PipelineScheduleKind::OneFOneB, {true, true, false}), "");
}

} // namespace

// overlap_moe_expert_parallel_comm: each steady step's forward and
// backward are one combined step, with pp_pre_forward's and
// pp_pre_backward's waits before their passes and pp_post_forward's and
// pp_post_backward's calls after both (TransformerModelChunkSchedulePlan.
// run, model_chunk_schedule_plan.py L535-607 at d98e8a6): no call between
// the two runs. The runs are getStageOrder's, and every receive meets a
// send.
TEST(PipelineExchangeTest, CombinedStepsCallAfterBothPasses) {
  for (int64_t stages : {2, 3, 4})
    for (int64_t microbatches : {stages, 2 * stages + 1}) {
      PipelineShape shape{stages, 2, microbatches, 0, true};
      for (bool deallocate : {false, true}) {
        PipelineExchangeOptions options{false, true, false, deallocate};
        std::vector<std::vector<std::string>> described =
            describeStageExchanges(PipelineScheduleKind::Interleaved, shape,
                                   options);
        for (int64_t rank = 0; rank < stages; ++rank) {
          std::vector<PipelineTask> order =
              getStageOrder(PipelineScheduleKind::Interleaved, shape, rank);
          std::vector<std::string> runs;
          for (const std::string &event : described[rank]) {
            EXPECT_EQ(event.find('?'), std::string::npos) << event;
            if (event[0] == 'F' || event[0] == 'B')
              runs.push_back(event);
          }
          std::vector<std::string> expected;
          for (const PipelineTask &task : order)
            expected.push_back(task.str());
          EXPECT_EQ(runs, expected) << "rank " << rank;
          std::set<std::string> combinedForwards;
          for (size_t index : getCombinedPairs(
                   PipelineScheduleKind::Interleaved, shape, rank))
            combinedForwards.insert(order[index].str());
          bool inStep = false;
          size_t steps = 0;
          for (const std::string &event : described[rank]) {
            if (combinedForwards.count(event)) {
              inStep = true;
              ++steps;
            } else if (event[0] == 'B') {
              inStep = false;
            } else if (inStep) {
              EXPECT_EQ(event[0], 'W')
                  << "rank " << rank << ": " << event
                  << " between a combined step's passes";
            }
          }
          EXPECT_EQ(steps, combinedForwards.size());
        }
      }
    }
}
