//===- ActivationModel.cpp - A model's activations per microbatch ---------===//
//
// Megatron-LM's `compute_activation_memory` (with sequence parallelism) and
// `compute_activation_memory_without_sp` (megatron/training/
// theoretical_memory_usage.py, at commit 00caa53 of NVIDIA/Megatron-LM),
// per microbatch and split into what each model chunk holds, so that the
// activation-memory analysis can count what a schedule keeps in flight
// instead of Megatron's first-stage shortcut. With s the sequence, b the
// micro-batch, h the hidden size, f the MLP's hidden size, t the
// tensor-parallel size and V the padded vocabulary:
//
//   with SP:    layer sbh(18 + 4f/h)/t,        embedding (8sb + sbh)/t,
//               output 4sbh(1 + V/h)/t
//   without SP: layer sbh(10 + (8 + 4f/h)/t),  embedding 8sb + sbh,
//               output 2(sbV/t + sbh)
//
// (6f/h for 4f/h with SwiGLU, below).
//
// 18 + 4f/h is Korthikanti's 34 with the MLP's 16 written for any f, as
// Megatron writes it (the fc1 output and the activation's output, 2 bytes
// each per element of f); 8 + 4f/h is its 24 written the same way (Megatron
// keeps 24, the same for f = 4h). A SwiGLU MLP keeps a fc1 output twice as
// wide (gate and up) beside the product, so 6f/h in place of 4f/h; Megatron
// ignores it; for Llama's f = 2.6875h this gives 24.1 for its 24.
// Like Megatron's, the model takes a layer's MLP as dense (an MoE layer's
// routed tokens are not counted apart) and its attention as h wide (GQA's
// narrower keys and values are not). Neither counts the attention scores'
// 5as/h: Megatron's attention (fused or flash, its default) keeps none.
// Activations are 16-bit, as in the paper, whatever the model's dtype.
// Megatron's extra 5 % without SP ("buffer for optimizer and miscellaneous
// temporaries") is not an activation and is left out.
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/ActivationModel.h"

#include <algorithm>
#include <cmath>

using namespace ddp;

/// Whole bytes; sizes the importer accepts stay far below the cap.
static int64_t toBytes(double bytes) {
  return static_cast<int64_t>(std::llround(std::min(bytes, 9e18)));
}

ActivationBytes ddp::computeActivationBytes(const ModelConfig &config) {
  double sb = double(config.getTokensPerMicrobatch());
  double h = double(config.hiddenSize);
  // The MLP's fc1 and activation outputs per token, in 2-byte elements.
  double mlp = (config.swiglu ? 3 : 2) * double(config.getFfnHiddenSize());
  double t = double(config.tensorModelParallelSize);
  double vocab = double(config.getPaddedVocabSize());
  // Selective recomputation (recompute_modules): `mlp` (a dense layer;
  // `moe` for an MoE layer, which the formula counts as dense) keeps its
  // input only, so not its fc1 and activation outputs; `layernorm` keeps
  // neither norm's output (the QKV and fc1 inputs, 2sbh each, split over
  // t with SP). core_attn and shared_experts change nothing here: no
  // attention scores, and no shared experts, are counted.
  bool mlpRerun = config.recompute.recomputes(
      config.isMoE() ? RecomputeModule::Moe : RecomputeModule::Mlp);
  if (mlpRerun)
    mlp = 0;
  double normOutputs =
      config.recompute.recomputes(RecomputeModule::LayerNorm) ? 4 * h : 0;
  ActivationBytes bytes;
  if (config.usesSequenceParallel()) {
    bytes.layer = toBytes(sb * (18 * h - normOutputs + 2 * mlp) / t);
    bytes.embedding = toBytes((8 * sb + sb * h) / t);
    bytes.output = toBytes(4 * sb * (h + vocab) / t);
  } else {
    bytes.layer =
        toBytes(sb * (10 * h - normOutputs) + sb * (8 * h + 2 * mlp) / t);
    bytes.embedding = toBytes(8 * sb + sb * h);
    bytes.output = toBytes(2 * (sb * vocab / t + sb * h));
  }
  return bytes;
}

int64_t ddp::computeCheckpointBytes(const ModelConfig &config) {
  // Korthikanti et al., Table 2, full recomputation: 2sbh per checkpointed
  // input, which sequence parallelism splits over the tensor-parallel ranks.
  double sb = double(config.getTokensPerMicrobatch());
  double t = config.usesSequenceParallel()
                 ? double(config.tensorModelParallelSize)
                 : 1.0;
  return toBytes(2 * sb * double(config.hiddenSize) / t);
}
