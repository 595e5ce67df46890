//===- ActivationBytes.h - A microbatch's activations -----------*- C++ -*-===//
//
// The bytes one microbatch's forward keeps on a rank until its backward, as
// the importer models them (Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models", 2022, Table 2, as Megatron-LM
// evaluates it; docs/Pipeline.md#activation-memory). The importer records
// them on the module (`ddp.activation_bytes`); the activation-memory
// analysis counts what a schedule holds in flight.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_IR_ACTIVATIONBYTES_H
#define DDP_DIALECT_DDP_IR_ACTIVATIONBYTES_H

#include <cstdint>
#include <vector>

namespace ddp {

struct ActivationBytes {
  /// Per transformer layer.
  int64_t layer = 0;
  /// Beside the layers, on the model chunk that holds the embedding (the
  /// first in flow order): the token ids and the embedding's dropout mask.
  int64_t embedding = 0;
  /// Beside the layers, on the chunk that holds the output layer and the
  /// loss (the last in flow order): their inputs.
  int64_t output = 0;
  /// With full recomputation, what each transformer layer keeps: a
  /// checkpointed group's input on its first layer, nothing on the rest of
  /// the group, `layer` on a layer not recomputed. Empty: `layer` each.
  std::vector<int64_t> perLayer;

  int64_t getLayerBytes(int64_t index) const {
    return index >= 0 && index < int64_t(perLayer.size()) ? perLayer[index]
                                                           : layer;
  }
  bool operator==(const ActivationBytes &other) const {
    return layer == other.layer && embedding == other.embedding &&
           output == other.output && perLayer == other.perLayer;
  }
};

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_ACTIVATIONBYTES_H
