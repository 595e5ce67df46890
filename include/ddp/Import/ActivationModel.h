//===- ActivationModel.h - A model's activations per microbatch -*- C++ -*-===//
//
// What one microbatch's forward keeps on a rank for its backward, from the
// model's sizes: Korthikanti et al. (2022), Table 2, as Megatron-LM's
// `theoretical_memory_usage.py` evaluates it (docs/Pipeline.md#activation-memory).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_ACTIVATIONMODEL_H
#define DDP_IMPORT_ACTIVATIONMODEL_H

#include "ddp/Dialect/DDP/IR/ActivationBytes.h"
#include "ddp/Import/ModelConfig.h"

namespace ddp {

/// Per layer, and the embedding's and the output layer's extra, on one rank
/// (a tensor-parallel shard), in bytes.
ActivationBytes computeActivationBytes(const ModelConfig &config);

/// What full recomputation keeps of a checkpointed group of layers: its
/// input.
int64_t computeCheckpointBytes(const ModelConfig &config);

} // namespace ddp

#endif // DDP_IMPORT_ACTIVATIONMODEL_H
