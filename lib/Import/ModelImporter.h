//===- ModelImporter.h - The step of a Megatron-style model -----*- C++ -*-===//
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
//   expert-and-tensor-parallel group or its all-to-all dispatcher over the
//   expert-parallel group (MoELayer.cpp), each local expert receiving its
//   share of the tokens under balanced routing, or its capacity.
//
// docs/Importer.md gives every cost formula.
//
// The constructor and the parameters are in ModelParams.cpp, the step's ops
// in ModelImporter.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_IMPORT_MODELIMPORTER_H
#define DDP_LIB_IMPORT_MODELIMPORTER_H

#include "StepBuilder.h"

#include "ddp/Import/ModelConfig.h"

#include <optional>
#include <string>
#include <vector>

namespace ddp::importer {

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
  std::optional<LinearParams> sharedFc1, sharedFc2;
};

/// What the forward of one layer keeps for its backward.
struct LayerActivations {
  mlir::Value input;        // residual stream entering the layer [tl, h]
  mlir::Value inputNormOut; // [tl, h]
  mlir::Value qkv;          // [t, qkv/T]
  mlir::Value context;      // attention output [t, heads*d/T]
  mlir::Value attnResidual; // residual stream after attention [tl, h]
  mlir::Value mlpNormOut;   // [tl, h]
  // Dense MLP.
  mlir::Value fc1Out;     // before the activation [t, fc1/T]
  mlir::Value activation; // [t, ffn/T]
  // Mixture of experts.
  mlir::Value routerLogits;  // [tl, experts]
  mlir::Value gatheredProbs; // [tg, topk]
  mlir::SmallVector<mlir::Value> expertIn, expertFc1Out, expertActivation,
      expertOut;
  // The all-to-all dispatcher: each local expert's tokens' probabilities,
  // and the router's maps (routing kernel `select`): the token in each
  // expert's slot [experts * capacity], each route's slot [tl * topk].
  mlir::SmallVector<mlir::Value> expertProbs;
  mlir::Value slotRows, tokenSlots;
  // Counted transfers: the rows this rank sends each expert [experts], and
  // those each local expert receives from each rank [experts], in the
  // all-to-all's (rank, local expert) order; null when whole buffers move.
  mlir::Value sendCounts, recvCounts;
  // The shared experts: fc1's output, the activation, fc2's output.
  mlir::Value sharedFc1Out, sharedActivation, sharedOut;
};

struct MicrobatchActivations {
  mlir::Value tokens, labels;
  std::vector<LayerActivations> layers;
  mlir::Value finalInput;   // [tl, h]
  mlir::Value finalNormOut; // [tl, h]
  mlir::Value logits;       // [t, V/T]
  mlir::Value logitsMax, sumExp;
};

class ModelImporter {
public:
  ModelImporter(mlir::MLIRContext &context, const ModelConfig &config);
  mlir::OwningOpRef<mlir::ModuleOp> run();

private:
  void declareParams();
  NormParams declareNorm(const std::string &prefix,
                         std::optional<int64_t> layer, bool sumOverTp);
  LinearParams declareLinear(const std::string &prefix, int64_t out, int64_t in,
                             std::optional<int64_t> tpDim,
                             std::optional<int64_t> layer, bool expert);

  mlir::Value forward(MicrobatchActivations &acts);
  void backward(MicrobatchActivations &acts);
  /// Megatron's finish_embedding_wgrad_compute: the deferred output-layer
  /// wgrads after the pipeline's flush, in the order they were deferred.
  void addDeferredWgrads();

  /// An output-layer wgrad deferred (defer_embedding_wgrad_compute).
  struct DeferredWgrad {
    int64_t microbatch;
    mlir::Value gradOut, localInput;
  };
  std::vector<DeferredWgrad> deferredWgrads;
  mlir::Value attentionForward(const LayerParams &params,
                               LayerActivations &acts, int64_t layer);
  mlir::Value denseMlpForward(const LayerParams &params, LayerActivations &acts,
                              int64_t layer);
  mlir::Value moeForward(const LayerParams &params, LayerActivations &acts,
                         int64_t layer);
  /// The MoE layer without its bias-dropout-add: what recompute_modules moe
  /// checkpoints.
  mlir::Value moeLayerForward(const LayerParams &params,
                              LayerActivations &acts, int64_t layer);
  /// recompute_modules layernorm: the pre-MLP norm's discarded output,
  /// computed again where the MLP block's backward starts.
  void rerunPreMlpNorm(const LayerParams &params, LayerActivations &acts,
                       int64_t layer);
  mlir::Value layerBackward(const LayerParams &params,
                            const LayerActivations &acts, mlir::Value gradOut,
                            int64_t layer);
  mlir::Value denseMlpBackward(const LayerParams &params,
                               const LayerActivations &acts,
                               mlir::Value gradOut, int64_t layer);
  mlir::Value moeBackward(const LayerParams &params,
                          const LayerActivations &acts, mlir::Value gradOut,
                          int64_t layer);
  // The token dispatchers and the local experts (MoELayer.cpp): each
  // dispatcher's forward returns this rank's tokens' combined expert output;
  // its backward the gradients of the tokens and of their probabilities.
  mlir::Value allGatherExperts(const LayerParams &params,
                               LayerActivations &acts, mlir::Value probs,
                               int64_t layer);
  /// What a dispatcher's backward returns: the gradients of the tokens it
  /// read, of their probabilities, and of the tokens the shared experts
  /// read (null without shared experts).
  struct MoEGrads {
    mlir::Value tokens, probs, shared;
  };
  MoEGrads allGatherExpertsBackward(const LayerParams &params,
                                    const LayerActivations &acts,
                                    mlir::Value gradCombined, int64_t layer);
  /// The expert-parallel all-to-all of the dispatcher, toward the experts
  /// or `back`: of counted rows when the layer exchanged counts.
  mlir::Value dispatchAllToAll(const LayerActivations &acts,
                               mlir::Value input, bool back);
  mlir::Value allToAllExperts(const LayerParams &params,
                              LayerActivations &acts, int64_t layer);
  MoEGrads allToAllExpertsBackward(const LayerParams &params,
                                   const LayerActivations &acts,
                                   mlir::Value gradCombined, int64_t layer);
  // SharedExpertMLP in two halves, as Megatron launches them when they
  // overlap the all-to-alls: fc1 and the activation, then fc2; and their
  // backwards, fc2's then fc1's (returning the input's gradient).
  void sharedExpertFc1(const LayerParams &params, LayerActivations &acts,
                       int64_t layer);
  void sharedExpertFc2(const LayerParams &params, LayerActivations &acts,
                       int64_t layer);
  mlir::Value sharedExpertFc2Backward(const LayerParams &params,
                                      const LayerActivations &acts,
                                      mlir::Value gradOut, int64_t layer);
  mlir::Value sharedExpertFc1Backward(const LayerParams &params,
                                      const LayerActivations &acts,
                                      mlir::Value gradActivation,
                                      int64_t layer);
  void runExperts(const LayerParams &params, LayerActivations &acts,
                  int64_t layer);
  /// Each local expert's input gradient, and with the all-to-all
  /// dispatcher its probabilities' gradient.
  std::pair<mlir::SmallVector<mlir::Value>, mlir::SmallVector<mlir::Value>>
  runExpertsBackward(const LayerParams &params, const LayerActivations &acts,
                     mlir::ValueRange gradOut, int64_t layer);
  /// Routing probabilities of `rows` tokens (f32, as Megatron's router
  /// keeps them).
  mlir::RankedTensorType probsType(int64_t rows) const;

  // Building blocks.
  mlir::Value norm(const NormParams &params, mlir::Value input,
                   std::optional<int64_t> layer);
  mlir::Value normBackward(const NormParams &params, mlir::Value gradOut,
                           mlir::Value input, std::optional<int64_t> layer);
  mlir::Value columnParallelForward(mlir::Value localInput, unsigned weight,
                                    std::optional<int64_t> layer);
  /// Without `wgrad`, only the dgrad (and its reduction): the wgrad is
  /// deferred (addDeferredWgrads).
  mlir::Value columnParallelBackward(mlir::Value gradOut,
                                     mlir::Value localInput, unsigned weight,
                                     std::optional<int64_t> layer,
                                     bool wgrad = true);
  mlir::Value rowParallelForward(mlir::Value input, unsigned weight,
                                 std::optional<int64_t> layer);
  mlir::Value rowParallelBackward(mlir::Value localGradOut, mlir::Value input,
                                  unsigned weight,
                                  std::optional<int64_t> layer);
  mlir::Value biasDropoutAdd(mlir::Value branch, std::optional<unsigned> bias,
                             mlir::Value residual, int64_t layer);
  mlir::Value biasDropoutAddBackward(mlir::Value gradOut,
                                     std::optional<unsigned> bias,
                                     int64_t layer);
  mlir::Value activation(mlir::Value input, std::optional<unsigned> bias,
                         std::optional<int64_t> layer);
  mlir::Value activationBackward(mlir::Value gradOut, mlir::Value input,
                                 std::optional<unsigned> bias,
                                 std::optional<int64_t> layer);
  mlir::Value add(mlir::Value lhs, mlir::Value rhs,
                  std::optional<int64_t> layer);
  mlir::Value coreAttention(mlir::Value qkv, int64_t layer);
  /// One transformer layer's forward from acts.input; fills `acts`.
  mlir::Value layerForward(const LayerParams &params, LayerActivations &acts,
                           int64_t layer);
  /// Full recomputation: for each layer, the first layer of its
  /// checkpointed group, or -1 when its activations are kept.
  std::vector<int64_t> getRecomputeGroupStarts() const;
  /// getRecomputeGroupStarts(), computed once per step.
  std::vector<int64_t> recomputeGroupStarts;

  /// Q K^T and P V over the full sequence for this rank's heads (the formula
  /// of Narayanan et al. 2021 counts no causal saving), plus the softmax at 5
  /// FLOPs per score. The backward costs twice as much.
  double getAttentionFlops() const {
    double scores = double(config.microBatchSize) * config.numAttentionHeads /
                    tp * config.seqLength * config.seqLength;
    return scores * (4.0 * config.getKvChannels() + 5.0);
  }
  mlir::RankedTensorType actType(int64_t rows, int64_t cols) const {
    return mlir::RankedTensorType::get({rows, cols}, elementType);
  }
  double bytes(double elements) const { return elements * elementBytes; }
  mlir::StringRef activationName() const {
    return config.swiglu ? "swiglu"
                         : (config.squaredRelu ? "squared_relu" : "gelu");
  }
  mlir::StringRef normName() const {
    return config.normalization == Normalization::LayerNorm ? "layernorm"
                                                            : "rmsnorm";
  }

  const ModelConfig &config;
  StepBuilder sb;
  mlir::Type elementType, f32;
  int64_t elementBytes;

  // Sizes on this rank (docs/Importer.md, "Shapes").
  int64_t tp, etp = 1, tokens, localTokens, hidden, qkvWidth, contextWidth, fc1Width,
      ffnWidth, expertFc1Width = 0, expertFfnWidth = 0, localVocab, numLocalExperts = 0, gatheredTokens = 0,
                            tokensPerExpert = 0;
  /// The tokens each expert takes from one rank's (its share, or its
  /// capacity): the all-to-all dispatcher's block, and with a capacity the
  /// all-gather dispatcher's too.
  int64_t expertCapacity = 0;
  /// What balanced routing fills of an expert's expertCapacity rows.
  int64_t balancedCapacity = 0;
  /// How far the tokens routed to a rank's experts can grow over the
  /// balanced rows the step is built with (ddp.routed: 0 without a cap);
  /// none where capacity fixes them.
  std::optional<double> routedLimit;
  /// The ops built next work on the tokens routed to this rank's experts
  /// (`on`) or not: marked with routedLimit and the fraction of their rows
  /// balanced routing fills (ddp.routed_fill).
  void setRouted(bool on) {
    if (on)
      sb.setRouted(routedLimit,
                   double(balancedCapacity) / double(expertCapacity));
    else
      sb.setRouted(std::nullopt);
  }
  bool sequenceParallel;
  bool hasDropout;
  /// The dense layers' tensor-parallel group; the experts' own, their
  /// expert-parallel group, and both (the all-gather dispatcher's).
  Group tpGroup, etpGroup, epGroup, dispatchGroup;

  /// Pipelined steps: the model chunk of each layer, in flow order, and the
  /// last chunk's (the output layer and the loss). The embedding is on
  /// chunk 0.
  std::vector<int64_t> layerChunk;
  int64_t lastChunk = 0;
  int64_t getChunk(int64_t layer) const {
    return layerChunk.empty() ? 0 : layerChunk[layer];
  }

  unsigned wordEmbedding = 0;
  std::optional<unsigned> positionEmbedding;
  std::vector<LayerParams> layers;
  NormParams finalNorm;
  std::optional<unsigned> outputLayer;
};

} // namespace ddp::importer

#endif // DDP_LIB_IMPORT_MODELIMPORTER_H
