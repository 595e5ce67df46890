//===- Combined1F1BTest.cpp - Megatron's batch-level MoE overlap order ----===//
//
// The expected order is what Megatron-Core's
// combined_1f1b_schedule_for_no_pipelining runs with two microbatches of two
// layers, written out node by node from TransformerModelChunkSchedulePlan.run
// and TransformerLayerSchedulePlan.run, with each communication node where
// Megatron's communication stream starts it (docs/ExpertParallelism.md).
//
//===----------------------------------------------------------------------===//

#include "ddp/Stages/Combined1F1B.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <limits>
#include <string>
#include <vector>

using namespace ddp;

namespace {

std::vector<std::string> order(int64_t microbatches, int64_t layers) {
  std::vector<std::string> result;
  for (const ScheduleNode &node : getCombined1F1BOrder(microbatches, layers))
    result.push_back(node.str());
  return result;
}

TEST(Combined1F1BTest, TwoMicrobatchesOfTwoLayers) {
  EXPECT_THAT(
      order(2, 2),
      testing::ElementsAreArray(std::vector<std::string>{
          // Phase 0: microbatch 0's forward alone.
          "F0.pre_process", "F0.L0.attn", "F0.L0.dispatch", "F0.L0.mlp",
          "F0.L0.combine", "F0.L1.attn", "F0.L1.dispatch", "F0.L1.mlp",
          "F0.L1.combine", "F0.post_process",
          // Phase 1: microbatch 1's forward beside microbatch 0's backward;
          // forward layer 0 with backward layer 1, then 1 with 0. The
          // forward's dispatch starts as soon as its attn ends, beside the
          // backward's mlp.
          "F1.pre_process", "B0.post_process", "B0.L1.combine", "F1.L0.attn",
          "F1.L0.dispatch", "B0.L1.mlp", "B0.L1.dispatch", "F1.L0.mlp",
          "F1.L0.combine", "B0.L1.attn", "B0.L0.combine", "F1.L1.attn",
          "F1.L1.dispatch", "B0.L0.mlp", "B0.L0.dispatch", "F1.L1.mlp",
          "F1.L1.combine", "B0.L0.attn", "F1.post_process", "B0.pre_process",
          // Phase 2: microbatch 1's backward alone.
          "B1.post_process", "B1.L1.combine", "B1.L1.mlp", "B1.L1.dispatch",
          "B1.L1.attn", "B1.L0.combine", "B1.L0.mlp", "B1.L0.dispatch",
          "B1.L0.attn", "B1.pre_process"}));
}

TEST(Combined1F1BTest, EveryNodeOnce) {
  for (int64_t microbatches : {1, 3, 5})
    for (int64_t layers : {0, 1, 4}) {
      std::vector<ScheduleNode> nodes =
          getCombined1F1BOrder(microbatches, layers);
      // Per microbatch and direction: pre- and post-process and four nodes
      // per layer.
      EXPECT_EQ(nodes.size(), size_t(microbatches * 2 * (2 + 4 * layers)));
      for (size_t i = 0; i < nodes.size(); ++i)
        for (size_t j = i + 1; j < nodes.size(); ++j)
          EXPECT_FALSE(nodes[i] == nodes[j]) << nodes[i].str();
    }
  EXPECT_TRUE(getCombined1F1BOrder(0, 2).empty());
}

TEST(Combined1F1BTest, ForwardCombineComputeGoesAfterBackwardAttention) {
  // Megatron runs the forward's combine (its all-to-all and unpermutation)
  // on the communication stream beside the backward's attn: the compute
  // after the all-to-all sorts after that attn, and before the next pair.
  ScheduleNode combine{false, 1, ScheduleNode::Kind::Combine, 0};
  ScheduleNode attention{true, 0, ScheduleNode::Kind::Attention, 1};
  ScheduleNode nextAttention{false, 1, ScheduleNode::Kind::Attention, 1};
  EXPECT_TRUE(getCombined1F1BKey(combine, 1) <
              getCombined1F1BKey(attention, 1));
  EXPECT_TRUE(getCombined1F1BKey(attention, 1) <
              getCombined1F1BKey(combine, 1, /*tail=*/true));
  EXPECT_TRUE(getCombined1F1BKey(combine, 1, /*tail=*/true) <
              getCombined1F1BKey(nextAttention, 1));
}

TEST(Combined1F1BTest, DelayedWgradsRunWhereBackwardDwRunsThem) {
  // TransformerLayerSchedulePlan.run (model_chunk_schedule_plan.py
  // L262-305 at d98e8a64) with delay_wgrad_compute, 3 layers: the mlp's
  // backward_dw after the backward's dispatch starts, before the forward's
  // mlp; the attn's at the end of the pair, after which the next pair's
  // backward combine starts beside it; layer 0's (the last of the
  // backward) after the layers, before the forward's post-process
  // (TransformerModelChunkSchedulePlan.run, L600-605).
  using Kind = ScheduleNode::Kind;
  auto key = [](bool backward, int64_t m, Kind kind, int64_t layer,
                bool wgrad = false) {
    return getCombined1F1BKey({backward, m, kind, layer}, 2, false, wgrad);
  };
  EXPECT_TRUE(key(true, 0, Kind::Dispatch, 2) <
              key(true, 0, Kind::Mlp, 2, true));
  EXPECT_TRUE(key(true, 0, Kind::Mlp, 2, true) <
              key(false, 1, Kind::Mlp, 0));
  EXPECT_TRUE(key(true, 0, Kind::Mlp, 2) < key(true, 0, Kind::Dispatch, 2));
  EXPECT_TRUE(getCombined1F1BKey({false, 1, Kind::Combine, 0}, 2, true) <
              key(true, 0, Kind::Attention, 2, true));
  EXPECT_TRUE(key(true, 0, Kind::Combine, 1) <
              key(true, 0, Kind::Attention, 2, true));
  EXPECT_TRUE(key(true, 0, Kind::Attention, 2, true) <
              key(false, 1, Kind::Attention, 1));
  EXPECT_TRUE(getCombined1F1BKey({false, 1, Kind::Combine, 2}, 2, true) <
              key(true, 0, Kind::Attention, 0, true));
  EXPECT_TRUE(key(true, 0, Kind::Attention, 0, true) <
              key(false, 1, Kind::PostProcess, 0));
  EXPECT_TRUE(key(false, 1, Kind::PostProcess, 0) <
              key(true, 0, Kind::PreProcess, 0));
  // The other kinds have no weight gradients to delay.
  EXPECT_FALSE(key(true, 0, Kind::Dispatch, 1) <
               key(true, 0, Kind::Dispatch, 1, true));
  EXPECT_FALSE(key(true, 0, Kind::Dispatch, 1, true) <
               key(true, 0, Kind::Dispatch, 1));
}

TEST(Combined1F1BTest, KeysOfTheLargestIndices) {
  // Any index the attribute holds has a key; the last backward sorts last.
  int64_t max = std::numeric_limits<int64_t>::max();
  std::optional<ScheduleNode> node =
      ScheduleNode::parse("B9223372036854775807.L9223372036854775807.attn");
  ASSERT_TRUE(node);
  ScheduleNode first{false, 0, ScheduleNode::Kind::PreProcess, 0};
  EXPECT_TRUE(getCombined1F1BKey(first, max) < getCombined1F1BKey(*node, max));
  EXPECT_EQ(getCombined1F1BKey(*node, max).step, uint64_t(max) + 1);
}

TEST(Combined1F1BTest, TextRoundTrips) {
  for (const ScheduleNode &node : getCombined1F1BOrder(3, 12)) {
    std::optional<ScheduleNode> parsed = ScheduleNode::parse(node.str());
    ASSERT_TRUE(parsed) << node.str();
    EXPECT_TRUE(*parsed == node) << node.str();
  }
  for (const char *bad :
       {"", "F", "F0", "X0.attn", "F0.attn", "F0.L1.pre_process",
        "F01.pre_process", "F0.L01.mlp", "F0.L.mlp", "F-1.pre_process", "F0.L-1.mlp",
        "F0.L1.mlp.x",
        "F0.L1.expert", "f0.pre_process"})
    EXPECT_FALSE(ScheduleNode::parse(bad)) << bad;
}

} // namespace
