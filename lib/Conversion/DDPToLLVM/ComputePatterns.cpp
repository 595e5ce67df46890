//===- ComputePatterns.cpp - Compute, storage and optimizer ops -----------===//
//
// Lowerings of the step's local ops: each becomes its runtime call, or
// nothing where the storage plan already made values share memory.
//
//===----------------------------------------------------------------------===//

#include "ProgramLoweringImpl.h"

#include "ddp/Dialect/DDP/IR/TensorBytes.h"

using namespace mlir;
using namespace ddp;

static_assert(kMaxRoutingTopK == DDPRT_ROUTE_MAX_TOPK,
              "the verifier admits what the runtime takes");

static int32_t getRuntimeRouteKernel(RoutingKernel kernel) {
  switch (kernel) {
  case RoutingKernel::Select:
    return DDPRT_ROUTE_SELECT;
  case RoutingKernel::SelectGrad:
    return DDPRT_ROUTE_SELECT_GRAD;
  case RoutingKernel::Gather:
    return DDPRT_ROUTE_GATHER;
  case RoutingKernel::Combine:
    return DDPRT_ROUTE_COMBINE;
  case RoutingKernel::SortChunks:
    return DDPRT_ROUTE_SORT_CHUNKS;
  case RoutingKernel::UnsortChunks:
    return DDPRT_ROUTE_UNSORT_CHUNKS;
  case RoutingKernel::Count:
    return DDPRT_ROUTE_COUNT;
  }
  llvm_unreachable("unknown routing kernel");
}

static int32_t getDType(Value tensor) {
  return getRuntimeDType(
      cast<RankedTensorType>(tensor.getType()).getElementType());
}

/// The arguments ddprt_sgd and ddprt_adam start with: the context, the
/// updated parameter, the gradient's dtype and data (`grad`, converted), and
/// the learning rate.
template <typename OptimizerOp>
static SmallVector<Value> getOptimizerArgs(OptimizerOp op, Value grad,
                                           StepOpLowering &step) {
  return {step.context(),
          step.program.getParamId(step.entry(), step.loc, op.getParamAttr()),
          step.i32(getDType(op.getGrad())), grad,
          step.f64(op.getLr().convertToDouble())};
}

namespace {

struct GetParamLowering : StepOpPattern<GetParamOp> {
  using StepOpPattern::StepOpPattern;
  void lower(GetParamOp op, Adaptor, StepOpLowering &step) const override {
    // An alias of the parameter needs no code.
    if (!step.program.plan.copiedParams.count(op))
      return;
    Value source = step.program.getParamData(step.entry(), step.loc, op.getParamAttr());
    step.call(RuntimeFunction::Copy,
              {step.context(), step.result(), source,
               step.i64(getTensorBytes(op.getResult()))});
  }
};

struct GemmLowering : StepOpPattern<GemmOp> {
  using StepOpPattern::StepOpPattern;
  /// The ddp.concat that `result` is produced in, in place, if any.
  static ConcatOp getConcatPlacedIn(const StoragePlan &plan, Value result) {
    if (!result.hasOneUse())
      return {};
    auto concat = dyn_cast<ConcatOp>(*result.user_begin());
    if (!concat)
      return {};
    auto copies = plan.concatCopies.find(concat);
    unsigned index = result.use_begin()->getOperandNumber();
    if (copies != plan.concatCopies.end() &&
        llvm::is_contained(copies->second, index))
      return {};
    return concat;
  }
  void lower(GemmOp op, Adaptor adaptor, StepOpLowering &step) const override {
    std::string label = "gemm " + stringifyGemmPhase(op.getPhase()).str();
    // The lhs rows of an interleaved chunk lie in one range per block (the
    // storage plan checked that nothing else reads it), and so do the rows
    // of a result produced in place in an interleaved ddp.concat: one
    // product per block, each reading and writing its rows.
    int64_t elementBytes =
        getElementBytes(op.getResult().getType().getElementType());
    int64_t rowBytes =
        op.getK() *
        getElementBytes(
            cast<RankedTensorType>(op.getLhs().getType()).getElementType());
    int64_t blocks = 1, lhsBlockStride = 0, resultBlockStride = 0;
    if (auto chunk = op.getLhs().getDefiningOp<ChunkOp>();
        chunk && chunk.getInterleave() > 1) {
      blocks = chunk.getInterleave();
      lhsBlockStride = getTensorBytes(chunk.getInput()) / blocks;
    }
    if (auto concat = getConcatPlacedIn(step.program.plan, op.getResult());
        concat && concat.getInterleave() > 1) {
      // The plan places it so only when the lhs is contiguous.
      blocks = concat.getInterleave();
      resultBlockStride = getTensorBytes(concat.getResult()) / blocks;
      lhsBlockStride = op.getM() / blocks * rowBytes;
    }
    int64_t rows = op.getM() / blocks;
    if (resultBlockStride == 0)
      resultBlockStride = rows * op.getN() * elementBytes;
    for (int64_t block = 0; block < blocks; ++block) {
      Value lhs = adaptor.getLhs(), result = step.result();
      if (block > 0) {
        lhs = step.entry().offsetPointer(step.loc, lhs,
                                         block * lhsBlockStride);
        result = step.entry().offsetPointer(step.loc, result,
                                            block * resultBlockStride);
      }
      step.call(RuntimeFunction::Gemm,
                {step.context(), step.i32(getDType(op.getResult())),
                 step.i32(op.getTransposeLhs()), step.i32(op.getTransposeRhs()),
                 step.i64(rows), step.i64(op.getN()), step.i64(op.getK()), lhs,
                 adaptor.getRhs(), result, step.str(label)});
    }
  }
};

struct ComputeLowering : StepOpPattern<ComputeOp> {
  using StepOpPattern::StepOpPattern;
  void lower(ComputeOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    SmallVector<Value> results;
    for (unsigned index = 0; index < op.getNumResults(); ++index)
      results.push_back(step.result(index));
    Value inputs = fillTensorArray(step, step.program.inputArray, op.getInputs(),
                                   adaptor.getInputs());
    Value outputs =
        fillTensorArray(step, step.program.resultArray, op.getResults(), results);
    if (std::optional<RoutingKernel> routing = op.getRouting()) {
      ArrayRef<int64_t> params = op.getParams().value_or(ArrayRef<int64_t>());
      step.call(RuntimeFunction::Route,
                {step.context(), step.i32(getRuntimeRouteKernel(*routing)),
                 step.str(op.getKind()), paramArray(step, params),
                 step.i32(int32_t(params.size())), inputs,
                 step.i32(op.getInputs().size()), outputs,
                 step.i32(op.getResults().size())});
      return;
    }
    step.call(RuntimeFunction::Compute,
              {step.context(), step.str(op.getKind()),
               step.f64(op.getFlops().convertToDouble()),
               step.f64(op.getBytes().convertToDouble()), inputs,
               step.i32(op.getInputs().size()), outputs,
               step.i32(op.getResults().size())});
  }

  /// A stack array of the routing kernel's params, or null for none.
  static Value paramArray(StepOpLowering &step, ArrayRef<int64_t> params) {
    EntryPointBuilder &entry = step.entry();
    if (params.empty())
      return entry.null(step.loc);
    RewriterBase &b = entry.getBuilder();
    Value array =
        entry.allocaAtEntry(step.loc, entry.getI64Type(), params.size());
    for (auto [index, value] : llvm::enumerate(params)) {
      Value element = LLVM::GEPOp::create(
          b, step.loc, entry.getPtrType(), entry.getI64Type(), array,
          ArrayRef<LLVM::GEPArg>{entry.gepIndex(step.loc, index)});
      LLVM::StoreOp::create(b, step.loc, step.i64(value), element);
    }
    return array;
  }

  /// Fills `array` with the ddprt_tensor descriptions of `tensors` (whose
  /// pointers are `pointers`); returns it, or null when there are none.
  static Value fillTensorArray(StepOpLowering &step, Value array,
                               ValueRange tensors, ValueRange pointers) {
    EntryPointBuilder &entry = step.entry();
    Location loc = step.loc;
    if (tensors.empty())
      return entry.null(loc);
    RewriterBase &b = entry.getBuilder();
    LLVM::LLVMStructType tensorType = getRuntimeTensorType(b.getContext());
    for (auto [index, tensor, pointer] :
         llvm::enumerate(tensors, pointers)) {
      // A lambda may not capture a structured binding before C++20.
      LLVM::GEPArg element = entry.gepIndex(loc, index);
      auto field = [&](int32_t position) {
        return LLVM::GEPOp::create(b, loc, entry.getPtrType(), tensorType,
                                   array,
                                   ArrayRef<LLVM::GEPArg>{element, position});
      };
      LLVM::StoreOp::create(b, loc, pointer, field(0));
      LLVM::StoreOp::create(b, loc, step.i64(ddp::getNumElements(tensor.getType())),
                            field(1));
      LLVM::StoreOp::create(b, loc, step.i32(getDType(tensor)), field(2));
      LLVM::StoreOp::create(b, loc, step.i32(0), field(3));
    }
    return array;
  }
};

struct AccumulateLowering : StepOpPattern<AccumulateOp> {
  using StepOpPattern::StepOpPattern;
  void lower(AccumulateOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    step.call(RuntimeFunction::Accumulate,
              {step.context(), step.i32(getDType(op.getResult())),
               step.i64(ddp::getNumElements(op.getType())), adaptor.getLhs(),
               adaptor.getRhs(), step.result()});
  }
};

struct ScaleLowering : StepOpPattern<ScaleOp> {
  using StepOpPattern::StepOpPattern;
  void lower(ScaleOp op, Adaptor adaptor, StepOpLowering &step) const override {
    step.call(RuntimeFunction::Scale,
              {step.context(), step.i32(getDType(op.getResult())),
               step.i64(ddp::getNumElements(op.getType())), adaptor.getInput(),
               step.f64(op.getFactor().convertToDouble()), step.result()});
  }
};

struct CastLowering : StepOpPattern<CastOp> {
  using StepOpPattern::StepOpPattern;
  void lower(CastOp op, Adaptor adaptor, StepOpLowering &step) const override {
    step.call(RuntimeFunction::Cast,
              {step.context(), step.i32(getDType(op.getInput())),
               adaptor.getInput(), step.i32(getDType(op.getResult())),
               step.result(), step.i64(ddp::getNumElements(op.getType()))});
  }
};

/// ddp.grad_ready returns its operand's storage.
struct GradReadyLowering : StepOpPattern<GradReadyOp> {
  using StepOpPattern::StepOpPattern;
  void lower(GradReadyOp, Adaptor adaptor,
             StepOpLowering &step) const override {
    step.setResult(0, adaptor.getGrad());
  }
};

/// The gradients produced in place are already in the bucket; the others
/// are copied into their slice.
struct BucketPackLowering : StepOpPattern<BucketPackOp> {
  using StepOpPattern::StepOpPattern;
  void lower(BucketPackOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    auto copies = step.program.plan.packCopies.find(op);
    if (copies == step.program.plan.packCopies.end())
      return;
    Storage bucket = step.program.plan.storage.lookup(op.getBucket());
    int64_t elementBytes =
        getElementBytes(op.getBucket().getType().getElementType());
    for (unsigned index : copies->second) {
      Value grad = op.getGrads()[index];
      Value slice = step.entry().offsetPointer(
          step.loc, step.result(),
          bucket.byteOffset + op.getOffsets()[index] * elementBytes);
      step.call(RuntimeFunction::Copy,
                {step.context(), slice, adaptor.getGrads()[index],
                 step.i64(getTensorBytes(grad))});
    }
  }
};

/// Ops whose results are views the storage plan placed (a ddp.chunk's rows
/// of its input, a ddp.bucket_unpack's gradients in their bucket): no call.
template <typename OpTy> struct ViewLowering : StepOpPattern<OpTy> {
  using StepOpPattern<OpTy>::StepOpPattern;
  void lower(OpTy, typename StepOpPattern<OpTy>::Adaptor,
             StepOpLowering &) const override {}
};

/// ddp.concat copies only the operands the plan could not produce in their
/// rows of the result.
struct ConcatLowering : StepOpPattern<ConcatOp> {
  using StepOpPattern::StepOpPattern;
  void lower(ConcatOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    auto copies = step.program.plan.concatCopies.find(op);
    if (copies == step.program.plan.concatCopies.end())
      return;
    // Operand i's block r goes to block r of the result, after the blocks
    // of the operands before it.
    int64_t blocks = op.getInterleave();
    int64_t resultBlockBytes = getTensorBytes(op.getResult()) / blocks;
    SmallVector<int64_t> offsets;
    int64_t offset = 0;
    for (Value input : op.getInputs()) {
      offsets.push_back(offset);
      offset += getTensorBytes(input) / blocks;
    }
    for (unsigned index : copies->second) {
      int64_t blockBytes = getTensorBytes(op.getInputs()[index]) / blocks;
      for (int64_t block = 0; block < blocks; ++block) {
        Value rows = step.entry().offsetPointer(
            step.loc, step.result(), block * resultBlockBytes + offsets[index]);
        Value source = adaptor.getInputs()[index];
        if (block > 0)
          source = step.entry().offsetPointer(step.loc, source,
                                              block * blockBytes);
        step.call(RuntimeFunction::Copy,
                  {step.context(), rows, source, step.i64(blockBytes)});
      }
    }
  }
};

struct CheckFiniteLowering : StepOpPattern<CheckFiniteOp> {
  using StepOpPattern::StepOpPattern;
  void lower(CheckFiniteOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    // The runtime names the first bad element; the extents let the message
    // say whose gradient it is in.
    const StoragePlan &plan = step.program.plan;
    std::string extents;
    for (auto [param, offset] :
         llvm::zip_equal(op.getParams().getAsRange<FlatSymbolRefAttr>(),
                         op.getOffsets())) {
      int64_t numel = plan.params[plan.getParamIndex(param)].numel;
      extents += (extents.empty() ? "" : ", ") + param.getValue().str() +
                 " [" + std::to_string(offset) + ", " +
                 std::to_string(offset + numel) + ")";
    }
    Value bucket = op.getBucket();
    step.call(RuntimeFunction::CheckFinite,
              {step.context(), step.i32(getDType(bucket)),
               step.i64(ddp::getNumElements(bucket.getType())), adaptor.getBucket(),
               step.str("bucket " + std::to_string(op.getIndex())),
               step.str(extents)});
  }
};

struct SGDLowering : StepOpPattern<SGDOp> {
  using StepOpPattern::StepOpPattern;
  void lower(SGDOp op, Adaptor adaptor, StepOpLowering &step) const override {
    step.call(RuntimeFunction::Sgd,
              getOptimizerArgs(op, adaptor.getGrad(), step));
  }
};

struct AdamLowering : StepOpPattern<AdamOp> {
  using StepOpPattern::StepOpPattern;
  void lower(AdamOp op, Adaptor adaptor, StepOpLowering &step) const override {
    SmallVector<Value> args = getOptimizerArgs(op, adaptor.getGrad(), step);
    args.append({step.f64(op.getBeta1().convertToDouble()),
                 step.f64(op.getBeta2().convertToDouble()),
                 step.f64(op.getEps().convertToDouble())});
    step.call(RuntimeFunction::Adam, args);
  }
};

/// The shard optimizers: one runtime call per parameter of the bucket, which
/// updates the parameter's elements in this rank's shard (if any) into the
/// result, a view of the shard per parameter.
template <typename ShardOp>
static void lowerShardUpdate(ShardOp op, Value grad, StepOpLowering &step,
                             RuntimeFunction function,
                             ArrayRef<double> hyperparameters) {
  Value group = step.getGroup(op.getAxesAttr());
  Value result = step.result();
  int64_t shardNumel = ddp::getNumElements(op.getGrad().getType());
  for (auto [param, offset] :
       llvm::zip_equal(op.getParams().template getAsRange<FlatSymbolRefAttr>(),
                       op.getOffsets())) {
    SmallVector<Value> arguments{
        step.context(),
        group,
        step.program.getParamId(step.entry(), step.loc, param),
        step.i64(offset),
        step.i32(getDType(op.getGrad())),
        grad,
        step.i64(shardNumel),
        result};
    for (double value : hyperparameters)
      arguments.push_back(step.f64(value));
    step.call(function, arguments);
  }
}

struct ShardSGDLowering : StepOpPattern<ShardSGDOp> {
  using StepOpPattern::StepOpPattern;
  void lower(ShardSGDOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    lowerShardUpdate(op, adaptor.getGrad(), step, RuntimeFunction::ShardSgd,
                     {op.getLr().convertToDouble()});
  }
};

struct ShardAdamLowering : StepOpPattern<ShardAdamOp> {
  using StepOpPattern::StepOpPattern;
  void lower(ShardAdamOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    lowerShardUpdate(op, adaptor.getGrad(), step, RuntimeFunction::ShardAdam,
                     {op.getLr().convertToDouble(),
                      op.getBeta1().convertToDouble(),
                      op.getBeta2().convertToDouble(),
                      op.getEps().convertToDouble()});
  }
};

/// ddp.set_params copies each parameter's slice of the gathered values into
/// the parameter's storage, unless the parameter is stored in that slice.
struct SetParamsLowering : StepOpPattern<SetParamsOp> {
  using StepOpPattern::StepOpPattern;
  void lower(SetParamsOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    const StoragePlan &plan = step.program.plan;
    Storage values = plan.storage.lookup(op.getValues());
    int64_t elementBytes =
        ddp::getElementBytes(op.getValues().getType().getElementType());
    for (auto [param, offset] :
         llvm::zip_equal(op.getParams().getAsRange<FlatSymbolRefAttr>(),
                         op.getOffsets())) {
      const PlannedParam &planned = plan.params[plan.getParamIndex(param)];
      if (planned.inBucket && !values.isRankView() &&
          planned.inBucket->kind == values.kind &&
          planned.inBucket->index == values.index &&
          planned.inBucket->byteOffset ==
              values.byteOffset + offset * elementBytes)
        continue;
      Value slice = step.entry().offsetPointer(step.loc, adaptor.getValues(),
                                               offset * elementBytes);
      int64_t numel = planned.numel;
      step.call(RuntimeFunction::Copy,
                {step.context(),
                 step.program.getParamData(step.entry(), step.loc, param), slice,
                 step.i64(numel * elementBytes)});
    }
  }
};

/// ddp.get_param_shard and ddp.set_param_shard: one runtime call per
/// parameter of the bucket, which copies the parameter's elements in this
/// rank's shard (if any) between the parameter and the shard.
template <typename ParamShardOp>
static void lowerParamShardCopy(ParamShardOp op, Value shard,
                                int64_t shardNumel, RuntimeFunction function,
                                StepOpLowering &step) {
  Value group = step.getGroup(op.getAxesAttr());
  for (auto [param, offset] :
       llvm::zip_equal(op.getParams().template getAsRange<FlatSymbolRefAttr>(),
                       op.getOffsets()))
    step.call(function,
              {step.context(), group,
               step.program.getParamId(step.entry(), step.loc, param),
               step.i64(offset), step.i64(shardNumel), shard});
}

struct GetParamShardLowering : StepOpPattern<GetParamShardOp> {
  using StepOpPattern::StepOpPattern;
  void lower(GetParamShardOp op, Adaptor,
             StepOpLowering &step) const override {
    lowerParamShardCopy(op, step.result(),
                        ddp::getNumElements(op.getResult().getType()),
                        RuntimeFunction::GetParamShard, step);
  }
};

struct SetParamShardLowering : StepOpPattern<SetParamShardOp> {
  using StepOpPattern::StepOpPattern;
  void lower(SetParamShardOp op, Adaptor adaptor,
             StepOpLowering &step) const override {
    lowerParamShardCopy(op, adaptor.getShard(),
                        ddp::getNumElements(op.getShard().getType()),
                        RuntimeFunction::SetParamShard, step);
  }
};

} // namespace

void ddp::populateComputePatterns(StepOpLowerers &lowerers) {
  lowerers.add<GetParamLowering, GemmLowering, ComputeLowering,
               AccumulateLowering, ScaleLowering, CastLowering,
               GradReadyLowering, BucketPackLowering,
               ViewLowering<BucketUnpackOp>, ViewLowering<ChunkOp>,
               ConcatLowering,
               CheckFiniteLowering, SGDLowering, AdamLowering,
               ShardSGDLowering, ShardAdamLowering, SetParamsLowering,
               GetParamShardLowering, SetParamShardLowering>();
}
