//===- Recompute.cpp - Activation recomputation, as Megatron's ------------===//
//
// NVIDIA/Megatron-LM d98e8a64: megatron/core/transformer/transformer_config.py
// (the checks), megatron/core/recompute.py (the groups) and
// megatron/core/transformer/transformer_layer.py L470-539 (which modules a
// layer reruns).
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/Recompute.h"

#include "llvm/ADT/STLExtras.h"
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

std::optional<RecomputeModule> ddp::parseRecomputeModule(StringRef name) {
  return StringSwitch<std::optional<RecomputeModule>>(name)
      .Case("core_attn", RecomputeModule::CoreAttention)
      .Case("mlp", RecomputeModule::Mlp)
      .Case("layernorm", RecomputeModule::LayerNorm)
      .Case("moe", RecomputeModule::Moe)
      .Case("shared_experts", RecomputeModule::SharedExperts)
      .Default(std::nullopt);
}

bool RecomputeConfig::recomputes(RecomputeModule module) const {
  if (!isSelective())
    return false;
  // TransformerConfig's default (transformer_config.py L1940-1941).
  if (!modules)
    return module == RecomputeModule::CoreAttention;
  return llvm::any_of(*modules, [&](const std::string &name) {
    return parseRecomputeModule(name) == module;
  });
}

/// Why ddp refuses a module name, or nullopt for one it builds.
static std::optional<std::string> getUnbuiltModuleReason(StringRef name) {
  if (parseRecomputeModule(name))
    return std::nullopt;
  // transformer_config.py L1964-1981.
  if (name == "moe_act")
    return std::string("moe_act reruns the experts' activation inside "
                       "Megatron's grouped GEMM (it requires "
                       "moe_grouped_gemm), which ddp does not build: it "
                       "keeps each expert's GEMMs apart, as SequentialMLP; "
                       "use moe to rerun the whole MoE layer");
  if (name == "mla_up_proj")
    return std::string("mla_up_proj needs multi_latent_attention, which ddp "
                       "does not model");
  if (name == "gdn_norm_out" || name == "gdp_in_proj" || name == "gdp_qkv" ||
      name == "mhc")
    return (name + " belongs to an experimental attention variant or "
                   "hyper-connections, which ddp does not model")
        .str();
  return ("unknown module '" + name +
          "'; Megatron's are core_attn, mlp, layernorm, moe, "
          "shared_experts, moe_act, mla_up_proj, gdn_norm_out, "
          "gdp_in_proj, gdp_qkv and mhc")
      .str();
}

Error ddp::checkRecompute(const RecomputeConfig &config, StringRef &field) {
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  if (config.modules) {
    field = "recompute_modules";
    // Megatron reads the list with selective only; a config that gives it
    // otherwise most likely forgot the granularity.
    if (!config.isSelective())
      return error("recompute_modules names what recompute_granularity "
                   "selective reruns and does nothing without it; set it, "
                   "or drop recompute_modules");
    for (const std::string &name : *config.modules)
      if (std::optional<std::string> reason = getUnbuiltModuleReason(name))
        return error(*reason);
  }
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
      return error("recompute_granularity selective reruns the modules of "
                   "recompute_modules in every layer and takes no "
                   "recompute_method or recompute_num_layers; drop them, or "
                   "use full");
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
