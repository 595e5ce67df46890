//===- SizePolicy.cpp - A plain element or byte budget per bucket ---------===//

#include "ddp/Bucketing/Policies.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <map>

using namespace ddp::bucketing;

llvm::Expected<BucketLayout>
ddp::bucketing::computeSizeLayout(llvm::ArrayRef<Gradient> gradients,
                                  const SizeOptions &options) {
  if (llvm::Error error = validateGradients(gradients))
    return std::move(error);
  if (options.budget < 1)
    return llvm::createStringError("the bucket budget must be positive, got "
                                   "%lld",
                                   static_cast<long long>(options.budget));
  struct Accumulator {
    std::vector<size_t> members;
    int64_t size = 0;
  };
  using StreamKey = std::pair<ElementType, std::string>;
  llvm::MapVector<StreamKey, Accumulator, std::map<StreamKey, unsigned>>
      accumulators;
  BucketLayout layout;
  auto close = [&](Accumulator &accumulator) {
    layout.buckets.push_back(
        layOutBucket(gradients, accumulator.members, options.padding));
    accumulator = Accumulator();
  };
  for (auto [index, gradient] : llvm::enumerate(gradients)) {
    Accumulator &accumulator =
        accumulators[{gradient.reduceType, gradient.group}];
    accumulator.members.push_back(index);
    accumulator.size += options.unit == SizeOptions::Unit::Bytes
                            ? gradient.getBytes()
                            : gradient.numel;
    if (accumulator.size >= options.budget)
      close(accumulator);
  }
  for (auto &[key, accumulator] : accumulators)
    if (!accumulator.members.empty())
      close(accumulator);
  sortByCompletion(layout.buckets);
  return layout;
}
