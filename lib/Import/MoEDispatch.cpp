//===- MoEDispatch.cpp - How Megatron sends tokens to experts -------------===//

#include "ddp/Import/MoEDispatch.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace ddp;

std::optional<MoEDispatcher> ddp::parseMoEDispatcher(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<MoEDispatcher>>(name)
      .Case("allgather", MoEDispatcher::AllGather)
      .Case("alltoall", MoEDispatcher::AllToAll)
      .Default(std::nullopt);
}

llvm::StringRef ddp::stringifyMoEDispatcher(MoEDispatcher dispatcher) {
  return dispatcher == MoEDispatcher::AllToAll ? "alltoall" : "allgather";
}

int64_t ddp::getExpertCapacity(const MoEDispatchConfig &config, int64_t tokens,
                               int64_t topk, int64_t experts) {
  int64_t share = (tokens * topk + experts - 1) / experts;
  if (!config.capacityFactor)
    return share;
  double capacity = std::ceil(double(tokens) * double(topk) /
                              double(experts) * *config.capacityFactor);
  int64_t rows = std::max<int64_t>(1, int64_t(capacity));
  // Padded, every expert takes exactly its capacity; otherwise the tokens
  // past it are dropped, and under balanced routing an expert takes its
  // share when that is less.
  return config.padToCapacity ? rows : std::min(rows, share);
}

int64_t ddp::getExpertBufferRows(const MoEDispatchConfig &config,
                                 int64_t tokens, int64_t topk,
                                 int64_t experts) {
  if (!config.capacityFactor)
    return tokens;
  MoEDispatchConfig padded = config;
  padded.padToCapacity = true;
  int64_t capacity = getExpertCapacity(padded, tokens, topk, experts);
  // Unpadded, an expert holds at most every token.
  return config.padToCapacity ? capacity : std::min(capacity, tokens);
}
