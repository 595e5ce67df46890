//===- Combined1F1B.h - Megatron's batch-level MoE overlap order -*- C++ -*-===//
//
// Megatron-Core's --overlap-moe-expert-parallel-comm without pipeline stages
// (combined_1f1b_schedule_for_no_pipelining): the forward of microbatch m
// runs beside the backward of microbatch m - 1, layer by layer and node by
// node, so that each one's expert all-to-alls run while the other computes.
// docs/ExpertParallelism.md cites the lines each rule comes from.
//
// Plain C++ on LLVM Support: the dialect checks `ddp.schedule_node` with it,
// the importer tags ops with it, and ddp-combined-1f1b orders by it.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_STAGES_COMBINED1F1B_H
#define DDP_STAGES_COMBINED1F1B_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ddp {

/// One of Megatron's schedule nodes (TransformerModelChunkSchedulePlan's
/// pre_process and post_process; a layer's TransformerLayerSchedulePlan
/// nodes), forward or backward, of one microbatch.
struct ScheduleNode {
  enum class Kind {
    /// The embedding (GPTModel._preprocess).
    PreProcess,
    /// Attention, the pre-MLP norm, the shared experts, the router and the
    /// permutation (pre_dispatch_computation).
    Attention,
    /// The dispatch all-to-alls (moe_dispatch: MoELayer.dispatch).
    Dispatch,
    /// From the expert-tensor-parallel gather to its reduce-scatter: the
    /// experts (mlp: MoELayer.routed_experts_compute).
    Mlp,
    /// The combine all-to-all, the unpermutation, the shared experts' sum
    /// and the residual; the final norm after the last layer (moe_combine).
    Combine,
    /// The output layer and the loss (GPTModel._postprocess).
    PostProcess,
  };
  bool backward = false;
  int64_t microbatch = 0;
  Kind kind = Kind::PreProcess;
  /// The layer, for the kinds a layer has; 0 otherwise.
  int64_t layer = 0;

  bool hasLayer() const {
    return kind != Kind::PreProcess && kind != Kind::PostProcess;
  }
  /// `F<m>.pre_process`, `F<m>.L<layer>.attn`, `.dispatch`, `.mlp`,
  /// `.combine`, `F<m>.post_process`; `B...` for the backward. The form
  /// the IR's `ddp.schedule_node` holds.
  std::string str() const;
  /// The inverse of str(); nullopt for anything else.
  static std::optional<ScheduleNode> parse(llvm::StringRef text);
  bool operator==(const ScheduleNode &other) const {
    return backward == other.backward && microbatch == other.microbatch &&
           kind == other.kind && layer == other.layer;
  }
};

/// A node's place in the combined order: nodes sort by it.
struct Combined1F1BKey {
  /// The combined step: microbatch m's forward runs in step m, its backward
  /// in step m + 1.
  uint64_t step = 0;
  /// 0: the forward's pre-process and the backward's post-process; 1: the
  /// layers; 2: the delayed weight gradients of the backward's layer 0,
  /// the forward's post-process and the backward's pre-process.
  int group = 0;
  /// The pair of layers (forward layer i beside backward layer
  /// lastLayer - i).
  uint64_t pair = 0;
  int slot = 0;

  bool operator<(const Combined1F1BKey &other) const {
    return std::tie(step, group, pair, slot) <
           std::tie(other.step, other.group, other.pair, other.slot);
  }
};

/// The key of `node` in a step whose last layer is `lastLayer` (>= every
/// node's layer). `tail` places the ops of a forward `combine` node that
/// follow its last collective: Megatron runs that node on its
/// communication stream beside the backward's `attn`, so they go after it.
/// `delayedWgrad` places the weight-gradient ops of a backward `mlp` or
/// `attn` node where delay_wgrad_compute runs them (backward_dw).
Combined1F1BKey getCombined1F1BKey(const ScheduleNode &node, int64_t lastLayer,
                                   bool tail = false,
                                   bool delayedWgrad = false);

/// Every node of a step with `microbatches` microbatches through `layers`
/// layers, in the combined order (sorted by getCombined1F1BKey): microbatch
/// 0's forward alone; then each later microbatch's forward beside the
/// previous one's backward; then the last backward alone.
std::vector<ScheduleNode> getCombined1F1BOrder(int64_t microbatches,
                                               int64_t layers);

/// The error for delay-wgrad-compute without the combined 1F1B, which
/// Megatron's TransformerConfig asserts (transformer_config.py L3073-3077).
constexpr llvm::StringLiteral kDelayWgradNeedsOverlap =
    "delay-wgrad-compute delays weight gradients within Megatron's "
    "combined 1F1B; set overlap-moe-expert-parallel-comm=true too, as "
    "Megatron requires";

} // namespace ddp

#endif // DDP_STAGES_COMBINED1F1B_H
