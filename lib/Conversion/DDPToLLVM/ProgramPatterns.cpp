//===- ProgramPatterns.cpp - The program interface of a step --------------===//
//
// The pattern that lowers a program: ddp.mesh becomes ddp_program_init,
// ddp_program_setup and ddp_program_teardown (ddp_program.h), ddp.param
// becomes entries of their tables, the step func.func becomes
// ddp_program_step, its ops the runtime calls of their lowerings
// (ComputePatterns.cpp, CollectivePatterns.cpp) and its return the step's
// success.
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

/// The bucket layout of each parameter stored sharded: `groups[i]` is the
/// plan's group index or -1 (stored whole), `offsets[i]` and
/// `shardNumels[i]` its layout.
struct ShardTables {
  LLVM::GlobalOp groups;
  LLVM::GlobalOp offsets;
  LLVM::GlobalOp shardNumels;
};

static ShardTables createShardTables(RewriterBase &rewriter, ModuleOp module,
                                     Location loc,
                                     ArrayRef<PlannedParam> params) {
  SmallVector<int64_t> groups, offsets, shardNumels;
  for (const PlannedParam &param : params) {
    const std::optional<PlannedParam::ShardLayout> &layout = param.storedShard;
    groups.push_back(layout ? int64_t(layout->group) : -1);
    offsets.push_back(layout ? layout->offset : 0);
    shardNumels.push_back(layout ? layout->shardNumel : 0);
  }
  return {createTable<int64_t>(rewriter, module, loc,
                               "__ddp_param_shard_groups", groups),
          createTable<int64_t>(rewriter, module, loc,
                               "__ddp_param_shard_offsets", offsets),
          createTable<int64_t>(rewriter, module, loc,
                               "__ddp_param_shard_numels", shardNumels)};
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

/// Creates the entry point `name` of the C type `Function`.
template <typename Function>
static LLVM::LLVMFuncOp createEntryPoint(RewriterBase &rewriter, Location loc,
                                         StringRef name) {
  return LLVM::LLVMFuncOp::create(
      rewriter, loc, name,
      getLLVMFunctionType<Function>(rewriter.getContext()));
}

static void emitInit(ProgramBuilder &program, RewriterBase &rewriter) {
  Location loc = MeshOp(program.plan.mesh).getLoc();
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

static void emitSetup(ProgramBuilder &program, RewriterBase &rewriter) {
  const StoragePlan &plan = program.plan;
  Location loc = func::FuncOp(plan.step).getLoc();
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

  // Buffers first: some parameters are stored in them. Each lies at its
  // byte offset in its arena.
  if (!plan.buffers.empty()) {
    SizeTables sizes = createSizeTables<PlannedBuffer>(
        rewriter, module, loc, "__ddp_arena_", plan.arenas);
    entry.forEach(loc, plan.arenas.size(), [&](Value index) {
      entry.callChecked(
          loc, RuntimeFunction::Alloc,
          {context, entry.loadElement(loc, sizes.dtypes, index, i32),
           entry.loadElement(loc, sizes.numels, index, i64),
           entry.elementAddress(loc, program.arenasGlobal, index)});
    });
    SmallVector<int64_t> arenas, offsets;
    for (const PlannedBuffer &buffer : plan.buffers) {
      arenas.push_back(buffer.arena);
      offsets.push_back(buffer.arenaOffset);
    }
    LLVM::GlobalOp arenaTable = createTable<int64_t>(
        rewriter, module, loc, "__ddp_buffer_arenas", arenas);
    LLVM::GlobalOp offsetTable = createTable<int64_t>(
        rewriter, module, loc, "__ddp_buffer_byte_offsets", offsets);
    entry.forEach(loc, plan.buffers.size(), [&](Value index) {
      Value arena = entry.loadElement(
          loc, program.arenasGlobal,
          entry.loadElement(loc, arenaTable, index, i64), ptr);
      Value buffer = LLVM::GEPOp::create(
          rewriter, loc, ptr, rewriter.getI8Type(), arena,
          ValueRange{entry.loadElement(loc, offsetTable, index, i64)});
      LLVM::StoreOp::create(rewriter, loc, buffer,
                            entry.elementAddress(loc, program.buffersGlobal,
                                                 index));
    });
  }
  if (!plan.params.empty()) {
    SmallVector<LLVM::GlobalOp> names;
    for (const PlannedParam &param : plan.params)
      names.push_back(program.getString(
          rewriter, ParamOp(param.op).getLoc(),
          (program.options.paramPrefix + ParamOp(param.op).getSymName())
              .str()));
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
    // A parameter stored sharded (rule 10) is registered with its bucket
    // layout: three tables, group index -1 for the others.
    std::optional<ShardTables> shards;
    if (plan.getNumShardStoredParams() > 0)
      shards = createShardTables(rewriter, module, loc, plan.params);
    entry.forEach(loc, plan.params.size(), [&](Value index) {
      Value name = entry.loadElement(loc, nameTable, index, ptr);
      Value dtype = entry.loadElement(loc, sizes.dtypes, index, i32);
      Value numel = entry.loadElement(loc, sizes.numels, index, i64);
      Value id = entry.elementAddress(loc, program.paramIdsGlobal, index);
      auto registerWhole = [&] {
        Value storage = inBucket ? inBucket->getPointer(entry, loc, index,
                                                        program.buffersGlobal)
                                 : entry.null(loc);
        entry.callChecked(loc, RuntimeFunction::ParamRegisterIn,
                          {context, name, dtype, numel, seed, storage, id});
        entry.callChecked(
            loc, RuntimeFunction::ParamData,
            {context,
             entry.loadElement(loc, program.paramIdsGlobal, index, i32),
             entry.elementAddress(loc, program.paramDataGlobal, index)});
      };
      if (!shards)
        return registerWhole();
      Value group = entry.loadElement(loc, shards->groups, index, i64);
      Value sharded =
          LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::sge, group,
                               entry.i64(loc, 0));
      entry.ifElse(
          loc, sharded,
          [&] {
            entry.callChecked(
                loc, RuntimeFunction::ParamRegisterShard,
                {context, name, dtype, numel, seed,
                 entry.loadElement(loc, program.groupsGlobal, group, i32),
                 entry.loadElement(loc, shards->offsets, index, i64),
                 entry.loadElement(loc, shards->shardNumels, index, i64), id});
          },
          registerWhole);
    });
  }
  // Each step input has data of its own (microbatch i's tokens differ from
  // microbatch j's, so that a schedule that swaps two microbatches computes
  // something else): argument k is filled from the seed xor k + 1 times the
  // 64-bit golden ratio, a constant of splitmix64.
  for (auto [argument, bufferIndex] : llvm::enumerate(plan.inputBuffers)) {
    const PlannedBuffer &buffer = plan.buffers[bufferIndex];
    Value data =
        entry.loadElement(loc, program.buffersGlobal, bufferIndex, ptr);
    Value inputSeed = LLVM::XOrOp::create(
        rewriter, loc, seed,
        entry.i64(loc, static_cast<int64_t>((argument + 1) *
                                            0x9E3779B97F4A7C15ull)));
    entry.callChecked(loc, RuntimeFunction::FillInput,
                      {context, data, entry.i32(loc, buffer.dtype),
                       entry.i64(loc, buffer.numel), inputSeed});
  }
  entry.returnOk(loc);
  rewriter.setInsertionPointAfter(func);
}

static void emitTeardown(ProgramBuilder &program,
                         RewriterBase &rewriter) {
  Location loc = func::FuncOp(program.plan.step).getLoc();
  auto func = createEntryPoint<decltype(ddp_program_teardown)>(
      rewriter, loc, DDP_PROGRAM_SYM_TEARDOWN);
  EntryPointBuilder entry(func, rewriter, program.runtime);
  Value context = entry.getArgument(0);
  if (!program.plan.buffers.empty()) {
    entry.forEach(loc, program.plan.arenas.size(), [&](Value index) {
      Value data = entry.loadElement(loc, program.arenasGlobal, index,
                                     entry.getPtrType());
      entry.callChecked(loc, RuntimeFunction::Free, {context, data});
      // A second teardown must not free the arena again.
      LLVM::StoreOp::create(
          rewriter, loc, entry.null(loc),
          entry.elementAddress(loc, program.arenasGlobal, index));
    });
  }
  entry.returnOk(loc);
}

/// ddp.mesh: the entry points that start the runtime, set the program up
/// and tear it down. Parameters and buffers are set up by loops over
/// constant tables, so that the code stays small however many there are.
static void lowerMesh(ProgramBuilder &program, RewriterBase &rewriter) {
  MeshOp mesh = program.plan.mesh;
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(mesh);
    emitInit(program, rewriter);
    emitSetup(program, rewriter);
    rewriter.setInsertionPointToEnd(program.module.getBody());
    emitTeardown(program, rewriter);
  }
  rewriter.eraseOp(mesh);
}

/// The converted value of `value`: the pointer or handle slot its lowering
/// gave it, else the conversion's (an op no lowering here knows).
static Value getConverted(const DenseMap<Value, Value> &converted,
                          ConversionPatternRewriter &rewriter, Value value) {
  if (Value known = converted.lookup(value))
    return known;
  return rewriter.getRemappedValue(value);
}

/// The step func.func: ddp_program_step, whose entry block allocates the
/// operand arrays and finds the inputs' buffers, then every ddp op of the
/// step in block order, each by its lowering (StepOpLowerers), and the
/// return. The step's ops share its entry block's constants and loads and
/// its status checks, so the step lowers them itself: no op waits for a
/// pattern to have made the step. Each call's status check splits the block
/// after the call; they are emitted last, last call first, so that each op
/// moves once (splitting as each call is made would move the rest of the
/// step every time: quadratic). Ops of other dialects stay in place for
/// their own patterns.
static void lowerStep(ProgramBuilder &program,
                      ConversionPatternRewriter &rewriter) {
  const ProgramLowering::Impl &layout = program.program;
  func::FuncOp func = program.plan.step;
  Location loc = func.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(func);
  auto stepFunc = createEntryPoint<decltype(ddp_program_step)>(
      rewriter, loc, DDP_PROGRAM_SYM_STEP);
  program.step =
      std::make_unique<EntryPointBuilder>(stepFunc, rewriter, program.runtime);
  EntryPointBuilder &entry = *program.step;
  entry.deferChecks();

  Type tensorType = getRuntimeTensorType(rewriter.getContext());
  if (layout.maxInputs)
    program.inputArray = entry.allocaAtEntry(loc, tensorType, layout.maxInputs);
  if (layout.maxResults)
    program.resultArray =
        entry.allocaAtEntry(loc, tensorType, layout.maxResults);
  if (layout.maxJoined)
    program.joinArray =
        entry.allocaAtEntry(loc, entry.getI64Type(), layout.maxJoined);
  program.queryGroupRanks(entry, loc);

  Block &body = func.getBody().front();
  DenseMap<Value, Value> converted;
  SmallVector<Value> inputs;
  for (BlockArgument argument : body.getArguments()) {
    inputs.push_back(program.getPointer(entry, loc,
                                        program.plan.storage.lookup(argument)));
    converted[argument] = inputs.back();
  }
  SmallVector<Operation *> ops =
      llvm::map_to_vector(body, [](Operation &op) { return &op; });
  Block *entryBlock = &stepFunc.getBody().front();
  rewriter.inlineBlockBefore(&body, entryBlock, entryBlock->end(), inputs);

  const StepOpLowerers &lowerers = StepOpLowerers::get();
  for (Operation *op : ops) {
    rewriter.setInsertionPoint(op);
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      // Returned values stay in their buffers.
      entry.returnOk(ret.getLoc());
      rewriter.eraseOp(ret);
      continue;
    }
    const StepOpLowerer *lowerer = lowerers.lookup(op);
    if (!lowerer)
      continue;
    SmallVector<Value> operands = llvm::map_to_vector(
        op->getOperands(),
        [&](Value value) { return getConverted(converted, rewriter, value); });
    StepOpLowering lowering(program, op);
    lowerer->lowerOp(op, operands, lowering);
    SmallVector<Value> results(op->getResults());
    for (auto [result, value] : llvm::zip_equal(results,
                                                lowering.finish(rewriter)))
      converted[result] = value;
  }
  entry.emitDeferredChecks();
  rewriter.eraseOp(func);
  program.step.reset();
}

/// Lowers the program -- mesh, parameters and step -- from whichever of its
/// ops the driver visits first (it lowers the others too, so the driver
/// skips them). With no plan given, plans the module first.
template <typename RootOp>
class ProgramPattern : public ConvertOpToLLVMPattern<RootOp> {
public:
  ProgramPattern(const LLVMTypeConverter &converter,
                 const ProgramLowering::Impl *program)
      // Before the upstream func.func lowering.
      : ConvertOpToLLVMPattern<RootOp>(converter, /*benefit=*/2),
        program(program) {}

  LogicalResult
  matchAndRewrite(RootOp root, typename RootOp::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *rootOp = root.getOperation();
    auto module = dyn_cast<ModuleOp>(rootOp->getParentOp());
    if (!module)
      return rewriter.notifyMatchFailure(root, "not in a module");
    if (auto func = dyn_cast<func::FuncOp>(rootOp); func && func.isExternal())
      return rewriter.notifyMatchFailure(root, "a declaration");
    const ProgramLowering::Impl *planned = program;
    std::unique_ptr<ProgramLowering::Impl> ownPlan;
    if (!planned) {
      if (module.getOps<MeshOp>().empty())
        return rewriter.notifyMatchFailure(root, "no ddp program");
      // The plan reads the module as written: nothing converted yet.
      for (Operation &op : *module.getBody())
        if (isa_and_nonnull<LLVM::LLVMDialect>(op.getDialect())) {
          InFlightDiagnostic diag =
              root->emitError("cannot plan the program after the conversion "
                              "changed the module: under -convert-to-llvm, "
                              "the mesh, parameters and step come before the "
                              "ops it converts (or use -ddp-lower-to-runtime)");
          diag.attachNote(op.getLoc()) << "converted to " << op.getName();
          return diag;
        }
      FailureOr<std::unique_ptr<ProgramLowering::Impl>> built =
          ProgramLowering::Impl::build(module, {});
      if (failed(built))
        return failure();
      ownPlan = std::move(*built);
      planned = ownPlan.get();
    }
    const StoragePlan &plan = planned->plan;
    MeshOp mesh = plan.mesh;
    func::FuncOp step = plan.step;
    if (rootOp != mesh.getOperation() && rootOp != step.getOperation() &&
        !llvm::any_of(plan.params, [&](const PlannedParam &param) {
          return ParamOp(param.op).getOperation() == rootOp;
        }))
      return rewriter.notifyMatchFailure(root, "not of the planned program");

    ProgramBuilder builder(module, *planned);
    builder.createGlobals(rewriter);
    // In module order, so that the output is the same whichever op the
    // driver visited first.
    if (mesh->isBeforeInBlock(step)) {
      lowerMesh(builder, rewriter);
      lowerStep(builder, rewriter);
    } else {
      lowerStep(builder, rewriter);
      lowerMesh(builder, rewriter);
    }
    // The setup registers the parameters from the plan's tables.
    for (const PlannedParam &param : plan.params)
      rewriter.eraseOp(ParamOp(param.op));
    return success();
  }

private:
  const ProgramLowering::Impl *program;
};

void ddp::populateProgramPatterns(const LLVMTypeConverter &converter,
                                  RewritePatternSet &patterns,
                                  const ProgramLowering::Impl *program) {
  patterns.add<ProgramPattern<MeshOp>, ProgramPattern<ParamOp>,
               ProgramPattern<func::FuncOp>>(converter, program);
}
