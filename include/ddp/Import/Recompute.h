//===- Recompute.h - Activation recomputation, as Megatron's ----*- C++ -*-===//
//
// Megatron's activation recomputation (TransformerConfig's
// recompute_granularity, recompute_method, recompute_num_layers,
// recompute_modules): `full` reruns checkpointed transformer layers'
// forward in the backward and keeps only each checkpointed group's input;
// `selective` reruns the submodules recompute_modules names (the core
// attention by default). The importer builds the rerun forward into the step, so the
// simulator prices it and the runtime computes it; the activation-memory
// analysis counts what recomputation keeps.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_RECOMPUTE_H
#define DDP_IMPORT_RECOMPUTE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ddp {

enum class RecomputeGranularity { None, Full, Selective };
enum class RecomputeMethod { Uniform, Block };

/// Megatron's values: `full`, `selective`, and `none` (its None).
std::optional<RecomputeGranularity>
parseRecomputeGranularity(llvm::StringRef name);
llvm::StringRef stringifyRecomputeGranularity(RecomputeGranularity value);
/// `uniform`, `block`.
std::optional<RecomputeMethod> parseRecomputeMethod(llvm::StringRef name);
llvm::StringRef stringifyRecomputeMethod(RecomputeMethod value);

/// The submodules `selective` reruns (Megatron's recompute_modules) that
/// ddp builds.
enum class RecomputeModule {
  CoreAttention, // core_attn
  Mlp,           // mlp: a dense layer's MLP, from its input
  LayerNorm,     // layernorm: both norms' outputs, discarded
  Moe,           // moe: an MoE layer, from its input
  SharedExperts, // shared_experts: an MoE layer's shared experts
};

/// Megatron's name of a module ddp builds; nullopt for another.
std::optional<RecomputeModule> parseRecomputeModule(llvm::StringRef name);

struct RecomputeConfig {
  RecomputeGranularity granularity = RecomputeGranularity::None;
  /// Unset: none given (Megatron requires one for `full`).
  std::optional<RecomputeMethod> method;
  /// Uniform: layers per checkpointed group; block: layers recomputed per
  /// model chunk of a pipeline rank. Unset: none given. Past a chunk's
  /// layers it is clamped, as Megatron's loops clamp it.
  std::optional<int64_t> numLayers;
  /// recompute_modules, as given (checked by checkRecompute); unset:
  /// Megatron's default, core_attn.
  std::optional<std::vector<std::string>> modules = std::nullopt;

  bool isFull() const { return granularity == RecomputeGranularity::Full; }
  bool isSelective() const {
    return granularity == RecomputeGranularity::Selective;
  }
  /// Whether `selective` reruns `module`.
  bool recomputes(RecomputeModule module) const;
};

/// TransformerConfig.__post_init__'s checks (transformer_config.py
/// L1901-1931, and on recompute_modules L1943-1998 but the shared experts'
/// with their overlap, which ModelConfig checks), plus ddp's: a method,
/// layer count or module list without the granularity that reads it
/// (which Megatron ignores), uniform groups of 0 layers (which its loop
/// would never leave), and modules of what ddp does not build. Sets
/// `field` to the field an error is about.
llvm::Error checkRecompute(const RecomputeConfig &config,
                           llvm::StringRef &field);

/// The checkpointed groups of a model chunk of `layers` layers, as
/// [first, end) indices into the chunk (Megatron's
/// `_checkpointed_forward`, megatron/core/recompute.py L157-179): uniform
/// splits every layer into groups of numLayers; block checkpoints the first
/// numLayers layers one by one and keeps the others' activations. Empty
/// without full recomputation.
std::vector<std::pair<int64_t, int64_t>>
getRecomputeGroups(const RecomputeConfig &config, int64_t layers);

} // namespace ddp

#endif // DDP_IMPORT_RECOMPUTE_H
