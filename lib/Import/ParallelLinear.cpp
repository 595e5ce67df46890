//===- ParallelLinear.cpp - The step's tensor-parallel linear layers ------===//
//
// ModelImporter's column- and row-parallel linear layers, forward and
// backward, with the TP collectives Megatron issues (ModelImporter.cpp builds
// the rest of the step), and the output layer's deferred wgrads.
//
//===----------------------------------------------------------------------===//

#include "ModelImporter.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::importer;

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
                                            std::optional<int64_t> layer,
                                            bool wgrad) {
  // Split weight gradients (ZB-H1) keep the gathered input from here to
  // their W pass, as the zero-bubble reference's WeightGradStore keeps
  // total_input: gathered in W it was exposed there, where in B the dgrad
  // hides it (docs/Pipeline.md#zb-h1).
  Value input = sequenceParallel && wgrad ? sb.allGather(localInput, tpGroup)
                                          : localInput;
  Value gradInput = sb.gemm(GemmPhase::Dgrad, gradOut, false,
                            sb.getParam(weight), false, layer);
  if (tp > 1)
    gradInput = sequenceParallel ? sb.reduceScatter(gradInput, tpGroup)
                                 : sb.allReduce(gradInput, tpGroup);
  if (wgrad)
    sb.addGradient(weight, sb.gemm(GemmPhase::Wgrad, gradOut, true, input,
                                   false, layer));
  return gradInput;
}

void ModelImporter::addDeferredWgrads() {
  unsigned outputWeight = outputLayer ? *outputLayer : wordEmbedding;
  for (const DeferredWgrad &deferred : deferredWgrads) {
    sb.setMicrobatch(deferred.microbatch);
    sb.setPipelineChunk(PipelineTask::Phase::WeightGrad, lastChunk);
    // drain_embedding_wgrad_compute (megatron/core/utils.py L1282):
    // gather the input (under SP), then the wgrad GEMM into main_grad.
    Value input = sequenceParallel
                      ? sb.allGather(deferred.localInput, tpGroup)
                      : deferred.localInput;
    sb.addGradient(outputWeight,
                   sb.gemm(GemmPhase::Wgrad, deferred.gradOut, true, input,
                           false, std::nullopt));
  }
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
