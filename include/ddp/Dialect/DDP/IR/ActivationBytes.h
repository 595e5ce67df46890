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

  bool operator==(const ActivationBytes &other) const {
    return layer == other.layer && embedding == other.embedding &&
           output == other.output;
  }
};

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_ACTIVATIONBYTES_H
