//===- Suggest.cpp - The closest of a set of names ------------------------===//

#include "ddp/Support/Suggest.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

std::optional<StringRef> ddp::findClosestName(StringRef name,
                                              ArrayRef<StringRef> candidates) {
  unsigned allowed = std::max<unsigned>(1, name.size() / 3);
  std::optional<StringRef> best;
  unsigned bestDistance = allowed + 1;
  for (StringRef candidate : candidates) {
    unsigned distance = name.edit_distance(candidate, /*AllowReplacements=*/true,
                                           /*MaxEditDistance=*/allowed);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

std::string ddp::didYouMean(StringRef name, ArrayRef<StringRef> candidates) {
  if (std::optional<StringRef> closest = findClosestName(name, candidates))
    return formatv("; did you mean '{0}'?", *closest).str();
  return "";
}
