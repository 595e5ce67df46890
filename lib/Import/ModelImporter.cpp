//===- ModelImporter.cpp - The step of a Megatron-style transformer -------===//
//
// The step's ops of ModelImporter.h: per microbatch the forward and the
// backward with the TP collectives Megatron issues; docs/Importer.md gives
// every cost formula. The parameters are declared in ModelParams.cpp, the
// tensor-parallel linear layers built in ParallelLinear.cpp.
//
//===----------------------------------------------------------------------===//

#include "ModelImporter.h"

#include "ddp/Import/ActivationModel.h"
#include "ddp/Import/MegatronArgs.h"

#include "ddp/Import/Import.h"
#include "ddp/Support/FormatNumber.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::importer;

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

Value ModelImporter::coreAttention(Value qkv, int64_t layer) {
  // Fused (flash) attention: HBM sees only Q, K, V and the output.
  return sb.compute1("attention", qkv, actType(tokens, contextWidth),
                     getAttentionFlops(),
                     bytes(tokens * double(qkvWidth + contextWidth)), layer);
}

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

  acts.context = coreAttention(qkv, layer);
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

Value ModelImporter::layerForward(const LayerParams &params,
                                  LayerActivations &acts, int64_t layer) {
  // The pre-MLP norm belongs to the attention node of an MoE layer and to
  // the MLP node of a dense one (fine_grained_callables.py).
  sb.setScheduleNode(false, ScheduleNode::Kind::Attention, layer);
  acts.attnResidual = attentionForward(params, acts, layer);
  if (!config.isMoE())
    sb.setScheduleNode(false, ScheduleNode::Kind::Mlp, layer);
  acts.mlpNormOut = norm(params.preMlpNorm, acts.attnResidual, layer);
  return config.isMoE() ? moeForward(params, acts, layer)
                        : denseMlpForward(params, acts, layer);
}

std::vector<int64_t> ModelImporter::getRecomputeGroupStarts() const {
  // Megatron checkpoints within each TransformerBlock: the layers of one
  // model chunk of one pipeline rank, consecutive in flow order.
  int64_t count = layers.size();
  std::vector<int64_t> starts(count, -1);
  for (int64_t first = 0; first < count;) {
    int64_t end = first + 1;
    while (end < count && getChunk(end) == getChunk(first))
      ++end;
    for (auto [groupFirst, groupEnd] :
         getRecomputeGroups(config.recompute, end - first))
      for (int64_t layer = first + groupFirst; layer < first + groupEnd;
           ++layer)
        starts[layer] = first + groupFirst;
    first = end;
  }
  return starts;
}

Value ModelImporter::forward(MicrobatchActivations &acts) {
  using Phase = PipelineTask::Phase;
  using Node = ScheduleNode::Kind;
  sb.setPipelineChunk(Phase::Forward, 0);
  sb.setScheduleNode(false, Node::PreProcess);
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
    sb.setPipelineChunk(Phase::Forward, getChunk(layer));
    layerActs.input = x;
    x = layerForward(params, layerActs, layer);
  }

  sb.setPipelineChunk(Phase::Forward, lastChunk);
  // Megatron's combined 1F1B runs the final norm in the last layer's
  // combine node (fine_grained_callables.py, submodule_combine_forward).
  sb.setScheduleNode(false, Node::Combine, layers.size() - 1);
  acts.finalInput = x;
  acts.finalNormOut = norm(finalNorm, x, std::nullopt);
  sb.setScheduleNode(false, Node::PostProcess);
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

void ModelImporter::rerunPreMlpNorm(const LayerParams &params,
                                    LayerActivations &acts, int64_t layer) {
  // CheckpointWithoutOutput's hook on the MLP's output
  // (transformer_layer.py L1088-1093).
  if (config.recompute.recomputes(RecomputeModule::LayerNorm))
    acts.mlpNormOut = norm(params.preMlpNorm, acts.attnResidual, layer);
}

Value ModelImporter::denseMlpBackward(const LayerParams &params,
                                      const LayerActivations &saved,
                                      Value gradOut, int64_t layer) {
  Value gradBranch = biasDropoutAddBackward(gradOut, params.fc2.bias, layer);
  LayerActivations acts = saved;
  rerunPreMlpNorm(params, acts, layer);
  // recompute_modules mlp (tensor_parallel.checkpoint of the MLP,
  // transformer_layer.py L992-1010): its whole forward again, fc2 and its
  // collective included, whose output the backward does not read.
  if (config.recompute.recomputes(RecomputeModule::Mlp)) {
    acts.fc1Out =
        columnParallelForward(acts.mlpNormOut, params.fc1.weight, layer);
    acts.activation = activation(acts.fc1Out, params.fc1.bias, layer);
    (void)rowParallelForward(acts.activation, params.fc2.weight, layer);
  }
  Value gradAct = rowParallelBackward(gradBranch, acts.activation,
                                      params.fc2.weight, layer);
  Value gradFc1 =
      activationBackward(gradAct, acts.fc1Out, params.fc1.bias, layer);
  return columnParallelBackward(gradFc1, acts.mlpNormOut, params.fc1.weight,
                                layer);
}

Value ModelImporter::layerBackward(const LayerParams &params,
                                   const LayerActivations &saved, Value gradOut,
                                   int64_t layer) {
  LayerActivations acts = saved;
  // MLP block: gradOut reaches the residual stream after attention both
  // through the block and directly.
  sb.setScheduleNode(true, ScheduleNode::Kind::Mlp, layer);
  Value gradMlpNormOut = config.isMoE()
                             ? moeBackward(params, acts, gradOut, layer)
                             : denseMlpBackward(params, acts, gradOut, layer);
  Value gradMlpNormIn =
      normBackward(params.preMlpNorm, gradMlpNormOut, acts.attnResidual, layer);
  Value gradAttnResidual = add(gradOut, gradMlpNormIn, layer);

  // Attention block.
  sb.setScheduleNode(true, ScheduleNode::Kind::Attention, layer);
  Value gradBranch =
      biasDropoutAddBackward(gradAttnResidual, params.proj.bias, layer);
  // recompute_modules layernorm: the input norm's discarded output, again
  // when the attention output's gradient arrives (transformer_layer.py
  // L683-688).
  if (config.recompute.recomputes(RecomputeModule::LayerNorm))
    acts.inputNormOut = norm(params.inputNorm, acts.input, layer);
  Value gradContext =
      rowParallelBackward(gradBranch, acts.context, params.proj.weight, layer);
  // recompute_modules core_attn (Megatron's default for selective): the
  // core attention again for its backward.
  Value context = acts.context;
  if (config.recompute.recomputes(RecomputeModule::CoreAttention))
    context = coreAttention(acts.qkv, layer);
  Value gradQkv =
      sb.compute1("attention_grad", {gradContext, acts.qkv, context},
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
  using Phase = PipelineTask::Phase;
  using Node = ScheduleNode::Kind;
  sb.setPipelineChunk(Phase::Backward, lastChunk);
  sb.setScheduleNode(true, Node::PostProcess);
  double logitElements = tokens * double(localVocab);
  Value gradLogits =
      sb.compute1("cross_entropy_grad",
                  {acts.logits, acts.logitsMax, acts.sumExp, acts.labels},
                  acts.logits.getType(), 4 * logitElements,
                  bytes(2 * logitElements) + 4.0 * 3 * tokens, std::nullopt);
  unsigned outputWeight = outputLayer ? *outputLayer : wordEmbedding;
  // defer_embedding_wgrad_compute: the first wgrad_deferral_limit
  // backwards (every one with 0) keep their output-layer wgrad for the
  // flush (LinearWithGradAccumulationAndAsyncCommunication.backward,
  // tensor_parallel/layers.py L661-664); the others run it here.
  bool defer = config.deferEmbeddingWgradCompute &&
               (config.wgradDeferralLimit == 0 ||
                int64_t(deferredWgrads.size()) < config.wgradDeferralLimit);
  if (defer)
    deferredWgrads.push_back(
        {sb.getMicrobatch(), gradLogits, acts.finalNormOut});
  Value grad = columnParallelBackward(gradLogits, acts.finalNormOut,
                                      outputWeight, std::nullopt, !defer);
  sb.setScheduleNode(true, Node::Combine, layers.size() - 1);
  grad = normBackward(finalNorm, grad, acts.finalInput, std::nullopt);

  // Full recomputation (Megatron's CheckpointFunction): the backward of a
  // checkpointed group first reruns the group's forward from its input.
  const std::vector<int64_t> &groupStart = recomputeGroupStarts;
  for (int64_t index = layers.size() - 1; index >= 0; --index) {
    sb.setPipelineChunk(Phase::Backward, getChunk(index));
    int64_t first = groupStart[index];
    if (first >= 0 && (index + 1 == int64_t(layers.size()) ||
                       groupStart[index + 1] != first)) {
      Value x = acts.layers[first].input;
      for (int64_t layer = first; layer <= index; ++layer) {
        LayerActivations rerun;
        rerun.input = x;
        x = layerForward(layers[layer], rerun, layer);
        acts.layers[layer] = std::move(rerun);
      }
    }
    grad = layerBackward(layers[index], acts.layers[index], grad, index);
  }
  sb.setPipelineChunk(Phase::Backward, 0);
  sb.setScheduleNode(true, Node::PreProcess);

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

  recomputeGroupStarts = getRecomputeGroupStarts();
  SmallVector<Value> losses;
  for (int64_t m = 0; m < config.numMicrobatches; ++m) {
    sb.setMicrobatch(m);
    MicrobatchActivations acts;
    acts.tokens = args[2 * m];
    acts.labels = args[2 * m + 1];
    losses.push_back(forward(acts));
    backward(acts);
  }
  sb.clearScheduleNode();
  addDeferredWgrads();
  OwningOpRef<ModuleOp> module = sb.finish(losses);
  ActivationBytes activations = computeActivationBytes(config);
  if (config.recompute.isFull()) {
    int64_t checkpoint = computeCheckpointBytes(config);
    for (auto [layer, start] : llvm::enumerate(recomputeGroupStarts))
      activations.perLayer.push_back(start < 0 ? activations.layer
                                     : start == int64_t(layer) ? checkpoint
                                                               : 0);
  }
  setActivationBytes(*module, activations);
  // Megatron's ModelParallelConfig holds the group size and the p2p flags;
  // in ddp they are options of the schedule (ddp-pipeline-stages), recorded
  // for ddp-schedule. Megatron's training arguments overlap the interleaved
  // schedule's p2p calls unless --no-overlap-p2p-communication is given
  // (arguments.py L3118-3120, argument_utils.py L307), and always free a
  // forward's output once sent (L305).
  llvm::json::Object options;
  if (config.isPipelined() && config.microbatchGroupSizePerVpStage > 0)
    options["microbatch-group-size"] = config.microbatchGroupSizePerVpStage;
  if (config.isPipelined() && config.getVirtualPipelineSize() > 1)
    options["overlap-p2p-comm"] = config.overlapP2PComm;
  if (config.isPipelined())
    options["deallocate-pipeline-outputs"] = config.deallocatePipelineOutputs;
  if (config.isPipelined() && config.pipelineSchedule)
    options["pipeline-schedule"] =
        stringifyPipelineScheduleKind(*config.pipelineSchedule);
  if (config.moeSharedExpertOverlap)
    options["moe-shared-expert-overlap"] = true;
  if (config.overlapMoeExpertParallelComm)
    options["overlap-moe-expert-parallel-comm"] = true;
  if (config.delayWgradCompute)
    options["delay-wgrad-compute"] = true;
  if (!options.empty())
    recordScheduleOptions(*module, options);
  if (config.isPipelined()) {
    std::string json;
    llvm::raw_string_ostream os(json);
    writeJSONShortest(os, llvm::json::Value(modelConfigToJSON(config)),
                      /*indent=*/0);
    (*module)->setAttr(kModelConfigAttrName,
                       StringAttr::get(module->getContext(), json));
  }
  return module;
}

llvm::Expected<std::optional<ModelConfig>>
ddp::getRecordedModelConfig(ModuleOp module) {
  auto text = module->getAttrOfType<StringAttr>(kModelConfigAttrName);
  if (!text)
    return std::nullopt;
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text.getValue());
  if (!json)
    return json.takeError();
  llvm::Expected<ModelConfig> config =
      parseModelConfig(*json, "the module's " + kModelConfigAttrName.str());
  if (!config)
    return config.takeError();
  return std::optional<ModelConfig>(std::move(*config));
}

OwningOpRef<ModuleOp> ddp::importModel(MLIRContext &context,
                                       const ModelConfig &config) {
  return ModelImporter(context, config).run();
}
