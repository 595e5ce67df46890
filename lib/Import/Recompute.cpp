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
      .Cases("none", "None", RecomputeGranularity::None)
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

Error ddp::checkRecompute(const RecomputeConfig &config,
                          int64_t layersPerRank, StringRef &field) {
  field = "recompute_granularity";
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  if (config.granularity == RecomputeGranularity::None) {
    field = config.method ? "recompute_method" : "recompute_num_layers";
    if (config.method || config.numLayers)
      return error("recompute_method and recompute_num_layers need "
                   "recompute_granularity full; set it, or drop them");
    return Error::success();
  }
  if (config.isSelective()) {
    // Megatron's arguments.py L1425-1428 and transformer_config.py
    // L1926-1931.
    if (config.method || config.numLayers)
      return error("recompute_granularity selective recomputes the core "
                   "attention of every layer and takes no recompute_method "
                   "or recompute_num_layers; drop them, or use full");
    return Error::success();
  }
  if (!config.method)
    return error("recompute_granularity full needs recompute_method uniform "
                 "(every layer, in groups of recompute_num_layers) or block "
                 "(the first recompute_num_layers layers of each model "
                 "chunk)");
  field = "recompute_num_layers";
  if (!config.numLayers)
    return error(formatv("recompute_granularity full needs "
                         "recompute_num_layers, between 1 and the layers of a "
                         "pipeline rank ({0})",
                         layersPerRank));
  int64_t least = *config.method == RecomputeMethod::Uniform ? 1 : 0;
  if (*config.numLayers < least || *config.numLayers > layersPerRank)
    return error(formatv("recompute_num_layers is {0}, but with "
                         "recompute_method {1} it must lie in [{2}, {3}], "
                         "{3} being the layers of a pipeline rank",
                         *config.numLayers,
                         stringifyRecomputeMethod(*config.method), least,
                         layersPerRank));
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
