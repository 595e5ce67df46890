//===- LowerToRuntime.cpp - ddp to calls of libddprt in LLVM IR -----------===//
//
// The pass ddp-lower-to-runtime: StoragePlan decides where every tensor
// lives, then one full dialect conversion lowers the ddp ops (the patterns of
// DDPToLLVM.h) together with the func and arith ops a step may hold. The
// conversion rolls back when an op cannot be lowered, so that a failure
// leaves the IR as it was.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/Passes.h"

#include "ProgramLoweringImpl.h"

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Runtime/ddp_program.h"
#include "ddp/Support/CheckedCount.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Transforms/DialectConversion.h"

namespace ddp {
#define GEN_PASS_DEF_LOWERDDPTORUNTIME
#include "ddp/Conversion/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {
struct LowerDDPToRuntimePass
    : public ddp::impl::LowerDDPToRuntimeBase<LowerDDPToRuntimePass> {
  using LowerDDPToRuntimeBase::LowerDDPToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    FailureOr<std::unique_ptr<ProgramLowering>> program =
        ProgramLowering::plan(module,
                              {paramPrefix, abiVersion, reuseBuffers});
    if (failed(program))
      return signalPassFailure();
    const StoragePlan &plan = (*program)->getImpl().plan;
    if (validateStorage && failed(verifyStoragePlan(plan)))
      return signalPassFailure();
    if (failed(recordStatistics(plan)))
      return signalPassFailure();

    LLVMTypeConverter converter(context);
    populateDDPToLLVMTypeConversions(converter);
    RewritePatternSet patterns(context);
    populateDDPToLLVMConversionPatterns(converter, patterns, **program);
    // What else a step may hold: scalar arith and calls of declared
    // functions (docs/Lowering.md, "Composing with other lowerings").
    populateFuncToLLVMConversionPatterns(converter, patterns);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*context);
    target.addLegalOp<ModuleOp>();
    configureDDPToLLVMConversionTarget(target);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    (*program)->finalize(module);
    numRuntimeCalls = countRuntimeCalls(module);
  }

  /// The calls of ddprt_* functions in ddp_program_step.
  static int64_t countRuntimeCalls(ModuleOp module) {
    auto step = module.lookupSymbol<LLVM::LLVMFuncOp>(DDP_PROGRAM_SYM_STEP);
    int64_t calls = 0;
    step.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> callee = call.getCallee();
      calls += callee && callee->starts_with("ddprt_");
    });
    return calls;
  }

  /// Fails, before anything is rewritten, when the buffers add up to more
  /// bytes than int64 counts: no rank could allocate them.
  LogicalResult recordStatistics(const StoragePlan &plan) {
    numBuffers = plan.buffers.size();
    numArenas = plan.arenas.size();
    CheckedCount bytes;
    for (const PlannedBuffer &arena : plan.arenas)
      bytes += arena.getBytes();
    if (!bytes.fits())
      return emitError(func::FuncOp(plan.step).getLoc(),
          "the step's buffers (activations, gradients and buckets) add up to "
          "more than 2^63 - 1 bytes; no rank could allocate them");
    numBufferBytes = *bytes.get();
    numGradientsInBuckets = plan.numGradientsInBuckets;
    numInPlaceReduceScatters = plan.numInPlaceReduceScatters;
    numInPlaceAllGathers = plan.numInPlaceAllGathers;
    numInPlaceAllReduces = plan.numInPlaceAllReduces;
    numInPlaceScales = plan.numInPlaceScales;
    int64_t copies = 0;
    for (auto &entry : plan.packCopies)
      copies += entry.second.size();
    numPackCopies = copies;
    numParamCopies = plan.copiedParams.size();
    int64_t getParams =
        llvm::range_size(func::FuncOp(plan.step).getBody().front().getOps<GetParamOp>());
    numParamAliases = getParams - plan.copiedParams.size();
    return success();
  }
};
} // namespace
