//===- CostModelTest.cpp - Cost formulas against hand-computed cases ------===//

#include "ddp/Timing/CostModel.h"
#include "ddp/Sim/Simulator.h"

#include "TestProfiles.h"

#include "gtest/gtest.h"

using namespace ddp::sim;
using namespace ddp;
using namespace ddp::timing;
using namespace ddp::timing::test;

namespace {
constexpr double kGiB = 1073741824.0;

TEST(CostModel, BusFactorsAreThoseOfNcclTests) {
  EXPECT_DOUBLE_EQ(getBusFactor(CollectiveKind::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(getBusFactor(CollectiveKind::ReduceScatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(getBusFactor(CollectiveKind::AllGather, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(getBusFactor(CollectiveKind::Send, 4), 1.0);
  EXPECT_DOUBLE_EQ(getBusFactor(CollectiveKind::Recv, 4), 1.0);
  EXPECT_DOUBLE_EQ(getBusFactor(CollectiveKind::Broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(getBusFactor(CollectiveKind::AllToAll, 8), 7.0 / 8);
}

TEST(CostModel, AllToAllInOneNodeMovesAllButTheKeptBlock) {
  CostModel model(makeWorkedExampleProfile(), CollectiveAlgorithm::Ring);
  CollectiveCost cost = model.collectiveCost(
      CollectiveKind::AllToAll, kGiB, GroupPlacement::consecutive(8, 8));
  // 7/8 of 1 GiB at 100 GB/s, straight to each peer: 10 us + one 2 us hop.
  EXPECT_DOUBLE_EQ(cost.transfer, 7.0 / 8 * kGiB / 100e9);
  EXPECT_DOUBLE_EQ(cost.latency, 12e-6);
  EXPECT_DOUBLE_EQ(cost.busBandwidth, 100e9);
  // The tree is an all-reduce's; an all-to-all is never priced as one.
  CollectiveCost automatic =
      CostModel(makeWorkedExampleProfile(), CollectiveAlgorithm::Auto)
          .collectiveCost(CollectiveKind::AllToAll, kGiB,
                          GroupPlacement::consecutive(8, 8));
  EXPECT_DOUBLE_EQ(automatic.total(), cost.total());
}

/// A counted all-to-all is priced as the all-to-all of the bytes it is
/// costed at (the simulator scales them by ddp.routed_fill), within a node
/// and across nodes, where the all-to-all's per-GPU network part applies.
TEST(CostModel, CountedAllToAllIsPricedAsAnAllToAll) {
  CostModel model(makeWorkedExampleProfile(), CollectiveAlgorithm::Auto);
  for (GroupPlacement group : {GroupPlacement::consecutive(8, 8),
                               GroupPlacement::consecutive(16, 8),
                               GroupPlacement{4, 4, 1}}) {
    CollectiveCost counted =
        model.collectiveCost(CollectiveKind::AllToAllV, kGiB, group);
    CollectiveCost whole =
        model.collectiveCost(CollectiveKind::AllToAll, kGiB, group);
    EXPECT_DOUBLE_EQ(counted.total(), whole.total());
    EXPECT_DOUBLE_EQ(
        model.collectiveTransferBound(CollectiveKind::AllToAllV, kGiB, group),
        model.collectiveTransferBound(CollectiveKind::AllToAll, kGiB, group));
  }
}

/// nccl-tests' bus bandwidth of an all-to-all the model prices, total time
/// included: algbw x (n - 1) / n.
double allToAllBusBandwidth(llvm::StringRef profile, double bytes,
                            GroupPlacement group) {
  CollectiveCost cost =
      CostModel(cantFail(getBuiltinHardwareProfile(profile)),
                CollectiveAlgorithm::Auto)
          .collectiveCost(CollectiveKind::AllToAll, bytes, group);
  double n = double(group.ranks);
  return bytes / cost.total() * (n - 1) / n;
}

/// Published alltoall_perf runs (docs/CostModel.md has the table and the
/// links); the model is within 15 % of each.
TEST(CostModel, AllToAllAgainstPublishedRuns) {
  struct Published {
    const char *what, *profile;
    double bytes, busBandwidth;
    GroupPlacement group;
  } runs[] = {
      // microsoft/superbenchmark tests/data/nccl_alltoall.log, 8 x A100.
      {"8 x A100, 8 GB", "a100-sxm-ib200", 8589934592.0, 224.31e9,
       GroupPlacement::consecutive(8, 8)},
      {"8 x A100, 1 GB", "a100-sxm-ib200", 1073741824.0, 216.71e9,
       GroupPlacement::consecutive(8, 8)},
      // NVIDIA/nccl#2169, 4 x H100 80GB HBM3 in one node, 500 MB.
      {"4 x H100, 500 MB", "h100-sxm-ib400", 524288000.0, 334.90e9,
       GroupPlacement::consecutive(4, 8)},
      // NVIDIA/nccl-tests#355, 2 nodes of 8 H100 and 8 CX7 each, 4 GB.
      {"2 x 8 H100, 4 GB", "h100-sxm-ib400", 4294967296.0, 80e9,
       GroupPlacement::consecutive(16, 8)},
  };
  for (const Published &run : runs) {
    double model = allToAllBusBandwidth(run.profile, run.bytes, run.group);
    EXPECT_NEAR(model / run.busBandwidth, 1.0, 0.15) << run.what;
  }
}

TEST(CostModel, AllToAllAcrossNodesIsBoundByEachGpusNic) {
  CostModel model(makeWorkedExampleProfile(), CollectiveAlgorithm::Ring);
  // 16 ranks on 2 nodes: each GPU sends the 8/16 of its bytes meant for the
  // other node through its own 25 GB/s NIC (NVLink's 7/16 at 100 GB/s
  // takes less); one hop crosses the network: 10 us + 20 us.
  CollectiveCost cost = model.collectiveCost(
      CollectiveKind::AllToAll, kGiB, GroupPlacement::consecutive(16, 8));
  EXPECT_DOUBLE_EQ(cost.transfer, 0.5 * kGiB / 25e9);
  EXPECT_DOUBLE_EQ(cost.latency, 30e-6);
  // nccl-tests' bus bandwidth: algbw x 15/16 = 25 GB/s x 15/8.
  EXPECT_DOUBLE_EQ(cost.busBandwidth, 25e9 * 15 / 8);
  // A ring all-gather of the same bytes counts all 8 NICs of a node.
  CollectiveCost ring = model.collectiveCost(
      CollectiveKind::AllGather, kGiB, GroupPlacement::consecutive(16, 8));
  EXPECT_LT(ring.transfer, cost.transfer);
  // Fewer NICs than GPUs: 2 NICs shared by 8 GPUs, 6.25 GB/s each.
  ddp::timing::HardwareProfile shared = makeWorkedExampleProfile();
  shared.nicsPerNode = 2;
  EXPECT_DOUBLE_EQ(CostModel(shared, CollectiveAlgorithm::Ring)
                       .collectiveCost(CollectiveKind::AllToAll, kGiB,
                                       GroupPlacement::consecutive(16, 8))
                       .transfer,
                   0.5 * kGiB / 6.25e9);
  // One rank per node: everything but the kept block crosses the network.
  CollectiveCost spread = model.collectiveCost(
      CollectiveKind::AllToAll, kGiB, GroupPlacement{4, 4, 1});
  EXPECT_DOUBLE_EQ(spread.transfer, 0.75 * kGiB / 25e9);
}

TEST(CostModel, BroadcastIsAChainFromTheRoot) {
  CostModel model(makeWorkedExampleProfile(), CollectiveAlgorithm::Ring);
  CollectiveCost cost = model.collectiveCost(
      CollectiveKind::Broadcast, kGiB, GroupPlacement::consecutive(8, 8));
  // Every rank receives 1 GiB once at 100 GB/s; the last after 7 hops:
  // 10 us + 7 * 2 us.
  EXPECT_DOUBLE_EQ(cost.transfer, kGiB / 100e9);
  EXPECT_DOUBLE_EQ(cost.latency, 24e-6);
  // Over two nodes one hop of the chain crosses the network (20 us).
  CollectiveCost across = model.collectiveCost(
      CollectiveKind::Broadcast, kGiB, GroupPlacement::consecutive(16, 8));
  EXPECT_DOUBLE_EQ(across.latency, (10 + 14 * 2 + 20) * 1e-6);
}

TEST(CostModel, RingAllReduceOf1GiBOver8RanksInOneNode) {
  CostModel model(makeWorkedExampleProfile(), CollectiveAlgorithm::Ring);
  GroupPlacement group = GroupPlacement::consecutive(8, 8);
  EXPECT_EQ(group.nodes, 1);
  CollectiveCost cost =
      model.collectiveCost(CollectiveKind::AllReduce, kGiB, group);
  // 2*7/8 * 1 GiB at 100 GB/s = 18.790 ms; 10 us + 14 hops * 2 us = 38 us.
  EXPECT_DOUBLE_EQ(cost.transfer, 1.75 * kGiB / 100e9);
  EXPECT_DOUBLE_EQ(cost.latency, 38e-6);
  EXPECT_NEAR(cost.total(), 0.01882848192, 1e-12);
  EXPECT_EQ(cost.algorithm, CollectiveAlgorithm::Ring);
}

TEST(CostModel, RingAllReduceOverTwoNodesUsesTheNics) {
  CostModel model(makeWorkedExampleProfile(), CollectiveAlgorithm::Ring);
  GroupPlacement group = GroupPlacement::consecutive(16, 8);
  EXPECT_EQ(group.nodes, 2);
  EXPECT_EQ(group.ranksPerNode, 8);
  // 8 ranks per node cross the network on 8 NICs of 25 GB/s: 200 GB/s, more
  // than the 100 GB/s they share inside the node, which caps it.
  EXPECT_DOUBLE_EQ(model.busBandwidth(group), 100e9);
  CollectiveCost cost =
      model.collectiveCost(CollectiveKind::AllReduce, kGiB, group);
  // 30 ring steps, 2 of them across the network: 10 + 28*2 + 2*20 = 106 us.
  EXPECT_DOUBLE_EQ(cost.latency, 106e-6);
  EXPECT_DOUBLE_EQ(cost.transfer, 2.0 * 15 / 16 * kGiB / 100e9);
}

TEST(CostModel, OneRankPerNodeGetsOneNic) {
  CostModel model(makeWorkedExampleProfile(), CollectiveAlgorithm::Ring);
  // dp=4 across nodes filled by tp=8: one rank of the group per node.
  GroupPlacement group = placeGroup({4, 8}, {0}, 8);
  EXPECT_EQ(group.ranks, 4);
  EXPECT_EQ(group.nodes, 4);
  EXPECT_EQ(group.ranksPerNode, 1);
  EXPECT_DOUBLE_EQ(model.busBandwidth(group), 25e9);
  CollectiveCost cost =
      model.collectiveCost(CollectiveKind::AllReduce, kGiB, group);
  // 6 ring steps, all across the network: 10 + 6*20 = 130 us.
  EXPECT_DOUBLE_EQ(cost.latency, 130e-6);
  EXPECT_DOUBLE_EQ(cost.transfer, 1.5 * kGiB / 25e9);
}

TEST(CostModel, TwoRanksPerNodeUseTwoNics) {
  CostModel model(makeWorkedExampleProfile());
  // (dp=8, tp=4) on 8-GPU nodes: the dp group has ranks 0,4,8,...: two per
  // node, on four nodes.
  GroupPlacement group = placeGroup({8, 4}, {0}, 8);
  EXPECT_EQ(group.ranks, 8);
  EXPECT_EQ(group.nodes, 4);
  EXPECT_EQ(group.ranksPerNode, 2);
  EXPECT_DOUBLE_EQ(model.busBandwidth(group), 50e9);
}

TEST(CostModel, GroupPlacementOfTensorParallelAxis) {
  GroupPlacement tp = placeGroup({4, 8}, {1}, 8);
  EXPECT_EQ(tp.ranks, 8);
  EXPECT_EQ(tp.nodes, 1);
  EXPECT_EQ(tp.ranksPerNode, 8);
  GroupPlacement world = placeGroup({4, 8}, {0, 1}, 8);
  EXPECT_EQ(world.ranks, 32);
  EXPECT_EQ(world.nodes, 4);
  EXPECT_EQ(world.ranksPerNode, 8);
}

TEST(CostModel, TreeFormula) {
  CostModel model(makeWorkedExampleProfile(), CollectiveAlgorithm::Tree);
  GroupPlacement group = placeGroup({64, 8}, {0}, 8);
  ASSERT_EQ(group.nodes, 64);
  CollectiveCost cost =
      model.collectiveCost(CollectiveKind::AllReduce, 1e6, group);
  EXPECT_EQ(cost.algorithm, CollectiveAlgorithm::Tree);
  // Depth log2(64) = 6 between nodes, no chain inside (1 rank per node):
  // 10 + 2 * (0 * 2 + 6 * 20) = 250 us; 2 * 1 MB at 0.9 * 25 GB/s.
  EXPECT_DOUBLE_EQ(cost.latency, 250e-6);
  EXPECT_DOUBLE_EQ(cost.transfer, 2e6 / (0.9 * 25e9));
}

TEST(CostModel, TreeWinsSmallMessagesAcrossManyNodesRingWinsLargeOnes) {
  CostModel model(makeWorkedExampleProfile());
  GroupPlacement wide = placeGroup({64, 8}, {0}, 8);
  // 1 MB over 64 nodes: the ring pays 126 network hops (2.53 ms), the tree 12.
  CollectiveCost ring = model.collectiveCost(CollectiveKind::AllReduce, 1e6,
                                             wide, CollectiveAlgorithm::Ring);
  CollectiveCost tree = model.collectiveCost(CollectiveKind::AllReduce, 1e6,
                                             wide, CollectiveAlgorithm::Tree);
  EXPECT_LT(tree.total(), ring.total());
  EXPECT_EQ(
      model.collectiveCost(CollectiveKind::AllReduce, 1e6, wide).algorithm,
      CollectiveAlgorithm::Tree);

  // 1 GiB in one node of 8: the ring's 2*7/8 beats the tree's 2/0.9.
  GroupPlacement node = GroupPlacement::consecutive(8, 8);
  CollectiveCost auto1 =
      model.collectiveCost(CollectiveKind::AllReduce, kGiB, node);
  EXPECT_EQ(auto1.algorithm, CollectiveAlgorithm::Ring);
  EXPECT_LT(auto1.total(), model
                               .collectiveCost(CollectiveKind::AllReduce, kGiB,
                                               node, CollectiveAlgorithm::Tree)
                               .total());
}

TEST(CostModel, ReduceScatterAndAllGatherMoveHalfOfAnAllReduce) {
  CostModel model(makeWorkedExampleProfile());
  GroupPlacement group = GroupPlacement::consecutive(8, 8);
  CollectiveCost rs =
      model.collectiveCost(CollectiveKind::ReduceScatter, kGiB, group);
  CollectiveCost ag =
      model.collectiveCost(CollectiveKind::AllGather, kGiB, group);
  EXPECT_DOUBLE_EQ(rs.transfer, 7.0 / 8 * kGiB / 100e9);
  EXPECT_DOUBLE_EQ(ag.transfer, rs.transfer);
  // 7 steps: 10 + 7 * 2 = 24 us. Only all-reduce has a tree.
  EXPECT_DOUBLE_EQ(rs.latency, 24e-6);
  EXPECT_EQ(model
                .collectiveCost(CollectiveKind::ReduceScatter, 1e3, group,
                                CollectiveAlgorithm::Tree)
                .algorithm,
            CollectiveAlgorithm::Ring);
}

TEST(CostModel, SendRecvCrossingNodesPaysOneNetworkHop) {
  CostModel model(makeWorkedExampleProfile());
  CollectiveCost cost = model.collectiveCost(CollectiveKind::Send, 1e6,
                                             placeGroup({4, 8}, {0}, 8));
  EXPECT_DOUBLE_EQ(cost.latency, 30e-6);
  EXPECT_DOUBLE_EQ(cost.transfer, 1e6 / 25e9);
}

TEST(CostModel, SingleRankGroupCostsNothing) {
  CostModel model(makeWorkedExampleProfile());
  EXPECT_EQ(model.collectiveTime(CollectiveKind::AllReduce, kGiB,
                                 GroupPlacement::consecutive(1, 8)),
            0.0);
}

TEST(CostModel, TransferBoundHasNoLatency) {
  CostModel model(makeWorkedExampleProfile());
  GroupPlacement group = GroupPlacement::consecutive(8, 8);
  EXPECT_DOUBLE_EQ(
      model.collectiveTransferBound(CollectiveKind::AllReduce, kGiB, group),
      1.75 * kGiB / 100e9);
}

TEST(CostModel, GemmEfficiencyQuantizesTilesAndWaves) {
  HardwareProfile h100 = cantFail(getBuiltinHardwareProfile("h100-sxm-ib400"));
  CostModel model(h100);
  // 1024x1024 output = 64 tiles of 128x128 on 132 SMs: one wave, 64/132 of
  // the machine busy; K = 1024 reaches 1024 / (1024 + 64) of the tile rate.
  double efficiency =
      0.75 * (1024.0 * 1024) / (132 * 128 * 128) * (1024.0 / 1088);
  EXPECT_DOUBLE_EQ(model.gemmEfficiency(1024, 1024, 1024), efficiency);
  EXPECT_NEAR(efficiency, 0.3422, 1e-4);
  // 2*1024^3 flops at 989.4 TFLOP/s * efficiency, plus 2 us overhead.
  EXPECT_DOUBLE_EQ(model.gemmTime(1024, 1024, 1024, ElementType::BF16),
                   2.0 * 1024 * 1024 * 1024 / (989.4e12 * efficiency) + 2e-6);
  // 132 full tiles, exactly one wave: only the K term is lost.
  EXPECT_DOUBLE_EQ(model.gemmEfficiency(128 * 12, 128 * 11, 4096),
                   0.75 * 4096.0 / (4096 + 64));
}

TEST(CostModel, GemmIsMemoryBoundWhenKIsTiny) {
  CostModel model(makeUnitProfile());
  // 4096x4096x1 in f32: 32 Mflop take 33.5 us at 1 TFLOP/s, but reading and
  // writing (4096 + 4096 + 4096^2) * 4 bytes takes 67.1 us at 1 TB/s.
  double bytes = (4096.0 + 4096 + 4096.0 * 4096) * 4;
  EXPECT_DOUBLE_EQ(model.gemmTime(4096, 4096, 1, ElementType::F32),
                   bytes / 1e12);
}

TEST(CostModel, ComputeRoofline) {
  CostModel model(makeUnitProfile());
  EXPECT_DOUBLE_EQ(model.computeTime(1e9, 1e6, ElementType::BF16), 1e-3);
  EXPECT_DOUBLE_EQ(model.computeTime(1e3, 2e9, ElementType::BF16), 2e-3);
  EXPECT_DOUBLE_EQ(model.memoryTime(5e8), 0.5e-3);
}

TEST(CostModel, PeakDependsOnDtype) {
  CostModel model(cantFail(getBuiltinHardwareProfile("a100-sxm-ib200")));
  // fp32 GEMMs run on CUDA cores (19.5 TFLOP/s), bf16 on tensor cores (312).
  double f32 = model.gemmTime(8192, 8192, 8192, ElementType::F32);
  double bf16 = model.gemmTime(8192, 8192, 8192, ElementType::BF16);
  EXPECT_NEAR(f32 / bf16, 312 / 19.5, 0.01);
}

TEST(CostModel, Fp8GemmsRunAtTheFp8PeakWithOneByteOperands) {
  HardwareProfile unit = makeUnitProfile();
  unit.fp8PeakFlops = 2e12;
  CostModel native(unit);
  CostModel fp8(unit, CollectiveAlgorithm::Auto, GemmPrecision::FP8);
  EXPECT_EQ(fp8.getGemmPrecision(), GemmPrecision::FP8);
  // Compute-bound bf16: 2 * 4096^3 flops at 1 TFLOP/s, or at 2 with FP8.
  double flops = 2.0 * 4096 * 4096 * 4096;
  EXPECT_DOUBLE_EQ(native.gemmTime(4096, 4096, 4096, ElementType::BF16),
                   flops / 1e12);
  EXPECT_DOUBLE_EQ(fp8.gemmTime(4096, 4096, 4096, ElementType::F16),
                   flops / 2e12);
  // Memory-bound (K = 1): A and B are read as 1-byte FP8, C written in bf16.
  EXPECT_DOUBLE_EQ(fp8.gemmTime(4096, 4096, 1, ElementType::BF16),
                   (4096.0 + 4096 + 4096.0 * 4096 * 2) / 1e12);
  // f32 and f64 GEMMs, and costed kernels such as attention, keep their
  // precision.
  EXPECT_DOUBLE_EQ(fp8.gemmTime(4096, 4096, 4096, ElementType::F32),
                   native.gemmTime(4096, 4096, 4096, ElementType::F32));
  EXPECT_DOUBLE_EQ(fp8.computeTime(1e9, 1e6, ElementType::BF16),
                   native.computeTime(1e9, 1e6, ElementType::BF16));
}

TEST(CostModel, Fp8PeakOfTheBuiltinHopperProfiles) {
  // H100/H200 SXM datasheets: 3,958 TFLOP/s FP8 with sparsity, half dense.
  for (llvm::StringRef name :
       {"h100-sxm-nvlink", "h100-sxm-ib400", "h200-sxm-ib400"})
    EXPECT_DOUBLE_EQ(cantFail(getBuiltinHardwareProfile(name)).fp8PeakFlops,
                     1978.9e12);
  EXPECT_EQ(cantFail(getBuiltinHardwareProfile("a100-sxm-ib200")).fp8PeakFlops,
            0);
}
} // namespace
