//===- ModelParams.cpp - The parameters of a Megatron-style model ---------===//
//
// The mesh, the sizes on this rank and the parameters of ModelImporter.h, in
// Megatron-Core's registration order and names, TP-split as its
// ColumnParallelLinear and RowParallelLinear split them.
//
//===----------------------------------------------------------------------===//

#include "ModelImporter.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::importer;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

// validateModelConfig has laid the mesh out once already.
ModelImporter::ModelImporter(MLIRContext &context, const ModelConfig &config)
    : config(config),
      sb(context, cantFail(buildMeshLayout(config.getParallelSizes())),
         config.optimizer, config.numMicrobatches) {
  elementType = getFloatType(&context, config.paramsDtype);
  f32 = Float32Type::get(&context);
  elementBytes = getElementBytes(config.paramsDtype);

  tp = config.tensorModelParallelSize;
  if (config.isPipelined()) {
    sb.setPipelineStages(config.pipelineModelParallelSize);
    // validateModelConfig has split the layers once already.
    std::vector<ChunkLayers> chunks =
        cantFail(splitLayers(config.getLayerSplitConfig()));
    layerChunk.resize(config.numLayers);
    for (auto [flowChunk, chunk] : llvm::enumerate(chunks))
      for (int64_t i = 0; i < chunk.numLayers; ++i)
        layerChunk[chunk.firstLayer + i] = flowChunk;
    lastChunk = chunks.size() - 1;
    // ZB-H1: the W passes, summed in the order each rank runs them.
    PipelineScheduleKind kind = config.getPipelineScheduleKind();
    if (kind == PipelineScheduleKind::ZeroBubbleH1) {
      std::vector<std::vector<int64_t>> order(config.pipelineModelParallelSize);
      for (auto [rank, microbatches] : llvm::enumerate(order))
        for (const PipelineTask &task :
             getStageOrder(kind, config.getPipelineShape(), rank))
          if (task.phase == PipelineTask::Phase::WeightGrad)
            microbatches.push_back(task.microbatch);
      sb.splitWeightGradients(std::move(order));
    }
  }
  sequenceParallel = config.usesSequenceParallel();
  hasDropout = config.hiddenDropout > 0.0;
  tokens = config.getTokensPerMicrobatch();
  localTokens = sequenceParallel ? tokens / tp : tokens;
  hidden = config.hiddenSize;
  int64_t headDim = config.getKvChannels();
  qkvWidth = (config.numAttentionHeads + 2 * config.getNumQueryGroups()) *
             headDim / tp;
  contextWidth = config.numAttentionHeads * headDim / tp;
  ffnWidth = config.getFfnHiddenSize() / tp;
  fc1Width = config.swiglu ? 2 * ffnWidth : ffnWidth;
  etp = config.getExpertTensorParallelSize();
  expertFfnWidth = config.getExpertFfnHiddenSize() / etp;
  expertFc1Width = config.swiglu ? 2 * expertFfnWidth : expertFfnWidth;
  localVocab = config.getPaddedVocabSize() / tp;
  const MeshLayout &layout = sb.getLayout();
  tpGroup = sb.getGroup(layout.tensorAxes);
  // The nodes of Megatron's combined 1F1B: for ddp-combined-1f1b where
  // Megatron can run it without pipeline stages (checkBatchLevelOverlap),
  // so that auto can choose it; with stages, for ddp-pipeline-stages when
  // the model asks for it.
  if (config.isMoE() && config.moe.dispatcher == MoEDispatcher::AllToAll &&
      !config.recompute.isFull() &&
      (!config.isPipelined() || config.overlapMoeExpertParallelComm))
    sb.enableScheduleNodes();
  if (config.isMoE()) {
    numLocalExperts = config.numExperts / config.expertModelParallelSize;
    etpGroup = sb.getGroup(layout.expertTensorAxes);
    epGroup = sb.getGroup(layout.expertAxes);
    dispatchGroup = sb.getGroup(layout.expertTensorAndExpertAxes);
    gatheredTokens = localTokens * dispatchGroup.size;
    // Balanced routing: every expert receives its share of the tokens, or
    // its capacity. Megatron's router applies the capacity to each rank's
    // tokens (apply_router_token_dropping); the all-gather dispatcher then
    // gathers the group's, the all-to-all one the EP ranks' and, over TP,
    // the TP ranks'. Dropless, the all-gather dispatcher routes the gathered
    // tokens.
    int64_t topk = config.moeRouterTopk, experts = config.numExperts;
    balancedCapacity =
        getExpertCapacity(config.moe, localTokens, topk, experts);
    expertCapacity = balancedCapacity;
    // The all-to-all dispatcher routes for real, so each expert's buffer
    // holds the worst case: its capacity, or all of the rank's tokens when
    // dropless. Balanced routing fills balancedCapacity of it, which is
    // what the cost model prices.
    bool realRouting = config.moe.dispatcher == MoEDispatcher::AllToAll;
    if (realRouting)
      expertCapacity =
          getExpertBufferRows(config.moe, localTokens, topk, experts);
    // Imbalance grows a rank's routed rows without bound when dropless, up
    // to the capacity without padding; padded, or with a capacity below the
    // share, the rows are the capacity whatever the routing. With one
    // expert-parallel rank every route stays on the rank. With worst-case
    // buffers, the buffer is the bound.
    std::optional<double> factor = config.moe.capacityFactor;
    if (config.expertModelParallelSize == 1)
      routedLimit.reset();
    else if (realRouting && expertCapacity > balancedCapacity)
      routedLimit = double(expertCapacity) / double(balancedCapacity);
    else if (realRouting)
      routedLimit.reset();
    else if (!factor)
      routedLimit = 0.0;
    else if (!config.moe.padToCapacity && *factor > 1)
      routedLimit = *factor;
    if (config.moe.dispatcher == MoEDispatcher::AllToAll ||
        config.moe.capacityFactor)
      tokensPerExpert = expertCapacity * dispatchGroup.size;
    else
      tokensPerExpert =
          getExpertCapacity(config.moe, gatheredTokens, topk, experts);
  }
}

NormParams ModelImporter::declareNorm(const std::string &prefix,
                                      std::optional<int64_t> layer,
                                      bool sumOverTp) {
  auto declare = [&](StringRef suffix) {
    ParamSpec spec;
    spec.name = prefix + "." + suffix.str();
    spec.type = RankedTensorType::get({hidden}, elementType);
    spec.layer = layer;
    spec.sumOverTensorParallel = sumOverTp;
    return sb.addParam(std::move(spec));
  };
  NormParams params;
  params.weight = declare("weight");
  if (config.normalization == Normalization::LayerNorm)
    params.bias = declare("bias");
  return params;
}

LinearParams ModelImporter::declareLinear(const std::string &prefix,
                                          int64_t out, int64_t in,
                                          std::optional<int64_t> tpDim,
                                          std::optional<int64_t> layer,
                                          bool expert) {
  LinearParams params;
  ParamSpec weight;
  weight.name = prefix + ".weight";
  weight.type = RankedTensorType::get({out, in}, elementType);
  weight.layer = layer;
  // Experts split over their own tensor-parallel group.
  int64_t splits = expert ? etp : tp;
  weight.tpDim = splits > 1 ? tpDim : std::nullopt;
  weight.expert = expert;
  params.weight = sb.addParam(std::move(weight));
  if (!config.addBiasLinear)
    return params;
  // A column-parallel bias is split with the output; a row-parallel one is
  // replicated and, under SP, sees only this rank's tokens.
  bool columnParallel = tpDim && *tpDim == 0;
  ParamSpec bias;
  bias.name = prefix + ".bias";
  bias.type = RankedTensorType::get({out}, elementType);
  bias.layer = layer;
  bias.tpDim =
      splits > 1 && columnParallel ? std::optional<int64_t>(0) : std::nullopt;
  bias.expert = expert;
  bias.sumOverTensorParallel = sequenceParallel && !columnParallel;
  params.bias = sb.addParam(std::move(bias));
  return params;
}

void ModelImporter::declareParams() {
  bool tied = !config.untieEmbeddingsAndOutputWeights;
  ParamSpec embedding;
  embedding.name = "embedding.word_embeddings.weight";
  embedding.type = RankedTensorType::get({localVocab, hidden}, elementType);
  embedding.tpDim = tp > 1 ? std::optional<int64_t>(0) : std::nullopt;
  embedding.sharedEmbedding = tied;
  embedding.contributionsPerMicrobatch = tied ? 2 : 1;
  wordEmbedding = sb.addParam(std::move(embedding));

  if (config.positionEmbeddingType == PositionEmbedding::LearnedAbsolute) {
    ParamSpec position;
    position.name = "embedding.position_embeddings.weight";
    position.type = RankedTensorType::get(
        {config.getMaxPositionEmbeddings(), hidden}, elementType);
    positionEmbedding = sb.addParam(std::move(position));
  }

  int64_t headDim = config.getKvChannels();
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string prefix = llvm::formatv("decoder.layers.{0}", i).str();
    LayerParams params;
    params.inputNorm =
        declareNorm(prefix + ".input_layernorm", i, sequenceParallel);
    params.qkv = declareLinear(prefix + ".self_attention.linear_qkv", qkvWidth,
                               hidden, 0, i, /*expert=*/false);
    params.proj = declareLinear(prefix + ".self_attention.linear_proj", hidden,
                                config.numAttentionHeads * headDim / tp, 1, i,
                                /*expert=*/false);
    params.preMlpNorm =
        declareNorm(prefix + ".pre_mlp_layernorm", i, sequenceParallel);
    if (!config.isMoE()) {
      params.fc1 = declareLinear(prefix + ".mlp.linear_fc1", fc1Width, hidden,
                                 0, i, /*expert=*/false);
      params.fc2 = declareLinear(prefix + ".mlp.linear_fc2", hidden, ffnWidth,
                                 1, i, /*expert=*/false);
    } else {
      ParamSpec router;
      router.name = prefix + ".mlp.router.weight";
      router.type =
          RankedTensorType::get({config.numExperts, hidden}, elementType);
      router.layer = i;
      router.sumOverTensorParallel = sequenceParallel;
      params.router = sb.addParam(std::move(router));
      for (int64_t j = 0; j < numLocalExperts; ++j) {
        std::string expert =
            llvm::formatv("{0}.mlp.experts.local_experts.{1}", prefix, j).str();
        ExpertParams expertParams;
        expertParams.fc1 =
            declareLinear(expert + ".linear_fc1", expertFc1Width, hidden, 0,
                          i, /*expert=*/true);
        expertParams.fc2 =
            declareLinear(expert + ".linear_fc2", hidden, expertFfnWidth, 1, i,
                          /*expert=*/true);
        params.experts.push_back(expertParams);
      }
      // SharedExpertMLP: a dense, TP-split MLP every token goes through.
      if (config.moeSharedExpertIntermediateSize) {
        int64_t width = config.moeSharedExpertIntermediateSize / tp;
        params.sharedFc1 = declareLinear(prefix + ".mlp.shared_experts.linear_fc1",
                                         config.swiglu ? 2 * width : width,
                                         hidden, 0, i, /*expert=*/false);
        params.sharedFc2 = declareLinear(prefix + ".mlp.shared_experts.linear_fc2",
                                         hidden, width, 1, i, /*expert=*/false);
      }
    }
    layers.push_back(std::move(params));
  }

  finalNorm =
      declareNorm("decoder.final_layernorm", std::nullopt, sequenceParallel);
  if (!tied) {
    ParamSpec output;
    output.name = "output_layer.weight";
    output.type = RankedTensorType::get({localVocab, hidden}, elementType);
    output.tpDim = tp > 1 ? std::optional<int64_t>(0) : std::nullopt;
    outputLayer = sb.addParam(std::move(output));
  }
}
