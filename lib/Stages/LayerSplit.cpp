//===- LayerSplit.cpp - Megatron's split of layers into stages ------------===//
//
// get_num_layers_to_build (megatron/core/transformer/transformer_block.py)
// gives each chunk its count; the offsets Megatron computes in
// get_transformer_layer_offset are the running sums of those counts in flow
// order, which is how they are computed here. docs/Pipeline.md quotes both.
//
//===----------------------------------------------------------------------===//

#include "ddp/Stages/LayerSplit.h"

#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace llvm;
using namespace ddp;

static Error splitError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

int64_t ddp::countSplitLayers(int64_t numLayers, bool accountForEmbedding,
                              bool accountForLoss) {
  int64_t extra = (accountForEmbedding ? 1 : 0) + (accountForLoss ? 1 : 0);
  return numLayers > std::numeric_limits<int64_t>::max() - extra
             ? std::numeric_limits<int64_t>::max()
             : numLayers + extra;
}

std::string ddp::describeCountedLayers(bool accountForEmbedding,
                                       bool accountForLoss) {
  if (accountForEmbedding && accountForLoss)
    return " with the embedding and the loss counted as layers";
  if (accountForEmbedding)
    return " with the embedding counted as a layer";
  if (accountForLoss)
    return " with the loss counted as a layer";
  return "";
}

Expected<std::vector<ChunkLayers>>
ddp::splitLayers(const LayerSplitConfig &config) {
  int64_t p = config.stages, v = config.virtualStages;
  if (config.numLayers < 1 || p < 1 || v < 1)
    return splitError(formatv(
        "num_layers ({0}), pipeline_model_parallel_size ({1}) and "
        "virtual_pipeline_model_parallel_size ({2}) must be positive",
        config.numLayers, p, v));
  // Every rank and every chunk builds at least one layer, or stands for
  // the embedding or the loss: more ranks or chunks than that cannot split
  // (and are checked before anything is sized by them).
  int64_t counted = countSplitLayers(
      config.numLayers, config.accountForEmbedding, config.accountForLoss);
  if (p > counted || v > counted || p * v > counted)
    return splitError(formatv(
        "pipeline_model_parallel_size ({0}) x "
        "virtual_pipeline_model_parallel_size ({1}) model chunks cannot "
        "share {2} layers; use fewer stages or model chunks",
        p, v, counted));
  for (std::optional<int64_t> fixed :
       {config.firstStageLayers, config.lastStageLayers})
    if (fixed && *fixed > config.numLayers)
      return splitError(formatv(
          "decoder_first_pipeline_num_layers or "
          "decoder_last_pipeline_num_layers ({0}) exceeds num_layers ({1})",
          *fixed, config.numLayers));
  bool uneven = config.firstStageLayers || config.lastStageLayers;
  // The layers of a whole rank, before the split into its chunks.
  std::vector<int64_t> rankLayers(p);
  if (uneven) {
    if (config.accountForEmbedding || config.accountForLoss)
      return splitError(
          "decoder_first_pipeline_num_layers and "
          "decoder_last_pipeline_num_layers cannot be combined with "
          "account_for_embedding_in_pipeline_split or "
          "account_for_loss_in_pipeline_split (Megatron supports no "
          "standalone embedding or loss stage with an uneven pipeline); "
          "set one or the other");
    int64_t left = config.numLayers, stagesLeft = p;
    for (std::optional<int64_t> fixed :
         {config.firstStageLayers, config.lastStageLayers}) {
      if (!fixed)
        continue;
      if (*fixed < 0)
        return splitError("decoder_first_pipeline_num_layers and "
                          "decoder_last_pipeline_num_layers must not be "
                          "negative");
      left -= *fixed;
      --stagesLeft;
    }
    if (stagesLeft < 0 || (stagesLeft == 0 && left != 0) || left < 0 ||
        (stagesLeft > 0 && left % stagesLeft != 0))
      return splitError(formatv(
          "with uneven first and last stages, the {0} layers left for the "
          "{1} middle stages must divide evenly among them; change "
          "decoder_first_pipeline_num_layers or "
          "decoder_last_pipeline_num_layers",
          left, std::max<int64_t>(stagesLeft, 0)));
    // Megatron's TransformerConfig: "Mismatch: 0 middle layers remaining
    // but N middle PP stages" (transformer_config.py L2340-2345).
    if (stagesLeft > 0 && left == 0)
      return splitError(formatv(
          "with uneven first and last stages, no layer is left for the {0} "
          "middle stages, and Megatron refuses a stage without layers; "
          "change decoder_first_pipeline_num_layers or "
          "decoder_last_pipeline_num_layers, or use fewer pipeline ranks",
          stagesLeft));
    int64_t middle = stagesLeft > 0 ? left / stagesLeft : 0;
    for (int64_t r = 0; r < p; ++r)
      rankLayers[r] = middle;
    if (config.firstStageLayers)
      rankLayers[0] = *config.firstStageLayers;
    if (config.lastStageLayers)
      rankLayers[p - 1] = *config.lastStageLayers;
  } else {
    if (counted % p != 0)
      return splitError(formatv(
          "num_layers ({0}{1}) is not divisible by "
          "pipeline_model_parallel_size ({2}); change one, or give the "
          "first and last stages their own counts with "
          "decoder_first_pipeline_num_layers and "
          "decoder_last_pipeline_num_layers",
          counted,
          describeCountedLayers(config.accountForEmbedding,
                                config.accountForLoss),
          p));
    for (int64_t r = 0; r < p; ++r)
      rankLayers[r] = counted / p;
  }

  std::vector<ChunkLayers> chunks(p * v);
  int64_t next = 0;
  for (int64_t c = 0; c < v; ++c) {
    for (int64_t r = 0; r < p; ++r) {
      if (rankLayers[r] % v != 0)
        return splitError(formatv(
            "pipeline rank {0} has {1} layers, which do not split evenly "
            "into virtual_pipeline_model_parallel_size ({2}) model chunks; "
            "change the virtual size or the layers per stage",
            r, rankLayers[r], v));
      int64_t count = rankLayers[r] / v;
      // The embedding (the loss) takes the place of one layer in the first
      // (last) chunk of the pipeline.
      if (config.accountForEmbedding && r == 0 && c == 0)
        --count;
      if (config.accountForLoss && r == p - 1 && c == v - 1)
        --count;
      if (count < 0)
        return splitError(
            "the first or last model chunk has no room for the embedding or "
            "the loss it is counted as a layer of; give it more layers or "
            "turn off account_for_embedding_in_pipeline_split / "
            "account_for_loss_in_pipeline_split");
      chunks[c * p + r] = {next, count};
      next += count;
    }
  }
  if (next != config.numLayers)
    return splitError(formatv(
        "the stages hold {0} layers but num_layers is {1}; change "
        "decoder_first_pipeline_num_layers or "
        "decoder_last_pipeline_num_layers",
        next, config.numLayers));
  return chunks;
}
