//===- ModelConfigChecks.cpp - Checking model configs --------------------===//
//
// validateModelConfig (ModelConfig.h): Megatron-LM's checks of the fields
// ddp reads, in Megatron's words where it has them, and ddp's own.
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/ModelConfig.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Stages/LayerSplit.h"

#include "JSONFields.h"
#include "ddp/Support/FormatNumber.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;
using namespace ddp;
using namespace ddp::importer;

/// What TransformerConfig.__post_init__ asserts for
/// overlap_moe_expert_parallel_comm (transformer_config.py L3002-3046 at
/// Megatron-LM d98e8a6), in its order.
static Error checkBatchLevelOverlap(const ModelConfig &config,
                                    StringRef source) {
  // transformer_config.py L3073-3077.
  if (config.delayWgradCompute && !config.overlapMoeExpertParallelComm)
    return fieldError(source, "delay_wgrad_compute",
                      "delays weight gradients within the batch-level "
                      "overlap; set overlap_moe_expert_parallel_comm too, "
                      "as Megatron requires");
  if (!config.overlapMoeExpertParallelComm)
    return Error::success();
  StringRef field = "overlap_moe_expert_parallel_comm";
  // L3008-3012: with stages only the interleaved schedule has a combined
  // path (combined_1f1b_schedule_for_interleaved_pipelining).
  if (config.isPipelined() &&
      config.getPipelineScheduleKind() != PipelineScheduleKind::Interleaved)
    return fieldError(source, field,
                      "with pipeline stages needs "
                      "virtual_pipeline_model_parallel_size, as Megatron's "
                      "(it runs the interleaved schedule's combined path); "
                      "set it to 2 or more");
  if (config.expertModelParallelSize < 2)
    return fieldError(source, field,
                      "needs expert_model_parallel_size > 1, as Megatron's");
  if (config.moe.dispatcher != MoEDispatcher::AllToAll)
    return fieldError(source, field,
                      "works only with moe_token_dispatcher_type alltoall, "
                      "as Megatron's");
  if (config.recompute.isFull())
    return fieldError(source, field,
                      "does not work with recompute_granularity full, as "
                      "Megatron's");
  if (config.recompute.recomputes(RecomputeModule::Moe))
    return fieldError(source, field,
                      "does not work with moe in recompute_modules, as "
                      "Megatron's: drop one");
  if (config.paramsDtype != ElementType::BF16 &&
      config.paramsDtype != ElementType::F16)
    return fieldError(source, field,
                      "needs params_dtype bf16 or f16, as Megatron's");
  if (config.moeSharedExpertOverlap)
    return fieldError(source, field,
                      "does not work with moe_shared_expert_overlap, as "
                      "Megatron's: set one of them");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// `numerator` must be divisible by `denominator`; both are named fields.
static Error checkDivisible(StringRef source, StringRef numeratorName,
                            int64_t numerator, StringRef denominatorName,
                            int64_t denominator) {
  if (numerator % denominator == 0)
    return Error::success();
  return fieldError(source, numeratorName,
                    formatv("{0} ({1}) is not divisible by {2} ({3})",
                            numeratorName, numerator, denominatorName,
                            denominator));
}

/// The element size checkStepSize assumes: the largest element type (f64).
static constexpr int64_t kMaxElementBytes = 8;

/// The sizes that become tensor dimensions, and the number of layers the
/// step runs, computed in floating point because the config may be far too
/// large for int64.
static Error checkStepSize(const ModelConfig &config, StringRef source) {
  double tokens = double(config.microBatchSize) * double(config.seqLength);
  double padding =
      double(config.makeVocabSizeDivisibleBy) * config.tensorModelParallelSize;
  // An expert's rows from one rank: its share of the tokens' top-k
  // routes, times the capacity factor.
  // The all-gather dispatcher without a capacity gathers the tokens (the
  // expert_model_parallel_size row below bounds them).
  bool capacityRowsApply =
      config.isMoE() && (config.moe.dispatcher == MoEDispatcher::AllToAll ||
                         config.moe.capacityFactor);
  double capacityRows =
      capacityRowsApply
          ? std::ceil(tokens * double(config.moeRouterTopk) /
                      double(config.numExperts) *
                      config.moe.capacityFactor.value_or(1.0))
          : 0.0;
  // The all-to-all dispatcher's router is real, so its buffers hold the
  // worst case (getExpertBufferRows): every token when dropless.
  if (config.isMoE() && config.moe.dispatcher == MoEDispatcher::AllToAll) {
    if (!config.moe.capacityFactor)
      capacityRows = tokens;
    else if (!config.moe.padToCapacity)
      capacityRows = std::min(capacityRows, tokens);
  }
  struct Dimension {
    StringLiteral field, what;
    double size;
  } dimensions[] = {
      {"seq_length", "micro_batch_size x seq_length", tokens},
      {"hidden_size", "hidden_size", double(config.hiddenSize)},
      {"num_attention_heads",
       "(num_attention_heads + 2 x num_query_groups) x kv_channels",
       (double(config.numAttentionHeads) + 2.0 * config.getNumQueryGroups()) *
           config.getKvChannels()},
      {"ffn_hidden_size",
       "the MLP's first layer (2 x ffn_hidden_size with swiglu)",
       (config.swiglu ? 2.0 : 1.0) * config.getFfnHiddenSize()},
      {"vocab_size", "the padded vocabulary",
       std::ceil(config.vocabSize / padding) * padding},
      {"max_position_embeddings", "max_position_embeddings",
       config.positionEmbeddingType == PositionEmbedding::LearnedAbsolute
           ? double(config.getMaxPositionEmbeddings())
           : 0.0},
      {"num_experts", "num_experts", double(config.numExperts)},
      {"moe_ffn_hidden_size",
       "an expert's first layer (2 x moe_ffn_hidden_size with swiglu)",
       (config.swiglu ? 2.0 : 1.0) * config.getExpertFfnHiddenSize()},
      {"moe_shared_expert_intermediate_size",
       "a shared expert's first layer (2 x "
       "moe_shared_expert_intermediate_size with swiglu)",
       (config.swiglu ? 2.0 : 1.0) *
           double(config.moeSharedExpertIntermediateSize)},
      // The rows a rank sends to the experts, and those each expert takes:
      // experts x capacity, and capacity x EP x ETP.
      {"moe_expert_capacity_factor",
       "num_experts x the expert capacity (the rows a rank dispatches)",
       config.isMoE() ? double(config.numExperts) * capacityRows : 0.0},
      {"moe_expert_capacity_factor",
       "the expert capacity x expert_model_parallel_size x "
       "expert_tensor_parallel_size (the rows an expert takes)",
       config.isMoE() ? capacityRows * double(config.expertModelParallelSize) *
                            double(config.getExpertTensorParallelSize())
                      : 0.0},
      // MoE layers gather the tokens of the expert-parallel group.
      {"expert_model_parallel_size",
       "micro_batch_size x seq_length x expert_model_parallel_size",
       config.isMoE() ? tokens * config.expertModelParallelSize : 0.0},
  };
  for (const Dimension &dimension : dimensions)
    if (Error error = checkDimension(source, dimension.field, dimension.what,
                                     dimension.size))
      return error;
  if (config.isMoE() && config.moe.dispatcher == MoEDispatcher::AllToAll) {
    // Its maps are f32 row indices, exact below 2^24.
    double slots = double(config.numExperts) * capacityRows;
    if (slots >= 0x1p24 || tokens >= 0x1p24)
      return fieldError(
          source,
          config.moe.capacityFactor ? "moe_expert_capacity_factor"
                                    : "seq_length",
          formatv("the all-to-all dispatcher's router maps {0:F0} tokens "
                  "into num_experts x {1:F0} slots (each expert's buffer "
                  "{2}); its maps are f32 row indices and must stay below "
                  "2^24 (16777216): shorten micro_batch_size x seq_length "
                  "or {3} moe_expert_capacity_factor",
                  tokens, capacityRows,
                  config.moe.capacityFactor ? "is its capacity"
                                            : "holds every token when dropless",
                  config.moe.capacityFactor ? "lower" : "set"));
  }
  // The importer's tensors are 1-D or 2-D over these dimensions (in at most 8
  // bytes an element), so bounding the two largest bounds every tensor by
  // the dialect's rule that its size in bytes fits in int64.
  llvm::stable_sort(dimensions, [](const Dimension &a, const Dimension &b) {
    return a.size > b.size;
  });
  double largestBytes =
      dimensions[0].size * dimensions[1].size * kMaxElementBytes;
  if (largestBytes >= 0x1p63)
    return fieldError(
        source, dimensions[0].field,
        formatv("a tensor of {0} x {1} elements of up to {2} bytes may take "
                "{3:F0} bytes; a tensor must take less than 2^63",
                dimensions[0].what, dimensions[1].what, kMaxElementBytes,
                largestBytes));

  // Every microbatch runs every layer, and an MoE layer each local expert.
  double layerPasses =
      double(config.numLayers) * config.numMicrobatches *
      (1.0 + double(config.numExperts) / config.expertModelParallelSize);
  if (layerPasses > double(kMaxLayerPasses))
    return fieldError(source, "num_layers",
                      formatv("num_layers x num_microbatches x (1 + local "
                              "experts) is {0:F0}, more than {1}, the most "
                              "layer passes the importer builds",
                              layerPasses, kMaxLayerPasses));
  return Error::success();
}

/// The pipeline's fields: Megatron's checks in arguments.py and
/// schedules.py, and a split of the layers it would make.
static Error checkPipeline(const ModelConfig &config, StringRef source) {
  int64_t p = config.pipelineModelParallelSize;
  bool virtualGiven = config.virtualPipelineModelParallelSize > 0 ||
                      config.numLayersPerVirtualPipelineStage > 0;
  bool splitGiven = config.decoderFirstPipelineNumLayers > 0 ||
                    config.decoderLastPipelineNumLayers > 0 ||
                    config.accountForEmbeddingInPipelineSplit ||
                    config.accountForLossInPipelineSplit;
  if (p == 1) {
    if (config.pipelineSchedule)
      return fieldError(source, "pipeline_schedule",
                        "orders the passes of pipeline stages, and "
                        "pipeline_model_parallel_size is 1; set it > 1, or "
                        "drop pipeline_schedule");
    if (virtualGiven || splitGiven || config.microbatchGroupSizePerVpStage)
      return fieldError(source, "pipeline_model_parallel_size",
                        "is 1, but the config sets how to split the layers "
                        "into pipeline stages; set "
                        "pipeline_model_parallel_size > 1 or drop the "
                        "pipeline fields");
    return Error::success();
  }
  // Megatron derives the virtual size from the layers per virtual stage
  // (arguments.py L953-979 at d98e8a6) and prints both, so a log holds both:
  // they must agree.
  if (int64_t perVirtual = config.numLayersPerVirtualPipelineStage) {
    if (config.decoderFirstPipelineNumLayers > 0 ||
        config.decoderLastPipelineNumLayers > 0)
      return fieldError(
          source, "num_layers_per_virtual_pipeline_stage",
          "cannot be used with uneven stages "
          "(decoder_first_pipeline_num_layers, "
          "decoder_last_pipeline_num_layers), as Megatron refuses it; give "
          "the model chunks per stage as virtual_pipeline_model_parallel_size "
          "(Megatron's --num-virtual-stages-per-pipeline-rank) instead");
    int64_t layers = config.getLayersForPipelineSplit();
    std::string counted =
        describeCountedLayers(config.accountForEmbeddingInPipelineSplit,
                              config.accountForLossInPipelineSplit);
    if (layers % p != 0)
      return fieldError(source, "num_layers",
                        formatv("num_layers ({0}{1}) is not divisible by "
                                "pipeline_model_parallel_size ({2})",
                                layers, counted, p));
    if ((layers / p) % perVirtual != 0)
      return fieldError(source, "num_layers_per_virtual_pipeline_stage",
                        formatv("the {0} layers per stage{1} are not "
                                "divisible by "
                                "num_layers_per_virtual_pipeline_stage ({2})",
                                layers / p, counted, perVirtual));
    int64_t derived = *config.getDerivedVirtualPipelineSize();
    int64_t given = config.virtualPipelineModelParallelSize;
    // Megatron prints None for a derived size of 1 (no virtual stages).
    if (given > 0 && given != std::max<int64_t>(derived, 1))
      return fieldError(
          source, "virtual_pipeline_model_parallel_size",
          formatv("is {0}, but num_layers_per_virtual_pipeline_stage ({1}) "
                  "makes it {2} ({3} layers per stage{4}); give one of them, "
                  "or make them agree",
                  given, perVirtual, derived, layers / p, counted));
  }
  if (config.microbatchGroupSizePerVpStage > 0 &&
      config.getVirtualPipelineSize() == 1)
    return fieldError(source, "microbatch_group_size_per_vp_stage",
                      "needs a virtual pipeline "
                      "(virtual_pipeline_model_parallel_size > 1)");
  if (Error error = checkPipelineSchedule(config.getPipelineScheduleKind(),
                                          config.getPipelineShape())) {
    // What to change: for an interleaved schedule that has its chunks and
    // stages, the group given (unless fewer microbatches than stages leave
    // none that fits), else the microbatches (the group defaults to the
    // stages, which leaves only them); otherwise the schedule given.
    StringRef field = "pipeline_model_parallel_size";
    if (config.getPipelineScheduleKind() == PipelineScheduleKind::Interleaved &&
        config.getVirtualPipelineSize() > 1 && p >= 2)
      field = config.microbatchGroupSizePerVpStage > 0 &&
                      config.numMicrobatches >= p
                  ? "microbatch_group_size_per_vp_stage"
                  : "num_microbatches";
    else if (config.pipelineSchedule)
      field = "pipeline_schedule";
    return fieldError(source, field, toString(std::move(error)));
  }
  // ZB-H1 runs every weight gradient as a W pass of its own already.
  if (config.getPipelineScheduleKind() == PipelineScheduleKind::ZeroBubbleH1 &&
      config.deferEmbeddingWgradCompute)
    return fieldError(source, "defer_embedding_wgrad_compute",
                      "defers the output layer's wgrads to the flush, and "
                      "the zb-h1 schedule already runs every wgrad as a W "
                      "pass it places itself; drop one of them");
  // arguments.py L1000-1010: blocking interleaved calls on 2 ranks would
  // batch two sends to the same rank.
  if (config.getVirtualPipelineSize() > 1 &&
      config.pipelineModelParallelSize == 2 && !config.overlapP2PComm)
    return fieldError(source, "overlap_p2p_comm",
                      "the interleaved schedule on 2 pipeline ranks needs "
                      "it: without, each blocking call would send an "
                      "activation and a gradient to the same rank in one "
                      "batch, which Megatron refuses; set it, or use more "
                      "ranks");
  // An uneven split's errors are about the stages given their layers.
  StringRef splitField =
      config.decoderFirstPipelineNumLayers ? "decoder_first_pipeline_num_layers"
      : config.decoderLastPipelineNumLayers ? "decoder_last_pipeline_num_layers"
                                            : "pipeline_model_parallel_size";
  Expected<std::vector<ChunkLayers>> chunks =
      splitLayers(config.getLayerSplitConfig());
  if (!chunks)
    return fieldError(source, splitField, toString(chunks.takeError()));
  // Megatron builds no model chunk without layers between the embedding's
  // and the loss's (its checks refuse the splits that would make one), and
  // the step's stage-to-stage calls go to neighbours only.
  for (size_t flow = 1; flow + 1 < chunks->size(); ++flow)
    if ((*chunks)[flow].numLayers == 0) {
      bool uneven = config.decoderFirstPipelineNumLayers ||
                    config.decoderLastPipelineNumLayers;
      return fieldError(
          source,
          uneven ? (config.decoderFirstPipelineNumLayers
                        ? "decoder_first_pipeline_num_layers"
                        : "decoder_last_pipeline_num_layers")
                 : "pipeline_model_parallel_size",
          formatv("pipeline rank {0}'s model chunk {1} holds no layer, "
                  "which Megatron does not build; give every pipeline rank "
                  "a layer",
                  flow % config.pipelineModelParallelSize,
                  flow / config.pipelineModelParallelSize));
    }
  return Error::success();
}

Error ddp::validateModelConfig(const ModelConfig &config, StringRef source) {
  // The default FFN width is 4 x hidden_size (8/3 with SwiGLU), computed in
  // int64: bound hidden_size before anything derives from it.
  if (Error error = checkDimension(source, "hidden_size", "hidden_size",
                                   double(config.hiddenSize)))
    return error;
  if (Error error = checkDataParallelSize(source, config.dataParallelSize))
    return error;
  // ModelParallelConfig.__post_init__ (model_parallel_config.py L545-558).
  if (config.deferEmbeddingWgradCompute && config.pipelineModelParallelSize < 2)
    return fieldError(source, "defer_embedding_wgrad_compute",
                      "the output layer's wgrads are deferred to the "
                      "pipeline's flush, and there is no pipeline; set "
                      "pipeline_model_parallel_size > 1, or drop it");
  if (!config.deferEmbeddingWgradCompute && config.wgradDeferralLimit != 0)
    return fieldError(source, "wgrad_deferral_limit",
                      "limits the wgrads defer_embedding_wgrad_compute "
                      "defers, which is off; set it, or drop the limit");
  StringRef recomputeField;
  if (Error error = checkRecompute(config.recompute, recomputeField))
    return fieldError(source, recomputeField, toString(std::move(error)));
  // transformer_config.py L1991-1998.
  if (config.recompute.recomputes(RecomputeModule::SharedExperts) &&
      config.moeSharedExpertIntermediateSize > 0 &&
      config.moeSharedExpertOverlap)
    return fieldError(source, "recompute_modules",
                      "shared_experts cannot be recomputed with "
                      "moe_shared_expert_overlap, as Megatron's: drop one");
  int64_t tp = config.tensorModelParallelSize;
  if (config.kvChannels == 0)
    if (Error error =
            checkDivisible(source, "hidden_size", config.hiddenSize,
                           "num_attention_heads", config.numAttentionHeads))
      return error;
  if (Error error = checkDivisible(source, "num_attention_heads",
                                   config.numAttentionHeads,
                                   "tensor_model_parallel_size", tp))
    return error;
  if (Error error = checkDivisible(source, "num_attention_heads",
                                   config.numAttentionHeads, "num_query_groups",
                                   config.getNumQueryGroups()))
    return error;
  if (Error error =
          checkDivisible(source, "num_query_groups", config.getNumQueryGroups(),
                         "tensor_model_parallel_size", tp))
    return error;
  if (Error error =
          checkDivisible(source, "ffn_hidden_size", config.getFfnHiddenSize(),
                         "tensor_model_parallel_size", tp))
    return error;
  if (config.swiglu && config.squaredRelu)
    return fieldError(source, "squared_relu",
                      "cannot be combined with swiglu: the MLP has one "
                      "activation");
  if (config.positionEmbeddingType == PositionEmbedding::LearnedAbsolute &&
      config.getMaxPositionEmbeddings() < config.seqLength)
    return fieldError(source, "max_position_embeddings",
                      formatv("max_position_embeddings ({0}) is smaller than "
                              "seq_length ({1})",
                              config.getMaxPositionEmbeddings(),
                              config.seqLength));
  // Megatron splits the sequence of every microbatch across the TP ranks.
  if (config.usesSequenceParallel())
    if (Error error = checkDivisible(source, "seq_length", config.seqLength,
                                     "tensor_model_parallel_size", tp))
      return error;

  if (Error error = checkPipeline(config, source))
    return error;

  if (!config.isMoE()) {
    // An expert_tensor_parallel_size equal to the TP size is what Megatron
    // prints for a dense model.
    bool expertTensorParallel = config.expertTensorParallelSize &&
                                config.expertTensorParallelSize != tp;
    if (config.expertModelParallelSize != 1 || config.moeFfnHiddenSize ||
        config.moeSharedExpertIntermediateSize ||
        config.moeSharedExpertOverlap || config.overlapMoeExpertParallelComm ||
        expertTensorParallel)
      return fieldError(source,
                        expertTensorParallel ? "expert_tensor_parallel_size"
                        : config.moeFfnHiddenSize ? "moe_ffn_hidden_size"
                        : config.moeSharedExpertIntermediateSize
                            ? "moe_shared_expert_intermediate_size"
                        : config.moeSharedExpertOverlap
                            ? "moe_shared_expert_overlap"
                        : config.overlapMoeExpertParallelComm
                            ? "overlap_moe_expert_parallel_comm"
                            : "expert_model_parallel_size",
                        "needs num_experts > 0");
    if (config.moe.dispatcher != MoEDispatcher::AllGather ||
        config.moe.capacityFactor || config.moe.padToCapacity)
      return fieldError(source,
                        config.moe.dispatcher != MoEDispatcher::AllGather
                            ? "moe_token_dispatcher_type"
                        : config.moe.capacityFactor
                            ? "moe_expert_capacity_factor"
                            : "moe_pad_expert_input_to_capacity",
                        "needs num_experts > 0");
    // transformer_config.py L3073-3077 asks for the batch-level overlap,
    // which is an MoE model's.
    if (config.delayWgradCompute)
      return fieldError(source, "delay_wgrad_compute",
                        "delays weight gradients within the batch-level "
                        "overlap of an MoE model's all-to-all, as Megatron "
                        "does; it needs num_experts > 0");
    return checkStepSize(config, source);
  }
  int64_t ep = config.expertModelParallelSize;
  if (config.moeSharedExpertIntermediateSize)
    if (Error error = checkDivisible(
            source, "moe_shared_expert_intermediate_size",
            config.moeSharedExpertIntermediateSize,
            "tensor_model_parallel_size", tp))
      return error;
  // TransformerConfig.__post_init__ (transformer_config.py L1813-1826).
  if (config.moeSharedExpertOverlap &&
      (!config.moeSharedExpertIntermediateSize ||
       config.moe.dispatcher != MoEDispatcher::AllToAll))
    return fieldError(source, "moe_shared_expert_overlap",
                      config.moeSharedExpertIntermediateSize
                          ? "works only with moe_token_dispatcher_type "
                            "alltoall, as Megatron's"
                          : "needs moe_shared_expert_intermediate_size");
  if (Error error = checkBatchLevelOverlap(config, source))
    return error;
  int64_t etp = config.getExpertTensorParallelSize();
  if (Error error = checkDivisible(source, "num_experts", config.numExperts,
                                   "expert_model_parallel_size", ep))
    return error;
  if (etp == tp) {
    if (Error error = checkDivisible(source, "data_parallel_size",
                                     config.dataParallelSize,
                                     "expert_model_parallel_size", ep))
      return error;
  } else if (Expected<MeshLayout> layout =
                 buildMeshLayout(config.getParallelSizes());
             !layout) {
    return fieldError(source, "expert_tensor_parallel_size",
                      toString(layout.takeError()));
  }
  if (Error error = checkDivisible(source, "moe_ffn_hidden_size",
                                   config.getExpertFfnHiddenSize(),
                                   etp == tp ? "tensor_model_parallel_size"
                                             : "expert_tensor_parallel_size",
                                   etp))
    return error;
  if (config.moeRouterTopk > config.numExperts)
    return fieldError(source, "moe_router_topk",
                      formatv("moe_router_topk ({0}) exceeds num_experts ({1})",
                              config.moeRouterTopk, config.numExperts));
  // The runtime's router keeps a token's routes on the stack.
  if (config.moe.dispatcher == MoEDispatcher::AllToAll &&
      config.moeRouterTopk > kMaxRoutingTopK)
    return fieldError(source, "moe_router_topk",
                      formatv("moe_router_topk ({0}) is over {1}, the most "
                              "experts per token the all-to-all "
                              "dispatcher's router takes",
                              config.moeRouterTopk, kMaxRoutingTopK));
  // Megatron's arguments.py asserts the same: experts under TP need the
  // sequence split so that routing sees each token on one rank only.
  if (tp > 1 && !config.sequenceParallel)
    return fieldError(source, "sequence_parallel",
                      "must be true when num_experts > 0 and "
                      "tensor_model_parallel_size > 1");
  if (config.addBiasLinear)
    return fieldError(source, "add_bias_linear",
                      "biases in expert layers are not supported; set "
                      "add_bias_linear to false");
  // TransformerConfig.__post_init__ asserts the same.
  if (config.moe.padToCapacity && !config.moe.capacityFactor)
    return fieldError(source, "moe_pad_expert_input_to_capacity",
                      "needs moe_expert_capacity_factor (padding is to the "
                      "capacity it sets)");
  return checkStepSize(config, source);
}
