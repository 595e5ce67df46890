//===- TestGradients.h - Gradient lists for the policy tests ----*- C++ -*-===//

#ifndef DDP_UNITTESTS_BUCKETING_TESTGRADIENTS_H
#define DDP_UNITTESTS_BUCKETING_TESTGRADIENTS_H

#include "ddp/Bucketing/BucketLayout.h"

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

} // namespace ddp::bucketing::testing

#endif // DDP_UNITTESTS_BUCKETING_TESTGRADIENTS_H
