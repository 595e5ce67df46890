//===- ProgramPatterns.cpp - The program interface of a step --------------===//
//
// Patterns for the ops that frame a step: ddp.mesh becomes ddp_program_init,
// ddp_program_setup and ddp_program_teardown (ddp_program.h), ddp.param
// becomes entries of their tables, the step func.func becomes
// ddp_program_step and its return the step's success.
//
//===----------------------------------------------------------------------===//

#include "ProgramLoweringImpl.h"

#include "ddp/Runtime/ddp_program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace ddp;

/// "dp=2,tp=2", as ddprt_init reads a mesh.
static std::string getMeshSpec(MeshOp mesh) {
  std::string spec;
  for (auto [name, size] : llvm::zip_equal(
           mesh.getAxisNames().getAsValueRange<StringAttr>(), mesh.getShape()))
    spec += (spec.empty() ? "" : ",") + name.str() + "=" + std::to_string(size);
  return spec;
}

/// A constant array global holding `values` (i32 or i64).
template <typename T>
static LLVM::GlobalOp createTable(RewriterBase &rewriter, ModuleOp module,
                                  Location loc, StringRef name,
                                  ArrayRef<T> values) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  Type elementType = rewriter.getIntegerType(8 * sizeof(T));
  auto type = LLVM::LLVMArrayType::get(elementType, values.size());
  auto tensorType =
      RankedTensorType::get({int64_t(values.size())}, elementType);
  return LLVM::GlobalOp::create(rewriter, loc, type, /*isConstant=*/true,
                                LLVM::Linkage::Internal, name,
                                DenseElementsAttr::get(tensorType, values));
}

/// The tables a setup loop reads each planned parameter's or buffer's
/// runtime dtype and element count from, by index.
struct SizeTables {
  LLVM::GlobalOp dtypes;
  LLVM::GlobalOp numels;
};

/// Creates the globals `<prefix>dtypes` and `<prefix>numels` of `planned`
/// (PlannedParam or PlannedBuffer), in that order.
template <typename Planned>
static SizeTables createSizeTables(RewriterBase &rewriter, ModuleOp module,
                                   Location loc, StringRef prefix,
                                   ArrayRef<Planned> planned) {
  SmallVector<int32_t> dtypes;
  SmallVector<int64_t> numels;
  for (const Planned &entry : planned) {
    dtypes.push_back(entry.dtype);
    numels.push_back(entry.numel);
  }
  return {createTable<int32_t>(rewriter, module, loc,
                               (prefix + "dtypes").str(), dtypes),
          createTable<int64_t>(rewriter, module, loc,
                               (prefix + "numels").str(), numels)};
}

/// Where each planned parameter is stored in a buffer: `buffers[i]` is the
/// buffer's index or -1 (storage of its own), `offsets[i]` the byte offset.
struct StorageTables {
  LLVM::GlobalOp buffers;
  LLVM::GlobalOp offsets;

  /// Parameter `index`'s storage: null, or its slice of the buffer whose
  /// address `buffersGlobal` holds.
  Value getPointer(EntryPointBuilder &entry, Location loc, Value index,
                   LLVM::GlobalOp buffersGlobal) const {
    RewriterBase &builder = entry.getBuilder();
    Value buffer = entry.loadElement(loc, buffers, index, entry.getI64Type());
    Value zero = entry.i64(loc, 0);
    Value own = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::slt,
                                     buffer, zero);
    Value safeIndex = LLVM::SelectOp::create(builder, loc, own, zero, buffer);
    Value base = entry.loadElement(loc, buffersGlobal, safeIndex,
                                   entry.getPtrType());
    Value slice = LLVM::GEPOp::create(
        builder, loc, entry.getPtrType(), builder.getI8Type(), base,
        ValueRange{entry.loadElement(loc, offsets, index, entry.getI64Type())});
    return LLVM::SelectOp::create(builder, loc, own, entry.null(loc), slice);
  }
};

static StorageTables createStorageTables(RewriterBase &rewriter,
                                         ModuleOp module, Location loc,
                                         ArrayRef<PlannedParam> params) {
  SmallVector<int64_t> buffers, offsets;
  for (const PlannedParam &param : params) {
    buffers.push_back(param.inBucket ? int64_t(param.inBucket->index) : -1);
    offsets.push_back(param.inBucket ? param.inBucket->byteOffset : 0);
  }
  return {createTable<int64_t>(rewriter, module, loc,
                               "__ddp_param_buffers", buffers),
          createTable<int64_t>(rewriter, module, loc,
                               "__ddp_param_byte_offsets", offsets)};
}

/// A constant array global of the addresses of `globals`.
static LLVM::GlobalOp createPointerTable(RewriterBase &rewriter,
                                         ModuleOp module, Location loc,
                                         StringRef name,
                                         ArrayRef<LLVM::GlobalOp> globals) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  auto type = LLVM::LLVMArrayType::get(
      LLVM::LLVMPointerType::get(rewriter.getContext()), globals.size());
  auto table =
      LLVM::GlobalOp::create(rewriter, loc, type, /*isConstant=*/true,
                             LLVM::Linkage::Internal, name, Attribute());
  rewriter.createBlock(&table.getInitializerRegion());
  Value array = LLVM::UndefOp::create(rewriter, loc, type);
  for (auto [index, global] : llvm::enumerate(globals)) {
    Value address = LLVM::AddressOfOp::create(rewriter, loc, global);
    array = LLVM::InsertValueOp::create(rewriter, loc, array, address,
                                        ArrayRef<int64_t>{int64_t(index)});
  }
  LLVM::ReturnOp::create(rewriter, loc, array);
  return table;
}

namespace {

/// ddp.mesh: the entry points that start the runtime, set the program up
/// and tear it down. Parameters and buffers are set up by loops over
/// constant tables, so that the code stays small however many there are.
class MeshLowering : public ConvertOpToLLVMPattern<MeshOp> {
public:
  MeshLowering(const LLVMTypeConverter &converter,
               ProgramLowering::Impl &program)
      : ConvertOpToLLVMPattern(converter), program(program) {}

  LogicalResult
  matchAndRewrite(MeshOp mesh, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (mesh != program.plan.mesh)
      return rewriter.notifyMatchFailure(mesh, "not the mesh being lowered");
    program.createGlobals(rewriter);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      emitInit(rewriter);
      emitSetup(rewriter);
      rewriter.setInsertionPointToEnd(program.module.getBody());
      emitTeardown(rewriter);
    }
    rewriter.eraseOp(mesh);
    return success();
  }

private:
  template <typename Function>
  LLVM::LLVMFuncOp createEntryPoint(RewriterBase &rewriter, Location loc,
                                    StringRef name) const {
    return LLVM::LLVMFuncOp::create(
        rewriter, loc, name,
        getLLVMFunctionType<Function>(rewriter.getContext()));
  }

  void emitInit(ConversionPatternRewriter &rewriter) const;
  void emitSetup(ConversionPatternRewriter &rewriter) const;
  void emitTeardown(ConversionPatternRewriter &rewriter) const;

  ProgramLowering::Impl &program;
};

/// ddp.param: registered by the setup from the tables of the plan.
class ParamLowering : public ConvertOpToLLVMPattern<ParamOp> {
public:
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ParamOp param, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(param);
    return success();
  }
};

/// The step func.func: ddp_program_step, whose entry block allocates the
/// operand arrays and finds the inputs' buffers before the step's ops.
/// Takes precedence over the upstream func.func lowering.
class StepLowering : public ConvertOpToLLVMPattern<func::FuncOp> {
public:
  StepLowering(const LLVMTypeConverter &converter,
               ProgramLowering::Impl &program)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/2), program(program) {}

  LogicalResult
  matchAndRewrite(func::FuncOp func, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    StoragePlan &plan = program.plan;
    if (func != plan.step)
      return rewriter.notifyMatchFailure(func, "not the step being lowered");
    program.createGlobals(rewriter);
    Location loc = func.getLoc();
    auto stepFunc = LLVM::LLVMFuncOp::create(
        rewriter, loc, DDP_PROGRAM_SYM_STEP,
        getLLVMFunctionType<decltype(ddp_program_step)>(rewriter.getContext()));
    program.step =
        std::make_unique<EntryPointBuilder>(stepFunc, rewriter, program.runtime);
    EntryPointBuilder &entry = *program.step;
    entry.deferChecks();

    Block &body = func.getBody().front();
    size_t maxInputs = 0, maxResults = 0, maxJoined = 0;
    for (auto compute : body.getOps<ComputeOp>()) {
      maxInputs = std::max(maxInputs, compute.getInputs().size());
      maxResults = std::max(maxResults, compute.getResults().size());
    }
    for (auto join : body.getOps<JoinOp>())
      maxJoined = std::max(maxJoined, join.getTokens().size());
    // An op issued after others joins their handles into its own.
    for (auto async : body.getOps<AsyncOpInterface>())
      if (size_t dependencies = async.getAsyncDependencies().size())
        maxJoined = std::max(maxJoined, dependencies + 1);
    Type tensorType = getRuntimeTensorType(rewriter.getContext());
    if (maxInputs)
      program.inputArray = entry.allocaAtEntry(loc, tensorType, maxInputs);
    if (maxResults)
      program.resultArray = entry.allocaAtEntry(loc, tensorType, maxResults);
    if (maxJoined)
      program.joinArray =
          entry.allocaAtEntry(loc, entry.getI64Type(), maxJoined);

    program.queryGroupRanks(entry, loc);

    SmallVector<Value> inputs;
    for (BlockArgument argument : body.getArguments())
      inputs.push_back(
          program.getPointer(entry, loc, plan.storage.lookup(argument)));
    Block *entryBlock = &stepFunc.getBody().front();
    rewriter.inlineBlockBefore(&body, entryBlock, entryBlock->end(), inputs);
    rewriter.eraseOp(func);
    return success();
  }

private:
  ProgramLowering::Impl &program;
};

/// The step's return: the step succeeded. Returned values stay in their
/// buffers. The last op of the step, so all its calls exist: their status
/// checks are emitted here.
class StepReturnLowering : public ConvertOpToLLVMPattern<func::ReturnOp> {
public:
  StepReturnLowering(const LLVMTypeConverter &converter,
                     ProgramLowering::Impl &program)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/2), program(program) {}

  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!program.isInStep(op))
      return rewriter.notifyMatchFailure(op, "not in the step being lowered");
    program.step->returnOk(op.getLoc());
    program.step->emitDeferredChecks();
    rewriter.eraseOp(op);
    return success();
  }

private:
  ProgramLowering::Impl &program;
};

} // namespace

void MeshLowering::emitInit(ConversionPatternRewriter &rewriter) const {
  Location loc = program.plan.mesh.getLoc();
  auto func = createEntryPoint<decltype(ddp_program_init)>(
      rewriter, loc, DDP_PROGRAM_SYM_INIT);
  EntryPointBuilder entry(func, rewriter, program.runtime);
  Value mesh = entry.addressOf(
      loc, program.getString(rewriter, loc, getMeshSpec(program.plan.mesh)));
  Value status = program.runtime.call(
      rewriter, loc, RuntimeFunction::Init,
      {entry.i32(loc, program.options.abiVersion), mesh, entry.getArgument(0),
       entry.getArgument(1), entry.getArgument(2), entry.getArgument(3),
       entry.getArgument(4)});
  entry.returnStatus(loc, status);
  rewriter.setInsertionPointAfter(func);
}

void MeshLowering::emitSetup(ConversionPatternRewriter &rewriter) const {
  StoragePlan &plan = program.plan;
  Location loc = plan.step.getLoc();
  auto func = createEntryPoint<decltype(ddp_program_setup)>(
      rewriter, loc, DDP_PROGRAM_SYM_SETUP);
  EntryPointBuilder entry(func, rewriter, program.runtime);
  Value context = entry.getArgument(0);
  Value seed = entry.getArgument(1);
  Type i32 = entry.getI32Type();
  Type i64 = entry.getI64Type();
  Type ptr = entry.getPtrType();
  ModuleOp module = program.module;

  for (auto [index, axes] : llvm::enumerate(plan.groups)) {
    Value name = entry.addressOf(loc, program.getString(rewriter, loc, axes));
    entry.callChecked(
        loc, RuntimeFunction::GroupCreate,
        {context, name, entry.elementAddress(loc, program.groupsGlobal, index)});
  }

  // Buffers first: some parameters are stored in them.
  if (!plan.buffers.empty()) {
    SizeTables sizes = createSizeTables<PlannedBuffer>(
        rewriter, module, loc, "__ddp_buffer_", plan.buffers);
    entry.forEach(loc, plan.buffers.size(), [&](Value index) {
      entry.callChecked(
          loc, RuntimeFunction::Alloc,
          {context, entry.loadElement(loc, sizes.dtypes, index, i32),
           entry.loadElement(loc, sizes.numels, index, i64),
           entry.elementAddress(loc, program.buffersGlobal, index)});
    });
  }
  if (!plan.params.empty()) {
    SmallVector<LLVM::GlobalOp> names;
    for (PlannedParam &param : plan.params)
      names.push_back(program.getString(
          rewriter, param.op.getLoc(),
          (program.options.paramPrefix + param.op.getSymName()).str()));
    LLVM::GlobalOp nameTable =
        createPointerTable(rewriter, module, loc, "__ddp_param_names", names);
    SizeTables sizes = createSizeTables<PlannedParam>(
        rewriter, module, loc, "__ddp_param_", plan.params);
    // A parameter stored in a gathered bucket is registered at its slice
    // (buffer index and byte offset in two tables, index -1 for none), the
    // others with storage of their own.
    std::optional<StorageTables> inBucket;
    if (plan.numParamsInBuckets > 0)
      inBucket = createStorageTables(rewriter, module, loc, plan.params);
    entry.forEach(loc, plan.params.size(), [&](Value index) {
      Value storage = inBucket ? inBucket->getPointer(entry, loc, index,
                                                      program.buffersGlobal)
                               : entry.null(loc);
      entry.callChecked(
          loc, RuntimeFunction::ParamRegisterIn,
          {context, entry.loadElement(loc, nameTable, index, ptr),
           entry.loadElement(loc, sizes.dtypes, index, i32),
           entry.loadElement(loc, sizes.numels, index, i64), seed, storage,
           entry.elementAddress(loc, program.paramIdsGlobal, index)});
      entry.callChecked(
          loc, RuntimeFunction::ParamData,
          {context, entry.loadElement(loc, program.paramIdsGlobal, index, i32),
           entry.elementAddress(loc, program.paramDataGlobal, index)});
    });
  }
  for (unsigned bufferIndex : plan.inputBuffers) {
    const PlannedBuffer &buffer = plan.buffers[bufferIndex];
    Value data =
        entry.loadElement(loc, program.buffersGlobal, bufferIndex, ptr);
    entry.callChecked(loc, RuntimeFunction::FillInput,
                      {context, data, entry.i32(loc, buffer.dtype),
                       entry.i64(loc, buffer.numel), seed});
  }
  entry.returnOk(loc);
  rewriter.setInsertionPointAfter(func);
}

void MeshLowering::emitTeardown(ConversionPatternRewriter &rewriter) const {
  Location loc = program.plan.step.getLoc();
  auto func = createEntryPoint<decltype(ddp_program_teardown)>(
      rewriter, loc, DDP_PROGRAM_SYM_TEARDOWN);
  EntryPointBuilder entry(func, rewriter, program.runtime);
  Value context = entry.getArgument(0);
  if (!program.plan.buffers.empty()) {
    entry.forEach(loc, program.plan.buffers.size(), [&](Value index) {
      Value data = entry.loadElement(loc, program.buffersGlobal, index,
                                     entry.getPtrType());
      entry.callChecked(loc, RuntimeFunction::Free, {context, data});
      // A second teardown must not free the buffer again.
      LLVM::StoreOp::create(
          rewriter, loc, entry.null(loc),
          entry.elementAddress(loc, program.buffersGlobal, index));
    });
  }
  entry.returnOk(loc);
}

void ddp::populateProgramPatterns(const LLVMTypeConverter &converter,
                                  RewritePatternSet &patterns,
                                  ProgramLowering::Impl &program) {
  patterns.add<MeshLowering, StepLowering, StepReturnLowering>(converter,
                                                                program);
  patterns.add<ParamLowering>(converter);
}
