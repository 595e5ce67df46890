//===- LowerToRuntime.cpp - ddp to calls of libddprt in LLVM IR -----------===//
//
// The pass ddp-lower-to-runtime: StoragePlan decides where every tensor
// lives, then ProgramEmitter writes the program interface of ddp_program.h
// into a fresh module, which replaces the input only once it is complete, so
// that a failure leaves the IR as it was.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/Passes.h"

#include "ddp/Conversion/DDPToLLVM/StoragePlan.h"
#include "ddp/Conversion/DDPToLLVM/RuntimeFunctions.h"
#include "ddp/Conversion/DDPToLLVM/ddp_program.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace ddp {
#define GEN_PASS_DEF_LOWERDDPTORUNTIME
#include "ddp/Conversion/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

static int32_t getRuntimeReduction(Reduction reduction) {
  switch (reduction) {
  case Reduction::Sum:
    return DDPRT_REDUCTION_SUM;
  case Reduction::Avg:
    return DDPRT_REDUCTION_AVG;
  case Reduction::Max:
    return DDPRT_REDUCTION_MAX;
  }
  llvm_unreachable("unknown reduction");
}

static int32_t getDType(Value tensor) {
  return getRuntimeDType(
      cast<RankedTensorType>(tensor.getType()).getElementType());
}

static int64_t getBytes(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return type.getNumElements() * getElementBytes(type.getElementType());
}

/// "dp=2,tp=2", as ddprt_init reads a mesh.
static std::string getMeshSpec(MeshOp mesh) {
  std::string spec;
  for (auto [name, size] : llvm::zip_equal(
           mesh.getAxisNames().getAsValueRange<StringAttr>(), mesh.getShape()))
    spec += (spec.empty() ? "" : ",") + name.str() + "=" + std::to_string(size);
  return spec;
}

namespace {

/// Builds the body of one entry point: a chain of runtime calls, each
/// followed by a check of its status that returns the status on failure,
/// and loops over tables. Constants live in the entry block, and values
/// defined earlier in the chain (outside loops) dominate everything after
/// them, so both are made once.
class EntryPointBuilder {
public:
  EntryPointBuilder(LLVM::LLVMFuncOp func, RuntimeFunctionBuilder &runtime)
      : builder(func.getContext()), func(func), runtime(runtime) {
    Block *entry = func.addEntryBlock(builder);
    builder.setInsertionPointToStart(entry);
  }

  OpBuilder &getBuilder() { return builder; }
  Value getArgument(unsigned index) { return func.getArgument(index); }
  Type getI32Type() { return builder.getI32Type(); }
  Type getPtrType() { return LLVM::LLVMPointerType::get(builder.getContext()); }

  Value i32(Location loc, int64_t value) {
    return constant(loc, builder.getI32IntegerAttr(value));
  }
  Value i64(Location loc, int64_t value) {
    return constant(loc, builder.getI64IntegerAttr(value));
  }
  Value f64(Location loc, double value) {
    return constant(loc, builder.getF64FloatAttr(value));
  }
  Value null(Location loc) {
    return LLVM::ZeroOp::create(builder, loc, getPtrType());
  }
  Value addressOf(Location loc, LLVM::GlobalOp global) {
    return LLVM::AddressOfOp::create(builder, loc, global);
  }
  /// The address of element `index` of the array global `array`.
  Value elementAddress(Location loc, LLVM::GlobalOp array, int64_t index) {
    return LLVM::GEPOp::create(builder, loc, getPtrType(),
                               array.getGlobalType(), addressOf(loc, array),
                               ArrayRef<LLVM::GEPArg>{0, gepIndex(loc, index)});
  }
  /// The address of element `index` (an i64 value) of the array global
  /// `array`.
  Value elementAddress(Location loc, LLVM::GlobalOp array, Value index) {
    return LLVM::GEPOp::create(builder, loc, getPtrType(),
                               array.getGlobalType(), addressOf(loc, array),
                               ArrayRef<LLVM::GEPArg>{0, index});
  }
  /// Element `index` (an i64 value) of the array global `array`.
  Value loadElement(Location loc, LLVM::GlobalOp array, Value index,
                    Type elementType) {
    return LLVM::LoadOp::create(builder, loc, elementType,
                                elementAddress(loc, array, index));
  }
  /// Element `index` of the array global `array`, loaded once per function.
  Value loadElement(Location loc, LLVM::GlobalOp array, int64_t index,
                    Type elementType) {
    Value &cached = loadedElements[{array.getOperation(), index}];
    if (!cached)
      cached = LLVM::LoadOp::create(builder, loc, elementType,
                                    elementAddress(loc, array, index));
    return cached;
  }
  /// A GEP index of `value`: a constant where GEPOp can hold it, else an
  /// i64 value. GEPArg keeps constants in kGEPConstantBitWidth (29) signed
  /// bits and silently wraps larger ones, which once placed gradients of a
  /// full-width layer 2^29 bytes before their bucket slice.
  LLVM::GEPArg gepIndex(Location loc, int64_t value) {
    if (llvm::isInt<LLVM::kGEPConstantBitWidth>(value))
      return LLVM::GEPArg(int32_t(value));
    return LLVM::GEPArg(i64(loc, value));
  }
  /// `base + bytes`.
  Value offsetPointer(Location loc, Value base, int64_t bytes) {
    if (bytes == 0)
      return base;
    return LLVM::GEPOp::create(builder, loc, getPtrType(), builder.getI8Type(),
                               base, ArrayRef<LLVM::GEPArg>{gepIndex(loc, bytes)});
  }
  /// A stack slot for `count` values of `type`, allocated at the function's
  /// entry so that it is one frame slot however often the step runs.
  Value allocaAtEntry(Location loc, Type type, int64_t count) {
    Value size = i64(loc, count);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointAfterValue(size);
    return LLVM::AllocaOp::create(builder, loc, getPtrType(), type, size);
  }

  /// Calls `function` and returns from the entry point with its status if
  /// it failed.
  void callChecked(Location loc, RuntimeFunction function,
                   ValueRange arguments) {
    Value status = runtime.call(builder, loc, function, arguments);
    Value ok = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq,
                                    status, i32(loc, DDPRT_OK));
    Block *current = builder.getInsertionBlock();
    Block *failureBlock = getFailureBlock();
    Block *next = new Block();
    func.getBody().getBlocks().insertAfter(current->getIterator(), next);
    LLVM::CondBrOp::create(builder, loc, ok, next, ValueRange(), failureBlock,
                           ValueRange(status));
    builder.setInsertionPointToStart(next);
    ++numCalls;
  }

  /// Emits `for (i = 0; i < count; ++i) body(i)` with an i64 `i`; the
  /// builder continues after the loop.
  void forEach(Location loc, int64_t count,
               llvm::function_ref<void(Value)> body) {
    Block *header = new Block();
    Block *exit = new Block();
    Region::iterator after =
        std::next(builder.getInsertionBlock()->getIterator());
    func.getBody().getBlocks().insert(after, header);
    func.getBody().getBlocks().insert(std::next(header->getIterator()), exit);
    Value index = header->addArgument(builder.getI64Type(), loc);
    LLVM::BrOp::create(builder, loc, ValueRange(i64(loc, 0)), header);

    builder.setInsertionPointToStart(header);
    Value done = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::sge,
                                      index, i64(loc, count));
    Block *bodyBlock = new Block();
    func.getBody().getBlocks().insert(exit->getIterator(), bodyBlock);
    LLVM::CondBrOp::create(builder, loc, done, exit, bodyBlock);

    builder.setInsertionPointToStart(bodyBlock);
    body(index);
    Value next = LLVM::AddOp::create(builder, loc, index, i64(loc, 1));
    LLVM::BrOp::create(builder, loc, ValueRange(next), header);
    builder.setInsertionPointToStart(exit);
  }

  void returnStatus(Location loc, Value status) {
    LLVM::ReturnOp::create(builder, loc, status);
  }
  void returnOk(Location loc) { returnStatus(loc, i32(loc, DDPRT_OK)); }

  int64_t getNumCalls() const { return numCalls; }

private:
  Value constant(Location loc, TypedAttr value) {
    Value &cached = constants[value];
    if (!cached) {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(&func.getBody().front());
      cached = LLVM::ConstantOp::create(builder, loc, value.getType(), value);
    }
    return cached;
  }

  /// The block that returns a failed status, made on first use.
  Block *getFailureBlock() {
    if (failureBlock)
      return failureBlock;
    failureBlock = new Block();
    func.getBody().push_back(failureBlock);
    Value status = failureBlock->addArgument(getI32Type(), func.getLoc());
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(failureBlock);
    LLVM::ReturnOp::create(builder, func.getLoc(), status);
    return failureBlock;
  }

  OpBuilder builder;
  LLVM::LLVMFuncOp func;
  RuntimeFunctionBuilder &runtime;
  Block *failureBlock = nullptr;
  llvm::DenseMap<std::pair<Operation *, int64_t>, Value> loadedElements;
  llvm::DenseMap<Attribute, Value> constants;
  int64_t numCalls = 0;
};

/// Writes the program (globals and the four entry points) for a planned
/// step into an empty module.
class ProgramEmitter {
public:
  ProgramEmitter(ModuleOp target, StoragePlan &plan, StringRef paramPrefix,
                 int32_t abiVersion)
      : target(target), plan(plan), paramPrefix(paramPrefix),
        abiVersion(abiVersion), runtime(target),
        builder(OpBuilder::atBlockEnd(target.getBody())) {}

  void emit();

  int64_t getNumStepCalls() const { return numStepCalls; }

private:
  LLVM::GlobalOp createArrayGlobal(Location loc, StringRef name,
                                   Type elementType, int64_t size);
  LLVM::GlobalOp getString(Location loc, StringRef text);
  /// A constant array global holding `values` (i32 or i64).
  template <typename T>
  LLVM::GlobalOp createTable(Location loc, StringRef name, ArrayRef<T> values);
  /// A constant array global of the addresses of `globals`.
  LLVM::GlobalOp createPointerTable(Location loc, StringRef name,
                                    ArrayRef<LLVM::GlobalOp> globals);
  LLVM::LLVMFuncOp createEntryPoint(Location loc, StringRef name,
                                    LLVM::LLVMFunctionType type);

  void emitInit();
  void emitSetup();
  void emitStep();
  void emitTeardown();

  /// Emits the runtime calls of one op of the step.
  void emitOp(EntryPointBuilder &entry, Operation *op);

  Value getPointer(EntryPointBuilder &entry, Location loc, Value tensor);
  Value getParamId(EntryPointBuilder &entry, Location loc,
                   FlatSymbolRefAttr param);
  Value getGroup(EntryPointBuilder &entry, Location loc, Operation *op);
  Value getHandleSlot(EntryPointBuilder &entry, Location loc, Value token);
  /// The handle slot of an async op, or null for a synchronous one.
  Value getHandleArgument(EntryPointBuilder &entry, Location loc,
                          Operation *op);
  /// Fills `array` with the ddprt_tensor descriptions of `tensors`; returns
  /// it, or null when there are none.
  Value fillTensorArray(EntryPointBuilder &entry, Location loc, Value array,
                        ValueRange tensors);

  ModuleOp target;
  StoragePlan &plan;
  StringRef paramPrefix;
  int32_t abiVersion;
  RuntimeFunctionBuilder runtime;
  OpBuilder builder;

  LLVM::GlobalOp buffersGlobal, paramIdsGlobal, paramDataGlobal, groupsGlobal;
  llvm::StringMap<LLVM::GlobalOp> strings;
  llvm::DenseMap<Value, Value> handleSlots;
  /// The step's stack arrays for ddprt_compute's operands and ddprt_join's
  /// handles.
  Value inputArray, resultArray, joinArray;
  int64_t numStepCalls = 0;
};

} // namespace

LLVM::GlobalOp ProgramEmitter::createArrayGlobal(Location loc, StringRef name,
                                                 Type elementType,
                                                 int64_t size) {
  auto type = LLVM::LLVMArrayType::get(elementType, size);
  auto global = LLVM::GlobalOp::create(
      builder, loc, type,
      /*isConstant=*/false, LLVM::Linkage::Internal, name, Attribute());
  OpBuilder initializer(global.getContext());
  initializer.createBlock(&global.getInitializerRegion());
  Value zero = LLVM::ZeroOp::create(initializer, loc, type);
  LLVM::ReturnOp::create(initializer, loc, zero);
  return global;
}

template <typename T>
LLVM::GlobalOp ProgramEmitter::createTable(Location loc, StringRef name,
                                           ArrayRef<T> values) {
  Type elementType = builder.getIntegerType(8 * sizeof(T));
  auto type = LLVM::LLVMArrayType::get(elementType, values.size());
  auto tensorType =
      RankedTensorType::get({int64_t(values.size())}, elementType);
  return LLVM::GlobalOp::create(builder, loc, type, /*isConstant=*/true,
                                LLVM::Linkage::Internal, name,
                                DenseElementsAttr::get(tensorType, values));
}

LLVM::GlobalOp
ProgramEmitter::createPointerTable(Location loc, StringRef name,
                                   ArrayRef<LLVM::GlobalOp> globals) {
  auto type = LLVM::LLVMArrayType::get(
      LLVM::LLVMPointerType::get(builder.getContext()), globals.size());
  auto table =
      LLVM::GlobalOp::create(builder, loc, type, /*isConstant=*/true,
                             LLVM::Linkage::Internal, name, Attribute());
  OpBuilder initializer(table.getContext());
  initializer.createBlock(&table.getInitializerRegion());
  Value array = LLVM::UndefOp::create(initializer, loc, type);
  for (auto [index, global] : llvm::enumerate(globals)) {
    Value address = LLVM::AddressOfOp::create(initializer, loc, global);
    array = LLVM::InsertValueOp::create(initializer, loc, array, address,
                                        ArrayRef<int64_t>{int64_t(index)});
  }
  LLVM::ReturnOp::create(initializer, loc, array);
  return table;
}

LLVM::GlobalOp ProgramEmitter::getString(Location loc, StringRef text) {
  LLVM::GlobalOp &global = strings[text];
  if (global)
    return global;
  std::string value = text.str();
  value.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), value.size());
  global = LLVM::GlobalOp::create(
      builder, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal,
      "__ddp_str_" + std::to_string(strings.size() - 1),
      builder.getStringAttr(value));
  return global;
}

LLVM::LLVMFuncOp ProgramEmitter::createEntryPoint(Location loc, StringRef name,
                                                  LLVM::LLVMFunctionType type) {
  return LLVM::LLVMFuncOp::create(builder, loc, name, type);
}

void ProgramEmitter::emit() {
  Location loc = plan.step.getLoc();
  MLIRContext *context = target.getContext();
  Type ptr = LLVM::LLVMPointerType::get(context);
  Type i32 = IntegerType::get(context, 32);
  if (!plan.buffers.empty())
    buffersGlobal =
        createArrayGlobal(loc, "__ddp_buffers", ptr, plan.buffers.size());
  if (!plan.params.empty()) {
    paramIdsGlobal =
        createArrayGlobal(loc, "__ddp_param_ids", i32, plan.params.size());
    paramDataGlobal =
        createArrayGlobal(loc, "__ddp_param_data", ptr, plan.params.size());
  }
  if (!plan.groups.empty())
    groupsGlobal =
        createArrayGlobal(loc, "__ddp_groups", i32, plan.groups.size());
  emitInit();
  emitSetup();
  emitStep();
  emitTeardown();

  // Globals first, in creation order, so that the module reads top-down.
  Operation *firstFunction =
      (*target.getOps<LLVM::LLVMFuncOp>().begin()).getOperation();
  for (auto global :
       llvm::make_early_inc_range(target.getOps<LLVM::GlobalOp>()))
    global->moveBefore(firstFunction);
}

void ProgramEmitter::emitInit() {
  Location loc = plan.mesh.getLoc();
  auto func = createEntryPoint(
      loc, DDP_PROGRAM_SYM_INIT,
      getLLVMFunctionType<decltype(ddp_program_init)>(target.getContext()));
  EntryPointBuilder entry(func, runtime);
  Value mesh = entry.addressOf(loc, getString(loc, getMeshSpec(plan.mesh)));
  Value status =
      runtime.call(entry.getBuilder(), loc, RuntimeFunction::Init,
                   {entry.i32(loc, abiVersion), mesh, entry.getArgument(0),
                    entry.getArgument(1), entry.getArgument(2),
                    entry.getArgument(3), entry.getArgument(4)});
  entry.returnStatus(loc, status);
}

void ProgramEmitter::emitSetup() {
  Location loc = plan.step.getLoc();
  auto func = createEntryPoint(
      loc, DDP_PROGRAM_SYM_SETUP,
      getLLVMFunctionType<decltype(ddp_program_setup)>(target.getContext()));
  EntryPointBuilder entry(func, runtime);
  Value context = entry.getArgument(0);
  Value seed = entry.getArgument(1);
  Type i32 = entry.getI32Type();
  Type i64 = entry.getBuilder().getI64Type();
  Type ptr = entry.getPtrType();

  for (auto [index, axes] : llvm::enumerate(plan.groups)) {
    Value name = entry.addressOf(loc, getString(loc, axes));
    entry.callChecked(
        loc, RuntimeFunction::GroupCreate,
        {context, name, entry.elementAddress(loc, groupsGlobal, index)});
  }

  // Parameters and buffers are set up by loops over constant tables, so
  // that the code stays small however many there are.
  if (!plan.params.empty()) {
    SmallVector<LLVM::GlobalOp> names;
    SmallVector<int32_t> dtypes;
    SmallVector<int64_t> numels;
    for (PlannedParam &param : plan.params) {
      names.push_back(getString(param.op.getLoc(),
                                (paramPrefix + param.op.getSymName()).str()));
      dtypes.push_back(param.dtype);
      numels.push_back(param.numel);
    }
    LLVM::GlobalOp nameTable =
        createPointerTable(loc, "__ddp_param_names", names);
    LLVM::GlobalOp dtypeTable =
        createTable<int32_t>(loc, "__ddp_param_dtypes", dtypes);
    LLVM::GlobalOp numelTable =
        createTable<int64_t>(loc, "__ddp_param_numels", numels);
    entry.forEach(loc, plan.params.size(), [&](Value index) {
      entry.callChecked(loc, RuntimeFunction::ParamRegister,
                        {context, entry.loadElement(loc, nameTable, index, ptr),
                         entry.loadElement(loc, dtypeTable, index, i32),
                         entry.loadElement(loc, numelTable, index, i64), seed,
                         entry.elementAddress(loc, paramIdsGlobal, index)});
      entry.callChecked(loc, RuntimeFunction::ParamData,
                        {context,
                         entry.loadElement(loc, paramIdsGlobal, index, i32),
                         entry.elementAddress(loc, paramDataGlobal, index)});
    });
  }
  if (!plan.buffers.empty()) {
    SmallVector<int32_t> dtypes;
    SmallVector<int64_t> numels;
    for (const PlannedBuffer &buffer : plan.buffers) {
      dtypes.push_back(buffer.dtype);
      numels.push_back(buffer.numel);
    }
    LLVM::GlobalOp dtypeTable =
        createTable<int32_t>(loc, "__ddp_buffer_dtypes", dtypes);
    LLVM::GlobalOp numelTable =
        createTable<int64_t>(loc, "__ddp_buffer_numels", numels);
    entry.forEach(loc, plan.buffers.size(), [&](Value index) {
      entry.callChecked(loc, RuntimeFunction::Alloc,
                        {context,
                         entry.loadElement(loc, dtypeTable, index, i32),
                         entry.loadElement(loc, numelTable, index, i64),
                         entry.elementAddress(loc, buffersGlobal, index)});
    });
  }
  for (unsigned bufferIndex : plan.inputBuffers) {
    const PlannedBuffer &buffer = plan.buffers[bufferIndex];
    Value data = entry.loadElement(loc, buffersGlobal, bufferIndex, ptr);
    entry.callChecked(loc, RuntimeFunction::FillInput,
                      {context, data, entry.i32(loc, buffer.dtype),
                       entry.i64(loc, buffer.numel), seed});
  }
  entry.returnOk(loc);
}

void ProgramEmitter::emitTeardown() {
  Location loc = plan.step.getLoc();
  auto func = createEntryPoint(
      loc, DDP_PROGRAM_SYM_TEARDOWN,
      getLLVMFunctionType<decltype(ddp_program_teardown)>(target.getContext()));
  EntryPointBuilder entry(func, runtime);
  Value context = entry.getArgument(0);
  if (!plan.buffers.empty()) {
    entry.forEach(loc, plan.buffers.size(), [&](Value index) {
      Value data =
          entry.loadElement(loc, buffersGlobal, index, entry.getPtrType());
      entry.callChecked(loc, RuntimeFunction::Free, {context, data});
      // A second teardown must not free the buffer again.
      LLVM::StoreOp::create(entry.getBuilder(), loc, entry.null(loc),
                            entry.elementAddress(loc, buffersGlobal, index));
    });
  }
  entry.returnOk(loc);
}

void ProgramEmitter::emitStep() {
  auto func = createEntryPoint(
      plan.step.getLoc(), DDP_PROGRAM_SYM_STEP,
      getLLVMFunctionType<decltype(ddp_program_step)>(target.getContext()));
  EntryPointBuilder entry(func, runtime);
  // The runtime reads operand arrays only during the call, so one array per
  // kind, as long as the longest list, serves every op.
  Block &body = plan.step.getBody().front();
  size_t maxInputs = 0, maxResults = 0, maxJoined = 0;
  for (auto compute : body.getOps<ComputeOp>()) {
    maxInputs = std::max(maxInputs, compute.getInputs().size());
    maxResults = std::max(maxResults, compute.getResults().size());
  }
  for (auto join : body.getOps<JoinOp>())
    maxJoined = std::max(maxJoined, join.getTokens().size());
  Location loc = func.getLoc();
  Type tensorType = getRuntimeTensorType(target.getContext());
  if (maxInputs)
    inputArray = entry.allocaAtEntry(loc, tensorType, maxInputs);
  if (maxResults)
    resultArray = entry.allocaAtEntry(loc, tensorType, maxResults);
  if (maxJoined)
    joinArray =
        entry.allocaAtEntry(loc, entry.getBuilder().getI64Type(), maxJoined);
  for (Operation &op : body)
    emitOp(entry, &op);
  numStepCalls = entry.getNumCalls();
}

Value ProgramEmitter::getPointer(EntryPointBuilder &entry, Location loc,
                                 Value tensor) {
  Storage storage = plan.storage.lookup(tensor);
  Value base = storage.kind == Storage::Kind::Param
                   ? entry.loadElement(loc, paramDataGlobal, storage.index,
                                       entry.getPtrType())
                   : entry.loadElement(loc, buffersGlobal, storage.index,
                                       entry.getPtrType());
  return entry.offsetPointer(loc, base, storage.byteOffset);
}

Value ProgramEmitter::getParamId(EntryPointBuilder &entry, Location loc,
                                 FlatSymbolRefAttr param) {
  return entry.loadElement(loc, paramIdsGlobal, plan.getParamIndex(param),
                           entry.getI32Type());
}

Value ProgramEmitter::getGroup(EntryPointBuilder &entry, Location loc,
                               Operation *op) {
  return entry.loadElement(loc, groupsGlobal,
                           plan.getGroupIndex(cast<CollectiveOpInterface>(op)),
                           entry.getI32Type());
}

Value ProgramEmitter::getHandleSlot(EntryPointBuilder &entry, Location loc,
                                    Value token) {
  Value &slot = handleSlots[token];
  if (!slot)
    slot = entry.allocaAtEntry(loc, entry.getBuilder().getI64Type(), 1);
  return slot;
}

Value ProgramEmitter::getHandleArgument(EntryPointBuilder &entry, Location loc,
                                        Operation *op) {
  Value token = cast<AsyncOpInterface>(op).getAsyncToken();
  return token ? getHandleSlot(entry, loc, token) : entry.null(loc);
}

Value ProgramEmitter::fillTensorArray(EntryPointBuilder &entry, Location loc,
                                      Value array, ValueRange tensors) {
  if (tensors.empty())
    return entry.null(loc);
  OpBuilder &b = entry.getBuilder();
  LLVM::LLVMStructType tensorType = getRuntimeTensorType(b.getContext());
  for (auto [index, tensor] : llvm::enumerate(tensors)) {
    auto field = [&](int32_t position) {
      return LLVM::GEPOp::create(
          b, loc, entry.getPtrType(), tensorType, array,
          ArrayRef<LLVM::GEPArg>{entry.gepIndex(loc, index), position});
    };
    LLVM::StoreOp::create(b, loc, getPointer(entry, loc, tensor), field(0));
    LLVM::StoreOp::create(
        b, loc, entry.i64(loc, getNumElements(tensor.getType())), field(1));
    LLVM::StoreOp::create(b, loc, entry.i32(loc, getDType(tensor)), field(2));
    LLVM::StoreOp::create(b, loc, entry.i32(loc, 0), field(3));
  }
  return array;
}

void ProgramEmitter::emitOp(EntryPointBuilder &entry, Operation *op) {
  Location loc = op->getLoc();
  Value context = entry.getArgument(0);
  auto ptr = [&](Value tensor) { return getPointer(entry, loc, tensor); };
  auto i32 = [&](int64_t value) { return entry.i32(loc, value); };
  auto i64 = [&](int64_t value) { return entry.i64(loc, value); };
  auto f64 = [&](double value) { return entry.f64(loc, value); };
  auto str = [&](StringRef text) {
    return entry.addressOf(loc, getString(loc, text));
  };
  auto call = [&](RuntimeFunction function, ValueRange arguments) {
    entry.callChecked(loc, function, arguments);
  };

  llvm::TypeSwitch<Operation *>(op)
      .Case([&](GetParamOp getParam) {
        if (!plan.copiedParams.count(getParam))
          return;
        Value source = entry.loadElement(
            loc, paramDataGlobal, plan.getParamIndex(getParam.getParamAttr()),
            entry.getPtrType());
        call(RuntimeFunction::Copy, {context, ptr(getParam.getResult()), source,
                                     i64(getBytes(getParam.getResult()))});
      })
      .Case([&](GemmOp gemm) {
        std::string label = "gemm " + stringifyGemmPhase(gemm.getPhase()).str();
        call(RuntimeFunction::Gemm,
             {context, i32(getDType(gemm.getResult())),
              i32(gemm.getTransposeLhs()), i32(gemm.getTransposeRhs()),
              i64(gemm.getM()), i64(gemm.getN()), i64(gemm.getK()),
              ptr(gemm.getLhs()), ptr(gemm.getRhs()), ptr(gemm.getResult()),
              str(label)});
      })
      .Case([&](ComputeOp compute) {
        Value inputs =
            fillTensorArray(entry, loc, inputArray, compute.getInputs());
        Value results =
            fillTensorArray(entry, loc, resultArray, compute.getResults());
        call(RuntimeFunction::Compute,
             {context, str(compute.getKind()), inputs,
              i32(compute.getInputs().size()), results,
              i32(compute.getResults().size())});
      })
      .Case([&](AccumulateOp accumulate) {
        call(RuntimeFunction::Accumulate,
             {context, i32(getDType(accumulate.getResult())),
              i64(getNumElements(accumulate.getType())),
              ptr(accumulate.getLhs()), ptr(accumulate.getRhs()),
              ptr(accumulate.getResult())});
      })
      .Case([&](ScaleOp scale) {
        call(RuntimeFunction::Scale,
             {context, i32(getDType(scale.getResult())),
              i64(getNumElements(scale.getType())), ptr(scale.getInput()),
              f64(scale.getFactor().convertToDouble()),
              ptr(scale.getResult())});
      })
      .Case([&](CastOp cast) {
        call(RuntimeFunction::Cast,
             {context, i32(getDType(cast.getInput())), ptr(cast.getInput()),
              i32(getDType(cast.getResult())), ptr(cast.getResult()),
              i64(getNumElements(cast.getType()))});
      })
      .Case([&](AllReduceOp allReduce) {
        call(RuntimeFunction::AllReduce,
             {context, getGroup(entry, loc, op),
              i32(getRuntimeReduction(allReduce.getReduction())),
              i32(getDType(allReduce.getInput())),
              i64(getNumElements(allReduce.getInput().getType())),
              ptr(allReduce.getInput()), ptr(allReduce.getResult()),
              getHandleArgument(entry, loc, op)});
      })
      .Case([&](ReduceScatterOp reduceScatter) {
        call(RuntimeFunction::ReduceScatter,
             {context, getGroup(entry, loc, op),
              i32(getRuntimeReduction(reduceScatter.getReduction())),
              i32(getDType(reduceScatter.getInput())),
              i64(getNumElements(reduceScatter.getResult().getType())),
              ptr(reduceScatter.getInput()), ptr(reduceScatter.getResult()),
              getHandleArgument(entry, loc, op)});
      })
      .Case([&](AllGatherOp allGather) {
        call(RuntimeFunction::AllGather,
             {context, getGroup(entry, loc, op),
              i32(getDType(allGather.getInput())),
              i64(getNumElements(allGather.getInput().getType())),
              ptr(allGather.getInput()), ptr(allGather.getResult()),
              getHandleArgument(entry, loc, op)});
      })
      .Case([&](SendOp send) {
        call(RuntimeFunction::Send,
             {context, getGroup(entry, loc, op), i64(send.getOffset()),
              i32(getDType(send.getInput())),
              i64(getNumElements(send.getInput().getType())),
              ptr(send.getInput()), getHandleArgument(entry, loc, op)});
      })
      .Case([&](RecvOp recv) {
        call(RuntimeFunction::Recv,
             {context, getGroup(entry, loc, op), i64(recv.getOffset()),
              i32(getDType(recv.getResult())),
              i64(getNumElements(recv.getResult().getType())),
              ptr(recv.getResult()), getHandleArgument(entry, loc, op)});
      })
      .Case([&](WaitOp wait) {
        Value handle = LLVM::LoadOp::create(
            entry.getBuilder(), loc, entry.getBuilder().getI64Type(),
            getHandleSlot(entry, loc, wait.getToken()));
        call(RuntimeFunction::Wait, {context, handle});
      })
      .Case([&](JoinOp join) {
        OpBuilder &b = entry.getBuilder();
        Type i64Type = b.getI64Type();
        Value handles = joinArray;
        for (auto [index, token] : llvm::enumerate(join.getTokens())) {
          Value handle = LLVM::LoadOp::create(b, loc, i64Type,
                                              getHandleSlot(entry, loc, token));
          Value element =
              LLVM::GEPOp::create(b, loc, entry.getPtrType(), i64Type, handles,
                                  ArrayRef<LLVM::GEPArg>{entry.gepIndex(loc, index)});
          LLVM::StoreOp::create(b, loc, handle, element);
        }
        call(RuntimeFunction::Join,
             {context, handles, i32(join.getTokens().size()),
              getHandleSlot(entry, loc, join.getResult())});
      })
      .Case([&](BucketPackOp pack) {
        // The gradients produced in place are already in the bucket.
        auto copies = plan.packCopies.find(pack);
        if (copies == plan.packCopies.end())
          return;
        Storage bucket = plan.storage.lookup(pack.getBucket());
        int64_t elementBytes =
            getElementBytes(pack.getBucket().getType().getElementType());
        for (unsigned index : copies->second) {
          Value grad = pack.getGrads()[index];
          Value slice = entry.offsetPointer(
              loc, ptr(pack.getBucket()),
              bucket.byteOffset + pack.getOffsets()[index] * elementBytes);
          call(RuntimeFunction::Copy,
               {context, slice, ptr(grad), i64(getBytes(grad))});
        }
      })
      .Case([&](CheckFiniteOp check) {
        // The runtime names the first bad element; the extents let the
        // message say whose gradient it is in.
        std::string extents;
        for (auto [param, offset] :
             llvm::zip_equal(check.getParams().getAsRange<FlatSymbolRefAttr>(),
                             check.getOffsets())) {
          int64_t numel = plan.params[plan.getParamIndex(param)].numel;
          extents += (extents.empty() ? "" : ", ") + param.getValue().str() +
                     " [" + std::to_string(offset) + ", " +
                     std::to_string(offset + numel) + ")";
        }
        Value bucket = check.getBucket();
        call(RuntimeFunction::CheckFinite,
             {context, i32(getDType(bucket)),
              i64(getNumElements(bucket.getType())), ptr(bucket),
              str("bucket " + std::to_string(check.getIndex())), str(extents)});
      })
      .Case([&](SGDOp sgd) {
        call(RuntimeFunction::Sgd,
             {context, getParamId(entry, loc, sgd.getParamAttr()),
              i32(getDType(sgd.getGrad())), ptr(sgd.getGrad()),
              f64(sgd.getLr().convertToDouble())});
      })
      .Case([&](AdamOp adam) {
        call(RuntimeFunction::Adam,
             {context, getParamId(entry, loc, adam.getParamAttr()),
              i32(getDType(adam.getGrad())), ptr(adam.getGrad()),
              f64(adam.getLr().convertToDouble()),
              f64(adam.getBeta1().convertToDouble()),
              f64(adam.getBeta2().convertToDouble()),
              f64(adam.getEps().convertToDouble())});
      })
      // Returned values stay in their buffers.
      .Case([&](func::ReturnOp) { entry.returnOk(loc); })
      // Views and aliases: the storage plan already made them share memory.
      .Case<GradReadyOp, BucketUnpackOp>([](Operation *) {});
}

namespace {
struct LowerDDPToRuntimePass
    : public ddp::impl::LowerDDPToRuntimeBase<LowerDDPToRuntimePass> {
  using LowerDDPToRuntimeBase::LowerDDPToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<StoragePlan> plan = StoragePlan::build(module);
    if (failed(plan) || (validateStorage && failed(verifyStoragePlan(*plan))))
      return signalPassFailure();

    OwningOpRef<ModuleOp> lowered = ModuleOp::create(module.getLoc());
    ProgramEmitter emitter(*lowered, *plan, paramPrefix, abiVersion);
    emitter.emit();

    numRuntimeCalls = emitter.getNumStepCalls();
    numBuffers = plan->buffers.size();
    int64_t bytes = 0;
    for (const PlannedBuffer &buffer : plan->buffers)
      bytes += buffer.getBytes();
    numBufferBytes = bytes;
    numGradientsInBuckets = plan->numGradientsInBuckets;
    int64_t copies = 0;
    for (auto &entry : plan->packCopies)
      copies += entry.second.size();
    numPackCopies = copies;
    numParamCopies = plan->copiedParams.size();
    int64_t getParams =
        llvm::range_size(plan->step.getBody().front().getOps<GetParamOp>());
    numParamAliases = getParams - plan->copiedParams.size();

    // The plan holds pointers into the old body: drop them before it goes.
    plan->storage.clear();
    module.getBody()->clear();
    module.getBody()->getOperations().splice(
        module.getBody()->end(), lowered->getBody()->getOperations());
  }
};
} // namespace
