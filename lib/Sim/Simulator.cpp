//===- Simulator.cpp - Step-time simulation of a ddp step -----------------===//
//
// One pass over the step's block: O(number of ops), plus O(group size) once
// per distinct process group to place it on nodes. The timing rules are the
// StepClock's; this file prices ops and records what happened.
//
//===----------------------------------------------------------------------===//

#include "StepSimulator.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/IR/ResultPlacement.h"
#include "ddp/Dialect/DDP/IR/TensorBytes.h"
#include "ddp/Timing/StepClock.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace ddp;
using namespace ddp::sim;
using namespace ddp::timing;
using ddp::sim::detail::SimGroup;
using ddp::sim::detail::StepSimulator;

//===----------------------------------------------------------------------===//
// The simulation
//===----------------------------------------------------------------------===//

/// The verifier admits only the four float types; f32 prices anything else.
static ElementType getCostedElementType(Type type) {
  return getElementTypeOf(type).value_or(ElementType::F32);
}

static double getCollectiveBytes(CollectiveOpInterface op) {
  return getTensorBytes(op.getCostedTensor().getType());
}


LogicalResult StepSimulator::prepareMeshes(ModuleOp module) {
  bool first = true;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    SmallVector<StringRef> names;
    for (Attribute name : mesh.getAxisNames())
      names.push_back(cast<StringAttr>(name).getValue());
    SimMesh simMesh{mesh, SmallVector<int64_t>(mesh.getShape())};
    if (options.dataParallelSize > 0) {
      auto rescaled = rescaleDataParallelAxes(names, mesh.getShape(),
                                              options.dataParallelSize);
      if (!rescaled)
        return mesh.emitError(llvm::toString(rescaled.takeError()));
      simMesh.shape = std::move(*rescaled);
    }
    // Checked axis by axis, so that the product cannot overflow.
    int64_t numRanks = 1;
    for (int64_t size : simMesh.shape) {
      if (size > kMaxSimulatedRanks / numRanks) {
        std::string sizes;
        llvm::raw_string_ostream(sizes) << llvm::interleaved(simMesh.shape);
        return mesh.emitError("cannot simulate a mesh of sizes (")
               << sizes << "): it has more than " << kMaxSimulatedRanks
               << " ranks, the most the simulator places";
      }
      numRanks *= size;
    }
    if (first) {
      // The first mesh describes the job in the report.
      first = false;
      result.meshName = mesh.getSymName().str();
      result.numRanks = numRanks;
      result.dataParallelSize = 1;
      for (auto [name, size, irSize] :
           llvm::zip(names, simMesh.shape, mesh.getShape())) {
        result.meshAxes.push_back({name.str(), size, irSize});
        if (isDataParallelAxis(name))
          result.dataParallelSize *= size;
      }
      int64_t perNode = model.getProfile().gpusPerNode;
      result.numNodes =
          static_cast<int64_t>(llvm::divideCeil(numRanks, perNode));
    }
    meshes[FlatSymbolRefAttr::get(mesh.getSymNameAttr())] = std::move(simMesh);
  }
  return success();
}

FailureOr<SimGroup *> StepSimulator::getGroup(CollectiveOpInterface op) {
  auto attrKey =
      std::make_pair<Attribute, Attribute>(op.getMeshAttr(), op.getAxesAttr());
  auto cached = groupsByAttr.find(attrKey);
  if (cached != groupsByAttr.end())
    return cached->second;

  auto meshIt = meshes.find(op.getMeshAttr());
  if (meshIt == meshes.end())
    return op->emitError("refers to ")
           << op.getMeshAttr() << ", which is not a ddp.mesh of the module";
  SimMesh &mesh = meshIt->second;
  SmallVector<unsigned> axes;
  for (Attribute axis : op.getAxesAttr()) {
    StringRef name = cast<StringAttr>(axis).getValue();
    auto names = mesh.op.getAxisNames();
    auto it = llvm::find_if(names, [&](Attribute candidate) {
      return cast<StringAttr>(candidate).getValue() == name;
    });
    if (it == names.end())
      return op->emitError("uses axis '")
             << name << "', which mesh " << op.getMeshAttr()
             << " does not have";
    axes.push_back(static_cast<unsigned>(std::distance(names.begin(), it)));
  }
  // The same axes in another order are the same group, and so the same
  // stream.
  llvm::sort(axes);
  std::string key = mesh.op.getSymName().str();
  for (unsigned axis : axes)
    key += "/" + std::to_string(axis);
  auto [it, inserted] = groupsByKey.try_emplace(key);
  SimGroup &group = it->second;
  if (inserted) {
    group.placement =
        placeGroup(mesh.shape, axes, model.getProfile().gpusPerNode);
    group.stream = result.streams.size();
    StreamInfo stream;
    stream.name = "comm" + std::to_string(group.stream - 1);
    for (unsigned axis : axes)
      stream.axes.push_back(
          cast<StringAttr>(mesh.op.getAxisNames()[axis]).getValue().str());
    stream.placement = group.placement;
    result.streams.push_back(std::move(stream));
    clock.addCommStream();
    streamTransferBound.push_back(0);
  }
  groupsByAttr[attrKey] = &group;
  return &group;
}

void StepSimulator::addEvent(Operation *op, StringRef name,
                             EventCategory category, unsigned stream,
                             double start, double duration,
                             std::optional<CollectiveRecord> collective) {
  if (!options.recordEvents)
    return;
  result.events.push_back(TimelineEvent{name.str(), category, stream, start,
                                        duration, op, std::move(collective)});
}

void StepSimulator::runCompute(Operation *op, StringRef name, double baseTime) {
  double start = clock.getNow();
  double duration = clock.runKernel(baseTime);
  addEvent(op, name, EventCategory::Compute, 0, start, duration);
  result.computeTime += duration;
  result.idealComputeTime += baseTime;
  result.streams[0].busyTime += duration;
  ++result.streams[0].numOps;
  ++result.numComputeOps;
}

void StepSimulator::runOptimizer(Operation *op, StringRef name,
                                 OptimizerRule kind, Type gradType,
                                 Type paramType, Attribute params) {
  double time = model.optimizerTime(
      kind, static_cast<double>(getNumElements(gradType)),
      getCostedElementType(paramType), getCostedElementType(gradType));
  // The lower bound's tail: the update that follows a parameter's reduction.
  if (auto param = dyn_cast<FlatSymbolRefAttr>(params))
    optimizerTime[param.getValue()] = time;
  else
    for (Attribute each : cast<ArrayAttr>(params))
      optimizerTime[cast<FlatSymbolRefAttr>(each).getValue()] = time;
  runCompute(op, name, time);
}

double StepSimulator::blockComputeUntil(Operation *op, double time,
                                        StringRef name) {
  double start = clock.getNow();
  double held = clock.blockUntil(time);
  if (held == 0)
    return 0;
  addEvent(op, name, EventCategory::Wait, 0, start, held);
  result.exposedCommTime += held;
  return held;
}

void StepSimulator::countPipelineHold(double holdStart, double held,
                                      double peerReady) {
  // Until the peer has sent, the rank waits for it (the bubble); from then
  // on for the transfer, and for the rank's own earlier transfers it
  // queues behind on the same stream.
  double peerWait = std::clamp(peerReady - holdStart, 0.0, held);
  result.pipelinePeerWaitTime += peerWait;
  result.exposedPipelineTransferTime += held - peerWait;
}

LogicalResult StepSimulator::runCollective(CollectiveOpInterface op) {
  FailureOr<SimGroup *> group = getGroup(op);
  if (failed(group))
    return failure();
  unsigned stream = (*group)->stream;
  CollectiveRecord record;
  record.kind = op.getCostKind();
  // The busiest rank of an all-to-all of routed tokens moves that much more.
  record.bytes = getCollectiveBytes(op) *
                 getRoutedCostFactor(op, options.moeImbalance);
  record.cost =
      model.collectiveCost(record.kind, record.bytes, (*group)->placement);
  auto async = cast<AsyncOpInterface>(op.getOperation());
  Value token = async.getAsyncToken();
  record.async = token != nullptr;
  double duration = record.cost.total();
  // An op issued after other asynchronous ops starts once they are done.
  double notBefore = 0;
  for (Value dependency : async.getAsyncDependencies())
    notBefore = std::max(notBefore, tokenDone.lookup(dependency));
  notBefore = std::max(notBefore, externalNotBefore.lookup(op));

  // Collectives of one group run in issue order on the group's stream, sync
  // or async alike.
  auto [start, end] = clock.issueCollective(stream - 1, duration, notBefore);
  lastCollective = {start, end};
  streamTransferBound[stream] += model.collectiveTransferBound(
      record.kind, record.bytes, (*group)->placement);
  result.streams[stream].busyTime += duration;
  ++result.streams[stream].numOps;
  result.commTime += duration;
  ++result.numCollectives;

  StringRef name = op->getName().stripDialect();
  addEvent(op, name, EventCategory::Comm, stream, start, duration, record);
  bool pipelineMessage = isPipelineMessage(op);
  // When the peer rank had sent: a receive's transfer starts no earlier. A
  // send has no such gate (0).
  double peerReady = externalNotBefore.lookup(op);
  if (streamEnd.size() <= stream)
    streamEnd.resize(stream + 1, 0.0);
  streamEnd[stream] = std::max(streamEnd[stream], end);
  if (token) {
    tokenDone[token] = end;
    tokenStream[token] = stream;
    if (pipelineMessage)
      pipelinePeerReady[token] = peerReady;
    return success();
  }
  // A synchronous collective holds the compute stream until it is done.
  double holdStart = clock.getNow();
  double held = blockComputeUntil(op, end, name);
  result.streams[stream].exposedTime += held;
  if (pipelineMessage)
    countPipelineHold(holdStart, held, peerReady);
  return success();
}

LogicalResult StepSimulator::simulate(Operation *op) {
  ++result.numOps;
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](GemmOp gemm) {
        // Routed rows at their balanced fill, then the imbalance.
        auto [m, n, k] = getCostedGemmShape(gemm);
        double time = model.gemmTime(m, n, k,
                                     getCostedElementType(gemm.getLhs().getType())) *
                      getRoutedImbalanceFactor(op, options.moeImbalance);
        result.flops += 2.0 * double(m) * double(n) * double(k);
        runCompute(op, "gemm " + stringifyEnum(gemm.getPhase()).str(), time);
        return success();
      })
      .Case([&](ComputeOp compute) {
        Type typed = !compute.getInputs().empty()
                         ? compute.getInputs().front().getType()
                         : (!compute.getResults().empty()
                                ? compute.getResults().front().getType()
                                : Type());
        ElementType type = typed ? getCostedElementType(typed) : ElementType::F32;
        // Routed work at its balanced fill (a kernel's launch is paid
        // once), then the imbalance.
        double fill = getRoutedFill(op);
        double flops = compute.getFlops().convertToDouble() * fill;
        result.flops += flops;
        runCompute(op, compute.getKind(),
                   model.computeTime(flops,
                                     compute.getBytes().convertToDouble() * fill,
                                     type) *
                       getRoutedImbalanceFactor(op, options.moeImbalance));
        return success();
      })
      .Case([&](AccumulateOp accumulate) {
        // Two reads and one write.
        runCompute(
            op, "accumulate",
            model.memoryTime(3.0 * getTensorBytes(accumulate.getType())));
        return success();
      })
      .Case([&](ScaleOp scale) {
        runCompute(op, "scale",
                   model.memoryTime(2.0 * getTensorBytes(scale.getType())));
        return success();
      })
      .Case([&](CastOp cast) {
        runCompute(
            op, "cast",
            model.memoryTime(double(getTensorBytes(cast.getInput().getType())) +
                             getTensorBytes(cast.getType())));
        return success();
      })
      .Case([&](SGDOp sgd) {
        runOptimizer(op, "sgd", OptimizerRule::SGD, sgd.getGrad().getType(),
                     paramTypes.lookup(sgd.getParam()), sgd.getParamAttr());
        return success();
      })
      .Case([&](AdamOp adam) {
        runOptimizer(op, "adam", OptimizerRule::Adam,
                     adam.getGrad().getType(),
                     paramTypes.lookup(adam.getParam()), adam.getParamAttr());
        return success();
      })
      // The optimizer of a shard: the same update on the shard's elements.
      .Case([&](ShardSGDOp shard) {
        runOptimizer(op, "shard_sgd", OptimizerRule::SGD,
                     shard.getGrad().getType(), shard.getType(),
                     shard.getParams());
        return success();
      })
      .Case([&](ShardAdamOp shard) {
        runOptimizer(op, "shard_adam", OptimizerRule::Adam,
                     shard.getGrad().getType(), shard.getType(),
                     shard.getParams());
        return success();
      })
      .Case([&](SetParamsOp set) {
        // A copy of each parameter's slice of the gathered bucket: read and
        // write the parameters' elements (the padding is not read), except
        // for the parameters stored there.
        double bytes = 0;
        for (auto [index, param] : llvm::enumerate(set.getParams()))
          if (!paramsInGathers->isStoredInPlace(set, index))
            bytes += getTensorBytes(paramTypes.lookup(
                cast<FlatSymbolRefAttr>(param).getValue()));
        if (bytes > 0)
          runCompute(op, "set_params", model.memoryTime(2 * bytes));
        return success();
      })
      // overlap-param-gather's reads and writes of the rank's shard of the
      // parameters: a copy of the shard, priced on its whole size as the
      // shard optimizers are (which parameter elements a rank's shard holds
      // depends on the rank); nothing where the parameters are stored in
      // the gathered bucket and the shard is its rank's shard.
      .Case([&](GetParamShardOp get) {
        if (!paramsInGathers->isInPlace(get))
          runCompute(op, "get_param_shard",
                     model.memoryTime(2.0 * getTensorBytes(get.getType())));
        return success();
      })
      .Case([&](SetParamShardOp set) {
        if (!paramsInGathers->getShardBucket(set))
          runCompute(
              op, "set_param_shard",
              model.memoryTime(2.0 * getTensorBytes(set.getShard().getType())));
        return success();
      })
      .Case([&](GradReadyOp ready) {
        result.gradReady.push_back({ready.getParam().str(), clock.getNow(),
                                    getNumElements(ready.getType()),
                                    getCostedElementType(ready.getType()), op});
        idealComputeAtReady.push_back(result.idealComputeTime);
        return success();
      })
      .Case([&](CollectiveOpInterface collective) {
        return runCollective(collective);
      })
      .Case([&](JoinOp join) {
        // A wait on the join holds for the token that ends last: its
        // stream, and whether it is a stage-to-stage transfer.
        double done = 0;
        Value last;
        for (Value token : join.getTokens())
          if (!last || tokenDone.lookup(token) >= done) {
            done = tokenDone.lookup(token);
            last = token;
          }
        tokenDone[join.getResult()] = done;
        if (!last)
          return success();
        if (auto it = tokenStream.find(last); it != tokenStream.end())
          tokenStream[join.getResult()] = it->second;
        if (auto it = pipelinePeerReady.find(last);
            it != pipelinePeerReady.end())
          pipelinePeerReady[join.getResult()] = it->second;
        return success();
      })
      .Case([&](WaitOp wait) {
        ++result.numWaits;
        double holdStart = clock.getNow();
        double held =
            blockComputeUntil(op, tokenDone.lookup(wait.getToken()), "wait");
        if (auto it = tokenStream.find(wait.getToken()); it != tokenStream.end())
          result.streams[it->second].exposedTime += held;
        if (auto it = pipelinePeerReady.find(wait.getToken());
            it != pipelinePeerReady.end())
          countPipelineHold(holdStart, held, it->second);
        return success();
      })
      // A stack copies the operands the lowering cannot produce in their
      // rows (the gathered chunks of a pipelined all-gather that another op
      // reads whole); the rest it moves nothing for.
      .Case([&](ConcatOp concat) {
        double bytes = 0;
        for (auto [index, input] : llvm::enumerate(concat.getInputs()))
          if (!canProduceInPlace(concat, index))
            bytes += getTensorBytes(input.getType());
        if (bytes > 0)
          runCompute(op, "concat", model.memoryTime(2 * bytes));
        return success();
      })
      // Views and markers: gradients are computed in place in their bucket,
      // and the pieces of a split GEMM in place in their operands, so
      // packing, unpacking and chunking move nothing.
      .Case<GetParamOp, BucketPackOp, BucketUnpackOp, ChunkOp, func::ReturnOp>(
          [](Operation *) { return success(); })
      .Default([&](Operation *other) {
        if (unmodeled.insert(other->getName().getStringRef()).second)
          result.unmodeledOps.push_back(other->getName().getStringRef().str());
        return success();
      });
}

LogicalResult StepSimulator::begin() {
  auto module = step->getParentOfType<ModuleOp>();
  if (!module)
    return step.emitError("the step to simulate must be inside a module");
  result.stepName = step.getSymName().str();
  result.hardwareName = model.getProfile().name;
  if (failed(prepareMeshes(module)))
    return failure();
  for (ParamOp param : module.getOps<ParamOp>())
    paramTypes[param.getSymName()] = param.getType();

  StreamInfo compute;
  compute.name = "compute";
  result.streams.push_back(std::move(compute));
  if (options.recordEvents)
    result.events.reserve(step.getBody().front().getOperations().size());

  if (!step.getBody().hasOneBlock())
    return step.emitError("the step to simulate must have a single block");
  paramsInGathers.emplace(step.getBody().front());
  return success();
}

SimResult StepSimulator::finish() {
  // Communication that outlives compute (never waited) is exposed too.
  double now = clock.getNow(), lastComm = clock.getCommBusyUntil();
  if (lastComm > now) {
    result.exposedCommTime += lastComm - now;
    auto last = std::max_element(streamEnd.begin(), streamEnd.end());
    if (last != streamEnd.end() && last != streamEnd.begin())
      result.streams[last - streamEnd.begin()].exposedTime += lastComm - now;
  }
  result.stepTime = clock.getStepEnd();
  computeLowerBound();
  return std::move(result);
}

FailureOr<SimResult> StepSimulator::run() {
  if (failed(begin()))
    return failure();
  for (Operation &op : step.getBody().front())
    if (failed(simulate(&op)))
      return failure();
  SimResult simulated = finish();
  // A profile with latencies or overheads near the largest double (a unit
  // mistake) gives steps that take longer than anything reports: times are
  // carried in microseconds in int64 (statistics, attributes) and printed
  // in milliseconds, where they would overflow to inf.
  constexpr double kMaxStepSeconds = 9e12;
  if (!(simulated.stepTime <= kMaxStepSeconds))
    return step.emitError("the simulated step takes more than 9e12 s with "
                          "hardware profile '")
           << model.getProfile().name
           << "': its latencies, overheads or rates are out of any "
              "hardware's range";
  return simulated;
}

FailureOr<SimResult> ddp::sim::simulateStep(func::FuncOp step,
                                            const CostModel &model,
                                            const SimOptions &options) {
  return StepSimulator(step, model, options).run();
}
