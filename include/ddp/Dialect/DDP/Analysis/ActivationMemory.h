//===- ActivationMemory.h - Activations held in flight ----------*- C++ -*-===//
//
// What a rank keeps for the backward passes it has yet to run, at the worst
// point of its program: every forward (microbatch, model chunk) whose
// backward has not run holds its chunk's layers' activations, by the
// importer's model (`ddp.activation_bytes`). Counted from the program's own
// order, so that 1F1B, interleaved and GPipe each get what they hold
// (docs/Pipeline.md#activation-memory).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_ANALYSIS_ACTIVATIONMEMORY_H
#define DDP_DIALECT_DDP_ANALYSIS_ACTIVATIONMEMORY_H

#include "ddp/Dialect/DDP/IR/ActivationBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace ddp {

struct ActivationPeak {
  /// Bytes held at the peak.
  int64_t bytes = 0;
  /// The forwards (microbatch, chunk) held then, and the transformer layers
  /// they span, summed over them.
  int64_t forwards = 0;
  int64_t layers = 0;
};

/// The peak of `step`, a stage program (ddp.pipeline_stage) or a step
/// without pipeline tasks (one microbatch at a time). Its chunks' layers are
/// those whose gradients its backwards make (the params' `layer`); the
/// first chunk of pipeline rank 0 holds the embedding, the last chunk of the
/// last rank the output layer. nullopt for a pipelined step not yet split
/// into stage programs, whose ranks' orders are not known.
std::optional<ActivationPeak>
computeActivationPeak(mlir::func::FuncOp step, const ActivationBytes &bytes);

/// The most bytes of fully sharded units' gathered parameters that `step`
/// holds at once (docs/FullySharded.md#memory): each gather of
/// ddp-shard-params (an all-gather of ddp.get_param_shard that only
/// ddp.bucket_unpack reads) from its all-gather to the last read of what
/// its unpacks give. The model state counts those parameters sharded, so
/// this is memory on top of it; 0 for a step without such gathers.
int64_t getGatheredUnitPeakBytes(mlir::func::FuncOp step);

} // namespace ddp

#endif // DDP_DIALECT_DDP_ANALYSIS_ACTIVATIONMEMORY_H
