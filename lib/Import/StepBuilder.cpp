//===- StepBuilder.cpp - Building the unscheduled step --------------------===//

#include "StepBuilder.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::importer;

StepBuilder::StepBuilder(MLIRContext &context, const MeshLayout &layout,
                         const OptimizerConfig &optimizer,
                         int64_t numMicrobatches)
    : context(context), builder(&context), loc(UnknownLoc::get(&context)),
      layout(layout),
      optimizer(optimizer), numMicrobatches(numMicrobatches) {
  context.getOrLoadDialect<DDPDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  builder.setListener(this);

  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  for (auto [name, size] : layout.axes) {
    names.push_back(builder.getStringAttr(name));
    sizes.push_back(size);
  }
  mesh =
      MeshOp::create(builder, loc, "world", builder.getArrayAttr(names), sizes);
  meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  denseGroup = getGroup(layout.denseGroupAxes);
  expertGroup = getGroup(layout.expertGroupAxes);
  tensorParallelGroup = getGroup(layout.tensorAxes);
}

Group StepBuilder::getGroup(ArrayRef<StringRef> axes) {
  Group group;
  SmallVector<Attribute> names;
  for (StringRef axis : axes) {
    int64_t size = mesh.getAxisSize(axis);
    assert(size > 0 && "group axis is not in the mesh");
    names.push_back(StringAttr::get(&context, axis));
    group.size *= size;
  }
  group.axes = ArrayAttr::get(&context, names);
  return group;
}

unsigned StepBuilder::addParam(ParamSpec spec) {
  assert(!step && "parameters are declared before the step");
  auto param = ParamOp::create(
      builder, loc, spec.name, spec.type, getLayerAttr(spec.layer),
      spec.tpDim ? builder.getI64IntegerAttr(*spec.tpDim) : IntegerAttr(),
      spec.expert, spec.sharedEmbedding);
  paramRefs.push_back(FlatSymbolRefAttr::get(param.getSymNameAttr()));
  params.push_back(std::move(spec));
  paramValues.emplace_back();
  gradients.emplace_back();
  weightGrads.emplace_back();
  contributions.push_back(0);
  return params.size() - 1;
}

void StepBuilder::setPipelineChunk(PipelineTask::Phase phase,
                                   int64_t flowChunk) {
  if (pipelineStages < 2)
    return;
  currentTask = {flowChunk % pipelineStages,
                 PipelineTask{phase, currentMicrobatch,
                              flowChunk / pipelineStages}};
}

void StepBuilder::setScheduleNode(bool backward, ScheduleNode::Kind kind,
                                  int64_t layer) {
  if (!scheduleNodes || nodeFrozen)
    return;
  currentNode = ScheduleNode{backward, currentMicrobatch, kind, layer};
}

void StepBuilder::notifyOperationInserted(Operation *op,
                                          OpBuilder::InsertPoint) {
  if (!isa<DDPDialect>(op->getDialect()))
    return;
  if (currentNode)
    ddp::setScheduleNode(op, *currentNode);
  if (isa<GemmOp, ComputeOp, CollectiveOpInterface>(op)) {
    if (routedLimit)
      setRoutedLimit(op, *routedLimit);
    if (routedFill < 1)
      setRoutedFill(op, routedFill);
  }
  if (!currentTask)
    return;
  setPipelineStage(op, currentTask->first);
  setPipelineTask(op, currentTask->second);
}

SmallVector<Value> StepBuilder::beginStep(TypeRange inputs) {
  step = func::FuncOp::create(builder, loc, "step",
                              builder.getFunctionType(inputs, {}));
  Block *body = step.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  return SmallVector<Value>(body->getArguments());
}

IntegerAttr StepBuilder::getLayerAttr(std::optional<int64_t> layer) {
  return layer ? builder.getI64IntegerAttr(*layer) : IntegerAttr();
}

Value StepBuilder::getParam(unsigned id) {
  if (!paramValues[id])
    paramValues[id] =
        GetParamOp::create(builder, loc, params[id].type, paramRefs[id]);
  return paramValues[id];
}

class StepBuilder::WeightGradScope {
public:
  explicit WeightGradScope(StepBuilder &sb) : sb(sb), saved(sb.currentTask) {
    if (sb.splitsWeightGradients() && sb.currentTask &&
        sb.currentTask->second.phase == PipelineTask::Phase::Backward)
      sb.currentTask->second.phase = PipelineTask::Phase::WeightGrad;
  }
  ~WeightGradScope() { sb.currentTask = saved; }

private:
  StepBuilder &sb;
  std::optional<std::pair<int64_t, PipelineTask>> saved;
};

Value StepBuilder::gemm(GemmPhase phase, Value lhs, bool transposeLhs,
                        Value rhs, bool transposeRhs,
                        std::optional<int64_t> layer) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  int64_t m = lhsType.getDimSize(transposeLhs ? 1 : 0);
  int64_t n = rhsType.getDimSize(transposeRhs ? 0 : 1);
  assert(lhsType.getDimSize(transposeLhs ? 0 : 1) ==
             rhsType.getDimSize(transposeRhs ? 1 : 0) &&
         "contraction sizes differ");
  auto resultType = RankedTensorType::get({m, n}, lhsType.getElementType());
  // ZB-H1: the weight gradient is its backward's W pass.
  std::optional<WeightGradScope> scope;
  if (phase == GemmPhase::Wgrad)
    scope.emplace(*this);
  return GemmOp::create(builder, loc, resultType, phase, lhs, transposeLhs, rhs,
                        transposeRhs, getLayerAttr(layer));
}

ValueRange StepBuilder::compute(StringRef kind, ValueRange inputs,
                                TypeRange results, double flops, double bytes,
                                std::optional<int64_t> layer) {
  return ComputeOp::create(builder, loc, results, builder.getStringAttr(kind),
                           inputs, /*routing=*/nullptr, /*params=*/nullptr,
                           builder.getF64FloatAttr(flops),
                           builder.getF64FloatAttr(bytes), getLayerAttr(layer))
      .getResults();
}

ValueRange StepBuilder::route(StringRef kind, RoutingKernel kernel,
                              ArrayRef<int64_t> params, ValueRange inputs,
                              TypeRange results, double flops, double bytes,
                              std::optional<int64_t> layer) {
  auto op = ComputeOp::create(
      builder, loc, results, builder.getStringAttr(kind), inputs,
      RoutingKernelAttr::get(&context, kernel),
      params.empty() ? DenseI64ArrayAttr() : builder.getDenseI64ArrayAttr(params),
      builder.getF64FloatAttr(flops), builder.getF64FloatAttr(bytes),
      getLayerAttr(layer));
  return op.getResults();
}

Value StepBuilder::castTo(Value input, Type elementType) {
  auto type = mlir::cast<RankedTensorType>(input.getType());
  if (type.getElementType() == elementType)
    return input;
  return CastOp::create(builder, loc, type.clone(elementType), input);
}

Value StepBuilder::allReduce(Value input, const Group &group,
                             Reduction reduction) {
  return AllReduceOp::create(builder, loc, input.getType(), /*token=*/Type(),
                             ReductionAttr::get(&context, reduction), input,
                             meshRef, group.axes,
                             /*asyncDependencies=*/ValueRange())
      .getResult();
}

/// `type` with dimension 0 multiplied (all-gather) or divided (reduce-scatter)
/// by `factor`.
static RankedTensorType scaleDim0(RankedTensorType type, int64_t factor,
                                  bool divide) {
  SmallVector<int64_t> shape(type.getShape());
  assert((!divide || shape[0] % factor == 0) && "dimension 0 does not split");
  shape[0] = divide ? shape[0] / factor : shape[0] * factor;
  return type.clone(shape);
}

Value StepBuilder::allGather(Value input, const Group &group) {
  auto type = scaleDim0(cast<RankedTensorType>(input.getType()), group.size,
                        /*divide=*/false);
  return AllGatherOp::create(builder, loc, type, /*token=*/Type(), input,
                             meshRef, group.axes,
                             /*asyncDependencies=*/ValueRange())
      .getResult();
}

Value StepBuilder::reduceScatter(Value input, const Group &group) {
  auto type = scaleDim0(cast<RankedTensorType>(input.getType()), group.size,
                        /*divide=*/true);
  return ReduceScatterOp::create(builder, loc, type, /*token=*/Type(),
                                 ReductionAttr::get(&context, Reduction::Sum),
                                 input, meshRef, group.axes,
                                 /*asyncDependencies=*/ValueRange())
      .getResult();
}

Value StepBuilder::allToAll(Value input, const Group &group) {
  return AllToAllOp::create(builder, loc, input.getType(), /*token=*/Type(),
                            input, meshRef, group.axes,
                            /*asyncDependencies=*/ValueRange())
      .getResult();
}

Value StepBuilder::allToAllV(Value input, Value sendCounts, Value recvCounts,
                             const Group &group) {
  return AllToAllVOp::create(builder, loc, input.getType(), /*token=*/Type(),
                             input, sendCounts, recvCounts, meshRef,
                             group.axes, /*asyncDependencies=*/ValueRange())
      .getResult();
}

void StepBuilder::addGradient(unsigned id, Value gradient) {
  assert(gradient.getType() == params[id].type &&
         "a gradient has its parameter's type");
  // Each pipeline rank sums the contributions it computes; the ranks'
  // sums are added when the gradient is ready (markReady).
  Operation *producer = gradient.getDefiningOp();
  std::optional<PipelineTask> task =
      producer ? getPipelineTask(producer) : std::nullopt;
  if (!weightGradOrder.empty() && task &&
      task->phase == PipelineTask::Phase::WeightGrad) {
    weightGrads[id][*getPipelineStage(producer)].emplace_back(*task,
                                                              gradient);
  } else {
    Value &sum = gradients[id][currentTask ? currentTask->first : 0];
    sum = sum ? AccumulateOp::create(builder, loc, sum, gradient).getResult()
              : gradient;
  }
  int64_t expected =
      int64_t(params[id].contributionsPerMicrobatch) * numMicrobatches;
  int64_t count = ++contributions[id];
  assert(count <= expected && "more gradient contributions than declared");
  if (count == expected) {
    std::optional<std::pair<int64_t, PipelineTask>> saved = currentTask;
    sumWeightGradients(id);
    markReady(id);
    currentTask = saved;
  }
}

void StepBuilder::sumWeightGradients(unsigned id) {
  for (auto &[rank, contributions] : weightGrads[id]) {
    // In the rank's W order: the pipelined rank sums each in its W task,
    // and the reference step computes the same sum.
    const std::vector<int64_t> &order = weightGradOrder[rank];
    std::vector<size_t> position(order.size());
    for (auto [index, microbatch] : llvm::enumerate(order))
      position[microbatch] = index;
    llvm::stable_sort(contributions, [&](const auto &a, const auto &b) {
      return position[a.first.microbatch] < position[b.first.microbatch];
    });
    Value sum;
    for (auto &[task, gradient] : contributions) {
      currentTask = {rank, task};
      sum = sum ? AccumulateOp::create(builder, loc, sum, gradient).getResult()
                : gradient;
    }
    // A sum of contributions from backwards on the rank (none from the
    // importer's weights) comes first, in the last W task.
    Value &total = gradients[id][rank];
    total = total ? AccumulateOp::create(builder, loc, total, sum).getResult()
                  : sum;
  }
  // markReady builds the rest in the last W task summed (several ranks:
  // outside any, as it decides).
}

void StepBuilder::markReady(unsigned id) {
  // A parameter held by several pipeline ranks (the word embedding tied to
  // the output layer) gets the sum of their sums, in rank order, on each
  // of them, as finalize_model_grads all-reduces it over the embedding
  // group: its ops carry no stage, so they run where their operands are.
  std::optional<std::pair<int64_t, PipelineTask>> task = currentTask;
  if (gradients[id].size() > 1)
    currentTask.reset();
  Value gradient;
  for (auto &[stage, sum] : gradients[id])
    gradient = gradient
                   ? AccumulateOp::create(builder, loc, gradient, sum)
                         .getResult()
                   : sum;
  if (params[id].sumOverTensorParallel)
    gradient = allReduce(gradient, tensorParallelGroup);
  Value final = GradReadyOp::create(builder, loc, paramRefs[id], gradient);
  ready.emplace_back(id, final);
  currentTask = task;
}

OwningOpRef<ModuleOp> StepBuilder::finish(ValueRange results) {
  assert(ready.size() == params.size() &&
         "every parameter's gradient is ready before the step ends");
  // The reductions and the optimizer run after the pipeline, each on the
  // stages of its gradient.
  currentTask.reset();
  currentNode.reset();
  SmallVector<Value> reduced;
  for (auto [id, gradient] : ready) {
    const Group &group = params[id].expert ? expertGroup : denseGroup;
    reduced.push_back(
        AllReduceOp::create(builder, loc, gradient.getType(),
                            /*token=*/Type(),
                            ReductionAttr::get(&context, Reduction::Avg),
                            gradient, meshRef, group.axes,
                            /*asyncDependencies=*/ValueRange())
            .getResult());
  }
  for (auto [entry, gradient] : llvm::zip(ready, reduced)) {
    FlatSymbolRefAttr param = paramRefs[entry.first];
    if (optimizer.kind == OptimizerKind::SGD)
      SGDOp::create(builder, loc, param, gradient,
                    builder.getF64FloatAttr(optimizer.lr));
    else
      AdamOp::create(builder, loc, param, gradient,
                     builder.getF64FloatAttr(optimizer.lr),
                     builder.getF64FloatAttr(optimizer.beta1),
                     builder.getF64FloatAttr(optimizer.beta2),
                     builder.getF64FloatAttr(optimizer.eps));
  }
  func::ReturnOp::create(builder, loc, results);
  step.setFunctionType(
      builder.getFunctionType(step.getArgumentTypes(), results.getTypes()));
  return std::move(module);
}
