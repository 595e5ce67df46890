//===- ModelConfig.h - Megatron-style model configs and presets -*- C++ -*-===//
//
// A transformer (GPT, Llama, MoE) described with Megatron-LM's argument names,
// as a JSON object or a built-in preset. docs/Importer.md lists every field,
// its default and the sources of the presets.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_MODELCONFIG_H
#define DDP_IMPORT_MODELCONFIG_H

#include "ddp/Import/MeshLayout.h"
#include "ddp/Import/MoEDispatch.h"
#include "ddp/Import/Recompute.h"
#include "ddp/Import/StepOptions.h"
#include "ddp/Stages/LayerSplit.h"
#include "ddp/Stages/PipelineSchedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>

namespace ddp {

enum class Normalization { LayerNorm, RMSNorm };
enum class PositionEmbedding { LearnedAbsolute, Rope, None };

/// Megatron's `--normalization` values: `LayerNorm`, `RMSNorm`.
std::optional<Normalization> parseNormalization(llvm::StringRef name);
/// Megatron's `--position-embedding-type` values the importer builds:
/// `learned_absolute`, `rope`, `none`.
std::optional<PositionEmbedding> parsePositionEmbedding(llvm::StringRef name);

struct ModelConfig {
  int64_t numLayers = 0;
  int64_t hiddenSize = 0;
  /// 0 means Megatron's default: 4h, or for SwiGLU int(4h * 2/3 / 64) * 64.
  int64_t ffnHiddenSize = 0;
  int64_t numAttentionHeads = 0;
  /// 0 means one group per head (multi-head attention).
  int64_t numQueryGroups = 0;
  /// 0 means hidden_size / num_attention_heads.
  int64_t kvChannels = 0;
  int64_t seqLength = 0;
  /// 0 means seq_length.
  int64_t maxPositionEmbeddings = 0;
  int64_t microBatchSize = 1;
  int64_t numMicrobatches = 1;
  int64_t vocabSize = 0;
  int64_t makeVocabSizeDivisibleBy = 128;
  bool untieEmbeddingsAndOutputWeights = false;
  bool swiglu = false;
  bool squaredRelu = false;
  bool addBiasLinear = true;
  Normalization normalization = Normalization::LayerNorm;
  PositionEmbedding positionEmbeddingType = PositionEmbedding::LearnedAbsolute;
  double hiddenDropout = 0.1;
  ElementType paramsDtype = ElementType::F32;
  int64_t tensorModelParallelSize = 1;
  bool sequenceParallel = false;
  int64_t dataParallelSize = 1;
  /// Pipeline stages, as Megatron's ModelParallelConfig names them.
  int64_t pipelineModelParallelSize = 1;
  /// Model chunks per stage; 0 means none given (one chunk, or what
  /// num_layers_per_virtual_pipeline_stage derives).
  int64_t virtualPipelineModelParallelSize = 0;
  /// 0 means unset; else the virtual size is the layers per stage divided
  /// by it, as Megatron's arguments.py derives it.
  int64_t numLayersPerVirtualPipelineStage = 0;
  /// 0 means Megatron's default, pipeline_model_parallel_size.
  int64_t microbatchGroupSizePerVpStage = 0;
  /// 0 means an even split.
  int64_t decoderFirstPipelineNumLayers = 0;
  int64_t decoderLastPipelineNumLayers = 0;
  bool accountForEmbeddingInPipelineSplit = false;
  bool accountForLossInPipelineSplit = false;
  /// Megatron's overlap_p2p_comm, as its training arguments set it: on
  /// unless --no-overlap-p2p-communication; used with virtual stages only
  /// (recorded as ddp-schedule's overlap-p2p-comm).
  bool overlapP2PComm = true;
  /// Megatron's deallocate_pipeline_outputs, as its training arguments set
  /// it (always, argument_utils.py L305; ModelParallelConfig's default is
  /// off): a forward's output is freed once sent (recorded as
  /// ddp-schedule's deallocate-pipeline-outputs).
  bool deallocatePipelineOutputs = true;
  /// Megatron's defer_embedding_wgrad_compute: the last stage's output
  /// layer wgrads run after the pipeline's flush; wgrad_deferral_limit of
  /// them (0: every microbatch's).
  bool deferEmbeddingWgradCompute = false;
  int64_t wgradDeferralLimit = 0;
  /// ddp's pipeline_schedule (Megatron has none: it picks interleaved for a
  /// virtual size, else 1F1B): `1f1b`, `interleaved`, `gpipe` or `zb-h1`,
  /// which the importer builds its W passes for (recorded as
  /// ddp-schedule's pipeline-schedule). Unset: Megatron's choice.
  std::optional<PipelineScheduleKind> pipelineSchedule;
  /// 0 means a dense model.
  int64_t numExperts = 0;
  int64_t moeRouterTopk = 2;
  int64_t expertModelParallelSize = 1;
  /// The experts' own tensor-parallel size (Megatron's
  /// expert_tensor_parallel_size); 0 means tensor_model_parallel_size.
  int64_t expertTensorParallelSize = 0;
  /// Each expert's FFN width; 0 means ffn_hidden_size (Megatron's
  /// moe_ffn_hidden_size).
  int64_t moeFfnHiddenSize = 0;
  /// The shared experts' FFN width (Megatron's
  /// moe_shared_expert_intermediate_size); 0 means none.
  int64_t moeSharedExpertIntermediateSize = 0;
  /// Megatron's moe_shared_expert_overlap: the shared experts compute while
  /// the all-to-alls are in flight (recorded as ddp-schedule's
  /// moe-shared-expert-overlap).
  bool moeSharedExpertOverlap = false;
  /// Megatron's overlap_moe_expert_parallel_comm: one microbatch's forward
  /// beside the previous one's backward, so that each one's expert
  /// all-to-alls run beside the other's compute (recorded as ddp-schedule's
  /// overlap-moe-expert-parallel-comm).
  bool overlapMoeExpertParallelComm = false;
  /// Megatron's delay_wgrad_compute: within that overlap, the backward's
  /// weight gradients run after the all-to-alls they can hide (recorded
  /// as ddp-schedule's delay-wgrad-compute).
  bool delayWgradCompute = false;
  /// The token dispatcher and the experts' capacity.
  MoEDispatchConfig moe;
  OptimizerConfig optimizer;
  RecomputeConfig recompute;

  // Derived sizes; valid once the config has been validated.
  int64_t getFfnHiddenSize() const;
  int64_t getExpertFfnHiddenSize() const {
    return moeFfnHiddenSize > 0 ? moeFfnHiddenSize : getFfnHiddenSize();
  }
  int64_t getNumQueryGroups() const;
  int64_t getKvChannels() const;
  int64_t getMaxPositionEmbeddings() const;
  /// Megatron's `_vocab_size_with_padding`: vocab_size rounded up to a
  /// multiple of make_vocab_size_divisible_by * tensor_model_parallel_size.
  int64_t getPaddedVocabSize() const;
  int64_t getTokensPerMicrobatch() const { return microBatchSize * seqLength; }
  /// Megatron turns sequence parallelism off when there is no tensor
  /// parallelism; so does the importer.
  bool usesSequenceParallel() const {
    return sequenceParallel && tensorModelParallelSize > 1;
  }
  bool isMoE() const { return numExperts > 0; }
  int64_t getExpertTensorParallelSize() const {
    return expertTensorParallelSize > 0 ? expertTensorParallelSize
                                        : tensorModelParallelSize;
  }
  /// The sizes the step's mesh lays out (ddp/Import/MeshLayout.h).
  ParallelSizes getParallelSizes() const;
  bool isPipelined() const { return pipelineModelParallelSize > 1; }
  /// The model chunks per stage (at least 1).
  int64_t getVirtualPipelineSize() const;
  /// The virtual size num_layers_per_virtual_pipeline_stage gives, as
  /// Megatron derives it; nullopt when that field is unset.
  std::optional<int64_t> getDerivedVirtualPipelineSize() const;
  /// num_layers, plus the embedding and the loss where the split counts
  /// them as layers (account_for_*_in_pipeline_split).
  int64_t getLayersForPipelineSplit() const;
  /// The pipeline this config runs: its stages, chunks per stage,
  /// microbatches and microbatch group.
  PipelineShape getPipelineShape() const;
  /// Megatron's schedule for it: interleaved with model chunks, else 1F1B.
  PipelineScheduleKind getPipelineScheduleKind() const {
    if (pipelineSchedule)
      return *pipelineSchedule;
    return getVirtualPipelineSize() > 1 ? PipelineScheduleKind::Interleaved
                                        : PipelineScheduleKind::OneFOneB;
  }
  LayerSplitConfig getLayerSplitConfig() const;
};

/// Reads a config from a JSON object. Unknown fields, missing required
/// fields and out-of-range values are errors that name the field and
/// `sourceName` (a file name, or the preset).
llvm::Expected<ModelConfig> parseModelConfig(const llvm::json::Value &json,
                                             llvm::StringRef sourceName);

/// Every field of the config, defaults included, as parseModelConfig reads
/// them.
llvm::json::Object modelConfigToJSON(const ModelConfig &config);

/// Checks the constraints Megatron checks (heads divisible by TP, ...).
/// parseModelConfig calls it; callers that build a config in C++ should too.
llvm::Error validateModelConfig(const ModelConfig &config,
                                llvm::StringRef sourceName);

struct ModelPreset {
  llvm::StringRef name;
  llvm::StringRef description;
  ModelConfig config;
};

llvm::ArrayRef<ModelPreset> getModelPresets();
/// The preset called `name`, or null.
const ModelPreset *lookupModelPreset(llvm::StringRef name);

/// Applies `--set key=value` overrides to a JSON object: `value` is read as
/// JSON when it parses (numbers, true/false, quoted strings) and as a plain
/// string otherwise.
llvm::Error applyOverrides(llvm::json::Object &object,
                           llvm::ArrayRef<std::string> overrides);

} // namespace ddp

#endif // DDP_IMPORT_MODELCONFIG_H
