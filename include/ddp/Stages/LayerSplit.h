//===- LayerSplit.h - Megatron's split of layers into stages ----*- C++ -*-===//
//
// Which transformer layers each (pipeline rank, model chunk) builds, as
// Megatron-Core's get_num_layers_to_build and get_transformer_layer_offset
// split them: evenly, with uneven first and last stages
// (decoder_first_pipeline_num_layers, decoder_last_pipeline_num_layers), or
// with the embedding and the loss counted as a layer each
// (account_for_embedding_in_pipeline_split,
// account_for_loss_in_pipeline_split). The embedding is on the first chunk
// of the first rank, the output layer and the loss on the last chunk of the
// last rank. docs/Pipeline.md cites the lines.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_STAGES_LAYERSPLIT_H
#define DDP_STAGES_LAYERSPLIT_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp {

struct LayerSplitConfig {
  int64_t numLayers = 0;
  int64_t stages = 1;
  int64_t virtualStages = 1;
  std::optional<int64_t> firstStageLayers, lastStageLayers;
  bool accountForEmbedding = false, accountForLoss = false;
};

/// `numLayers` plus the embedding and the loss where the split counts them
/// as layers, saturated at INT64_MAX (a config is checked with it before
/// anything bounds num_layers).
int64_t countSplitLayers(int64_t numLayers, bool accountForEmbedding,
                         bool accountForLoss);

/// " with the embedding counted as a layer" (the loss, both), or "" when
/// neither is: what an error adds to a layer count that includes them.
std::string describeCountedLayers(bool accountForEmbedding,
                                  bool accountForLoss);

/// The layers of one model chunk: [firstLayer, firstLayer + numLayers).
struct ChunkLayers {
  int64_t firstLayer = 0;
  int64_t numLayers = 0;
};

/// The chunks in the order the activations flow through them: chunk `c` of
/// pipeline rank `r` is entry `c * stages + r` (the last rank's chunk c
/// feeds the first rank's chunk c + 1). An error names the Megatron
/// argument to change when Megatron would reject the split.
llvm::Expected<std::vector<ChunkLayers>>
splitLayers(const LayerSplitConfig &config);

} // namespace ddp

#endif // DDP_STAGES_LAYERSPLIT_H
