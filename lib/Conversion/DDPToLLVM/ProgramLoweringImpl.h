//===- ProgramLoweringImpl.h - State the ddp patterns share -----*- C++ -*-===//
//
// The parts of ProgramLowering that ProgramPatterns.cpp, ComputePatterns.cpp
// and CollectivePatterns.cpp use: the plan (read-only), what one rewrite of
// the program builds, the builder of runtime-call chains and the lowerings
// of the step's ops.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_CONVERSION_DDPTOLLVM_PROGRAMLOWERINGIMPL_H
#define DDP_LIB_CONVERSION_DDPTOLLVM_PROGRAMLOWERINGIMPL_H

#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Conversion/DDPToLLVM/RuntimeFunctions.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringMap.h"

namespace ddp {

/// Builds the body of one entry point at the rewriter's insertion point: a
/// chain of runtime calls, each followed by a check of its status that
/// returns the status on failure, and loops over tables. Constants live in
/// the entry block, and values defined earlier in the chain (outside loops)
/// dominate everything after them, so both are made once.
class EntryPointBuilder {
public:
  /// Adds the entry block of `func` and sets the insertion point into it.
  EntryPointBuilder(mlir::LLVM::LLVMFuncOp func, mlir::RewriterBase &builder,
                    RuntimeFunctionBuilder &runtime);

  mlir::RewriterBase &getBuilder() { return builder; }
  mlir::LLVM::LLVMFuncOp getFunction() { return func; }
  mlir::Value getArgument(unsigned index) { return func.getArgument(index); }
  mlir::Type getI32Type() { return builder.getI32Type(); }
  mlir::Type getI64Type() { return builder.getI64Type(); }
  mlir::Type getPtrType() {
    return mlir::LLVM::LLVMPointerType::get(builder.getContext());
  }

  mlir::Value i32(mlir::Location loc, int64_t value);
  mlir::Value i64(mlir::Location loc, int64_t value);
  mlir::Value f64(mlir::Location loc, double value);
  mlir::Value null(mlir::Location loc);
  mlir::Value addressOf(mlir::Location loc, mlir::LLVM::GlobalOp global);
  /// The address of element `index` of the array global `array`.
  mlir::Value elementAddress(mlir::Location loc, mlir::LLVM::GlobalOp array,
                             int64_t index);
  /// The address of element `index` (an i64 value) of `array`.
  mlir::Value elementAddress(mlir::Location loc, mlir::LLVM::GlobalOp array,
                             mlir::Value index);
  /// Element `index` (an i64 value) of the array global `array`.
  mlir::Value loadElement(mlir::Location loc, mlir::LLVM::GlobalOp array,
                          mlir::Value index, mlir::Type elementType);
  /// Element `index` of the array global `array`, loaded once per function.
  mlir::Value loadElement(mlir::Location loc, mlir::LLVM::GlobalOp array,
                          int64_t index, mlir::Type elementType);
  /// A GEP index of `value`: a constant where GEPOp can hold it, else an
  /// i64 value. GEPArg keeps constants in kGEPConstantBitWidth (29) signed
  /// bits and silently wraps larger ones, which once placed gradients of a
  /// full-width layer 2^29 bytes before their bucket slice.
  mlir::LLVM::GEPArg gepIndex(mlir::Location loc, int64_t value);
  /// `base + bytes`.
  mlir::Value offsetPointer(mlir::Location loc, mlir::Value base,
                            int64_t bytes);
  /// A stack slot for `count` values of `type`, allocated at the function's
  /// entry so that it is one frame slot however often the step runs.
  mlir::Value allocaAtEntry(mlir::Location loc, mlir::Type type, int64_t count);

  /// Calls `function` and returns from the entry point with its status if
  /// it failed; continues in a new block (or, with deferred checks, in the
  /// same block until emitDeferredChecks).
  void callChecked(mlir::Location loc, RuntimeFunction function,
                   mlir::ValueRange arguments);
  /// From now on, callChecked only records its call. In the step, whose
  /// block still holds the ops not lowered yet, splitting the block after
  /// each call would move the rest of the step every time: quadratic.
  void deferChecks() { deferred = true; }
  /// Checks the status of every recorded call, splitting the block after
  /// each, last call first, so that every op moves once.
  void emitDeferredChecks();
  /// Emits `for (i = 0; i < count; ++i) body(i)` with an i64 `i`; the
  /// builder continues after the loop.
  void forEach(mlir::Location loc, int64_t count,
               llvm::function_ref<void(mlir::Value)> body);
  /// Emits `if (condition) thenBody(); else elseBody();`; the builder
  /// continues after both.
  void ifElse(mlir::Location loc, mlir::Value condition,
              llvm::function_ref<void()> thenBody,
              llvm::function_ref<void()> elseBody);

  void returnStatus(mlir::Location loc, mlir::Value status);
  void returnOk(mlir::Location loc);

private:
  mlir::Value constant(mlir::Location loc, mlir::TypedAttr value);
  /// Branches on `status` after the insertion point: on to `next` if it is
  /// DDPRT_OK, else to the failure block.
  void branchOnStatus(mlir::Location loc, mlir::Value status,
                      mlir::Block *next);
  /// The block that returns a failed status, made on first use.
  mlir::Block *getFailureBlock();

  mlir::LLVM::LLVMFuncOp func;
  mlir::RewriterBase &builder;
  RuntimeFunctionBuilder &runtime;
  mlir::Block *failureBlock = nullptr;
  llvm::DenseMap<std::pair<mlir::Operation *, int64_t>, mlir::Value>
      loadedElements;
  llvm::DenseMap<mlir::Attribute, mlir::Value> constants;
  bool deferred = false;
  llvm::SmallVector<mlir::LLVM::CallOp> uncheckedCalls;
};

/// What the conversion consults, built before it from the unchanged IR and
/// only read by the patterns.
struct ProgramLowering::Impl {
  /// Plans `module`; emits an error at the offending op and fails otherwise.
  static mlir::FailureOr<std::unique_ptr<Impl>>
  build(mlir::ModuleOp module, ProgramLoweringOptions options);

  StoragePlan plan;
  ProgramLoweringOptions options;
  /// The lengths of the step's stack arrays for ddprt_compute's operands
  /// and ddprt_join's handles (0: no array): the runtime reads them only
  /// during the call, so one array per kind serves every op.
  size_t maxInputs = 0, maxResults = 0, maxJoined = 0;
  /// The groups (plan.groups indices, ascending) whose rank a rank view of
  /// the plan needs: the step asks the runtime for them at its start.
  llvm::SmallVector<unsigned> rankViewGroups;
};

/// What one rewrite of the program builds while it lowers the mesh and the
/// step: the program's globals and strings, the runtime declarations, and
/// the step's builder. The program pattern makes one per rewrite and drops
/// it after, so that no pattern sees state another pattern left.
struct ProgramBuilder {
  ProgramBuilder(mlir::ModuleOp module, const ProgramLowering::Impl &program)
      : module(module), program(program), plan(program.plan),
        options(program.options), runtime(module) {}

  /// Creates the program's array globals (buffers, parameter ids and data,
  /// groups).
  void createGlobals(mlir::RewriterBase &rewriter);
  /// The NUL-terminated constant string `text`, one global per text.
  mlir::LLVM::GlobalOp getString(mlir::RewriterBase &rewriter,
                                 mlir::Location loc, llvm::StringRef text);

  /// The pointer to `storage` in the function of `entry`.
  mlir::Value getPointer(EntryPointBuilder &entry, mlir::Location loc,
                         Storage storage);
  mlir::Value getParamData(EntryPointBuilder &entry, mlir::Location loc,
                           mlir::FlatSymbolRefAttr param);
  mlir::Value getParamId(EntryPointBuilder &entry, mlir::Location loc,
                         mlir::FlatSymbolRefAttr param);
  /// The group of mesh axes `axes`.
  mlir::Value getGroup(EntryPointBuilder &entry, mlir::Location loc,
                       mlir::ArrayAttr axes);
  /// Asks the runtime, at the start of the step, for this rank's index in
  /// every group a rank view of the plan needs (groupRanks).
  void queryGroupRanks(EntryPointBuilder &step, mlir::Location loc);

  mlir::ModuleOp module;
  const ProgramLowering::Impl &program;
  const StoragePlan &plan;
  const ProgramLoweringOptions &options;
  RuntimeFunctionBuilder runtime;

  mlir::LLVM::GlobalOp arenasGlobal, buffersGlobal, paramIdsGlobal, paramDataGlobal,
      groupsGlobal;
  llvm::StringMap<mlir::LLVM::GlobalOp> strings;

  /// The builder of ddp_program_step, while the step is lowered.
  std::unique_ptr<EntryPointBuilder> step;
  /// The step's stack arrays (ProgramLowering::Impl::maxInputs, ...).
  mlir::Value inputArray, resultArray, joinArray;
  /// This rank's index (i64) in each group of the plan a rank view uses.
  llvm::DenseMap<unsigned, mlir::Value> groupRanks;
};

/// Replaces the results of a step op: each tensor by the pointer to its
/// planned storage unless the lowering gives another value, each token by
/// the handle slot the lowering gives.
class StepOpLowering {
public:
  StepOpLowering(ProgramBuilder &program, mlir::Operation *op);

  EntryPointBuilder &entry() { return *program.step; }
  mlir::Value context() { return entry().getArgument(0); }
  mlir::Value i32(int64_t value) { return entry().i32(loc, value); }
  mlir::Value i64(int64_t value) { return entry().i64(loc, value); }
  mlir::Value f64(double value) { return entry().f64(loc, value); }
  mlir::Value str(llvm::StringRef text);
  void call(RuntimeFunction function, mlir::ValueRange arguments) {
    entry().callChecked(loc, function, arguments);
  }
  /// The pointer to the planned storage of result `index`.
  mlir::Value result(unsigned index = 0);
  /// Replaces result `index` with `value`.
  void setResult(unsigned index, mlir::Value value) { results[index] = value; }
  /// The handle slot of an async op's token (it becomes the token's value),
  /// or null for a synchronous one.
  mlir::Value handleArgument();
  /// Calls the collective `function` with `arguments` and the handle slot
  /// (handleArgument()) last. An op issued after others (`async after`)
  /// first orders the communication after each of `dependencySlots`
  /// (ddprt_comm_wait), and its handle then joins theirs, which it
  /// consumes.
  void callCollective(RuntimeFunction function,
                      llvm::SmallVector<mlir::Value> arguments,
                      mlir::ValueRange dependencySlots);
  /// The group of the collective being lowered.
  mlir::Value getGroup() {
    return getGroup(mlir::cast<CollectiveOpInterface>(op).getAxesAttr());
  }
  mlir::Value getGroup(mlir::ArrayAttr axes) {
    return program.getGroup(entry(), loc, axes);
  }

  /// Replaces the op with its results, which it returns.
  llvm::ArrayRef<mlir::Value> finish(mlir::RewriterBase &rewriter);

  ProgramBuilder &program;
  mlir::Operation *op;
  mlir::Location loc;

private:
  llvm::SmallVector<mlir::Value> results;
};

/// The lowering of one kind of step op, called by the step's lowering in
/// block order with the op's converted operands.
class StepOpLowerer {
public:
  virtual ~StepOpLowerer() = default;
  virtual void lowerOp(mlir::Operation *op, mlir::ValueRange operands,
                       StepOpLowering &step) const = 0;
};

/// The lowering of the step op `Op`.
template <typename Op> class StepOpPattern : public StepOpLowerer {
public:
  using OpType = Op;
  using Adaptor = typename Op::Adaptor;

  void lowerOp(mlir::Operation *op, mlir::ValueRange operands,
               StepOpLowering &step) const final {
    auto concrete = mlir::cast<Op>(op);
    lower(concrete, Adaptor(operands, concrete), step);
  }

protected:
  /// Emits the runtime calls of `op` at the rewriter's insertion point.
  virtual void lower(Op op, Adaptor adaptor, StepOpLowering &step) const = 0;
};

/// The step ops ddp lowers, each with its lowering.
class StepOpLowerers {
public:
  template <typename... Lowerings> void add() {
    (lowerings.try_emplace(mlir::TypeID::get<typename Lowerings::OpType>(),
                           std::make_unique<Lowerings>()),
     ...);
  }
  /// The one lowering of every CollectiveOpInterface op.
  void setCollectiveLowering(std::unique_ptr<StepOpLowerer> lowering) {
    collectiveLowering = std::move(lowering);
  }
  /// The lowering of `op`, or null.
  const StepOpLowerer *lookup(mlir::Operation *op) const {
    if (mlir::isa<CollectiveOpInterface>(op))
      return collectiveLowering.get();
    auto it = lowerings.find(op->getName().getTypeID());
    return it == lowerings.end() ? nullptr : it->second.get();
  }
  bool contains(mlir::OperationName name) const {
    if (name.hasInterface<CollectiveOpInterface>())
      return collectiveLowering != nullptr;
    return lowerings.count(name.getTypeID());
  }

  /// Every lowering of the step's ops, made once.
  static const StepOpLowerers &get();

private:
  llvm::DenseMap<mlir::TypeID, std::unique_ptr<StepOpLowerer>> lowerings;
  std::unique_ptr<StepOpLowerer> collectiveLowering;
};

/// The program's patterns (ProgramPatterns.cpp); `program` null: each
/// rewrite plans the module itself.
void populateProgramPatterns(const mlir::LLVMTypeConverter &converter,
                             mlir::RewritePatternSet &patterns,
                             const ProgramLowering::Impl *program);
void populateComputePatterns(StepOpLowerers &lowerers);
void populateCollectivePatterns(StepOpLowerers &lowerers);

} // namespace ddp

#endif // DDP_LIB_CONVERSION_DDPTOLLVM_PROGRAMLOWERINGIMPL_H
