//===- ProgramLowering.cpp - The plan and builders of the ddp lowering ----===//
//
// The plan made before the conversion, the chain builder of the entry
// points, the program's globals, and the entry points of the conversion
// declared in DDPToLLVM.h.
//
//===----------------------------------------------------------------------===//

#include "ProgramLoweringImpl.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

using namespace mlir;
using namespace ddp;

//===----------------------------------------------------------------------===//
// EntryPointBuilder
//===----------------------------------------------------------------------===//

EntryPointBuilder::EntryPointBuilder(LLVM::LLVMFuncOp func,
                                     RewriterBase &builder,
                                     RuntimeFunctionBuilder &runtime)
    : func(func), builder(builder), runtime(runtime) {
  SmallVector<Location> locs(func.getNumArguments(), func.getLoc());
  builder.createBlock(&func.getBody(), func.getBody().end(),
                      func.getFunctionType().getParams(), locs);
}

Value EntryPointBuilder::i32(Location loc, int64_t value) {
  return constant(loc, builder.getI32IntegerAttr(value));
}
Value EntryPointBuilder::i64(Location loc, int64_t value) {
  return constant(loc, builder.getI64IntegerAttr(value));
}
Value EntryPointBuilder::f64(Location loc, double value) {
  return constant(loc, builder.getF64FloatAttr(value));
}
Value EntryPointBuilder::null(Location loc) {
  return LLVM::ZeroOp::create(builder, loc, getPtrType());
}
Value EntryPointBuilder::addressOf(Location loc, LLVM::GlobalOp global) {
  return LLVM::AddressOfOp::create(builder, loc, global);
}

Value EntryPointBuilder::elementAddress(Location loc, LLVM::GlobalOp array,
                                        int64_t index) {
  return LLVM::GEPOp::create(builder, loc, getPtrType(), array.getGlobalType(),
                             addressOf(loc, array),
                             ArrayRef<LLVM::GEPArg>{0, gepIndex(loc, index)});
}

Value EntryPointBuilder::elementAddress(Location loc, LLVM::GlobalOp array,
                                        Value index) {
  return LLVM::GEPOp::create(builder, loc, getPtrType(), array.getGlobalType(),
                             addressOf(loc, array),
                             ArrayRef<LLVM::GEPArg>{0, index});
}

Value EntryPointBuilder::loadElement(Location loc, LLVM::GlobalOp array,
                                     Value index, Type elementType) {
  return LLVM::LoadOp::create(builder, loc, elementType,
                              elementAddress(loc, array, index));
}

Value EntryPointBuilder::loadElement(Location loc, LLVM::GlobalOp array,
                                     int64_t index, Type elementType) {
  Value &cached = loadedElements[{array.getOperation(), index}];
  if (!cached)
    cached = LLVM::LoadOp::create(builder, loc, elementType,
                                  elementAddress(loc, array, index));
  return cached;
}

LLVM::GEPArg EntryPointBuilder::gepIndex(Location loc, int64_t value) {
  if (llvm::isInt<LLVM::kGEPConstantBitWidth>(value))
    return LLVM::GEPArg(int32_t(value));
  return LLVM::GEPArg(i64(loc, value));
}

Value EntryPointBuilder::offsetPointer(Location loc, Value base,
                                       int64_t bytes) {
  if (bytes == 0)
    return base;
  return LLVM::GEPOp::create(builder, loc, getPtrType(), builder.getI8Type(),
                             base,
                             ArrayRef<LLVM::GEPArg>{gepIndex(loc, bytes)});
}

Value EntryPointBuilder::allocaAtEntry(Location loc, Type type,
                                       int64_t count) {
  Value size = i64(loc, count);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(size);
  return LLVM::AllocaOp::create(builder, loc, getPtrType(), type, size);
}

void EntryPointBuilder::callChecked(Location loc, RuntimeFunction function,
                                    ValueRange arguments) {
  Value status = runtime.call(builder, loc, function, arguments);
  if (deferred) {
    uncheckedCalls.push_back(status.getDefiningOp<LLVM::CallOp>());
    return;
  }
  Block *current = builder.getInsertionBlock();
  Block *next = builder.splitBlock(current, builder.getInsertionPoint());
  builder.setInsertionPointToEnd(current);
  branchOnStatus(loc, status, next);
  builder.setInsertionPointToStart(next);
}

void EntryPointBuilder::emitDeferredChecks() {
  OpBuilder::InsertionGuard guard(builder);
  for (LLVM::CallOp call : llvm::reverse(uncheckedCalls)) {
    Block *current = call->getBlock();
    Block *next =
        builder.splitBlock(current, std::next(call->getIterator()));
    builder.setInsertionPointToEnd(current);
    branchOnStatus(call.getLoc(), call.getResult(), next);
  }
  uncheckedCalls.clear();
}

void EntryPointBuilder::branchOnStatus(Location loc, Value status,
                                       Block *next) {
  Value ok = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq,
                                  status, i32(loc, DDPRT_OK));
  LLVM::CondBrOp::create(builder, loc, ok, next, ValueRange(),
                         getFailureBlock(), ValueRange(status));
}

void EntryPointBuilder::forEach(Location loc, int64_t count,
                                llvm::function_ref<void(Value)> body) {
  Block *current = builder.getInsertionBlock();
  Block *exit = builder.splitBlock(current, builder.getInsertionPoint());
  Value zero = i64(loc, 0);
  Value end = i64(loc, count);
  Value one = i64(loc, 1);
  Block *header =
      builder.createBlock(exit, TypeRange(builder.getI64Type()), {loc});
  Block *bodyBlock = builder.createBlock(exit);
  Value index = header->getArgument(0);
  builder.setInsertionPointToEnd(current);
  LLVM::BrOp::create(builder, loc, ValueRange(zero), header);

  builder.setInsertionPointToStart(header);
  Value done = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::sge,
                                    index, end);
  LLVM::CondBrOp::create(builder, loc, done, exit, bodyBlock);

  builder.setInsertionPointToStart(bodyBlock);
  body(index);
  Value next = LLVM::AddOp::create(builder, loc, index, one);
  LLVM::BrOp::create(builder, loc, ValueRange(next), header);
  builder.setInsertionPointToStart(exit);
}

void EntryPointBuilder::ifElse(Location loc, Value condition,
                               llvm::function_ref<void()> thenBody,
                               llvm::function_ref<void()> elseBody) {
  Block *current = builder.getInsertionBlock();
  Block *exit = builder.splitBlock(current, builder.getInsertionPoint());
  Block *thenBlock = builder.createBlock(exit);
  Block *elseBlock = builder.createBlock(exit);
  builder.setInsertionPointToEnd(current);
  LLVM::CondBrOp::create(builder, loc, condition, thenBlock, elseBlock);
  // Each body may end in another block (callChecked continues in one).
  builder.setInsertionPointToStart(thenBlock);
  thenBody();
  LLVM::BrOp::create(builder, loc, ValueRange(), exit);
  builder.setInsertionPointToStart(elseBlock);
  elseBody();
  LLVM::BrOp::create(builder, loc, ValueRange(), exit);
  builder.setInsertionPointToStart(exit);
}

void EntryPointBuilder::returnStatus(Location loc, Value status) {
  LLVM::ReturnOp::create(builder, loc, status);
}

void EntryPointBuilder::returnOk(Location loc) {
  returnStatus(loc, i32(loc, DDPRT_OK));
}

Value EntryPointBuilder::constant(Location loc, TypedAttr value) {
  Value &cached = constants[value];
  if (!cached) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&func.getBody().front());
    cached = LLVM::ConstantOp::create(builder, loc, value.getType(), value);
  }
  return cached;
}

Block *EntryPointBuilder::getFailureBlock() {
  if (failureBlock)
    return failureBlock;
  OpBuilder::InsertionGuard guard(builder);
  failureBlock = builder.createBlock(&func.getBody(), func.getBody().end(),
                                     TypeRange(getI32Type()), {func.getLoc()});
  LLVM::ReturnOp::create(builder, func.getLoc(), failureBlock->getArgument(0));
  return failureBlock;
}

//===----------------------------------------------------------------------===//
// ProgramLowering
//===----------------------------------------------------------------------===//

static LLVM::GlobalOp createArrayGlobal(RewriterBase &rewriter, Location loc,
                                        StringRef name, Type elementType,
                                        int64_t size) {
  auto type = LLVM::LLVMArrayType::get(elementType, size);
  auto global = LLVM::GlobalOp::create(
      rewriter, loc, type,
      /*isConstant=*/false, LLVM::Linkage::Internal, name, Attribute());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.createBlock(&global.getInitializerRegion());
  Value zero = LLVM::ZeroOp::create(rewriter, loc, type);
  LLVM::ReturnOp::create(rewriter, loc, zero);
  return global;
}

void ProgramBuilder::createGlobals(RewriterBase &rewriter) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  Location loc = func::FuncOp(plan.step).getLoc();
  Type ptr = LLVM::LLVMPointerType::get(module.getContext());
  Type i32 = rewriter.getI32Type();
  if (!plan.buffers.empty()) {
    buffersGlobal = createArrayGlobal(rewriter, loc, "__ddp_buffers", ptr,
                                      plan.buffers.size());
    arenasGlobal = createArrayGlobal(rewriter, loc, "__ddp_arenas", ptr,
                                     plan.arenas.size());
  }
  if (!plan.params.empty()) {
    paramIdsGlobal = createArrayGlobal(rewriter, loc, "__ddp_param_ids", i32,
                                       plan.params.size());
    paramDataGlobal = createArrayGlobal(rewriter, loc, "__ddp_param_data", ptr,
                                        plan.params.size());
  }
  if (!plan.groups.empty())
    groupsGlobal = createArrayGlobal(rewriter, loc, "__ddp_groups", i32,
                                     plan.groups.size());
}

LLVM::GlobalOp ProgramBuilder::getString(RewriterBase &rewriter,
                                                Location loc, StringRef text) {
  LLVM::GlobalOp &global = strings[text];
  if (global)
    return global;
  std::string value = text.str();
  value.push_back('\0');
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  auto type = LLVM::LLVMArrayType::get(rewriter.getI8Type(), value.size());
  global = LLVM::GlobalOp::create(
      rewriter, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal,
      "__ddp_str_" + std::to_string(strings.size() - 1),
      rewriter.getStringAttr(value));
  return global;
}

Value ProgramBuilder::getPointer(EntryPointBuilder &entry, Location loc,
                                        Storage storage) {
  LLVM::GlobalOp table = storage.kind == Storage::Kind::Param ? paramDataGlobal
                                                              : buffersGlobal;
  Value base = entry.loadElement(loc, table, storage.index, entry.getPtrType());
  if (storage.isRankView()) {
    // The rank's shard: base + groupRank * stride, then the static offset.
    RewriterBase &b = entry.getBuilder();
    Value shardOffset =
        LLVM::MulOp::create(b, loc, groupRanks.lookup(*storage.rankGroup),
                            entry.i64(loc, storage.rankStride));
    base = LLVM::GEPOp::create(b, loc, entry.getPtrType(), b.getI8Type(), base,
                               ArrayRef<LLVM::GEPArg>{shardOffset});
  }
  return entry.offsetPointer(loc, base, storage.byteOffset);
}

void ProgramBuilder::queryGroupRanks(EntryPointBuilder &step, Location loc) {
  if (program.rankViewGroups.empty())
    return;
  Type i32 = step.getI32Type();
  Value rankSlot = step.allocaAtEntry(loc, i32, 1);
  Value sizeSlot = step.allocaAtEntry(loc, i32, 1);
  RewriterBase &b = step.getBuilder();
  for (unsigned group : program.rankViewGroups) {
    step.callChecked(loc, RuntimeFunction::GroupInfo,
                     {step.getArgument(0),
                      step.loadElement(loc, groupsGlobal, group, i32), rankSlot,
                      sizeSlot});
    Value rank = LLVM::LoadOp::create(b, loc, i32, rankSlot);
    groupRanks[group] = LLVM::SExtOp::create(b, loc, step.getI64Type(), rank);
  }
}

Value ProgramBuilder::getParamData(EntryPointBuilder &entry,
                                          Location loc,
                                          FlatSymbolRefAttr param) {
  return entry.loadElement(loc, paramDataGlobal, plan.getParamIndex(param),
                           entry.getPtrType());
}

Value ProgramBuilder::getParamId(EntryPointBuilder &entry, Location loc,
                                        FlatSymbolRefAttr param) {
  return entry.loadElement(loc, paramIdsGlobal, plan.getParamIndex(param),
                           entry.getI32Type());
}

Value ProgramBuilder::getGroup(EntryPointBuilder &entry, Location loc,
                                      ArrayAttr axes) {
  return entry.loadElement(loc, groupsGlobal, plan.getGroupIndex(axes),
                           entry.getI32Type());
}

FailureOr<std::unique_ptr<ProgramLowering::Impl>>
ProgramLowering::Impl::build(ModuleOp module, ProgramLoweringOptions options) {
  FailureOr<StoragePlan> plan = StoragePlan::build(module, options.reuseBuffers);
  if (failed(plan))
    return failure();
  auto impl = std::make_unique<Impl>();
  impl->plan = std::move(*plan);
  impl->options = std::move(options);
  Block &body = func::FuncOp(impl->plan.step).getBody().front();
  for (auto compute : body.getOps<ComputeOp>()) {
    impl->maxInputs = std::max(impl->maxInputs, compute.getInputs().size());
    impl->maxResults = std::max(impl->maxResults, compute.getResults().size());
  }
  for (auto join : body.getOps<JoinOp>())
    impl->maxJoined = std::max(impl->maxJoined, join.getTokens().size());
  // An op issued after others joins their handles into its own.
  for (auto async : body.getOps<AsyncOpInterface>())
    if (size_t dependencies = async.getAsyncDependencies().size())
      impl->maxJoined = std::max(impl->maxJoined, dependencies + 1);
  for (const auto &entry : impl->plan.storage)
    if (entry.second.isRankView())
      impl->rankViewGroups.push_back(*entry.second.rankGroup);
  // In group order, so that the lowered IR does not depend on hashing.
  llvm::sort(impl->rankViewGroups);
  impl->rankViewGroups.erase(llvm::unique(impl->rankViewGroups),
                             impl->rankViewGroups.end());
  return impl;
}

FailureOr<std::unique_ptr<ProgramLowering>>
ProgramLowering::plan(ModuleOp module, ProgramLoweringOptions options) {
  FailureOr<std::unique_ptr<Impl>> impl =
      Impl::build(module, std::move(options));
  if (failed(impl))
    return failure();
  return std::unique_ptr<ProgramLowering>(
      new ProgramLowering(std::move(*impl)));
}

ProgramLowering::ProgramLowering(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

ProgramLowering::~ProgramLowering() = default;

void ProgramLowering::finalize(ModuleOp module) {
  // The plan holds pointers into the old body, which is gone.
  impl->plan.storage.clear();
  auto functions = module.getOps<LLVM::LLVMFuncOp>();
  if (functions.empty())
    return;
  Operation *firstFunction = (*functions.begin()).getOperation();
  for (auto global :
       llvm::make_early_inc_range(module.getOps<LLVM::GlobalOp>()))
    global->moveBefore(firstFunction);
}

//===----------------------------------------------------------------------===//
// StepOpLowering
//===----------------------------------------------------------------------===//

StepOpLowering::StepOpLowering(ProgramBuilder &program, Operation *op)
    : program(program), op(op), loc(op->getLoc()),
      results(op->getNumResults()) {}

Value StepOpLowering::str(StringRef text) {
  return entry().addressOf(
      loc, program.getString(entry().getBuilder(), loc, text));
}

Value StepOpLowering::result(unsigned index) {
  Value &value = results[index];
  if (!value)
    value = program.getPointer(entry(), loc,
                               program.plan.storage.lookup(op->getResult(index)));
  return value;
}

Value StepOpLowering::handleArgument() {
  Value token = cast<AsyncOpInterface>(op).getAsyncToken();
  if (!token)
    return entry().null(loc);
  Value slot = entry().allocaAtEntry(loc, entry().getI64Type(), 1);
  setResult(cast<OpResult>(token).getResultNumber(), slot);
  return slot;
}

void StepOpLowering::callCollective(RuntimeFunction function,
                                    SmallVector<Value> arguments,
                                    ValueRange dependencySlots) {
  RewriterBase &b = entry().getBuilder();
  Type i64Type = entry().getI64Type();
  SmallVector<Value> dependencies;
  for (Value slot : dependencySlots) {
    dependencies.push_back(LLVM::LoadOp::create(b, loc, i64Type, slot));
    call(RuntimeFunction::CommWait, {context(), dependencies.back()});
  }
  Value handle = handleArgument();
  arguments.push_back(handle);
  call(function, arguments);
  if (dependencies.empty())
    return;
  dependencies.push_back(LLVM::LoadOp::create(b, loc, i64Type, handle));
  Value handles = program.joinArray;
  for (auto [index, value] : llvm::enumerate(dependencies)) {
    Value element = LLVM::GEPOp::create(
        b, loc, entry().getPtrType(), i64Type, handles,
        ArrayRef<LLVM::GEPArg>{entry().gepIndex(loc, index)});
    LLVM::StoreOp::create(b, loc, value, element);
  }
  call(RuntimeFunction::Join,
       {context(), handles, i32(dependencies.size()), handle});
}

ArrayRef<Value> StepOpLowering::finish(RewriterBase &rewriter) {
  for (auto [index, value] : llvm::enumerate(results))
    if (!value)
      result(index);
  rewriter.replaceOp(op, results);
  return results;
}

//===----------------------------------------------------------------------===//
// The conversion's entry points
//===----------------------------------------------------------------------===//

void ddp::populateDDPToLLVMTypeConversions(LLVMTypeConverter &converter) {
  MLIRContext *context = &converter.getContext();
  converter.addConversion([context](TokenType) -> Type {
    return LLVM::LLVMPointerType::get(context);
  });
  converter.addConversion([context](RankedTensorType type) -> Type {
    if (!type.hasStaticShape())
      return {};
    return LLVM::LLVMPointerType::get(context);
  });
}

void ddp::populateDDPToLLVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns,
    const ProgramLowering &program) {
  populateProgramPatterns(converter, patterns, &program.getImpl());
}

void ddp::populateDDPToLLVMConversionPatterns(
    const LLVMTypeConverter &converter, RewritePatternSet &patterns) {
  populateProgramPatterns(converter, patterns, nullptr);
}

const StepOpLowerers &StepOpLowerers::get() {
  static const StepOpLowerers lowerers = [] {
    StepOpLowerers made;
    populateComputePatterns(made);
    populateCollectivePatterns(made);
    return made;
  }();
  return lowerers;
}

bool ddp::isLoweredInStep(OperationName name) {
  return StepOpLowerers::get().contains(name);
}

void ddp::configureDDPToLLVMConversionTarget(ConversionTarget &target) {
  target.addIllegalDialect<DDPDialect>();
}
