//===- Presets.cpp - Built-in model configs -------------------------------===//
//
// Published architectures with the parallel layout their authors (or
// Megatron-LM's example scripts) trained them with. docs/Importer.md cites
// the source of every number; fields a source does not give (batch layout of
// the Llama presets, learning rates) are ddp's choices and say so there.
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/ModelConfig.h"

#include "llvm/ADT/STLExtras.h"

using namespace ddp;

/// GPT-3 175B: Brown et al. 2020, Table 2.1 and Sec. 2.3; parallel layout
/// and precision of Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh
/// and Narayanan et al. 2021, Table 1 (TP 8; DP 16 of 1024 GPUs with PP 8).
static ModelConfig gpt3_175b() {
  ModelConfig c;
  c.numLayers = 96;
  c.hiddenSize = 12288;
  c.numAttentionHeads = 96;
  c.seqLength = 2048;
  c.maxPositionEmbeddings = 2048;
  c.microBatchSize = 1;
  c.numMicrobatches = 8;
  c.vocabSize = 50257;
  c.paramsDtype = ElementType::F16;
  c.tensorModelParallelSize = 8;
  c.dataParallelSize = 16;
  c.optimizer.lr = 6.0e-5;
  c.optimizer.beta2 = 0.95;
  return c;
}

/// Megatron-LM's 8.3B GPT-2: Shoeybi et al. 2019, Table 1 and Sec. 5
/// (72 layers, hidden 3072, 32 heads, 8-way TP on 512 GPUs, batch 512,
/// sequence 1024, lr 1.5e-4, vocabulary padded to 51,200).
static ModelConfig gpt_8_3b() {
  ModelConfig c;
  c.numLayers = 72;
  c.hiddenSize = 3072;
  c.numAttentionHeads = 32;
  c.seqLength = 1024;
  c.maxPositionEmbeddings = 1024;
  c.microBatchSize = 8;
  c.numMicrobatches = 1;
  c.vocabSize = 50257;
  c.paramsDtype = ElementType::F16;
  c.tensorModelParallelSize = 8;
  c.dataParallelSize = 64;
  c.optimizer.lr = 1.5e-4;
  return c;
}

/// What the Llama family shares (Touvron et al. 2023): RMSNorm, SwiGLU,
/// rotary embeddings, no biases, no dropout, untied output layer, AdamW
/// with betas (0.9, 0.95) and eps 1e-5. Megatron's Llama checkpoint loader
/// keeps the tokenizer's vocabulary unpadded, hence a divisor of 1.
static ModelConfig llamaBase() {
  ModelConfig c;
  c.untieEmbeddingsAndOutputWeights = true;
  c.swiglu = true;
  c.addBiasLinear = false;
  c.normalization = Normalization::RMSNorm;
  c.positionEmbeddingType = PositionEmbedding::Rope;
  c.hiddenDropout = 0.0;
  c.makeVocabSizeDivisibleBy = 1;
  c.paramsDtype = ElementType::BF16;
  c.microBatchSize = 1;
  c.numMicrobatches = 8;
  c.dataParallelSize = 8;
  c.optimizer.beta2 = 0.95;
  c.optimizer.eps = 1.0e-5;
  return c;
}

/// Llama-2-7B: Hugging Face meta-llama/Llama-2-7b-hf config.json; TP 1 as
/// in Megatron-LM's docs/llama2.md; lr from Touvron et al. 2023, Table 1.
static ModelConfig llama2_7b() {
  ModelConfig c = llamaBase();
  c.numLayers = 32;
  c.hiddenSize = 4096;
  c.ffnHiddenSize = 11008;
  c.numAttentionHeads = 32;
  c.seqLength = 4096;
  c.vocabSize = 32000;
  c.optimizer.lr = 3.0e-4;
  return c;
}

/// Llama-2-70B: meta-llama/Llama-2-70b-hf config.json (GQA with 8 groups);
/// TP 8 as in Megatron-LM's docs/llama2.md, with sequence parallelism.
static ModelConfig llama2_70b() {
  ModelConfig c = llamaBase();
  c.numLayers = 80;
  c.hiddenSize = 8192;
  c.ffnHiddenSize = 28672;
  c.numAttentionHeads = 64;
  c.numQueryGroups = 8;
  c.seqLength = 4096;
  c.vocabSize = 32000;
  c.tensorModelParallelSize = 8;
  c.sequenceParallel = true;
  c.optimizer.lr = 1.5e-4;
  return c;
}

/// Llama-3-8B: meta-llama/Meta-Llama-3-8B config.json (vocabulary 128,256,
/// context 8192, GQA with 8 groups).
static ModelConfig llama3_8b() {
  ModelConfig c = llamaBase();
  c.numLayers = 32;
  c.hiddenSize = 4096;
  c.ffnHiddenSize = 14336;
  c.numAttentionHeads = 32;
  c.numQueryGroups = 8;
  c.seqLength = 8192;
  c.vocabSize = 128256;
  c.optimizer.lr = 3.0e-4;
  return c;
}

/// Mixtral-8x7B: mistralai/Mixtral-8x7B-v0.1 config.json (8 experts, top-2
/// routing); layout of Megatron-LM's
/// examples/mixtral/train_mixtral_8x7b_distributed.sh (TP 1, EP 8,
/// sequence 4096) without its pipeline stages.
static ModelConfig mixtral_8x7b() {
  ModelConfig c = llamaBase();
  c.numLayers = 32;
  c.hiddenSize = 4096;
  c.ffnHiddenSize = 14336;
  c.numAttentionHeads = 32;
  c.numQueryGroups = 8;
  c.seqLength = 4096;
  c.vocabSize = 32000;
  c.numExperts = 8;
  c.moeRouterTopk = 2;
  c.expertModelParallelSize = 8;
  c.dataParallelSize = 16;
  c.optimizer.lr = 1.0e-4;
  return c;
}

/// Qwen3-30B-A3B, a fine-grained MoE (128 experts of FFN width 768, top-8
/// routing): the Megatron arguments of slime's scripts/models/qwen3-30B-A3B.sh
/// (48 layers, hidden 2048, 32 heads, 4 query groups, kv_channels 128,
/// vocabulary 151936, untied, RMSNorm, RoPE, SwiGLU, every layer MoE, the
/// all-to-all dispatcher), which match Qwen/Qwen3-30B-A3B's config.json; its
/// per-head q/k layernorm (--qk-layernorm, 2 x 128 parameters a layer) is left
/// out. Layout: EP 16 over 32 GPUs (expert DP 2), TP 1, sequence 4096.
static ModelConfig qwen3_30b_a3b() {
  ModelConfig c = llamaBase();
  c.numLayers = 48;
  c.hiddenSize = 2048;
  c.ffnHiddenSize = 6144;
  c.numAttentionHeads = 32;
  c.numQueryGroups = 4;
  c.kvChannels = 128;
  c.seqLength = 4096;
  c.vocabSize = 151936;
  c.numExperts = 128;
  c.moeRouterTopk = 8;
  c.moeFfnHiddenSize = 768;
  c.moe.dispatcher = MoEDispatcher::AllToAll;
  c.expertModelParallelSize = 16;
  c.dataParallelSize = 32;
  return c;
}

/// Nemotron-4 15B: Parmar et al. 2024, Sec. 2 and Table 1 (32 layers, hidden
/// 6144, 48 heads, 8 KV heads, sequence 4096, vocabulary 256,000, squared
/// ReLU, RoPE, no biases, no dropout, untied embeddings; 8-way TP on 384
/// nodes of 8 GPUs, so DP 384; batch 2304 = 384 x 6). FFN width 4h and
/// LayerNorm as in NeMo's nemotron4_15b config.
static ModelConfig nemotron4_15b() {
  ModelConfig c;
  c.numLayers = 32;
  c.hiddenSize = 6144;
  c.ffnHiddenSize = 24576;
  c.numAttentionHeads = 48;
  c.numQueryGroups = 8;
  c.seqLength = 4096;
  c.microBatchSize = 1;
  c.numMicrobatches = 6;
  c.vocabSize = 256000;
  c.untieEmbeddingsAndOutputWeights = true;
  c.squaredRelu = true;
  c.addBiasLinear = false;
  c.positionEmbeddingType = PositionEmbedding::Rope;
  c.hiddenDropout = 0.0;
  c.paramsDtype = ElementType::BF16;
  c.tensorModelParallelSize = 8;
  c.sequenceParallel = true;
  c.dataParallelSize = 384;
  return c;
}

/// A two-layer GPT for tests: every feature of gpt3-175b (TP 2, biases,
/// LayerNorm, GELU, learned positions, tied embeddings, padded vocabulary,
/// two microbatches) at a size whose graph can be read, and f32 so that a
/// run on integer-valued inputs is exact.
static ModelConfig tiny() {
  ModelConfig c;
  c.numLayers = 2;
  c.hiddenSize = 64;
  c.numAttentionHeads = 4;
  c.seqLength = 16;
  c.microBatchSize = 2;
  c.numMicrobatches = 2;
  c.vocabSize = 1000;
  c.tensorModelParallelSize = 2;
  c.dataParallelSize = 2;
  return c;
}

/// A two-layer Mixtral for tests: GQA, SwiGLU, RMSNorm, sequence
/// parallelism, 4 experts with top-2 routing on 2 expert-parallel ranks.
static ModelConfig tinyMoE() {
  ModelConfig c = llamaBase();
  c.numLayers = 2;
  c.hiddenSize = 64;
  c.ffnHiddenSize = 128;
  c.numAttentionHeads = 4;
  c.numQueryGroups = 2;
  c.seqLength = 16;
  c.microBatchSize = 2;
  c.numMicrobatches = 2;
  c.vocabSize = 1000;
  c.makeVocabSizeDivisibleBy = 128;
  c.paramsDtype = ElementType::F32;
  c.tensorModelParallelSize = 2;
  c.sequenceParallel = true;
  c.dataParallelSize = 4;
  c.numExperts = 4;
  c.expertModelParallelSize = 2;
  return c;
}

llvm::ArrayRef<ModelPreset> ddp::getModelPresets() {
  static const ModelPreset presets[] = {
      {"gpt3-175b", "GPT-3 175B (Brown et al. 2020), TP 8, DP 16", gpt3_175b()},
      {"gpt-8.3b", "Megatron-LM 8.3B GPT-2 (Shoeybi et al. 2019), TP 8, DP 64",
       gpt_8_3b()},
      {"llama2-7b", "Llama-2-7B, TP 1, DP 8", llama2_7b()},
      {"llama2-70b", "Llama-2-70B (GQA), TP 8 with sequence parallelism, DP 8",
       llama2_70b()},
      {"llama3-8b", "Llama-3-8B (GQA), TP 1, DP 8", llama3_8b()},
      {"mixtral-8x7b", "Mixtral-8x7B (8 experts, top-2), EP 8, DP 16",
       mixtral_8x7b()},
      {"nemotron4-15b",
       "Nemotron-4 15B (squared ReLU), TP 8 with sequence parallelism, DP 384",
       nemotron4_15b()},
      {"qwen3-30b-a3b",
       "Qwen3-30B-A3B (128 experts of width 768, top-8, all-to-all), EP 16, "
       "DP 32",
       qwen3_30b_a3b()},
      {"tiny", "2-layer GPT for tests, TP 2, DP 2, f32", tiny()},
      {"tiny-moe", "2-layer MoE for tests, TP 2 with SP, EP 2, DP 4, f32",
       tinyMoE()},
  };
  return presets;
}

const ModelPreset *ddp::lookupModelPreset(llvm::StringRef name) {
  llvm::ArrayRef<ModelPreset> presets = getModelPresets();
  const ModelPreset *preset = llvm::find_if(
      presets, [&](const ModelPreset &p) { return p.name == name; });
  return preset == presets.end() ? nullptr : preset;
}
