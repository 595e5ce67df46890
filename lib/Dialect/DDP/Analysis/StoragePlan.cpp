//===- StoragePlan.cpp - Where every tensor of a step lives ---------------===//

#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"

#include "StepAnalysis.h"

#include "ddp/Support/CheckedCount.h"
#include "ddp/Support/ElementType.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/ResultPlacement.h"
#include "ddp/Dialect/DDP/IR/StepLookup.h"
#include "ddp/Dialect/DDP/IR/TensorBytes.h"
#include "ddp/Runtime/ddp_program.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ddp;

int32_t ddp::getRuntimeDType(Type elementType) {
  std::optional<ElementType> type = getElementTypeOf(elementType);
  return type ? getRuntimeDType(*type) : 0;
}

int64_t ddp::getElementBytes(Type elementType) {
  return elementType.getIntOrFloatBitWidth() / 8;
}

int64_t PlannedBuffer::getBytes() const {
  return numel * getElementBytes(getElementTypeOfRuntimeDType(dtype));
}

unsigned StoragePlan::getParamIndex(FlatSymbolRefAttr name) const {
  return paramIndex.lookup(name.getAttr());
}

unsigned StoragePlan::getGroupIndex(ArrayAttr axes) const {
  return groupIndex.lookup(axes);
}

/// Whether the lowering defines a function named `name`: a runtime entry
/// point (declared with the type of its C prototype) or the program's.
static bool isDefinedByLowering(StringRef name) {
#define DDPRT_ENTRY_POINT(Enumerator, Result, Function, Parameters)            \
  if (name == #Function)                                                       \
    return true;
#include "ddp/Runtime/RuntimeFunctions.def"
  return name == DDP_PROGRAM_SYM_INIT || name == DDP_PROGRAM_SYM_SETUP ||
         name == DDP_PROGRAM_SYM_STEP || name == DDP_PROGRAM_SYM_TEARDOWN;
}

Value ddp::lookThroughGradReady(Value value) {
  while (auto gradReady = value.getDefiningOp<GradReadyOp>())
    value = gradReady.getGrad();
  return value;
}

/// The module's step (ddp::findStep), or an error at the first function that
/// rules it out: one that declares what the lowering defines, or the second
/// with a body.
static FailureOr<func::FuncOp> findStepToLower(ModuleOp module) {
  SmallVector<func::FuncOp> withBody;
  func::FuncOp step = findStep(module, "", withBody);
  for (auto func : module.getOps<func::FuncOp>()) {
    if (isDefinedByLowering(func.getSymName()))
      return func.emitError("cannot lower a module that declares @")
             << func.getSymName() << ": the lowering defines it";
    if (getPipelineStage(func))
      return func.emitError(
          "cannot lower pipeline stage programs yet: the runtime runs one "
          "step function on every rank; lower the step before "
          "ddp-pipeline-stages, and every rank runs all its layers");
    if (withBody.size() > 1 && func == withBody[1])
      return func.emitError("cannot lower a module with more than one "
                            "function; the step is @")
             << withBody[0].getSymName();
  }
  if (!step)
    return module.emitError("cannot lower a module without a step: it has "
                            "no function with a body");
  return step;
}

/// Rule 10: a parameter that every op of the module names as a shard of
/// one bucket (the shard copies and the shard optimizers), with the same
/// layout each time, is stored as that shard. The
/// symbol uses are collected in one walk; the step's ops have noted their
/// groups.
static void findShardStoredParams(StoragePlan &plan, ModuleOp module) {
  struct Layout {
    ArrayAttr axes;
    int64_t offset, shardNumel;
    bool operator==(const Layout &other) const {
      return axes == other.axes && offset == other.offset &&
             shardNumel == other.shardNumel;
    }
  };
  // std::nullopt: a use that needs the parameter whole, or two layouts.
  llvm::DenseMap<StringAttr, std::optional<Layout>> layouts;
  auto note = [&](StringAttr name, std::optional<Layout> layout) {
    auto [found, inserted] = layouts.try_emplace(name, layout);
    if (!inserted && found->second && !(layout && *found->second == *layout))
      found->second = std::nullopt;
  };
  auto noteShards = [&](auto op, int64_t shardNumel) {
    for (auto [param, offset] : llvm::zip_equal(
             op.getParams().template getAsRange<FlatSymbolRefAttr>(),
             op.getOffsets()))
      note(param.getAttr(), Layout{op.getAxesAttr(), offset, shardNumel});
  };
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(&module.getBodyRegion());
  if (!uses)
    return;
  llvm::DenseSet<Operation *> seen;
  for (const SymbolTable::SymbolUse &use : *uses) {
    Operation *user = use.getUser();
    // The step's groups are the runtime's; a use elsewhere keeps it whole.
    if (user->getParentOfType<func::FuncOp>() != plan.step) {
      note(use.getSymbolRef().getRootReference(), std::nullopt);
    } else if (isa<GradReadyOp, CheckFiniteOp>(user)) {
      // Name the parameters of gradients; read no parameter storage.
    } else if (auto getShard = dyn_cast<GetParamShardOp>(user)) {
      if (seen.insert(user).second)
        noteShards(getShard, getNumElements(getShard.getResult().getType()));
    } else if (auto setShard = dyn_cast<SetParamShardOp>(user)) {
      if (seen.insert(user).second)
        noteShards(setShard, getNumElements(setShard.getShard().getType()));
    } else if (auto shardSgd = dyn_cast<ShardSGDOp>(user)) {
      if (seen.insert(user).second)
        noteShards(shardSgd, getNumElements(shardSgd.getGrad().getType()));
    } else if (auto shardAdam = dyn_cast<ShardAdamOp>(user)) {
      if (seen.insert(user).second)
        noteShards(shardAdam, getNumElements(shardAdam.getGrad().getType()));
    } else {
      note(use.getSymbolRef().getRootReference(), std::nullopt);
    }
  }
  for (PlannedParam &param : plan.params) {
    std::optional<Layout> layout =
        layouts.lookup(param.op.getSymNameAttr());
    if (!layout || param.inBucket || layout->shardNumel <= 0)
      continue;
    param.storedShard = PlannedParam::ShardLayout{
        plan.getGroupIndex(layout->axes), layout->offset, layout->shardNumel};
  }
}

FailureOr<StoragePlan> StoragePlan::build(ModuleOp module,
                                          bool reuseBuffers) {
  StoragePlan plan;

  for (Operation &op : module.getBody()->getOperations()) {
    if (auto mesh = dyn_cast<MeshOp>(op)) {
      if (plan.mesh)
        return mesh.emitError("cannot lower a module with a second mesh; "
                              "the runtime runs one mesh, here @")
               << plan.mesh.getSymName();
      plan.mesh = mesh;
      continue;
    }
    if (auto param = dyn_cast<ParamOp>(op)) {
      RankedTensorType type = param.getTensorType();
      plan.paramIndex[param.getSymNameAttr()] = plan.params.size();
      plan.params.push_back({param, getRuntimeDType(type.getElementType()),
                             type.getNumElements()});
      continue;
    }
    if (isa<func::FuncOp>(op))
      continue;
    return op.emitError("'") << op.getName()
                             << "' cannot be lowered to the runtime; a "
                                "module holds a mesh, parameters and a step";
  }
  if (!plan.mesh)
    return module.emitError("cannot lower a module without a ddp.mesh: the "
                            "runtime needs the mesh to start");

  FailureOr<func::FuncOp> step = findStepToLower(module);
  if (failed(step))
    return failure();
  plan.step = *step;

  StepAnalysis analysis(plan.step);
  if (failed(analysis.verifyLowerable()))
    return failure();
  analysis.numberOps();
  Block &body = plan.step.getBody().front();

  auto newBuffer = [&](Type type) {
    auto tensor = cast<RankedTensorType>(type);
    plan.buffers.push_back(
        {getRuntimeDType(tensor.getElementType()), tensor.getNumElements()});
    return Storage{Storage::Kind::Buffer, unsigned(plan.buffers.size() - 1), 0};
  };

  for (BlockArgument argument : body.getArguments()) {
    plan.storage[argument] = newBuffer(argument.getType());
    plan.inputBuffers.push_back(plan.storage[argument].index);
  }

  // Parameters in the bucket their all-gather fills, as Megatron keeps
  // them in its parameter buffer: the all-gather updates them in place.
  // The bucket is written from the first op that writes into it on, which
  // the parameters' aliases must not outlive; ddp.set_param_shard's shard
  // is produced in it by the shard optimizer.
  ParamsInGathers paramsInGathers(body);
  for (PlannedParam &param : plan.params) {
    StringAttr name = param.op.getSymNameAttr();
    const GatheredParam *slot = paramsInGathers.lookup(name);
    if (!slot)
      continue;
    AllGatherOp gather = slot->gather;
    Value gathered = gather.getResult();
    if (!plan.storage.count(gathered))
      plan.storage[gathered] = newBuffer(gathered.getType());
    Storage inBucket = plan.storage.lookup(gathered);
    inBucket.byteOffset +=
        slot->offset * getElementBytes(gather.getResult().getType().getElementType());
    param.inBucket = inBucket;
    analysis.addUpdate(name, paramsInGathers.getPosition(
                                 paramsInGathers.getFirstWrite(gather)));
    ++plan.numParamsInBuckets;
  }
  for (auto setShard : body.getOps<SetParamShardOp>())
    if (paramsInGathers.getShardBucket(setShard))
      for (auto name : setShard.getParams().getAsRange<FlatSymbolRefAttr>())
        analysis.addUpdate(name.getAttr(),
                           paramsInGathers.getPosition(
                               setShard.getShard().getDefiningOp()));

  // Buckets first, so that the gradients they pack are produced in place:
  // the op that computes a gradient writes straight into its slice.
  for (auto pack : body.getOps<BucketPackOp>()) {
    Storage bucket = newBuffer(pack.getBucket().getType());
    plan.storage[pack.getBucket()] = bucket;
    int64_t elementBytes =
        getElementBytes(pack.getBucket().getType().getElementType());
    for (auto [grad, offset] :
         llvm::zip_equal(pack.getGrads(), pack.getOffsets())) {
      Value holder = lookThroughGradReady(grad);
      Operation *producer = holder.getDefiningOp();
      if (!producer || !writesItsResults(producer) ||
          plan.storage.count(holder))
        continue;
      plan.storage[holder] = {Storage::Kind::Buffer, bucket.index,
                              offset * elementBytes};
      ++plan.numGradientsInBuckets;
    }
  }

  // Stacked tensors likewise: each operand that can be is produced in its
  // rows of the result, so that stacking the reduced chunks of a split GEMM
  // copies nothing.
  for (auto concat : body.getOps<ConcatOp>()) {
    Storage whole = newBuffer(concat.getResult().getType());
    plan.storage[concat.getResult()] = whole;
    int64_t interleave = concat.getInterleave();
    // The offset of each operand's first block; block r follows at r times
    // the result's block.
    int64_t offset = 0;
    for (auto [index, input] : llvm::enumerate(concat.getInputs())) {
      if (canProduceInPlace(concat, index) && !plan.storage.count(input))
        plan.storage[input] = {Storage::Kind::Buffer, whole.index, offset};
      offset += getTensorBytes(input) / interleave;
    }
  }

  auto assignFresh = [&](Value result) {
    if (isa<RankedTensorType>(result.getType()) && !plan.storage.count(result))
      plan.storage[result] = newBuffer(result.getType());
  };
  auto noteGroup = [&](ArrayAttr axes) {
    if (plan.groupIndex.count(axes))
      return;
    plan.groupIndex[axes] = plan.groups.size();
    plan.groups.push_back(llvm::join(axes.getAsValueRange<StringAttr>(), ","));
    plan.groupSizes.push_back(getGroupSize(plan.mesh, axes));
  };
  // Groups are created collectively: programs that differ from rank to rank
  // name the groups every rank creates first, in one order.
  MLIRContext *context = module.getContext();
  if (ArrayAttr groups =
          DDPDialect::ProgramGroupsAttrHelper(context).getAttr(module)) {
    for (Attribute group : groups) {
      SmallVector<Attribute> axes;
      for (StringRef axis :
           llvm::split(cast<StringAttr>(group).getValue(), ',')) {
        if (plan.mesh.getAxisSize(axis) < 0 ||
            llvm::is_contained(axes, StringAttr::get(context, axis)))
          return module.emitError("'ddp.program_groups' names group '")
                 << cast<StringAttr>(group).getValue()
                 << "', which is not a group of distinct axes of @"
                 << plan.mesh.getSymName();
        axes.push_back(StringAttr::get(context, axis));
      }
      noteGroup(ArrayAttr::get(context, axes));
    }
  }
  // The rank's shard of `whole` over the group of `axes`, whose shards are
  // `shardBytes` each.
  auto getRankView = [&](Storage whole, ArrayAttr axes, int64_t shardBytes) {
    whole.rankGroup = plan.getGroupIndex(axes);
    whole.rankStride = shardBytes;
    return whole;
  };
  // A reduce-scatter writes its result into the rank's shard of its input
  // (NCCL's in-place form, recvbuff == sendbuff + rank * recvcount), and an
  // all-reduce or a scale into its input (sendbuff == recvbuff, as
  // Megatron-LM scales and all-reduces a bucket's gradients), when nothing
  // reads the input's bytes after it: the input is an op's result in a
  // buffer that holds no step input, read by `op` only (through
  // ddp.grad_ready, which returns its operand's storage, each link read by
  // the next only), and every other value sharing those bytes has been
  // read for the last time before it.
  auto canWriteInPlace = [&](Operation *op, Value input) {
    SmallVector<Value, 2> chain = {input};
    while (auto ready = chain.back().getDefiningOp<GradReadyOp>())
      chain.push_back(ready.getGrad());
    // Not into a chunk: a view of another tensor (a step input, or rows
    // its sibling chunks still read).
    Operation *producer = chain.back().getDefiningOp();
    if (!producer || isa<ChunkOp>(producer) ||
        !llvm::all_of(chain, [](Value link) { return link.hasOneUse(); }))
      return false;
    Storage whole = plan.storage.lookup(input);
    if (whole.kind != Storage::Kind::Buffer || whole.isRankView() ||
        llvm::is_contained(plan.inputBuffers, whole.index))
      return false;
    int64_t begin = whole.byteOffset, end = begin + getTensorBytes(input);
    unsigned issue = analysis.getPosition(op);
    for (auto [value, other] : plan.storage) {
      if (llvm::is_contained(chain, value) ||
          other.kind != Storage::Kind::Buffer || other.index != whole.index)
        continue;
      int64_t otherBegin = other.byteOffset;
      int64_t otherEnd = otherBegin + getTensorBytes(value);
      if (other.isRankView())
        otherEnd += (plan.groupSizes[*other.rankGroup] - 1) * other.rankStride;
      bool writtenAfter = value.getDefiningOp() &&
                          analysis.getPosition(value.getDefiningOp()) > issue;
      if (otherBegin < end && begin < otherEnd &&
          (writtenAfter || analysis.getLastUse(value) >= issue))
        return false;
    }
    return true;
  };
  // A shard whose only reader is an all-gather over the same group is
  // written straight into the rank's shard of the gathered buffer, so that
  // the all-gather is in place (sendbuff == recvbuff + rank * sendcount).
  // The gathered buffer may already be there, made for the parameters it
  // stores.
  auto placeShardInGather = [&](Value shard, ArrayAttr axes) {
    if (!shard.hasOneUse())
      return;
    auto gather = dyn_cast<AllGatherOp>(*shard.user_begin());
    if (!gather || gather.getAxesAttr() != axes)
      return;
    Value result = gather.getResult();
    if (!plan.storage.count(result))
      plan.storage[result] = newBuffer(result.getType());
    Storage gathered = plan.storage.lookup(result);
    if (gathered.kind != Storage::Kind::Buffer || gathered.isRankView() ||
        gathered.byteOffset != 0 ||
        plan.buffers[gathered.index].numel !=
            cast<RankedTensorType>(result.getType()).getNumElements())
      return;
    plan.storage[shard] = getRankView(gathered, axes, getTensorBytes(shard));
    ++plan.numInPlaceAllGathers;
  };
  // A shard that ddp.set_param_shard writes into parameters stored in a
  // gathered bucket is produced in the rank's shard of that bucket: the
  // shard optimizer then updates the parameters' elements where they are.
  auto placeShardInParams = [&](Value shard, ArrayAttr axes) {
    if (!shard.hasOneUse())
      return;
    auto setShard = dyn_cast<SetParamShardOp>(*shard.user_begin());
    if (!setShard)
      return;
    AllGatherOp bucket = paramsInGathers.getShardBucket(setShard);
    if (!bucket)
      return;
    plan.storage[shard] =
        getRankView(plan.storage.lookup(bucket.getResult()), axes,
                    getTensorBytes(shard));
  };

  for (Operation &op : body) {
    // The shard optimizers ask for their rank in the bucket's group; a
    // shard goes into its all-gather's buffer before the all-gather is met.
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      noteGroup(collective.getAxesAttr());
    } else if (auto shardSgd = dyn_cast<ShardSGDOp>(op)) {
      noteGroup(shardSgd.getAxesAttr());
      placeShardInGather(shardSgd.getResult(), shardSgd.getAxesAttr());
      placeShardInParams(shardSgd.getResult(), shardSgd.getAxesAttr());
    } else if (auto shardAdam = dyn_cast<ShardAdamOp>(op)) {
      noteGroup(shardAdam.getAxesAttr());
      placeShardInGather(shardAdam.getResult(), shardAdam.getAxesAttr());
      placeShardInParams(shardAdam.getResult(), shardAdam.getAxesAttr());
    } else if (auto getShard = dyn_cast<GetParamShardOp>(op)) {
      noteGroup(getShard.getAxesAttr());
      placeShardInGather(getShard.getResult(), getShard.getAxesAttr());
    } else if (auto setShard = dyn_cast<SetParamShardOp>(op)) {
      noteGroup(setShard.getAxesAttr());
    }
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](GetParamOp getParam) {
          // Aliasing the parameter is right only while nothing reads the
          // value after the optimizer next overwrites the parameter.
          unsigned index = plan.getParamIndex(getParam.getParamAttr());
          std::optional<unsigned> update =
              analysis.getNextUpdate(getParam.getParamAttr().getAttr(),
                                     analysis.getPosition(getParam));
          bool readAfterUpdate =
              update && analysis.getLastUse(getParam.getResult()) > *update;
          if (readAfterUpdate) {
            plan.copiedParams.insert(getParam);
            assignFresh(getParam.getResult());
          } else {
            plan.storage[getParam.getResult()] = {Storage::Kind::Param, index,
                                                  0};
          }
        })
        .Case([&](GradReadyOp gradReady) {
          plan.storage[gradReady.getResult()] =
              plan.storage.lookup(gradReady.getGrad());
        })
        .Case([&](BucketPackOp pack) {
          Storage bucket = plan.storage.lookup(pack.getBucket());
          int64_t elementBytes =
              getElementBytes(pack.getBucket().getType().getElementType());
          for (auto [index, grad] : llvm::enumerate(pack.getGrads())) {
            Storage current = plan.storage.lookup(grad);
            int64_t sliceOffset = pack.getOffsets()[index] * elementBytes;
            bool inPlace = current.kind == Storage::Kind::Buffer &&
                           current.index == bucket.index &&
                           current.byteOffset == sliceOffset;
            if (!inPlace)
              plan.packCopies[pack].push_back(index);
          }
        })
        .Case([&](ChunkOp chunk) {
          // The rows of the first block's piece; an interleaved chunk's
          // other blocks follow at the block stride (the GEMM's business).
          Storage view = plan.storage.lookup(chunk.getInput());
          auto input = cast<RankedTensorType>(chunk.getInput().getType());
          int64_t rowBytes = getTensorBytes(chunk.getInput()) /
                             std::max<int64_t>(input.getDimSize(0), 1);
          int64_t pieceRows = input.getDimSize(0) /
                              (chunk.getCount() * chunk.getInterleave());
          view.byteOffset +=
              static_cast<int64_t>(chunk.getIndex()) * pieceRows * rowBytes;
          plan.storage[chunk.getResult()] = view;
        })
        .Case([&](ConcatOp concat) {
          Storage whole = plan.storage.lookup(concat.getResult());
          int64_t offset = whole.byteOffset;
          for (auto [index, input] : llvm::enumerate(concat.getInputs())) {
            Storage current = plan.storage.lookup(input);
            bool inPlace = current.kind == Storage::Kind::Buffer &&
                           current.index == whole.index &&
                           current.byteOffset == offset &&
                           !current.isRankView();
            if (!inPlace)
              plan.concatCopies[concat].push_back(index);
            offset += getTensorBytes(input) / concat.getInterleave();
          }
        })
        .Case([&](ReduceScatterOp reduceScatter) {
          // Already placed: in the rows of a ddp.concat.
          if (plan.storage.count(reduceScatter.getResult()))
            return;
          if (!canWriteInPlace(reduceScatter, reduceScatter.getInput())) {
            assignFresh(reduceScatter.getResult());
            return;
          }
          plan.storage[reduceScatter.getResult()] =
              getRankView(plan.storage.lookup(reduceScatter.getInput()),
                          reduceScatter.getAxesAttr(),
                          getTensorBytes(reduceScatter.getResult()));
          ++plan.numInPlaceReduceScatters;
        })
        .Case<AllReduceOp, ScaleOp>([&](auto op) {
          // Already placed: in a bucket's slice or a ddp.concat's rows.
          Value result = op.getResult();
          if (plan.storage.count(result))
            return;
          if (!canWriteInPlace(op, op.getInput())) {
            assignFresh(result);
            return;
          }
          plan.storage[result] = plan.storage.lookup(op.getInput());
          ++(isa<AllReduceOp>(op) ? plan.numInPlaceAllReduces
                                  : plan.numInPlaceScales);
        })
        .Case([&](BucketUnpackOp unpack) {
          Storage bucket = plan.storage.lookup(unpack.getBucket());
          int64_t elementBytes =
              getElementBytes(unpack.getBucket().getType().getElementType());
          for (auto [grad, offset] :
               llvm::zip_equal(unpack.getGrads(), unpack.getOffsets())) {
            Storage view = bucket;
            view.byteOffset += offset * elementBytes;
            plan.storage[grad] = view;
          }
        })
        .Default([&](Operation *other) {
          for (Value result : other->getResults())
            assignFresh(result);
        });
  }
  findShardStoredParams(plan, module);
  placeBuffersInArenas(plan, analysis, reuseBuffers);
  return plan;
}

int64_t StoragePlan::getStoredNumel(const PlannedParam &param,
                                    int64_t groupRank) const {
  if (!param.storedShard)
    return param.numel;
  const PlannedParam::ShardLayout &layout = *param.storedShard;
  int64_t begin = std::max(layout.offset, groupRank * layout.shardNumel);
  int64_t end = std::min(layout.offset + param.numel,
                         (groupRank + 1) * layout.shardNumel);
  return std::max<int64_t>(end - begin, 0);
}

int64_t StoragePlan::getStoredNumelBound(const PlannedParam &param) const {
  if (!param.storedShard)
    return param.numel;
  return std::min(param.numel, param.storedShard->shardNumel);
}

int64_t StoragePlan::getNumShardStoredParams() const {
  return llvm::count_if(params, [](const PlannedParam &param) {
    return param.storedShard.has_value();
  });
}

int64_t StoragePlan::getUnsharedBufferBytes() const {
  CheckedCount total;
  for (const PlannedBuffer &buffer : buffers)
    total += buffer.getBytes();
  return total.getOr(std::numeric_limits<int64_t>::max());
}
