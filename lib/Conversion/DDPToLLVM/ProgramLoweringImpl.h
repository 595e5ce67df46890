//===- ProgramLoweringImpl.h - State the ddp patterns share -----*- C++ -*-===//
//
// The parts of ProgramLowering the patterns of ProgramPatterns.cpp,
// ComputePatterns.cpp and CollectivePatterns.cpp use: the storage plan, the
// program's globals and the builder of runtime-call chains.
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

  void returnStatus(mlir::Location loc, mlir::Value status);
  void returnOk(mlir::Location loc);

  int64_t getNumCalls() const { return numCalls; }

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
  int64_t numCalls = 0;
  bool deferred = false;
  llvm::SmallVector<mlir::LLVM::CallOp> uncheckedCalls;
};

struct ProgramLowering::Impl {
  Impl(mlir::ModuleOp module, StoragePlan plan, ProgramLoweringOptions options)
      : module(module), plan(std::move(plan)), options(std::move(options)),
        runtime(module) {}

  /// Creates the program's array globals (buffers, parameter ids and data,
  /// groups) on first call.
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

  /// Whether `op` is in the step that is being lowered (its body has moved
  /// into ddp_program_step).
  bool isInStep(mlir::Operation *op) const;

  mlir::ModuleOp module;
  StoragePlan plan;
  ProgramLoweringOptions options;
  RuntimeFunctionBuilder runtime;

  bool globalsCreated = false;
  mlir::LLVM::GlobalOp buffersGlobal, paramIdsGlobal, paramDataGlobal,
      groupsGlobal;
  llvm::StringMap<mlir::LLVM::GlobalOp> strings;

  /// The builder of ddp_program_step, made by the step's pattern.
  std::unique_ptr<EntryPointBuilder> step;
  /// The step's stack arrays for ddprt_compute's operands and ddprt_join's
  /// handles: the runtime reads them only during the call, so one array per
  /// kind, as long as the longest list, serves every op.
  mlir::Value inputArray, resultArray, joinArray;
  /// This rank's index (i64) in each group of the plan a rank view uses.
  llvm::DenseMap<unsigned, mlir::Value> groupRanks;
};

/// Replaces the results of a step op: each tensor by the pointer to its
/// planned storage unless the pattern gives another value, each token by
/// the handle slot the pattern gives.
class StepOpLowering {
public:
  StepOpLowering(ProgramLowering::Impl &program, mlir::Operation *op);

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

  /// Replaces the op with its results.
  void finish(mlir::ConversionPatternRewriter &rewriter);

  ProgramLowering::Impl &program;
  mlir::Operation *op;
  mlir::Location loc;

private:
  llvm::SmallVector<mlir::Value> results;
};

/// A pattern for one op of the step.
template <typename Op>
class StepOpPattern : public mlir::ConvertOpToLLVMPattern<Op> {
public:
  using Adaptor = typename Op::Adaptor;
  StepOpPattern(const mlir::LLVMTypeConverter &converter,
                ProgramLowering::Impl &program)
      : mlir::ConvertOpToLLVMPattern<Op>(converter), program(program) {}

  mlir::LogicalResult
  matchAndRewrite(Op op, Adaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const final {
    if (!program.isInStep(op))
      return rewriter.notifyMatchFailure(op, "not in the step being lowered");
    StepOpLowering lowering(program, op);
    lower(op, adaptor, lowering);
    lowering.finish(rewriter);
    return mlir::success();
  }

protected:
  /// Emits the runtime calls of `op` at the rewriter's insertion point.
  virtual void lower(Op op, Adaptor adaptor, StepOpLowering &step) const = 0;

  ProgramLowering::Impl &program;
};

void populateProgramPatterns(const mlir::LLVMTypeConverter &converter,
                             mlir::RewritePatternSet &patterns,
                             ProgramLowering::Impl &program);
void populateComputePatterns(const mlir::LLVMTypeConverter &converter,
                             mlir::RewritePatternSet &patterns,
                             ProgramLowering::Impl &program);
void populateCollectivePatterns(const mlir::LLVMTypeConverter &converter,
                                mlir::RewritePatternSet &patterns,
                                ProgramLowering::Impl &program);

} // namespace ddp

#endif // DDP_LIB_CONVERSION_DDPTOLLVM_PROGRAMLOWERINGIMPL_H
