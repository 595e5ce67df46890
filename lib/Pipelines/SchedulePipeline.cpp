//===- SchedulePipeline.cpp - The ddp-schedule pass pipeline --------------===//

#include "ddp/Pipelines/SchedulePipeline.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Dialect/DDP/Transforms/ScheduleMark.h"

#include "CandidateModule.h"
#include "FsdpChoice.h"
#include "MoEOverlapChoice.h"
#include "PipelineBucketChoice.h"
#include "ScheduleOptions.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"


using namespace mlir;
using namespace ddp;

// Each pass's options from the pipeline's (static functions: each file that
// uses them has its own; ScheduleOptions.cpp includes them too).
#define GEN_PIPELINE_OPTIONS_DEF
#include "ddp/Pipelines/SchedulePipeline.h.inc"

/// Whether some op of `module` is of a pipeline stage's program.
static bool isPipelined(ModuleOp module) {
  return module
      .walk([](Operation *op) {
        return getPipelineStage(op) ? WalkResult::interrupt()
                                    : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Adds the passes `options` ask for.
/// The passes up to the data-parallel schedule, which no option of the
/// compute schedule (batch-split, the tensor-parallel overlap, the delayed
/// weight gradients) changes.
/// Without `withShardParams`, all but the last: what the FSDP candidates
/// of policy=auto share.
static void addDataParallelPasses(OpPassManager &pm,
                                  const SchedulePipelineOptions &options,
                                  bool withShardParams = true) {
  // First: a pipelined step becomes one program per pipeline rank, and
  // the passes below schedule each rank's program.
  pm.addPass(createPipelineStages(getPipelineStagesPassOptions(options)));
  // Before the buckets: they and the overlaps below follow the final order.
  if (options.overlapMoeExpertParallelComm)
    pm.addNestedPass<func::FuncOp>(
        createCombined1F1B(getCombined1F1BPassOptions(options)));
  pm.addNestedPass<func::FuncOp>(
      createAssignBuckets(getAssignBucketsOptions(options)));
  if (!options.printBucketLayout.empty()) {
    PrintBucketLayoutOptions print;
    print.outputPath = options.printBucketLayout;
    print.useDistributedOptimizer = options.useDistributedOptimizer;
    pm.addPass(createPrintBucketLayout(print));
  }
  pm.addNestedPass<func::FuncOp>(createBucketize());
  // A module pass: with several instances it splits the mesh's axis.
  if (options.useDistributedOptimizer)
    pm.addPass(
        createDistributeOptimizer(getDistributeOptimizerPassOptions(options)));
  // Both overlaps need the all-to-alls asynchronous, waited for at their
  // first reader.
  if (options.sharedExpertOverlap || options.overlapMoeExpertParallelComm) {
    OverlapMoeCommOptions moeComm;
    moeComm.sharedExpertOverlap = true;
    pm.addNestedPass<func::FuncOp>(createOverlapMoeComm(moeComm));
  }
  if (options.overlapGradReduce)
    pm.addNestedPass<func::FuncOp>(createOverlapGradReduce());
  // Last on the step: the gathers go before the first use of their
  // parameters in the final order of the other ops.
  bool fullySharded = options.dataParallelShardingStrategy ==
                      ShardingStrategy::OptimGradsParams;
  if (options.overlapParamGather || fullySharded)
    pm.addNestedPass<func::FuncOp>(
        createOverlapParamGather(getOverlapParamGatherPassOptions(options)));
  // The units' gathers replace those ddp-overlap-param-gather put at the
  // start of the step.
  if (fullySharded && withShardParams)
    pm.addNestedPass<func::FuncOp>(
        createShardParams(getShardParamsPassOptions(options)));
}

/// The passes after addDataParallelPasses: the compute schedule, and the
/// order check.
static void addComputePasses(OpPassManager &pm,
                             const SchedulePipelineOptions &options) {
  // Before the tensor-parallel overlap, which then takes the collectives
  // the slices leave synchronous (the backward's).
  if (options.batchSplit != TpCommNumSplits::get(1))
    pm.addPass(createSplitBatch(getSplitBatchPassOptions(options)));
  // After the data-parallel schedule, so that auto prices each GEMM's
  // split count beside the gradient reductions it will run with.
  if (options.tpCommOverlap)
    pm.addNestedPass<func::FuncOp>(
        createOverlapTpComm(getOverlapTpCommPassOptions(options)));
  // Last: the compute order fills the waits of the collectives the passes
  // above made asynchronous.
  if (options.wgradSchedule != WgradSchedule::InPlace)
    pm.addNestedPass<func::FuncOp>(
        createScheduleCompute(getScheduleComputePassOptions(options)));
  pm.addPass(createVerifyCollectiveOrder());
}

/// Adds the passes `options` ask for.
static void addSchedulePasses(OpPassManager &pm,
                              const SchedulePipelineOptions &options) {
  addDataParallelPasses(pm, options);
  addComputePasses(pm, options);
}

namespace {
/// The pipeline's one pass: the passes it runs depend on the options the
/// module records, so it builds them for each module and runs them as a
/// dynamic pipeline. A PassPipelineRegistration alone builds its passes when
/// the pipeline is parsed, before any module is read; and a pass declared in
/// Passes.td would hold the options as its own members, not as the
/// SchedulePipelineOptions that embedders and the tools build.
class SchedulePass : public PassWrapper<SchedulePass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SchedulePass)

  explicit SchedulePass(const SchedulePipelineOptions &options)
      : givenNames(options.getGivenOptionNames()) {
    given.copyOptionValuesFrom(options);
  }
  SchedulePass(const SchedulePass &other)
      : PassWrapper(other), givenNames(other.givenNames) {
    given.copyOptionValuesFrom(other.given);
  }

  StringRef getName() const override { return "DDPSchedule"; }
  StringRef getArgument() const override { return "ddp-schedule"; }
  StringRef getDescription() const override {
    return "The ddp-schedule pipeline with the module's recorded options";
  }

  /// `name=value` of the one recorded option that, left out, makes the
  /// given options and the other recorded ones pass the checks; nullopt
  /// when none does.
  std::optional<std::string> findConflictingRecorded() {
    auto recorded = getOperation()->getAttrOfType<DictionaryAttr>(
        kScheduleOptionsAttrName);
    if (!recorded)
      return std::nullopt;
    // The probes below are not the user's errors.
    ScopedDiagnosticHandler quiet(&getContext(),
                                  [](Diagnostic &) { return success(); });
    // Only where what the module records passes on its own: else the
    // recorded options are wrong whatever is given.
    SchedulePipelineOptions recordedAlone;
    if (failed(applyRecordedScheduleOptions(getOperation(), {},
                                            recordedAlone)))
      return std::nullopt;
    if (llvm::Error error = checkSchedulePipelineOptions(recordedAlone)) {
      llvm::consumeError(std::move(error));
      return std::nullopt;
    }
    for (NamedAttribute entry : recorded) {
      StringRef name = entry.getName().getValue();
      if (givenNames.contains(name))
        continue;
      llvm::StringSet<> without = givenNames;
      without.insert(name);
      SchedulePipelineOptions options;
      options.copyOptionValuesFrom(given);
      if (failed(applyRecordedScheduleOptions(getOperation(), without,
                                              options)))
        return std::nullopt;
      if (llvm::Error error = checkSchedulePipelineOptions(options)) {
        llvm::consumeError(std::move(error));
        continue;
      }
      std::string value =
          getRecordedOptionText(entry.getValue()).value_or("");
      return (name + "=" + value).str();
    }
    return std::nullopt;
  }

  void runOnOperation() override {
    // A scheduled step would come out as it went in, whatever the options.
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (std::optional<std::pair<Location, std::string>> mark =
              findScheduleMark(func, ScheduleMarks::Bucketing)) {
        emitError(mark->first)
            << "ddp-schedule: '@" << func.getSymName()
            << "' is scheduled already: " << mark->second
            << "; the options would change nothing, so schedule the "
               "unscheduled step (ddp-import's output) instead";
        return signalPassFailure();
      }
    }
    // fsdp-unit-prefetch replaces fsdp-prefetch: both given is a conflict
    // (a recorded one gives way to the other given, as applied below).
    if (isGivenUnderAnyName("fsdp-unit-prefetch", givenNames) &&
        isGivenUnderAnyName("fsdp-prefetch", givenNames)) {
      getOperation().emitError()
          << "ddp-schedule: fsdp-unit-prefetch and fsdp-prefetch both set how "
             "far ahead each unit is gathered; give one";
      return signalPassFailure();
    }
    SchedulePipelineOptions options;
    options.copyOptionValuesFrom(given);
    if (failed(
            applyRecordedScheduleOptions(getOperation(), givenNames, options)))
      return signalPassFailure();
    // Reported at the module, once, before any pass runs: the options
    // given fail on their own (one that needs another the module does not
    // record either), or only with what the module records.
    if (llvm::Error error = checkSchedulePipelineOptions(options)) {
      std::string reason = llvm::toString(std::move(error));
      llvm::Error givenError = checkSchedulePipelineOptions(given);
      if (givenError && llvm::toString(std::move(givenError)) == reason) {
        getOperation().emitError() << "ddp-schedule: " << reason;
        return signalPassFailure();
      }
      // The recorded option that the given ones conflict with: the fix is
      // to give it too (a log recorded overlap-param-gather, the options
      // turn the distributed optimizer off), not what the reason asks of
      // the given one.
      if (std::optional<std::string> culprit = findConflictingRecorded()) {
        getOperation().emitError()
            << "ddp-schedule: the module records " << *culprit << " ('"
            << kScheduleOptionsAttrName << "'), which the options given "
            << "contradict: " << reason << "; give "
            << StringRef(*culprit).split('=').first << "="
            << (StringRef(*culprit).ends_with("=true")    ? "false"
                : StringRef(*culprit).ends_with("=false") ? "true"
                                                          : "<value>")
            << " too";
        return signalPassFailure();
      }
      getOperation().emitError()
          << "'" << kScheduleOptionsAttrName
          << "' records options that ddp-schedule rejects: " << reason;
      return signalPassFailure();
    }
    // The fully sharded step's own options, given without it, would change
    // nothing (recorded ones are a log's flags, which Megatron ignores
    // likewise).
    if (options.dataParallelShardingStrategy !=
        ShardingStrategy::OptimGradsParams)
      for (StringRef name : getFullyShardedOptionNames())
        if (isGivenUnderAnyName(name, givenNames)) {
          getOperation().emitError()
              << "ddp-schedule: " << name
              << " shapes the fully sharded step, which "
                 "data-parallel-sharding-strategy=optim_grads_params builds "
                 "(with use-distributed-optimizer=true); give it, or drop "
              << name;
          return signalPassFailure();
        }
    // The units are gathered in the step whatever overlap-param-gather
    // says; a log's recorded false (Megatron-FSDP's own gathers) is no
    // conflict, but the user's own is.
    if (options.dataParallelShardingStrategy ==
            ShardingStrategy::OptimGradsParams &&
        givenNames.contains("overlap-param-gather") &&
        !options.overlapParamGather) {
      getOperation().emitError()
          << "ddp-schedule: data-parallel-sharding-strategy="
             "optim_grads_params gathers each unit where it is read, in the "
             "step; drop overlap-param-gather=false";
      return signalPassFailure();
    }
    // policy=auto makes the compute schedule's choices too, unless given or
    // recorded: each is kept only where it ends the simulated step sooner.
    // First, so that the choices below are priced with them.
    if (options.policy == BucketPolicy::Auto) {
      if (!isGivenOrRecorded("wgrad-schedule"))
        options.wgradSchedule = WgradSchedule::Auto;
      if (!isGivenOrRecorded("batch-split"))
        options.batchSplit = TpCommNumSplits::getAuto();
    }
    if (failed(chooseMoEOverlap(options)) ||
        failed(chooseDelayWgrad(options)) || failed(chooseFsdp(options)))
      return signalPassFailure();
    FailureOr<bool> chosen = choosePipelineLayouts(options);
    if (failed(chosen))
      return signalPassFailure();
    if (!*chosen) {
      chosen = chooseBatchSplit(options);
      if (failed(chosen))
        return signalPassFailure();
    }
    OpPassManager pm(ModuleOp::getOperationName());
    addSchedulePasses(pm, options);
    // --mlir-timing lists these passes beside DDPSchedule, not under it, and
    // so its "Rest" goes negative: MLIR's PassTiming nests a dynamic
    // pipeline only under a pass adaptor (LLVM 22), not under the pass that
    // runs it. The passes' own times are right.
    if (!*chosen && failed(runPipeline(pm, getOperation()))) {
      signalPassFailure();
      return;
    }
    // The profile the step was scheduled for, given here, joins the
    // recorded options: ddp-simulate (and a later reader) predicts for the
    // same machine without being told again.
    // A profile file by its absolute path, so that a run from another
    // directory finds it; a value the option parser could not read back
    // is not recorded.
    SmallString<256> hw(options.hardware.getValue());
    if (llvm::sys::fs::exists(hw))
      (void)llvm::sys::fs::make_absolute(hw);
    if (givenNames.contains("hw") && quoteOptionValue(hw)) {
      recordOptions(getOperation(),
                    {{"hw", StringAttr::get(&getContext(), hw)}});
    }
  }

private:
  /// policy=auto on a step Megatron would run its combined 1F1B on, with
  /// overlap-moe-expert-parallel-comm neither given nor recorded and no
  /// moe-shared-expert-overlap (which Megatron does not run beside it):
  /// the overlap on or off, whichever is faster.
  LogicalResult chooseMoEOverlap(SchedulePipelineOptions &options) {
    static constexpr StringLiteral kName = "overlap-moe-expert-parallel-comm";
    if (options.policy != BucketPolicy::Auto || isGivenOrRecorded(kName) ||
        options.sharedExpertOverlap ||
        !isBatchLevelOverlapCandidate(getOperation()))
      return success();
    return chooseFlag(kName, options,
                      [](SchedulePipelineOptions &candidate, bool on) {
                        candidate.overlapMoeExpertParallelComm = on;
                      });
  }

  /// policy=auto with the combined 1F1B on (chosen, given or recorded) and
  /// delay-wgrad-compute neither given nor recorded: the delayed weight
  /// gradients on or off, whichever is faster.
  LogicalResult chooseDelayWgrad(SchedulePipelineOptions &options) {
    static constexpr StringLiteral kName = "delay-wgrad-compute";
    if (options.policy != BucketPolicy::Auto ||
        !options.overlapMoeExpertParallelComm || isGivenOrRecorded(kName))
      return success();
    return chooseFlag(kName, options,
                      [](SchedulePipelineOptions &candidate, bool on) {
                        candidate.delayWgradCompute = on;
                      });
  }

  /// policy=auto with data-parallel-sharding-strategy=optim_grads_params
  /// on a step without pipeline stages: fsdp-prefetch and
  /// reshard-after-forward as chooseFsdpSchedule picks them where neither
  /// is given nor recorded, recorded with the module's schedule options.
  LogicalResult chooseFsdp(SchedulePipelineOptions &options) {
    ModuleOp module = getOperation();
    static constexpr StringLiteral kPrefetch = "fsdp-prefetch",
                                   kReshard = "reshard-after-forward",
                                   kKeep = "fsdp-keep-last-units",
                                   kUnitPrefetch = "fsdp-unit-prefetch";
    if (options.policy != BucketPolicy::Auto ||
        options.dataParallelShardingStrategy !=
            ShardingStrategy::OptimGradsParams ||
        isPipelined(module))
      return success();
    FsdpChoiceOptions choice;
    if (isGivenOrRecorded(kPrefetch))
      choice.prefetch = options.fsdpPrefetch;
    if (isGivenOrRecorded(kReshard))
      choice.reshardAfterForward = options.reshardAfterForward;
    if (isGivenOrRecorded(kKeep))
      choice.keepLastUnits = options.fsdpKeepLastUnits;
    choice.unitPrefetchGiven = !options.fsdpUnitPrefetch.empty();
    if ((choice.prefetch || choice.unitPrefetchGiven) &&
        choice.reshardAfterForward && choice.keepLastUnits)
      return success();
    // Megatron-FSDP's prefetch budget or double buffers decide instead.
    if (options.suggestedCommunicationUnitSize > 0 || options.fsdpDoubleBuffer)
      return success();
    choice.hardware = options.hardware.getValue();
    choice.dataParallelSize = options.dataParallelSize;
    choice.moeImbalance = options.moeImbalance;
    choice.memoryCapBytes = int64_t(options.memoryCapGib * double(1ll << 30));
    FailureOr<FsdpSchedule> chosen = failure();
    {
      ScopedDiagnosticHandler quiet(&getContext(),
                                    [](Diagnostic &) { return success(); });
      // The data-parallel schedule up to the units' gathers is the same for
      // every candidate: made once, on a copy each candidate copies.
      ModuleOp shared = createCandidateModule(module);
      llvm::scope_exit eraseShared([&] { shared.erase(); });
      OpPassManager before(ModuleOp::getOperationName());
      addDataParallelPasses(before, options, /*withShardParams=*/false);
      if (failed(runPipeline(before, shared)))
        return success();
      chosen = chooseFsdpSchedule(
          shared, choice, [&](FsdpSchedule candidate, ModuleOp copy) {
            SchedulePipelineOptions candidateOptions;
            candidateOptions.copyOptionValuesFrom(options);
            candidateOptions.fsdpPrefetch = candidate.prefetch;
            candidateOptions.reshardAfterForward =
                candidate.reshardAfterForward;
            candidateOptions.fsdpKeepLastUnits = candidate.keepLastUnits;
            if (!candidate.unitPrefetch.empty())
              candidateOptions.fsdpUnitPrefetch =
                  formatUnitPrefetch(candidate.unitPrefetch);
            candidateOptions.printBucketLayout = "";
            // The compute schedule's own choices (each a search of
            // simulated candidates) are made once, on the chosen FSDP
            // schedule: pricing every FSDP candidate with them took 16 s of
            // 17 on gpt3-175b. Given counts stay.
            if (candidateOptions.wgradSchedule == WgradSchedule::Auto)
              candidateOptions.wgradSchedule = WgradSchedule::InPlace;
            if (candidateOptions.batchSplit.getValue().isAuto())
              candidateOptions.batchSplit = TpCommNumSplits::get(1);
            OpPassManager pm(ModuleOp::getOperationName());
            pm.addNestedPass<func::FuncOp>(
                createShardParams(getShardParamsPassOptions(candidateOptions)));
            addComputePasses(pm, candidateOptions);
            return runPipeline(pm, copy);
          });
    }
    // The schedule then runs as asked, and reports why.
    if (failed(chosen))
      return success();
    options.fsdpPrefetch = chosen->prefetch;
    options.reshardAfterForward = chosen->reshardAfterForward;
    options.fsdpKeepLastUnits = chosen->keepLastUnits;
    Builder builder(&getContext());
    SmallVector<std::pair<StringRef, Attribute>> recorded = {
        {kPrefetch, builder.getI64IntegerAttr(chosen->prefetch)},
        {kReshard, builder.getBoolAttr(chosen->reshardAfterForward)},
        {kKeep, builder.getI64IntegerAttr(chosen->keepLastUnits)}};
    if (!chosen->unitPrefetch.empty()) {
      options.fsdpUnitPrefetch = formatUnitPrefetch(chosen->unitPrefetch);
      recorded.push_back(
          {kUnitPrefetch, builder.getStringAttr(options.fsdpUnitPrefetch)});
    }
    recordOptions(module, recorded);
    return success();
  }

  /// batch-split=auto: ddp-split-batch prices its counts on the step before
  /// the passes after it (the tensor-parallel overlap, the delayed weight
  /// gradients). So the data-parallel schedule, which no count changes,
  /// runs once; then the rest runs on two copies, one split as the pass
  /// chooses and one left whole, each is simulated, and the faster becomes
  /// the module (the function records the count, `ddp.batch_split`). True
  /// when the module is then scheduled.
  FailureOr<bool> chooseBatchSplit(SchedulePipelineOptions &options) {
    if (!options.batchSplit.getValue().isAuto())
      return false;
    ModuleOp module = getOperation();
    // A pipelined step's candidates would be priced rank by rank with the
    // other ranks' programs; the count is the pass's own choice there
    // (docs/ComputeScheduling.md).
    if (isPipelined(module))
      return false;
    FailureOr<CandidatePricing> pricing = getCandidatePricing(
        module, options.hardware.getValue(),
        options.dataParallelSize.getValue(), options.moeImbalance.getValue());
    if (failed(pricing))
      return failure();
    OpPassManager dataParallel(ModuleOp::getOperationName());
    addDataParallelPasses(dataParallel, options);
    if (failed(runPipeline(dataParallel, module)))
      return failure();
    ModuleOp best;
    double bestTime = 0;
    for (bool split : {false, true}) {
      ModuleOp candidate = createCandidateModule(module);
      SchedulePipelineOptions candidateOptions;
      candidateOptions.copyOptionValuesFrom(options);
      if (!split)
        candidateOptions.batchSplit = TpCommNumSplits::get(1);
      OpPassManager compute(ModuleOp::getOperationName());
      addComputePasses(compute, candidateOptions);
      // The candidates' errors are not the user's: one that fails is not
      // chosen; if both do, the schedule runs again to report why.
      std::optional<double> time;
      {
        ScopedDiagnosticHandler quiet(&getContext(),
                                      [](Diagnostic &) { return success(); });
        FailureOr<func::FuncOp> step = failure();
        if (succeeded(runPipeline(compute, candidate)))
          step = sim::findStepToSimulate(candidate, "");
        if (succeeded(step))
          if (FailureOr<sim::SimResult> result =
                  sim::simulateStep(*step, pricing->model, pricing->options);
              succeeded(result))
            time = result->stepTime;
      }
      if (!time || (best && *time >= bestTime)) {
        candidate.erase();
        continue;
      }
      if (best)
        best.erase();
      best = candidate;
      bestTime = *time;
    }
    if (!best) {
      OpPassManager compute(ModuleOp::getOperationName());
      addComputePasses(compute, options);
      if (failed(runPipeline(compute, module)))
        return failure();
      return true;
    }
    // The faster candidate's ops and attributes become the module's.
    SmallVector<Operation *> old;
    for (Operation &op : *module.getBody())
      if (&op != best.getOperation())
        old.push_back(&op);
    for (Operation *op : llvm::reverse(old))
      op->erase();
    for (NamedAttribute attr : best->getDiscardableAttrs())
      module->setAttr(attr.getName(), attr.getValue());
    module.getBody()->getOperations().splice(
        module.getBody()->end(), best.getBody()->getOperations());
    best.erase();
    return true;
  }

  bool isGivenOrRecorded(StringRef name) {
    auto recorded =
        getOperation()->getAttrOfType<DictionaryAttr>(kScheduleOptionsAttrName);
    return givenNames.contains(name) || (recorded && recorded.contains(name));
  }

  /// Schedules the step with the flag `name` off and on (`set`), with every
  /// other decision, simulates both, keeps the faster in `options` and
  /// records it with the module's schedule options. The candidates' errors
  /// are not the user's: a candidate that fails is not chosen, and the
  /// schedule that runs reports its own.
  LogicalResult
  chooseFlag(StringRef name, SchedulePipelineOptions &options,
             function_ref<void(SchedulePipelineOptions &, bool)> set) {
    ModuleOp module = getOperation();
    bool on = false;
    {
      ScopedDiagnosticHandler quiet(&getContext(),
                                    [](Diagnostic &) { return success(); });
      FailureOr<FlagTimes> times = simulateFlagChoice(
          module, options.hardware.getValue(),
          options.dataParallelSize.getValue(), options.moeImbalance.getValue(),
          [&](bool candidateOn, ModuleOp candidate) {
            SchedulePipelineOptions candidateOptions;
            candidateOptions.copyOptionValuesFrom(options);
            set(candidateOptions, candidateOn);
            candidateOptions.printBucketLayout = "";
            OpPassManager pm(ModuleOp::getOperationName());
            addSchedulePasses(pm, candidateOptions);
            return runPipeline(pm, candidate);
          });
      on = succeeded(times) && times->withUs < times->withoutUs;
    }
    set(options, on);
    recordOptions(module, {{name, BoolAttr::get(&getContext(), on)}});
    return success();
  }

  /// policy=auto on a pipelined step: each rank's buckets as auto lays them
  /// out alone or as Megatron does, whichever the pipeline simulates faster
  /// (PipelineBucketChoice.h). True when the module is then scheduled;
  /// false when this does not apply, or a candidate failed and the
  /// pipeline should run as asked to report why.
  FailureOr<bool> choosePipelineLayouts(const SchedulePipelineOptions &options) {
    ModuleOp module = getOperation();
    if (options.policy != BucketPolicy::Auto ||
        !llvm::any_of(module.getOps<func::FuncOp>(), isUnsplitPipelineStep))
      return false;
    if (!options.printBucketLayout.empty()) {
      module.emitError()
          << "ddp-schedule: print-bucket-layout with policy=auto on a "
             "pipelined step would print the layouts of candidates auto "
             "does not keep; give policy=megatron, pytorch or size to print "
             "a layout";
      return failure();
    }
    LogicalResult chosen = failure();
    {
      ScopedDiagnosticHandler quiet(&getContext(),
                                    [](Diagnostic &) { return success(); });
      chosen = choosePipelineBuckets(
          module, options.hardware.getValue(),
          options.dataParallelSize.getValue(),
          [&](bool useAuto, ModuleOp candidate) {
            SchedulePipelineOptions candidateOptions;
            candidateOptions.copyOptionValuesFrom(options);
            if (!useAuto)
              candidateOptions.policy = BucketPolicy::Megatron;
            OpPassManager pm(ModuleOp::getOperationName());
            addSchedulePasses(pm, candidateOptions);
            return runPipeline(pm, candidate);
          });
    }
    return succeeded(chosen);
  }

  SchedulePipelineOptions given;
  llvm::StringSet<> givenNames;
};
} // namespace

void ddp::populateDDPSchedulePipeline(OpPassManager &pm,
                                      const SchedulePipelineOptions &options) {
  pm.addPass(std::make_unique<SchedulePass>(options));
}

ArrayRef<StringLiteral> ddp::getFullyShardedOptionNames() {
  static constexpr StringLiteral names[] = {
      "fsdp-prefetch",         "fsdp-unit-prefetch",
      "fsdp-keep-last-units",  "fsdp-double-buffer",
      "reshard-after-forward", "suggested-communication-unit-size"};
  return names;
}

LogicalResult ddp::runDDPSchedule(ModuleOp module,
                                  const SchedulePipelineOptions &options) {
  // Verified before too: the passes may assume valid IR, and the planner's
  // modules come from the importer, not a parser. The choices ddp-schedule
  // makes inside (batch split, FSDP depths) run unverified as well; a pass
  // that broke the IR fails the run at the check after, as it fails
  // ddp-opt's.
  if (failed(verify(module)))
    return failure();
  PassManager pm(module.getContext());
  pm.enableVerifier(false);
  populateDDPSchedulePipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  return verify(module);
}

void ddp::registerDDPSchedulePipeline() {
  // As PassPipelineRegistration registers a pipeline, and then the checks of
  // each option's value on its own (a negative size, a hw that names no
  // profile): a mistake on the command line is reported once, in words,
  // before any pass runs (not as `<unknown>:0: error:` from the pass that
  // first reads the option). What depends on other options waits for the
  // module's recorded ones (SchedulePass).
  registerPassPipeline(
      "ddp-schedule",
      "Bucket the data-parallel gradient reduction, overlap it with the "
      "backward pass and check the result (docs/Scheduling.md)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)>) {
        SchedulePipelineOptions options;
        if (llvm::Error error = parseGivenScheduleOptions(text, options)) {
          llvm::errs() << llvm::toString(std::move(error)) << "\n";
          return failure();
        }
        populateDDPSchedulePipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> handler) {
        handler(SchedulePipelineOptions());
      });
}
