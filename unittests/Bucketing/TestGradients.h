//===- TestGradients.h - Gradient lists for the policy tests ----*- C++ -*-===//

#ifndef DDP_UNITTESTS_BUCKETING_TESTGRADIENTS_H
#define DDP_UNITTESTS_BUCKETING_TESTGRADIENTS_H

#include "ddp/Bucketing/BucketLayout.h"
#include "ddp/Timing/CostModel.h"

#include <vector>

namespace ddp::bucketing::testing {

/// A dense gradient named `name` over a group "dp" of `groupSize` ranks.
inline Gradient makeGradient(std::string name, int64_t numel,
                             ElementType type = ElementType::F32,
                             int64_t groupSize = 8) {
  Gradient gradient;
  gradient.name = std::move(name);
  gradient.numel = numel;
  gradient.paramType = type;
  gradient.reduceType = type;
  gradient.group = "dp";
  gradient.groupSize = groupSize;
  return gradient;
}

/// Numbers declaration order as given and returns the gradients in reverse,
/// which is the ready order of a model whose backward pass visits its
/// parameters in reverse registration order (Megatron's assumption).
inline std::vector<Gradient> readyInReverse(std::vector<Gradient> declared) {
  for (auto [index, gradient] : llvm::enumerate(declared))
    gradient.declarationIndex = index;
  return std::vector<Gradient>(declared.rbegin(), declared.rend());
}

/// Names of the gradients of each bucket, in offset order.
inline std::vector<std::vector<std::string>>
bucketNames(const BucketLayout &layout, llvm::ArrayRef<Gradient> gradients) {
  std::vector<std::vector<std::string>> names;
  for (const Bucket &bucket : layout.buckets) {
    names.emplace_back();
    for (const BucketEntry &entry : bucket.entries)
      names.back().push_back(gradients[entry.gradient].name);
  }
  return names;
}

/// Ready indices of the gradients of each bucket, in offset order.
inline std::vector<std::vector<size_t>>
bucketIndices(const BucketLayout &layout) {
  std::vector<std::vector<size_t>> indices;
  for (const Bucket &bucket : layout.buckets) {
    indices.emplace_back();
    for (const BucketEntry &entry : bucket.entries)
      indices.back().push_back(entry.gradient);
  }
  return indices;
}

/// A cost model with linear bucket costs for f32 buckets of `numel`
/// elements: a ring all-reduce over `kPairInNode` takes `latency +
/// secondsPerElement * numel` and over `kPairAcrossNodes` twice that; a
/// scaling kernel takes `scaleOverhead + scaleSecondsPerElement * numel`.
inline timing::CostModel makeLinearCostModel(double latency,
                                          double secondsPerElement,
                                          double scaleOverhead = 0,
                                          double scaleSecondsPerElement = 0) {
  timing::HardwareProfile profile;
  profile.name = "linear";
  profile.gpusPerNode = 8;
  profile.collectiveBaseLatency = latency;
  profile.interNodeHopLatency = latency / 2;
  profile.intraNodeBusBandwidth = 4 / secondsPerElement;
  profile.nicBusBandwidth = 2 / secondsPerElement;
  profile.nicsPerNode = 8;
  profile.treeBandwidthFraction = 1;
  // A scale reads and writes 8 bytes per f32 element.
  profile.memoryBandwidth =
      scaleSecondsPerElement > 0 ? 8 / scaleSecondsPerElement : 1e30;
  profile.memoryEfficiency = 1;
  profile.kernelOverhead = scaleOverhead;
  return timing::CostModel(profile, timing::CollectiveAlgorithm::Ring);
}
inline constexpr timing::GroupPlacement kPairInNode{2, 1, 2};
inline constexpr timing::GroupPlacement kPairAcrossNodes{2, 2, 1};

} // namespace ddp::bucketing::testing

#endif // DDP_UNITTESTS_BUCKETING_TESTGRADIENTS_H
