//===- MoELayer.cpp - A mixture-of-experts layer, as Megatron-Core runs it ===//
//
// The router (TopKRouter), the token dispatcher that sends each token to the
// ranks of its experts and back (MoEAllGatherTokenDispatcher or
// MoEAlltoAllTokenDispatcher, megatron/core/transformer/moe/
// token_dispatcher.py), and the local experts (SequentialMLP), forward and
// backward. Every size is static. The all-to-all dispatcher's router,
// permutations and sorts are routing kernels the runtime computes for real,
// on buffers for the worst case (an expert's capacity, or all of a rank's
// tokens when dropless), priced at what balanced routing fills of them. The
// all-gather dispatcher's routing is balanced (stand-ins).
//
//===----------------------------------------------------------------------===//

#include "ModelImporter.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::importer;

RankedTensorType ModelImporter::probsType(int64_t rows) const {
  return RankedTensorType::get({rows}, f32);
}


Value ModelImporter::moeForward(const LayerParams &params,
                                LayerActivations &acts, int64_t layer) {
  return biasDropoutAdd(moeLayerForward(params, acts, layer), std::nullopt,
                        acts.attnResidual, layer);
}

Value ModelImporter::moeLayerForward(const LayerParams &params,
                                     LayerActivations &acts, int64_t layer) {
  int64_t numExperts = config.numExperts, topk = config.moeRouterTopk;
  // MoELayer.forward computes the shared experts first, unless they overlap
  // the all-to-alls (moe_shared_expert_overlap: the all-to-all dispatcher
  // launches them there).
  if (params.sharedFc1 && !config.moeSharedExpertOverlap) {
    sharedExpertFc1(params, acts, layer);
    sharedExpertFc2(params, acts, layer);
  }
  // TopKRouter: a GEMM against the replicated router weight, then top-k
  // and softmax per token (the all-to-all dispatcher's `select` routing
  // kernel).
  acts.routerLogits = sb.gemm(GemmPhase::Fwd, acts.mlpNormOut, false,
                              sb.getParam(*params.router), true, layer);
  Value combined;
  if (config.moe.dispatcher == MoEDispatcher::AllToAll) {
    combined = allToAllExperts(params, acts, layer);
  } else {
    double logits = localTokens * double(numExperts);
    Value probs = sb.compute1(
        "router_topk", acts.routerLogits, actType(localTokens, topk),
        logits * (5.0 + topk), bytes(logits + localTokens * double(topk)),
        layer);
    combined = allGatherExperts(params, acts, probs, layer);
  }
  // MoELayer.postprocess: output + shared_expert_output.
  if (acts.sharedOut)
    combined = add(combined, acts.sharedOut, layer);
  return combined;
}

Value ModelImporter::moeBackward(const LayerParams &params,
                                 const LayerActivations &saved, Value gradOut,
                                 int64_t layer) {
  int64_t numExperts = config.numExperts, topk = config.moeRouterTopk;
  sb.setScheduleNode(true, ScheduleNode::Kind::Combine, layer);
  Value gradCombined = biasDropoutAddBackward(gradOut, std::nullopt, layer);
  // recompute_modules moe (MoELayer.forward's checkpoint, moe_layer.py
  // L701-716): the layer's forward runs again from its input, the
  // all-to-alls included, before its backward, in the backward's node.
  // With shared_experts too, Megatron's nested checkpoint would rerun the
  // shared experts once more inside; ddp reruns them once.
  LayerActivations acts = saved;
  rerunPreMlpNorm(params, acts, layer);
  bool rerunLayer = config.recompute.recomputes(RecomputeModule::Moe);
  if (rerunLayer) {
    sb.freezeScheduleNode(true);
    (void)moeLayerForward(params, acts, layer);
    sb.freezeScheduleNode(false);
  }
  MoEGrads grads =
      config.moe.dispatcher == MoEDispatcher::AllToAll
          ? allToAllExpertsBackward(params, acts, gradCombined, layer)
          : allGatherExpertsBackward(params, acts, gradCombined, layer);
  // Computed first in the forward, the shared experts' backward runs last;
  // recompute_modules shared_experts (moe_layer.py L516-526) reruns their
  // forward right before it.
  if (params.sharedFc1 && !config.moeSharedExpertOverlap && !rerunLayer &&
      config.recompute.recomputes(RecomputeModule::SharedExperts)) {
    sharedExpertFc1(params, acts, layer);
    sharedExpertFc2(params, acts, layer);
  }
  if (params.sharedFc1 && !config.moeSharedExpertOverlap)
    grads.shared = sharedExpertFc1Backward(
        params, acts,
        sharedExpertFc2Backward(params, acts, gradCombined, layer), layer);
  double logits = localTokens * double(numExperts);
  double gradFlops = 2 * logits * (5.0 + topk);
  double gradBytes = bytes(2 * logits + localTokens * double(topk));
  Value gradLogits =
      config.moe.dispatcher == MoEDispatcher::AllToAll
          ? sb.route("moe_route_grad", RoutingKernel::SelectGrad, {topk},
                    {grads.probs, acts.routerLogits, acts.tokenSlots},
                    acts.routerLogits.getType(), gradFlops, gradBytes, layer)
                .front()
          : sb.compute1("router_topk_grad", {grads.probs, acts.routerLogits},
                        actType(localTokens, numExperts), gradFlops,
                        gradBytes, layer);
  Value gradNormOut = sb.gemm(GemmPhase::Dgrad, gradLogits, false,
                              sb.getParam(*params.router), false, layer);
  sb.addGradient(*params.router, sb.gemm(GemmPhase::Wgrad, gradLogits, true,
                                         acts.mlpNormOut, false, layer));
  Value gradInput = add(grads.tokens, gradNormOut, layer);
  return grads.shared ? add(gradInput, grads.shared, layer) : gradInput;
}

//===----------------------------------------------------------------------===//
// The shared experts (SharedExpertMLP)
//===----------------------------------------------------------------------===//

void ModelImporter::sharedExpertFc1(const LayerParams &params,
                                    LayerActivations &acts, int64_t layer) {
  acts.sharedFc1Out =
      columnParallelForward(acts.mlpNormOut, params.sharedFc1->weight, layer);
  acts.sharedActivation = activation(acts.sharedFc1Out, std::nullopt, layer);
}

void ModelImporter::sharedExpertFc2(const LayerParams &params,
                                    LayerActivations &acts, int64_t layer) {
  acts.sharedOut =
      rowParallelForward(acts.sharedActivation, params.sharedFc2->weight, layer);
}

Value ModelImporter::sharedExpertFc2Backward(const LayerParams &params,
                                             const LayerActivations &acts,
                                             Value gradOut, int64_t layer) {
  return rowParallelBackward(gradOut, acts.sharedActivation,
                             params.sharedFc2->weight, layer);
}

Value ModelImporter::sharedExpertFc1Backward(const LayerParams &params,
                                             const LayerActivations &acts,
                                             Value gradActivation,
                                             int64_t layer) {
  Value gradFc1 = activationBackward(gradActivation, acts.sharedFc1Out,
                                     std::nullopt, layer);
  return columnParallelBackward(gradFc1, acts.mlpNormOut,
                                params.sharedFc1->weight, layer,
                                /*wgrad=*/true);
}

//===----------------------------------------------------------------------===//
// The all-gather dispatcher
//===----------------------------------------------------------------------===//

Value ModelImporter::allGatherExperts(const LayerParams &params,
                                      LayerActivations &acts, Value probs,
                                      int64_t layer) {
  int64_t topk = config.moeRouterTopk;
  // Gather the tokens and their routing over the expert-and-tensor-parallel
  // group, permute them to the local experts.
  Value gathered = acts.mlpNormOut;
  acts.gatheredProbs = probs;
  if (dispatchGroup.size > 1) {
    gathered = sb.allGather(acts.mlpNormOut, dispatchGroup);
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
  setRouted(true);
  runExperts(params, acts, layer);
  setRouted(false);

  // Weight each expert output by its routing probability and scatter it back
  // to its token; the reduce-scatter sums the ETP partial sums and the
  // experts of the other ranks and returns this rank's tokens.
  SmallVector<Value> combineInputs(acts.expertOut);
  combineInputs.push_back(acts.gatheredProbs);
  Value combined = sb.compute1(
      "moe_unpermute", combineInputs, actType(gatheredTokens, hidden),
      2 * expertElements,
      bytes(expertElements + gatheredElements + probElements), layer);
  if (dispatchGroup.size > 1)
    combined = sb.reduceScatter(combined, dispatchGroup);
  return combined;
}

ModelImporter::MoEGrads ModelImporter::allGatherExpertsBackward(
    const LayerParams &params, const LayerActivations &acts,
    Value gradCombined, int64_t layer) {
  int64_t topk = config.moeRouterTopk;
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
  setRouted(true);
  SmallVector<Value> gradExpertIn = runExpertsBackward(
      params, acts, unpermuteGrads.take_front(numLocalExperts), layer).first;
  setRouted(false);
  Value gradGathered = sb.compute1(
      "moe_permute_grad", gradExpertIn, actType(gatheredTokens, hidden),
      expertElements, bytes(expertElements + gatheredElements), layer);
  Value gradProbs = unpermuteGrads[numLocalExperts];
  if (dispatchGroup.size > 1) {
    gradGathered = sb.reduceScatter(gradGathered, dispatchGroup);
    gradProbs = sb.reduceScatter(gradProbs, dispatchGroup);
  }
  return {gradGathered, gradProbs, Value()};
}

//===----------------------------------------------------------------------===//
// The all-to-all dispatcher
//===----------------------------------------------------------------------===//

// This rank sends `sent` = experts x capacity rows, one block of local
// experts x capacity rows per expert-parallel rank; each local expert then
// takes tokensPerExpert = ETP x EP x capacity rows (the all-gather over the
// expert-tensor-parallel group, Megatron's expt_tp, adds the ETP ranks'
// tokens).

Value ModelImporter::dispatchAllToAll(const LayerActivations &acts,
                                      Value input, bool back) {
  if (!acts.sendCounts)
    return sb.allToAll(input, epGroup);
  // Back to the tokens' ranks, each sends what it received.
  return back ? sb.allToAllV(input, acts.recvCounts, acts.sendCounts, epGroup)
              : sb.allToAllV(input, acts.sendCounts, acts.recvCounts, epGroup);
}

Value ModelImporter::allToAllExperts(const LayerParams &params,
                                     LayerActivations &acts, int64_t layer) {
  int64_t topk = config.moeRouterTopk;
  int64_t sent = config.numExperts * expertCapacity;
  int64_t received = numLocalExperts * tokensPerExpert;
  int64_t ranks = dispatchGroup.size;
  // The permutations of the rank's own tokens are priced at the rows
  // balanced routing fills (the routed ops carry ddp.routed_fill instead).
  int64_t balancedSent = config.numExperts * balancedCapacity;
  double sentElements = double(balancedSent) * double(hidden);
  double receivedElements = double(received) * double(hidden);
  // The router's top-k and softmax, and each expert's slots: the token in
  // each, its probability; and each route's slot, for the combine.
  double logits = localTokens * double(config.numExperts);
  ValueRange route = sb.route(
      "moe_route", RoutingKernel::Select, {topk, expertCapacity},
      acts.routerLogits,
      {probsType(sent), probsType(sent), probsType(localTokens * topk)},
      logits * (5.0 + topk), bytes(logits + localTokens * double(topk)),
      layer);
  acts.slotRows = route[1];
  acts.tokenSlots = route[2];
  // permute: this rank's tokens in the order of the experts they go to,
  // each expert's padded to its capacity.
  Value tokensIn =
      sb.route("moe_permute", RoutingKernel::Gather, {},
              {acts.mlpNormOut, acts.slotRows}, actType(sent, hidden), 0.0,
              bytes(localTokens * double(hidden + topk) + sentElements +
                    balancedSent),
              layer)
          .front();
  Value probsIn = route[0];
  // token_dispatch: the all-to-all of the tokens, then of their probs, over
  // the expert-parallel group; dispatch_postprocess: the all-gather over the
  // expert-tensor-parallel group.
  // The shared experts' fc1 is launched after the tokens' all-to-all, before
  // the probs' (token_dispatch's order).
  sb.setScheduleNode(false, ScheduleNode::Kind::Dispatch, layer);
  // Unpadded, only the routed rows move, as Megatron's preprocess has it:
  // each expert's count, and an all-to-all of the counts.
  acts.sendCounts = acts.recvCounts = Value();
  if (epGroup.size > 1 && !config.moe.padToCapacity) {
    acts.sendCounts =
        sb.route("moe_count", RoutingKernel::Count, {expertCapacity},
                 acts.slotRows, probsType(config.numExperts), 0.0,
                 bytes(double(sent) + double(config.numExperts)), layer)
            .front();
    acts.recvCounts = sb.allToAll(acts.sendCounts, epGroup);
  }
  // From the dispatch to the combine, the rows are the routed tokens.
  setRouted(true);
  if (epGroup.size > 1)
    tokensIn = dispatchAllToAll(acts, tokensIn, /*back=*/false);
  bool sharedOverlaps = params.sharedFc1 && config.moeSharedExpertOverlap;
  if (sharedOverlaps) {
    setRouted(false);
    sharedExpertFc1(params, acts, layer);
    setRouted(true);
  }
  if (epGroup.size > 1)
    probsIn = dispatchAllToAll(acts, probsIn, /*back=*/false);
  sb.setScheduleNode(false, ScheduleNode::Kind::Mlp, layer);
  if (etpGroup.size > 1) {
    tokensIn = sb.allGather(tokensIn, etpGroup);
    probsIn = sb.allGather(probsIn, etpGroup);
  }
  // sort_chunks_by_idxs: from (source rank, local expert) order to one
  // block per local expert, with its probs.
  SmallVector<Type> sortedTypes(numLocalExperts,
                                actType(tokensPerExpert, hidden));
  sortedTypes.append(numLocalExperts, probsType(tokensPerExpert));
  ValueRange sorted = sb.route(
      "moe_sort_chunks", RoutingKernel::SortChunks, {ranks, expertCapacity},
      {tokensIn, probsIn}, sortedTypes, 0.0,
      bytes(2 * (receivedElements + received)), layer);
  acts.expertIn.assign(sorted.begin(), sorted.begin() + numLocalExperts);
  acts.expertProbs.assign(sorted.begin() + numLocalExperts, sorted.end());
  runExperts(params, acts, layer);

  // combine_preprocess: back to (source rank, local expert) order, the
  // reduce-scatter of the ETP partial sums; token_combine: the all-to-all
  // back; combine_postprocess: unpermute to this rank's tokens.
  Value combined =
      sb.route("moe_unsort_chunks", RoutingKernel::UnsortChunks,
              {ranks, expertCapacity}, acts.expertOut,
              actType(received, hidden), 0.0, bytes(2 * receivedElements),
              layer)
          .front();
  if (etpGroup.size > 1)
    combined = sb.reduceScatter(combined, etpGroup);
  sb.setScheduleNode(false, ScheduleNode::Kind::Combine, layer);
  if (epGroup.size > 1)
    combined = dispatchAllToAll(acts, combined, /*back=*/true);
  setRouted(false);
  // token_combine launches the shared experts' fc2 after its all-to-all.
  if (sharedOverlaps)
    sharedExpertFc2(params, acts, layer);
  // unpermute: each token the sum of its experts' outputs.
  return sb.route("moe_unpermute", RoutingKernel::Combine, {topk},
                 {combined, acts.tokenSlots}, actType(localTokens, hidden),
                 sentElements,
                 bytes(sentElements + localTokens * double(hidden)), layer)
      .front();
}

ModelImporter::MoEGrads ModelImporter::allToAllExpertsBackward(
    const LayerParams &params, const LayerActivations &acts,
    Value gradCombined, int64_t layer) {
  int64_t topk = config.moeRouterTopk;
  int64_t sent = config.numExperts * expertCapacity;
  int64_t received = numLocalExperts * tokensPerExpert;
  int64_t ranks = dispatchGroup.size;
  int64_t balancedSent = config.numExperts * balancedCapacity;
  double sentElements = double(balancedSent) * double(hidden);
  double receivedElements = double(received) * double(hidden);
  sb.setScheduleNode(true, ScheduleNode::Kind::Combine, layer);
  // Each slot takes its token's gradient.
  Value grad =
      sb.route("moe_unpermute_grad", RoutingKernel::Gather, {},
              {gradCombined, acts.slotRows}, actType(sent, hidden), 0.0,
              bytes(sentElements + localTokens * double(hidden)), layer)
          .front();
  setRouted(true);
  if (epGroup.size > 1)
    grad = dispatchAllToAll(acts, grad, /*back=*/false);
  // Overlapping, the shared experts' backward runs beside the all-to-alls
  // as their forward did: fc2's after the first, fc1's after the last.
  bool sharedOverlaps = params.sharedFc1 && config.moeSharedExpertOverlap;
  Value gradSharedAct;
  if (sharedOverlaps) {
    setRouted(false);
    gradSharedAct = sharedExpertFc2Backward(params, acts, gradCombined, layer);
    setRouted(true);
  }
  sb.setScheduleNode(true, ScheduleNode::Kind::Mlp, layer);
  if (etpGroup.size > 1)
    grad = sb.allGather(grad, etpGroup);
  SmallVector<Type> perExpert(numLocalExperts,
                              actType(tokensPerExpert, hidden));
  ValueRange gradOut = sb.route(
      "moe_unsort_chunks_grad", RoutingKernel::SortChunks,
      {ranks, expertCapacity}, grad, perExpert, 0.0,
      bytes(2 * receivedElements), layer);
  auto [gradIn, gradProbs] =
      runExpertsBackward(params, acts, gradOut, layer);
  SmallVector<Value> sortInputs(gradIn);
  llvm::append_range(sortInputs, gradProbs);
  ValueRange unsorted = sb.route(
      "moe_sort_chunks_grad", RoutingKernel::UnsortChunks,
      {ranks, expertCapacity}, sortInputs,
      {actType(received, hidden), probsType(received)}, 0.0,
      bytes(2 * (receivedElements + received)), layer);
  Value gradTokens = unsorted[0], gradRouted = unsorted[1];
  // The backward of the all-gather is a reduce-scatter; of an all-to-all,
  // the all-to-all back; the probabilities' first, as autograd runs the
  // reverse of the forward.
  if (etpGroup.size > 1) {
    gradRouted = sb.reduceScatter(gradRouted, etpGroup);
    gradTokens = sb.reduceScatter(gradTokens, etpGroup);
  }
  sb.setScheduleNode(true, ScheduleNode::Kind::Dispatch, layer);
  if (epGroup.size > 1) {
    gradRouted = dispatchAllToAll(acts, gradRouted, /*back=*/true);
    gradTokens = dispatchAllToAll(acts, gradTokens, /*back=*/true);
  }
  setRouted(false);
  Value gradShared;
  if (sharedOverlaps)
    gradShared = sharedExpertFc1Backward(params, acts, gradSharedAct, layer);
  sb.setScheduleNode(true, ScheduleNode::Kind::Attention, layer);
  // Each token the sum of its slots' gradients; the slots' probabilities'
  // gradients go to the router's backward as they are.
  Value gradInput =
      sb.route("moe_permute_grad", RoutingKernel::Combine, {topk},
              {gradTokens, acts.tokenSlots}, actType(localTokens, hidden),
              0.0,
              bytes(sentElements + balancedSent +
                    localTokens * double(hidden + topk)),
              layer)
          .front();
  return {gradInput, gradRouted, gradShared};
}

//===----------------------------------------------------------------------===//
// The local experts (SequentialMLP: each an ETP-split MLP)
//===----------------------------------------------------------------------===//

void ModelImporter::runExperts(const LayerParams &params,
                               LayerActivations &acts, int64_t layer) {
  // A recomputed layer (recompute_modules moe) replaces its forward's.
  acts.expertFc1Out.clear();
  acts.expertActivation.clear();
  acts.expertOut.clear();
  for (auto [j, expert] : llvm::enumerate(params.experts)) {
    Value input = acts.expertIn[j];
    Value fc1Out = sb.gemm(GemmPhase::Fwd, input, false,
                           sb.getParam(expert.fc1.weight), true, layer);
    Value act = activation(fc1Out, std::nullopt, layer);
    // The all-to-all dispatcher weights each token by its probability in
    // the expert, after the activation.
    if (!acts.expertProbs.empty()) {
      double elements = cast<RankedTensorType>(act.getType()).getNumElements();
      act = sb.compute1("moe_apply_probs", {act, acts.expertProbs[j]},
                        act.getType(), elements,
                        bytes(2 * elements + tokensPerExpert), layer);
    }
    acts.expertFc1Out.push_back(fc1Out);
    acts.expertActivation.push_back(act);
    acts.expertOut.push_back(sb.gemm(GemmPhase::Fwd, act, false,
                                     sb.getParam(expert.fc2.weight), true,
                                     layer));
  }
}

std::pair<SmallVector<Value>, SmallVector<Value>>
ModelImporter::runExpertsBackward(const LayerParams &params,
                                  const LayerActivations &acts,
                                  ValueRange gradOut, int64_t layer) {
  // Autograd runs the experts' backward in the reverse of their forward.
  SmallVector<Value> gradIn(numLocalExperts), gradProbs(numLocalExperts);
  for (int64_t j = numLocalExperts - 1; j >= 0; --j) {
    const ExpertParams &expert = params.experts[j];
    Value gradAct = sb.gemm(GemmPhase::Dgrad, gradOut[j], false,
                            sb.getParam(expert.fc2.weight), false, layer);
    sb.addGradient(expert.fc2.weight,
                   sb.gemm(GemmPhase::Wgrad, gradOut[j], true,
                           acts.expertActivation[j], false, layer));
    if (!acts.expertProbs.empty()) {
      auto type = cast<RankedTensorType>(gradAct.getType());
      double elements = type.getNumElements();
      ValueRange grads = sb.compute(
          "moe_apply_probs_grad",
          {gradAct, acts.expertFc1Out[j], acts.expertProbs[j]},
          {type, probsType(tokensPerExpert)}, 2 * elements,
          bytes(3 * elements + 2 * tokensPerExpert), layer);
      gradAct = grads[0];
      gradProbs[j] = grads[1];
    }
    Value gradFc1 =
        activationBackward(gradAct, acts.expertFc1Out[j], std::nullopt, layer);
    gradIn[j] = sb.gemm(GemmPhase::Dgrad, gradFc1, false,
                        sb.getParam(expert.fc1.weight), false, layer);
    sb.addGradient(expert.fc1.weight, sb.gemm(GemmPhase::Wgrad, gradFc1, true,
                                              acts.expertIn[j], false, layer));
  }
  return {gradIn, gradProbs};
}
