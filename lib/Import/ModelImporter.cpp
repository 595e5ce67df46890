//===- ModelImporter.cpp - The step of a Megatron-style transformer -------===//
//
// One rank's training step of a GPT/Llama/MoE transformer as Megatron-LM runs
// it, with the shapes that rank computes under tensor (TP), sequence (SP),
// expert (EP) and data parallelism (DP):
//
// - parameters in Megatron-Core's registration order and names (local
//   transformer-layer spec), TP-split as ColumnParallelLinear (dim 0) and
//   RowParallelLinear (dim 1) split them;
// - per microbatch the forward, then the backward in reverse: every linear
//   layer is a forward, a dgrad and a wgrad GEMM; attention, norms,
//   activations, routing and the loss are ddp.compute ops carrying their
//   FLOPs and HBM bytes;
// - the TP collectives Megatron issues: an all-reduce after each
//   row-parallel forward and each column-parallel dgrad, or with SP an
//   all-gather before column-parallel layers (again in the backward, for the
//   wgrad) and a reduce-scatter after row-parallel ones;
// - MoE layers with Megatron's all-gather token dispatcher over the
//   expert-and-tensor-parallel group, each local expert receiving its share
//   of the gathered tokens under balanced routing.
//
// docs/Importer.md gives every cost formula.
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/Import.h"

#include "StepBuilder.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::importer;

namespace {

struct NormParams {
  unsigned weight = 0;
  std::optional<unsigned> bias;
};

/// A linear layer `Y = X W^T`, W stored [out, in] as PyTorch stores it.
struct LinearParams {
  unsigned weight = 0;
  std::optional<unsigned> bias;
};

struct ExpertParams {
  LinearParams fc1, fc2;
};

struct LayerParams {
  NormParams inputNorm;
  LinearParams qkv, proj;
  NormParams preMlpNorm;
  // Dense MLP.
  LinearParams fc1, fc2;
  // Mixture of experts.
  std::optional<unsigned> router;
  std::vector<ExpertParams> experts;
};

/// What the forward of one layer keeps for its backward.
struct LayerActivations {
  Value input;        // residual stream entering the layer [tl, h]
  Value inputNormOut; // [tl, h]
  Value qkv;          // [t, qkv/T]
  Value context;      // attention output [t, heads*d/T]
  Value attnResidual; // residual stream after attention [tl, h]
  Value mlpNormOut;   // [tl, h]
  // Dense MLP.
  Value fc1Out;     // before the activation [t, fc1/T]
  Value activation; // [t, ffn/T]
  // Mixture of experts.
  Value routerLogits;  // [tl, experts]
  Value gatheredProbs; // [tg, topk]
  SmallVector<Value> expertIn, expertFc1Out, expertActivation, expertOut;
};

struct MicrobatchActivations {
  Value tokens, labels;
  std::vector<LayerActivations> layers;
  Value finalInput;   // [tl, h]
  Value finalNormOut; // [tl, h]
  Value logits;       // [t, V/T]
  Value logitsMax, sumExp;
};

class ModelImporter {
public:
  ModelImporter(MLIRContext &context, const ModelConfig &config);
  OwningOpRef<ModuleOp> run();

private:
  static MeshLayout getMeshLayout(const ModelConfig &config);

  void declareParams();
  NormParams declareNorm(const std::string &prefix,
                         std::optional<int64_t> layer, bool sumOverTp);
  LinearParams declareLinear(const std::string &prefix, int64_t out, int64_t in,
                             std::optional<int64_t> tpDim,
                             std::optional<int64_t> layer, bool expert);

  Value forward(MicrobatchActivations &acts);
  void backward(MicrobatchActivations &acts);
  Value attentionForward(const LayerParams &params, LayerActivations &acts,
                         int64_t layer);
  Value denseMlpForward(const LayerParams &params, LayerActivations &acts,
                        int64_t layer);
  Value moeForward(const LayerParams &params, LayerActivations &acts,
                   int64_t layer);
  Value layerBackward(const LayerParams &params, const LayerActivations &acts,
                      Value gradOut, int64_t layer);
  Value denseMlpBackward(const LayerParams &params,
                         const LayerActivations &acts, Value gradOut,
                         int64_t layer);
  Value moeBackward(const LayerParams &params, const LayerActivations &acts,
                    Value gradOut, int64_t layer);

  // Building blocks.
  Value norm(const NormParams &params, Value input,
             std::optional<int64_t> layer);
  Value normBackward(const NormParams &params, Value gradOut, Value input,
                     std::optional<int64_t> layer);
  Value columnParallelForward(Value localInput, unsigned weight,
                              std::optional<int64_t> layer);
  Value columnParallelBackward(Value gradOut, Value localInput, unsigned weight,
                               std::optional<int64_t> layer);
  Value rowParallelForward(Value input, unsigned weight,
                           std::optional<int64_t> layer);
  Value rowParallelBackward(Value localGradOut, Value input, unsigned weight,
                            std::optional<int64_t> layer);
  Value biasDropoutAdd(Value branch, std::optional<unsigned> bias,
                       Value residual, int64_t layer);
  Value biasDropoutAddBackward(Value gradOut, std::optional<unsigned> bias,
                               int64_t layer);
  Value activation(Value input, std::optional<unsigned> bias,
                   std::optional<int64_t> layer);
  Value activationBackward(Value gradOut, Value input,
                           std::optional<unsigned> bias,
                           std::optional<int64_t> layer);
  Value add(Value lhs, Value rhs, std::optional<int64_t> layer);

  /// Q K^T and P V over the full sequence for this rank's heads (the formula
  /// of Narayanan et al. 2021 counts no causal saving), plus the softmax at 5
  /// FLOPs per score. The backward costs twice as much.
  double getAttentionFlops() const {
    double scores = double(config.microBatchSize) * config.numAttentionHeads /
                    tp * config.seqLength * config.seqLength;
    return scores * (4.0 * config.getKvChannels() + 5.0);
  }
  RankedTensorType actType(int64_t rows, int64_t cols) const {
    return RankedTensorType::get({rows, cols}, elementType);
  }
  double bytes(double elements) const { return elements * elementBytes; }
  StringRef activationName() const {
    return config.swiglu ? "swiglu"
                         : (config.squaredRelu ? "squared_relu" : "gelu");
  }
  StringRef normName() const {
    return config.normalization == Normalization::LayerNorm ? "layernorm"
                                                            : "rmsnorm";
  }

  const ModelConfig &config;
  StepBuilder sb;
  Type elementType, f32;
  int64_t elementBytes;

  // Sizes on this rank (docs/Importer.md, "Shapes").
  int64_t tp, tokens, localTokens, hidden, qkvWidth, contextWidth, fc1Width,
      ffnWidth, localVocab, numLocalExperts = 0, gatheredTokens = 0,
                            tokensPerExpert = 0;
  bool sequenceParallel;
  bool hasDropout;
  Group tpGroup, dispatchGroup;

  unsigned wordEmbedding = 0;
  std::optional<unsigned> positionEmbedding;
  std::vector<LayerParams> layers;
  NormParams finalNorm;
  std::optional<unsigned> outputLayer;
};

} // namespace

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// A MoE model has the `ep` axis even when E = 1, a dense one never; `tp`
/// is the fastest axis, so that a tensor-parallel group fills a node.
MeshLayout ModelImporter::getMeshLayout(const ModelConfig &config) {
  MeshLayout layout = MeshLayout::dataParallel(
      config.dataParallelSize,
      config.isMoE() ? std::optional<int64_t>(config.expertModelParallelSize)
                     : std::nullopt);
  layout.axes.push_back({"tp", config.tensorModelParallelSize});
  return layout;
}

ModelImporter::ModelImporter(MLIRContext &context, const ModelConfig &config)
    : config(config), sb(context, getMeshLayout(config), config.optimizer,
                         config.numMicrobatches) {
  elementType = getFloatType(&context, config.paramsDtype);
  f32 = Float32Type::get(&context);
  elementBytes = getElementBytes(config.paramsDtype);

  tp = config.tensorModelParallelSize;
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
  localVocab = config.getPaddedVocabSize() / tp;
  tpGroup = sb.getGroup({"tp"});
  if (config.isMoE()) {
    numLocalExperts = config.numExperts / config.expertModelParallelSize;
    dispatchGroup = sb.getGroup({"ep", "tp"});
    gatheredTokens = localTokens * dispatchGroup.size;
    // Balanced routing: every expert receives its share of the tokens.
    tokensPerExpert =
        (gatheredTokens * config.moeRouterTopk + config.numExperts - 1) /
        config.numExperts;
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
  weight.tpDim = tp > 1 ? tpDim : std::nullopt;
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
      tp > 1 && columnParallel ? std::optional<int64_t>(0) : std::nullopt;
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
        expertParams.fc1 = declareLinear(expert + ".linear_fc1", fc1Width,
                                         hidden, 0, i, /*expert=*/true);
        expertParams.fc2 = declareLinear(expert + ".linear_fc2", hidden,
                                         ffnWidth, 1, i, /*expert=*/true);
        params.experts.push_back(expertParams);
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

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

/// FLOPs per element of a norm's forward; the backward costs twice as much.
/// LayerNorm: mean, centre, variance, normalise (2), scale, shift.
/// RMSNorm: square-sum, normalise, scale, plus the reduction.
static double getNormFlopsPerElement(Normalization normalization) {
  return normalization == Normalization::LayerNorm ? 7.0 : 4.0;
}

Value ModelImporter::norm(const NormParams &params, Value input,
                          std::optional<int64_t> layer) {
  SmallVector<Value> operands{input, sb.getParam(params.weight)};
  if (params.bias)
    operands.push_back(sb.getParam(*params.bias));
  auto type = cast<RankedTensorType>(input.getType());
  double elements = type.getNumElements();
  double paramElements = (params.bias ? 2 : 1) * hidden;
  return sb.compute1(normName(), operands, type,
                     getNormFlopsPerElement(config.normalization) * elements,
                     bytes(2 * elements + paramElements), layer);
}

Value ModelImporter::normBackward(const NormParams &params, Value gradOut,
                                  Value input, std::optional<int64_t> layer) {
  auto type = cast<RankedTensorType>(input.getType());
  auto paramType = RankedTensorType::get({hidden}, elementType);
  SmallVector<Type> results{type, paramType};
  if (params.bias)
    results.push_back(paramType);
  double elements = type.getNumElements();
  double paramElements = (params.bias ? 2 : 1) * hidden;
  ValueRange grads =
      sb.compute((normName() + "_grad").str(),
                 {gradOut, input, sb.getParam(params.weight)}, results,
                 2 * getNormFlopsPerElement(config.normalization) * elements,
                 bytes(3 * elements + 2 * paramElements), layer);
  sb.addGradient(params.weight, grads[1]);
  if (params.bias)
    sb.addGradient(*params.bias, grads[2]);
  return grads[0];
}

Value ModelImporter::columnParallelForward(Value localInput, unsigned weight,
                                           std::optional<int64_t> layer) {
  Value input =
      sequenceParallel ? sb.allGather(localInput, tpGroup) : localInput;
  return sb.gemm(GemmPhase::Fwd, input, false, sb.getParam(weight), true,
                 layer);
}

/// Megatron's LinearWithGradAccumulationAndAsyncCommunication, issued
/// synchronously: under SP the input is gathered again for the wgrad; the
/// dgrad is reduced over TP (all-reduce, or reduce-scatter under SP) before
/// the wgrad runs.
Value ModelImporter::columnParallelBackward(Value gradOut, Value localInput,
                                            unsigned weight,
                                            std::optional<int64_t> layer) {
  Value input =
      sequenceParallel ? sb.allGather(localInput, tpGroup) : localInput;
  Value gradInput = sb.gemm(GemmPhase::Dgrad, gradOut, false,
                            sb.getParam(weight), false, layer);
  if (tp > 1)
    gradInput = sequenceParallel ? sb.reduceScatter(gradInput, tpGroup)
                                 : sb.allReduce(gradInput, tpGroup);
  sb.addGradient(weight,
                 sb.gemm(GemmPhase::Wgrad, gradOut, true, input, false, layer));
  return gradInput;
}

Value ModelImporter::rowParallelForward(Value input, unsigned weight,
                                        std::optional<int64_t> layer) {
  Value output =
      sb.gemm(GemmPhase::Fwd, input, false, sb.getParam(weight), true, layer);
  if (tp == 1)
    return output;
  return sequenceParallel ? sb.reduceScatter(output, tpGroup)
                          : sb.allReduce(output, tpGroup);
}

Value ModelImporter::rowParallelBackward(Value localGradOut, Value input,
                                         unsigned weight,
                                         std::optional<int64_t> layer) {
  Value gradOut =
      sequenceParallel ? sb.allGather(localGradOut, tpGroup) : localGradOut;
  Value gradInput = sb.gemm(GemmPhase::Dgrad, gradOut, false,
                            sb.getParam(weight), false, layer);
  sb.addGradient(weight,
                 sb.gemm(GemmPhase::Wgrad, gradOut, true, input, false, layer));
  return gradInput;
}

/// Megatron's fused bias-dropout-add after the attention and MLP blocks.
Value ModelImporter::biasDropoutAdd(Value branch, std::optional<unsigned> bias,
                                    Value residual, int64_t layer) {
  SmallVector<Value> operands{branch};
  if (bias)
    operands.push_back(sb.getParam(*bias));
  operands.push_back(residual);
  auto type = cast<RankedTensorType>(residual.getType());
  double elements = type.getNumElements();
  double flopsPerElement = 1 + (bias ? 1 : 0) + (hasDropout ? 1 : 0);
  return sb.compute1("bias_dropout_add", operands, type,
                     flopsPerElement * elements,
                     bytes(3 * elements + (bias ? hidden : 0)), layer);
}

/// The gradient flowing into the block's branch. Without bias and dropout the
/// add passes it through unchanged, so there is no kernel.
Value ModelImporter::biasDropoutAddBackward(Value gradOut,
                                            std::optional<unsigned> bias,
                                            int64_t layer) {
  if (!bias && !hasDropout)
    return gradOut;
  auto type = cast<RankedTensorType>(gradOut.getType());
  SmallVector<Type> results{type};
  if (bias)
    results.push_back(RankedTensorType::get({hidden}, elementType));
  double elements = type.getNumElements();
  ValueRange grads =
      sb.compute("bias_dropout_add_grad", gradOut, results,
                 ((hasDropout ? 1 : 0) + (bias ? 1 : 0)) * elements,
                 bytes(2 * elements + (bias ? hidden : 0)), layer);
  if (bias)
    sb.addGradient(*bias, grads[1]);
  return grads[0];
}

/// FLOPs per output element of the MLP activation (with its fused bias add,
/// as Megatron's bias_gelu / bias_swiglu fusions); the backward costs twice.
static double getActivationFlopsPerElement(const ModelConfig &config) {
  double flops = config.swiglu ? 5.0 : (config.squaredRelu ? 2.0 : 8.0);
  return flops + (config.addBiasLinear ? 1.0 : 0.0);
}

Value ModelImporter::activation(Value input, std::optional<unsigned> bias,
                                std::optional<int64_t> layer) {
  SmallVector<Value> operands{input};
  if (bias)
    operands.push_back(sb.getParam(*bias));
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rows = inputType.getDimSize(0);
  int64_t width =
      config.swiglu ? inputType.getDimSize(1) / 2 : inputType.getDimSize(1);
  RankedTensorType type = actType(rows, width);
  double outElements = type.getNumElements();
  return sb.compute1(activationName(), operands, type,
                     getActivationFlopsPerElement(config) * outElements,
                     bytes(inputType.getNumElements() + outElements +
                           (bias ? inputType.getDimSize(1) : 0)),
                     layer);
}

Value ModelImporter::activationBackward(Value gradOut, Value input,
                                        std::optional<unsigned> bias,
                                        std::optional<int64_t> layer) {
  SmallVector<Value> operands{gradOut, input};
  if (bias)
    operands.push_back(sb.getParam(*bias));
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<Type> results{inputType};
  if (bias)
    results.push_back(
        RankedTensorType::get({inputType.getDimSize(1)}, elementType));
  double outElements =
      cast<RankedTensorType>(gradOut.getType()).getNumElements();
  ValueRange grads =
      sb.compute((activationName() + "_grad").str(), operands, results,
                 2 * getActivationFlopsPerElement(config) * outElements,
                 bytes(outElements + 2 * inputType.getNumElements() +
                       (bias ? 2 * inputType.getDimSize(1) : 0)),
                 layer);
  if (bias)
    sb.addGradient(*bias, grads[1]);
  return grads[0];
}

/// The sum of the two gradients of a tensor used twice (the residual
/// stream), as autograd accumulates them.
Value ModelImporter::add(Value lhs, Value rhs, std::optional<int64_t> layer) {
  double elements = cast<RankedTensorType>(lhs.getType()).getNumElements();
  return sb.compute1("add", {lhs, rhs}, lhs.getType(), elements,
                     bytes(3 * elements), layer);
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

Value ModelImporter::attentionForward(const LayerParams &params,
                                      LayerActivations &acts, int64_t layer) {
  acts.inputNormOut = norm(params.inputNorm, acts.input, layer);
  Value qkv =
      columnParallelForward(acts.inputNormOut, params.qkv.weight, layer);
  if (params.qkv.bias) {
    double elements = tokens * qkvWidth;
    qkv = sb.compute1("bias_add", {qkv, sb.getParam(*params.qkv.bias)},
                      qkv.getType(), elements, bytes(2 * elements + qkvWidth),
                      layer);
  }
  acts.qkv = qkv;

  // Fused (flash) attention: HBM sees only Q, K, V and the output.
  acts.context = sb.compute1(
      "attention", qkv, actType(tokens, contextWidth), getAttentionFlops(),
      bytes(tokens * double(qkvWidth + contextWidth)), layer);
  Value projected = rowParallelForward(acts.context, params.proj.weight, layer);
  return biasDropoutAdd(projected, params.proj.bias, acts.input, layer);
}

Value ModelImporter::denseMlpForward(const LayerParams &params,
                                     LayerActivations &acts, int64_t layer) {
  acts.fc1Out =
      columnParallelForward(acts.mlpNormOut, params.fc1.weight, layer);
  acts.activation = activation(acts.fc1Out, params.fc1.bias, layer);
  Value output = rowParallelForward(acts.activation, params.fc2.weight, layer);
  return biasDropoutAdd(output, params.fc2.bias, acts.attnResidual, layer);
}

Value ModelImporter::moeForward(const LayerParams &params,
                                LayerActivations &acts, int64_t layer) {
  int64_t numExperts = config.numExperts, topk = config.moeRouterTopk;
  Value normOut = acts.mlpNormOut;
  // TopKRouter: a GEMM against the replicated router weight, then softmax
  // and top-k per token.
  acts.routerLogits = sb.gemm(GemmPhase::Fwd, normOut, false,
                              sb.getParam(*params.router), true, layer);
  double logits = localTokens * double(numExperts);
  Value probs = sb.compute1("router_topk", acts.routerLogits,
                            actType(localTokens, topk), logits * (5.0 + topk),
                            bytes(logits + localTokens * double(topk)), layer);

  // MoEAllGatherTokenDispatcher: gather the tokens and their routing over the
  // expert-and-tensor-parallel group, permute them to the local experts.
  Value gathered = normOut;
  acts.gatheredProbs = probs;
  if (dispatchGroup.size > 1) {
    gathered = sb.allGather(normOut, dispatchGroup);
    acts.gatheredProbs = sb.allGather(probs, dispatchGroup);
  }
  double gatheredElements = gatheredTokens * double(hidden);
  double expertElements = numLocalExperts * tokensPerExpert * double(hidden);
  double probElements = gatheredTokens * double(topk);
  SmallVector<Type> expertInTypes(numLocalExperts,
                                  actType(tokensPerExpert, hidden));
  ValueRange expertIn = sb.compute(
      "moe_permute", {gathered, acts.gatheredProbs}, expertInTypes, 0.0,
      bytes(gatheredElements + expertElements + probElements), layer);
  acts.expertIn.assign(expertIn.begin(), expertIn.end());

  // SequentialMLP: each local expert is a TP-split MLP.
  for (auto [expert, input] : llvm::zip(params.experts, acts.expertIn)) {
    Value fc1Out = sb.gemm(GemmPhase::Fwd, input, false,
                           sb.getParam(expert.fc1.weight), true, layer);
    Value act = activation(fc1Out, std::nullopt, layer);
    acts.expertFc1Out.push_back(fc1Out);
    acts.expertActivation.push_back(act);
    acts.expertOut.push_back(sb.gemm(GemmPhase::Fwd, act, false,
                                     sb.getParam(expert.fc2.weight), true,
                                     layer));
  }

  // Weight each expert output by its routing probability and scatter it back
  // to its token; the reduce-scatter sums the TP partial sums and the
  // experts of the other ranks and returns this rank's tokens.
  SmallVector<Value> combineInputs(acts.expertOut);
  combineInputs.push_back(acts.gatheredProbs);
  Value combined = sb.compute1(
      "moe_unpermute", combineInputs, actType(gatheredTokens, hidden),
      2 * expertElements,
      bytes(expertElements + gatheredElements + probElements), layer);
  if (dispatchGroup.size > 1)
    combined = sb.reduceScatter(combined, dispatchGroup);
  return biasDropoutAdd(combined, std::nullopt, acts.attnResidual, layer);
}

Value ModelImporter::forward(MicrobatchActivations &acts) {
  // VocabParallelEmbedding: each rank looks up the tokens in its slice of the
  // vocabulary; the partial sums are all-reduced over TP (reduce-scattered
  // under SP when no position embedding follows).
  double embeddingElements = tokens * double(hidden);
  Value x =
      sb.compute1("embedding", {acts.tokens, sb.getParam(wordEmbedding)},
                  actType(tokens, hidden), 0.0,
                  bytes(2 * embeddingElements) + 4.0 * tokens, std::nullopt);
  if (tp > 1)
    x = sequenceParallel && !positionEmbedding ? sb.reduceScatter(x, tpGroup)
                                               : sb.allReduce(x, tpGroup);
  if (positionEmbedding) {
    x = sb.compute1("position_embedding", {x, sb.getParam(*positionEmbedding)},
                    x.getType(), embeddingElements,
                    bytes(3 * embeddingElements), std::nullopt);
    // scatter_to_sequence_parallel_region keeps this rank's slice: no
    // communication.
    if (sequenceParallel)
      x = sb.compute1("sequence_split", x, actType(localTokens, hidden), 0.0,
                      bytes(2.0 * localTokens * hidden), std::nullopt);
  }

  acts.layers.resize(layers.size());
  for (auto [index, params] : llvm::enumerate(layers)) {
    int64_t layer = index;
    LayerActivations &layerActs = acts.layers[index];
    layerActs.input = x;
    layerActs.attnResidual = attentionForward(params, layerActs, layer);
    layerActs.mlpNormOut =
        norm(params.preMlpNorm, layerActs.attnResidual, layer);
    x = config.isMoE() ? moeForward(params, layerActs, layer)
                       : denseMlpForward(params, layerActs, layer);
  }

  acts.finalInput = x;
  acts.finalNormOut = norm(finalNorm, x, std::nullopt);
  unsigned outputWeight = outputLayer ? *outputLayer : wordEmbedding;
  acts.logits =
      columnParallelForward(acts.finalNormOut, outputWeight, std::nullopt);

  // vocab_parallel_cross_entropy in fp32: the max logit and the two sums
  // (target logit, sum of exponentials) are all-reduced over TP.
  double logitElements = tokens * double(localVocab);
  auto perToken = RankedTensorType::get({tokens}, f32);
  Value logitsMax =
      sb.compute1("cross_entropy_max", acts.logits, perToken, logitElements,
                  bytes(logitElements) + 4.0 * tokens, std::nullopt);
  if (tp > 1)
    logitsMax = sb.allReduce(logitsMax, tpGroup, Reduction::Max);
  ValueRange sums =
      sb.compute("cross_entropy_sums", {acts.logits, logitsMax, acts.labels},
                 {perToken, perToken}, 3 * logitElements + tokens,
                 bytes(logitElements) + 4.0 * 4 * tokens, std::nullopt);
  Value targetLogit = sums[0], sumExp = sums[1];
  if (tp > 1) {
    targetLogit = sb.allReduce(targetLogit, tpGroup);
    sumExp = sb.allReduce(sumExp, tpGroup);
  }
  acts.logitsMax = logitsMax;
  acts.sumExp = sumExp;
  return sb.compute1("cross_entropy_loss", {targetLogit, sumExp},
                     RankedTensorType::get({1}, f32), 3.0 * tokens,
                     4.0 * (2 * tokens + 1), std::nullopt);
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

Value ModelImporter::denseMlpBackward(const LayerParams &params,
                                      const LayerActivations &acts,
                                      Value gradOut, int64_t layer) {
  Value gradBranch = biasDropoutAddBackward(gradOut, params.fc2.bias, layer);
  Value gradAct = rowParallelBackward(gradBranch, acts.activation,
                                      params.fc2.weight, layer);
  Value gradFc1 =
      activationBackward(gradAct, acts.fc1Out, params.fc1.bias, layer);
  return columnParallelBackward(gradFc1, acts.mlpNormOut, params.fc1.weight,
                                layer);
}

Value ModelImporter::moeBackward(const LayerParams &params,
                                 const LayerActivations &acts, Value gradOut,
                                 int64_t layer) {
  int64_t numExperts = config.numExperts, topk = config.moeRouterTopk;
  Value gradCombined = biasDropoutAddBackward(gradOut, std::nullopt, layer);
  if (dispatchGroup.size > 1)
    gradCombined = sb.allGather(gradCombined, dispatchGroup);

  double gatheredElements = gatheredTokens * double(hidden);
  double expertElements = numLocalExperts * tokensPerExpert * double(hidden);
  double probElements = gatheredTokens * double(topk);
  SmallVector<Value> unpermuteInputs{gradCombined};
  llvm::append_range(unpermuteInputs, acts.expertOut);
  unpermuteInputs.push_back(acts.gatheredProbs);
  SmallVector<Type> unpermuteResults(numLocalExperts,
                                     actType(tokensPerExpert, hidden));
  unpermuteResults.push_back(actType(gatheredTokens, topk));
  ValueRange unpermuteGrads = sb.compute(
      "moe_unpermute_grad", unpermuteInputs, unpermuteResults,
      2 * expertElements,
      bytes(gatheredElements + 2 * expertElements + 2 * probElements), layer);

  // Autograd runs the experts' backward in the reverse of their forward.
  SmallVector<Value> gradExpertIn(numLocalExperts);
  for (int64_t j = numLocalExperts - 1; j >= 0; --j) {
    const ExpertParams &expert = params.experts[j];
    Value gradOutJ = unpermuteGrads[j];
    Value gradAct = sb.gemm(GemmPhase::Dgrad, gradOutJ, false,
                            sb.getParam(expert.fc2.weight), false, layer);
    sb.addGradient(expert.fc2.weight,
                   sb.gemm(GemmPhase::Wgrad, gradOutJ, true,
                           acts.expertActivation[j], false, layer));
    Value gradFc1 =
        activationBackward(gradAct, acts.expertFc1Out[j], std::nullopt, layer);
    gradExpertIn[j] = sb.gemm(GemmPhase::Dgrad, gradFc1, false,
                              sb.getParam(expert.fc1.weight), false, layer);
    sb.addGradient(expert.fc1.weight, sb.gemm(GemmPhase::Wgrad, gradFc1, true,
                                              acts.expertIn[j], false, layer));
  }
  Value gradGathered = sb.compute1(
      "moe_permute_grad", gradExpertIn, actType(gatheredTokens, hidden),
      expertElements, bytes(expertElements + gatheredElements), layer);
  Value gradProbs = unpermuteGrads[numLocalExperts];
  if (dispatchGroup.size > 1) {
    gradGathered = sb.reduceScatter(gradGathered, dispatchGroup);
    gradProbs = sb.reduceScatter(gradProbs, dispatchGroup);
  }

  double logits = localTokens * double(numExperts);
  Value gradLogits =
      sb.compute1("router_topk_grad", {gradProbs, acts.routerLogits},
                  actType(localTokens, numExperts), 2 * logits * (5.0 + topk),
                  bytes(2 * logits + localTokens * double(topk)), layer);
  Value gradNormOut = sb.gemm(GemmPhase::Dgrad, gradLogits, false,
                              sb.getParam(*params.router), false, layer);
  sb.addGradient(*params.router, sb.gemm(GemmPhase::Wgrad, gradLogits, true,
                                         acts.mlpNormOut, false, layer));
  return add(gradGathered, gradNormOut, layer);
}

Value ModelImporter::layerBackward(const LayerParams &params,
                                   const LayerActivations &acts, Value gradOut,
                                   int64_t layer) {
  // MLP block: gradOut reaches the residual stream after attention both
  // through the block and directly.
  Value gradMlpNormOut = config.isMoE()
                             ? moeBackward(params, acts, gradOut, layer)
                             : denseMlpBackward(params, acts, gradOut, layer);
  Value gradMlpNormIn =
      normBackward(params.preMlpNorm, gradMlpNormOut, acts.attnResidual, layer);
  Value gradAttnResidual = add(gradOut, gradMlpNormIn, layer);

  // Attention block.
  Value gradBranch =
      biasDropoutAddBackward(gradAttnResidual, params.proj.bias, layer);
  Value gradContext =
      rowParallelBackward(gradBranch, acts.context, params.proj.weight, layer);
  Value gradQkv =
      sb.compute1("attention_grad", {gradContext, acts.qkv, acts.context},
                  acts.qkv.getType(), 2 * getAttentionFlops(),
                  bytes(2 * tokens * double(qkvWidth + contextWidth)), layer);
  Value gradNormOut = columnParallelBackward(gradQkv, acts.inputNormOut,
                                             params.qkv.weight, layer);
  if (params.qkv.bias) {
    // grad_output.sum(0), after the wgrad as in Megatron's linear backward.
    double elements = tokens * double(qkvWidth);
    sb.addGradient(*params.qkv.bias,
                   sb.compute1("bias_grad", gradQkv,
                               RankedTensorType::get({qkvWidth}, elementType),
                               elements, bytes(elements + qkvWidth), layer));
  }
  Value gradNormIn =
      normBackward(params.inputNorm, gradNormOut, acts.input, layer);
  return add(gradAttnResidual, gradNormIn, layer);
}

void ModelImporter::backward(MicrobatchActivations &acts) {
  double logitElements = tokens * double(localVocab);
  Value gradLogits =
      sb.compute1("cross_entropy_grad",
                  {acts.logits, acts.logitsMax, acts.sumExp, acts.labels},
                  acts.logits.getType(), 4 * logitElements,
                  bytes(2 * logitElements) + 4.0 * 3 * tokens, std::nullopt);
  unsigned outputWeight = outputLayer ? *outputLayer : wordEmbedding;
  Value grad = columnParallelBackward(gradLogits, acts.finalNormOut,
                                      outputWeight, std::nullopt);
  grad = normBackward(finalNorm, grad, acts.finalInput, std::nullopt);

  for (int64_t index = layers.size() - 1; index >= 0; --index)
    grad = layerBackward(layers[index], acts.layers[index], grad, index);

  // Embedding: the backward of scatter_to_sequence_parallel_region (or of
  // the reduce-scatter) gathers the sequence again; the backward of the
  // all-reduce is the identity.
  if (sequenceParallel)
    grad = sb.allGather(grad, tpGroup);
  double embeddingElements = tokens * double(hidden);
  if (positionEmbedding) {
    int64_t positions = config.getMaxPositionEmbeddings();
    sb.addGradient(
        *positionEmbedding,
        sb.compute1("position_embedding_grad", grad,
                    RankedTensorType::get({positions, hidden}, elementType),
                    embeddingElements,
                    bytes(embeddingElements + positions * hidden),
                    std::nullopt));
  }
  sb.addGradient(
      wordEmbedding,
      sb.compute1("embedding_grad", {grad, acts.tokens},
                  RankedTensorType::get({localVocab, hidden}, elementType),
                  embeddingElements,
                  bytes(embeddingElements + localVocab * hidden) + 4.0 * tokens,
                  std::nullopt));
}

OwningOpRef<ModuleOp> ModelImporter::run() {
  declareParams();
  auto tokenType = RankedTensorType::get({tokens}, f32);
  SmallVector<Type> inputs;
  for (int64_t m = 0; m < config.numMicrobatches; ++m)
    inputs.append({tokenType, tokenType});
  SmallVector<Value> args = sb.beginStep(inputs);

  SmallVector<Value> losses;
  for (int64_t m = 0; m < config.numMicrobatches; ++m) {
    sb.setMicrobatch(m);
    MicrobatchActivations acts;
    acts.tokens = args[2 * m];
    acts.labels = args[2 * m + 1];
    losses.push_back(forward(acts));
    backward(acts);
  }
  return sb.finish(losses);
}

OwningOpRef<ModuleOp> ddp::importModel(MLIRContext &context,
                                       const ModelConfig &config) {
  return ModelImporter(context, config).run();
}
