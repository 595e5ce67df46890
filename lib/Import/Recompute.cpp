//===- Recompute.cpp - Activation recomputation, as Megatron's ------------===//
//
// NVIDIA/Megatron-LM d98e8a64: megatron/core/transformer/transformer_config.py
// (the checks) and megatron/core/recompute.py (the groups).
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/Recompute.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace ddp;

std::optional<RecomputeGranularity>
ddp::parseRecomputeGranularity(StringRef name) {
  return StringSwitch<std::optional<RecomputeGranularity>>(name)
      .Cases({"none", "None"}, RecomputeGranularity::None)
      .Case("full", RecomputeGranularity::Full)
      .Case("selective", RecomputeGranularity::Selective)
      .Default(std::nullopt);
}

StringRef ddp::stringifyRecomputeGranularity(RecomputeGranularity value) {
  switch (value) {
  case RecomputeGranularity::None:
    return "none";
  case RecomputeGranularity::Full:
    return "full";
  case RecomputeGranularity::Selective:
    return "selective";
  }
  return "";
}

std::optional<RecomputeMethod> ddp::parseRecomputeMethod(StringRef name) {
  return StringSwitch<std::optional<RecomputeMethod>>(name)
      .Case("uniform", RecomputeMethod::Uniform)
      .Case("block", RecomputeMethod::Block)
      .Default(std::nullopt);
}

StringRef ddp::stringifyRecomputeMethod(RecomputeMethod value) {
  return value == RecomputeMethod::Uniform ? "uniform" : "block";
}

Error ddp::checkRecompute(const RecomputeConfig &config, StringRef &field) {
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  field = config.method ? "recompute_method" : "recompute_num_layers";
  if (config.granularity == RecomputeGranularity::None) {
    // Megatron ignores them; a config that gives them without a
    // granularity most likely forgot it.
    if (config.method || config.numLayers)
      return error("recompute_method and recompute_num_layers do nothing "
                   "without recompute_granularity full; set it, or drop "
                   "them");
    return Error::success();
  }
  if (config.isSelective()) {
    // arguments.py L1425-1428, transformer_config.py L1926-1931.
    if (config.method || config.numLayers)
      return error("recompute_granularity selective recomputes the core "
                   "attention of every layer and takes no recompute_method "
                   "or recompute_num_layers; drop them, or use full");
    return Error::success();
  }
  // transformer_config.py L1908-1925.
  field = "recompute_granularity";
  if (!config.method)
    return error("recompute_granularity full needs recompute_method uniform "
                 "(every layer, in groups of recompute_num_layers) or block "
                 "(the first recompute_num_layers layers of each model "
                 "chunk)");
  field = "recompute_num_layers";
  if (!config.numLayers)
    return error("recompute_granularity full needs recompute_num_layers: "
                 "the layers of a group (uniform) or the layers recomputed "
                 "per model chunk (block)");
  // Megatron's uniform loop would not advance with 0 layers per group; a
  // count past a chunk's layers is clamped, as its loops clamp it.
  if (*config.method == RecomputeMethod::Uniform && *config.numLayers < 1)
    return error("recompute_num_layers is 0, but recompute_method uniform "
                 "needs groups of at least 1 layer");
  return Error::success();
}

std::vector<std::pair<int64_t, int64_t>>
ddp::getRecomputeGroups(const RecomputeConfig &config, int64_t layers) {
  std::vector<std::pair<int64_t, int64_t>> groups;
  if (!config.isFull() || !config.method || !config.numLayers)
    return groups;
  int64_t count = *config.numLayers;
  if (*config.method == RecomputeMethod::Uniform) {
    for (int64_t first = 0; count > 0 && first < layers; first += count)
      groups.push_back({first, std::min(first + count, layers)});
  } else {
    for (int64_t layer = 0; layer < std::min(count, layers); ++layer)
      groups.push_back({layer, layer + 1});
  }
  return groups;
}
