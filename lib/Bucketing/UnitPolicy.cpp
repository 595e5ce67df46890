//===- UnitPolicy.cpp - One bucket per FSDP unit --------------------------===//
//
// Megatron-FSDP groups parameters by (dtype, expert, requires_grad, unit)
// and gathers each unit's group as one (param_and_grad_buffer.py at
// Megatron-LM d98e8a64, L1789-1825): the bucket layout of
// data-parallel-sharding-strategy=optim_grads_params.
//
//===----------------------------------------------------------------------===//

#include "ddp/Bucketing/Policies.h"

#include "llvm/ADT/MapVector.h"

#include <map>
#include <tuple>

using namespace ddp::bucketing;

llvm::Expected<BucketLayout>
ddp::bucketing::computeUnitLayout(llvm::ArrayRef<Gradient> gradients,
                                  const PaddingOptions &padding) {
  if (llvm::Error error = validateGradients(gradients))
    return std::move(error);
  // The buffer, then the unit: a layer, every parameter outside the layers
  // (-1), or the shared embedding (-2).
  using Key = std::tuple<ElementType, ElementType, bool, std::string, int64_t,
                         int64_t>;
  llvm::MapVector<Key, std::vector<size_t>, std::map<Key, unsigned>> units;
  for (auto [index, gradient] : llvm::enumerate(gradients)) {
    int64_t unit = gradient.layer ? *gradient.layer
                   : gradient.sharedEmbedding ? -2
                                              : -1;
    units[{gradient.paramType, gradient.reduceType, gradient.expert,
           gradient.group, gradient.modelChunk, unit}]
        .push_back(index);
  }
  BucketLayout layout;
  for (auto &[key, members] : units)
    layout.buckets.push_back(layOutBucket(gradients, members, padding));
  sortByCompletion(layout.buckets);
  return layout;
}
