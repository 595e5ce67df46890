//===- ActivationMemory.cpp - Activations held in flight ------------------===//
//
// One walk over the program: a forward adds its chunk's bytes at its first
// op but a receive, its backward frees them after its last (receives of
// either's input may be posted early, before the tasks that run in
// between).
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/ActivationMemory.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/TensorBytes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

using namespace mlir;
using namespace ddp;

/// The `pp` size of the module's mesh, 1 without one.
static int64_t getPipelineSize(ModuleOp module) {
  for (MeshOp mesh : module.getOps<MeshOp>())
    if (int64_t size = mesh.getAxisSize("pp"); size > 0)
      return size;
  return 1;
}

/// A step whose ops carry their combined 1F1B node (ddp.schedule_node):
/// each layer's activations are kept from its forward's first op to its
/// backward's last, the embedding's and the output layer's likewise. In
/// Megatron's combined order, a forward fills layers while the backward
/// beside it frees them, so the peak is near one microbatch's. nullopt
/// when no op carries a node.
static std::optional<ActivationPeak>
computeScheduleNodePeak(Block &body, const ActivationBytes &bytes) {
  using Key = std::tuple<int64_t, int, int64_t>; // (microbatch, kind, layer)
  std::map<Key, Operation *> lastBackwardOp;
  for (Operation &op : body)
    if (std::optional<ScheduleNode> node = getScheduleNode(&op);
        node && node->backward && !isa<GetParamOp>(op))
      lastBackwardOp[{node->microbatch, int(node->kind), node->layer}] = &op;
  if (lastBackwardOp.empty())
    return std::nullopt;
  using Kind = ScheduleNode::Kind;
  // What a node's forward keeps: a layer's (from its first node, attn),
  // the embedding's, the output layer's.
  auto keeps = [&](const ScheduleNode &node) -> std::optional<int64_t> {
    if (node.kind == Kind::Attention)
      return bytes.getLayerBytes(node.layer);
    if (node.kind == Kind::PreProcess)
      return bytes.embedding;
    if (node.kind == Kind::PostProcess)
      return bytes.output;
    return std::nullopt;
  };
  ActivationPeak held, peak;
  std::set<Key> started;
  std::map<int64_t, int64_t> heldPerMicrobatch;
  for (Operation &op : body) {
    // A parameter read keeps nothing, wherever the schedule put it.
    std::optional<ScheduleNode> node =
        isa<GetParamOp>(op) ? std::nullopt : getScheduleNode(&op);
    std::optional<int64_t> kept = node ? keeps(*node) : std::nullopt;
    if (!kept)
      continue;
    Key key{node->microbatch, int(node->kind), node->layer};
    int64_t layers = node->kind == Kind::Attention ? 1 : 0;
    if (!node->backward) {
      if (!started.insert(key).second)
        continue;
      held.bytes += *kept;
      held.layers += layers;
      if (heldPerMicrobatch[node->microbatch]++ == 0)
        held.forwards += 1;
      if (held.bytes > peak.bytes)
        peak = held;
      continue;
    }
    if (lastBackwardOp[key] != &op || !started.erase(key))
      continue;
    held.bytes -= *kept;
    held.layers -= layers;
    if (--heldPerMicrobatch[node->microbatch] == 0)
      held.forwards -= 1;
  }
  return peak;
}

std::optional<ActivationPeak>
ddp::computeActivationPeak(func::FuncOp step, const ActivationBytes &bytes) {
  auto module = step->getParentOfType<ModuleOp>();
  if (!module || step.isExternal())
    return std::nullopt;
  llvm::DenseMap<StringAttr, int64_t> layerOf;
  for (ParamOp param : module.getOps<ParamOp>())
    if (std::optional<uint64_t> layer = param.getLayer())
      layerOf[param.getSymNameAttr()] = static_cast<int64_t>(*layer);

  // The layers each chunk's backwards make gradients of (chunk -1: ops
  // without a task), and where each task's ops end.
  using Key = std::pair<int64_t, int64_t>; // (microbatch, chunk)
  std::map<int64_t, std::set<int64_t>> chunkLayers;
  std::map<Key, Operation *> lastBackwardOp, lastWeightGradOp;
  // What a deferred weight-gradient pass (W) keeps after its backward: the
  // values it reads from the passes before it, 16-bit as the formula's
  // activations.
  std::map<Key, llvm::DenseSet<Value>> deferredInputs;
  int64_t numChunks = 0;
  bool hasTasks = false;
  Block &body = step.getBody().front();
  for (Operation &op : body) {
    std::optional<PipelineTask> task = getPipelineTask(&op);
    hasTasks |= task.has_value();
    int64_t chunk = task ? task->chunk : -1;
    numChunks = std::max(numChunks, chunk + 1);
    if (task && task->phase == PipelineTask::Phase::Backward)
      lastBackwardOp[{task->microbatch, task->chunk}] = &op;
    if (task && task->phase == PipelineTask::Phase::WeightGrad) {
      Key key{task->microbatch, task->chunk};
      lastWeightGradOp[key] = &op;
      for (Value operand : op.getOperands()) {
        Operation *producer = operand.getDefiningOp();
        std::optional<PipelineTask> from =
            producer ? getPipelineTask(producer) : std::nullopt;
        if (from && from->phase != PipelineTask::Phase::WeightGrad)
          deferredInputs[key].insert(operand);
      }
    }
    if (auto ready = dyn_cast<GradReadyOp>(op))
      if (auto it = layerOf.find(ready.getParamAttr().getAttr());
          it != layerOf.end())
        chunkLayers[chunk].insert(it->second);
  }

  // What a chunk's layers keep (less than their activations for layers a
  // recomputation reruns).
  auto layerBytes = [&](int64_t chunk) {
    int64_t held = 0;
    for (int64_t layer : chunkLayers[chunk])
      held += bytes.getLayerBytes(layer);
    return held;
  };
  // While a checkpointed group is rerun, its layers' activations are live
  // for one microbatch: the largest group of this program's layers on top
  // of the peak (a group starts with its checkpoint, the rest keep 0).
  int64_t transient = 0;
  if (!bytes.perLayer.empty()) {
    std::set<int64_t> mine;
    for (auto &[chunk, layers] : chunkLayers)
      mine.insert(layers.begin(), layers.end());
    int64_t group = 0, previous = -2;
    for (int64_t layer : mine) {
      int64_t kept = bytes.getLayerBytes(layer);
      if (kept >= bytes.layer || (kept == 0 && layer != previous + 1))
        group = 0;
      else
        group = kept > 0 ? 1 : group + 1;
      transient = std::max(transient, group * bytes.layer);
      previous = layer;
    }
  }
  std::optional<int64_t> rank = getPipelineStage(step);
  int64_t lastRank = getPipelineSize(module) - 1;
  if (!hasTasks) {
    // No gradient: not a training step, nothing kept for a backward.
    if (chunkLayers.empty())
      return ActivationPeak();
    if (std::optional<ActivationPeak> peak =
            computeScheduleNodePeak(body, bytes)) {
      peak->bytes += transient;
      return peak;
    }
    // One microbatch at a time, through every layer of this rank.
    int64_t layers = chunkLayers[-1].size();
    ActivationPeak peak{layerBytes(-1) + transient, 1, layers};
    if (rank.value_or(0) == 0)
      peak.bytes += bytes.embedding;
    if (rank.value_or(lastRank) == lastRank)
      peak.bytes += bytes.output;
    return peak;
  }
  if (!rank)
    return std::nullopt;
  auto chunkBytes = [&](int64_t chunk) {
    int64_t held = layerBytes(chunk);
    if (*rank == 0 && chunk == 0)
      held += bytes.embedding;
    if (*rank == lastRank && chunk == numChunks - 1)
      held += bytes.output;
    return held;
  };

  // Without deallocate_pipeline_outputs, a forward's output that the rank
  // sends stays allocated until the forward's backward (Megatron keeps it
  // in output_tensors); the formula's layers do not count it. 16-bit, as
  // the formula's activations.
  std::map<Key, int64_t> keptOutputBytes;
  if (keepsPipelineOutputs(step))
    for (SendOp send : body.getOps<SendOp>())
      if (std::optional<PipelineTask> task = getPipelineTask(send);
          task && task->phase == PipelineTask::Phase::Forward)
        if (auto type = dyn_cast<ShapedType>(send.getInput().getType());
            type && type.hasStaticShape())
          keptOutputBytes[{task->microbatch, task->chunk}] +=
              2 * type.getNumElements();
  auto forwardBytes = [&](const Key &key) {
    auto kept = keptOutputBytes.find(key);
    return chunkBytes(key.second) +
           (kept == keptOutputBytes.end() ? 0 : kept->second);
  };

  // A routed buffer (an expert's rows, sized for the worst case) counts
  // the rows balanced routing fills, as the formula counts a forward's MoE
  // layer: its bytes times the producer's ddp.routed_fill.
  std::map<Key, int64_t> deferredBytes;
  for (auto &[key, values] : deferredInputs)
    for (Value value : values)
      if (auto type = dyn_cast<ShapedType>(value.getType());
          type && type.hasStaticShape())
        deferredBytes[key] +=
            std::llround(2.0 * double(type.getNumElements()) *
                         getRoutedFill(value.getDefiningOp()));

  ActivationPeak held, peak;
  std::set<Key> started;
  for (Operation &op : body) {
    std::optional<PipelineTask> task = getPipelineTask(&op);
    if (!task)
      continue;
    Key key{task->microbatch, task->chunk};
    if (task->phase == PipelineTask::Phase::Forward) {
      // A receive of the forward's input may be posted before the backward
      // it runs after ends (overlap-p2p-comm; and unbatched calls, where
      // Megatron's _p2p_ops issues recv_forward before send_backward): it
      // holds one message's buffer, not the chunk's activations.
      if (isa<RecvOp>(op) || !started.insert(key).second)
        continue;
      held.bytes += forwardBytes(key);
      held.forwards += 1;
      held.layers += chunkLayers[task->chunk].size();
      if (held.bytes > peak.bytes)
        peak = held;
      continue;
    }
    // The backward frees the forward's activations but what its deferred
    // weight-gradient pass reads, which that pass frees.
    auto deferred = deferredBytes.find(key);
    int64_t kept = deferred == deferredBytes.end() ? 0 : deferred->second;
    auto lastBackward = lastBackwardOp.find(key);
    if (lastBackward != lastBackwardOp.end() && lastBackward->second == &op &&
        started.erase(key)) {
      held.bytes -= forwardBytes(key) - kept;
      held.forwards -= 1;
      held.layers -= chunkLayers[task->chunk].size();
    }
    auto lastWeightGrad = lastWeightGradOp.find(key);
    if (lastWeightGrad != lastWeightGradOp.end() &&
        lastWeightGrad->second == &op)
      held.bytes -= kept;
  }
  peak.bytes += transient;
  return peak;
}

int64_t ddp::getGatheredUnitPeakBytes(func::FuncOp step) {
  if (step.isExternal())
    return 0;
  Block &body = step.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [index, op] : llvm::enumerate(body))
    position[&op] = int64_t(index);
  // +bytes where a gather starts, -bytes after its last read.
  std::map<int64_t, int64_t> changes;
  for (auto gather : body.getOps<AllGatherOp>()) {
    Value gathered = gather.getResult();
    if (!gather.getInput().getDefiningOp<GetParamShardOp>() ||
        gathered.use_empty() ||
        !llvm::all_of(gathered.getUsers(), [](Operation *user) {
          return isa<BucketUnpackOp>(user);
        }))
      continue;
    int64_t first = position.lookup(gather), last = first;
    for (Operation *unpack : gathered.getUsers()) {
      last = std::max(last, position.lookup(unpack));
      for (Operation *reader : unpack->getUsers())
        if (Operation *top = body.findAncestorOpInBlock(*reader))
          last = std::max(last, position.lookup(top));
    }
    int64_t bytes = getTensorBytes(gathered.getType());
    changes[first] += bytes;
    changes[last + 1] -= bytes;
  }
  int64_t held = 0, peak = 0;
  for (auto [at, change] : changes) {
    held += change;
    peak = std::max(peak, held);
  }
  return peak;
}
