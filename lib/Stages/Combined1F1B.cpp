//===- Combined1F1B.cpp - Megatron's batch-level MoE overlap order --------===//
//
// Each rule follows Megatron-Core; docs/ExpertParallelism.md quotes the
// lines:
// - the microbatches: combined_1f1b_schedule_for_no_pipelining
//   (megatron/core/pipeline_parallel/combined_1f1b.py);
// - a model chunk and a layer: TransformerModelChunkSchedulePlan.run and
//   TransformerLayerSchedulePlan.run
//   (megatron/core/models/common/model_chunk_schedule_plan.py).
//
//===----------------------------------------------------------------------===//

#include "ddp/Stages/Combined1F1B.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace ddp;

using Kind = ScheduleNode::Kind;

static StringRef getKindName(Kind kind) {
  switch (kind) {
  case Kind::PreProcess:
    return "pre_process";
  case Kind::Attention:
    return "attn";
  case Kind::Dispatch:
    return "dispatch";
  case Kind::Mlp:
    return "mlp";
  case Kind::Combine:
    return "combine";
  case Kind::PostProcess:
    return "post_process";
  }
  return "";
}

std::string ScheduleNode::str() const {
  char phase = backward ? 'B' : 'F';
  if (!hasLayer())
    return formatv("{0}{1}.{2}", phase, microbatch, getKindName(kind)).str();
  return formatv("{0}{1}.L{2}.{3}", phase, microbatch, layer,
                 getKindName(kind))
      .str();
}

/// A decimal number without sign or leading zeros.
static bool parseIndex(StringRef text, int64_t &value) {
  if (text.empty() || (text.size() > 1 && text.front() == '0') ||
      !all_of(text, isDigit))
    return false;
  return !text.getAsInteger(10, value);
}

std::optional<ScheduleNode> ScheduleNode::parse(StringRef text) {
  if (text.empty() || (text.front() != 'F' && text.front() != 'B'))
    return std::nullopt;
  ScheduleNode node;
  node.backward = text.front() == 'B';
  SmallVector<StringRef, 3> parts;
  text.drop_front().split(parts, '.');
  if (parts.size() < 2 || parts.size() > 3 ||
      !parseIndex(parts[0], node.microbatch))
    return std::nullopt;
  std::optional<Kind> kind = StringSwitch<std::optional<Kind>>(parts.back())
                                 .Case("pre_process", Kind::PreProcess)
                                 .Case("attn", Kind::Attention)
                                 .Case("dispatch", Kind::Dispatch)
                                 .Case("mlp", Kind::Mlp)
                                 .Case("combine", Kind::Combine)
                                 .Case("post_process", Kind::PostProcess)
                                 .Default(std::nullopt);
  if (!kind)
    return std::nullopt;
  node.kind = *kind;
  if (node.hasLayer() != (parts.size() == 3))
    return std::nullopt;
  if (node.hasLayer() && (!parts[1].consume_front("L") ||
                          !parseIndex(parts[1], node.layer)))
    return std::nullopt;
  return node;
}

// One combined step (TransformerModelChunkSchedulePlan.run): the forward's
// pre-process, the backward's post-process, the layers paired first with
// last, the forward's post-process, the backward's pre-process. A pair of
// layers (TransformerLayerSchedulePlan.run) runs, on Megatron's two
// streams:
//
//   comm_stream: combine_bwd      | dispatch_fwd->dispatch_bwd   | combine_fwd
//   comp_stream: pre_dispatch_fwd | mlp_bwd->mlp_bwd_dw->mlp_fwd | pre_dispatch_bwd
//
// A ddp step has one compute stream and issues each collective where the
// program reaches it; so each communication node goes where Megatron's
// communication stream starts it: the backward's combine first, the
// forward's dispatch as soon as the forward's attn has made its tokens
// (before the backward's mlp, beside which it runs), the backward's
// dispatch after the backward's mlp, the forward's combine after the
// forward's mlp, with its compute after the backward's attn.
// ep_overlap_early_attn_memory_release is off (Megatron's default).
//
// With delay_wgrad_compute, a backward's weight gradients leave its nodes
// (mlp.backward_dw and pre_dispatch_computation.backward_dw, L277 and
// L300-301): the mlp's run after the backward's dispatch is issued, which
// Megatron's communication stream starts once the mlp's dgrad is done;
// the attn's, after the next pair's backward combine is issued, beside
// which Megatron runs them; the attn's of the last layer of the backward
// (layer 0), after the layers, before the post-process
// (TransformerModelChunkSchedulePlan.run, L600-605). Without it
// backward_dw does nothing.
Combined1F1BKey ddp::getCombined1F1BKey(const ScheduleNode &node,
                                        int64_t lastLayer, bool tail,
                                        bool delayedWgrad) {
  Combined1F1BKey key;
  key.step = uint64_t(node.microbatch) + (node.backward ? 1 : 0);
  switch (node.kind) {
  case Kind::PreProcess:
    key.group = node.backward ? 2 : 0;
    key.slot = node.backward ? 2 : 0;
    return key;
  case Kind::PostProcess:
    key.group = node.backward ? 0 : 2;
    key.slot = 1;
    return key;
  default:
    break;
  }
  key.group = 1;
  key.pair = node.backward ? uint64_t(lastLayer - node.layer)
                           : uint64_t(node.layer);
  if (node.backward) {
    bool wgrad = delayedWgrad && (node.kind == Kind::Mlp ||
                                  node.kind == Kind::Attention);
    if (wgrad && node.kind == Kind::Mlp) {
      key.slot = 9;
      return key;
    }
    if (wgrad && node.layer == 0) {
      key.group = 2;
      key.pair = 0;
      key.slot = 0;
      return key;
    }
    if (wgrad) {
      key.pair += 1;
      key.slot = 1;
      return key;
    }
    key.slot = node.kind == Kind::Combine    ? 0
               : node.kind == Kind::Mlp      ? 6
               : node.kind == Kind::Dispatch ? 8
                                             : 14;
    return key;
  }
  key.slot = node.kind == Kind::Attention  ? 2
             : node.kind == Kind::Dispatch ? 4
             : node.kind == Kind::Mlp      ? 10
             : tail                        ? 16
                                           : 12;
  return key;
}

std::vector<ScheduleNode> ddp::getCombined1F1BOrder(int64_t microbatches,
                                                    int64_t layers) {
  std::vector<ScheduleNode> order;
  if (microbatches <= 0 || layers < 0)
    return order;
  for (int64_t m = 0; m < microbatches; ++m)
    for (bool backward : {false, true}) {
      order.push_back({backward, m, Kind::PreProcess, 0});
      order.push_back({backward, m, Kind::PostProcess, 0});
      for (int64_t layer = 0; layer < layers; ++layer)
        for (Kind kind : {Kind::Attention, Kind::Dispatch, Kind::Mlp,
                          Kind::Combine})
          order.push_back({backward, m, kind, layer});
    }
  std::stable_sort(order.begin(), order.end(),
                   [&](const ScheduleNode &a, const ScheduleNode &b) {
                     return getCombined1F1BKey(a, layers - 1) <
                            getCombined1F1BKey(b, layers - 1);
                   });
  return order;
}
