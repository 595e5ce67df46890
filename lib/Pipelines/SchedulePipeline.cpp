//===- SchedulePipeline.cpp - The ddp-schedule pass pipeline --------------===//

#include "ddp/Pipelines/SchedulePipeline.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "ddp/Support/OptionWords.h"
#include "ddp/Support/Suggest.h"

#include "CandidateModule.h"
#include "FsdpChoice.h"
#include "MoEOverlapChoice.h"
#include "PipelineBucketChoice.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <set>

using namespace mlir;
using namespace ddp;

bool SchedulePipelineOptions::hasOption(StringRef name) const {
  return OptionsMap.contains(name);
}

/// The names of an enum option's values, in their order, for messages.
static SmallVector<StringRef> getValueNames(llvm::cl::ValuesClass values) {
  OptionValueNames collector;
  values.apply(collector);
  return collector.names;
}

LogicalResult SchedulePipelineOptions::parseFromString(StringRef text,
                                                       raw_ostream &errorStream) {
  SmallVector<StringRef> names;
  for (const auto &entry : OptionsMap)
    names.push_back(entry.first);
  llvm::sort(names);
  // The enum options whose values a mistake is told with.
  std::pair<StringRef, SmallVector<StringRef>> enums[] = {
      {"policy", getValueNames(getBucketPolicyOptionValues())},
      {"data-parallel-sharding-strategy",
       getValueNames(getShardingStrategyOptionValues())}};
  for (auto [name, value] : splitOptionWords(text)) {
    auto it = OptionsMap.find(name);
    if (it == OptionsMap.end()) {
      errorStream << "ddp-schedule has no option '" << name << "'"
                  << didYouMean(name, names)
                  << " (docs/Scheduling.md lists them)\n";
      return failure();
    }
    for (auto &[enumName, values] : enums)
      if (name == enumName && !llvm::is_contained(values, value)) {
        errorStream << "ddp-schedule: " << name << "=" << value << " is not "
                    << (name == "policy" ? "a bucketing policy"
                                         : "a sharding strategy")
                    << " (" << llvm::join(values, ", ") << ")"
                    << didYouMean(value, values) << "\n";
        return failure();
      }
    // Boolean options take their value optionally (`name` alone is true).
    if (it->second->getValueExpectedFlag() == llvm::cl::ValueOptional &&
        !isBoolOptionValue(value)) {
      errorStream << "ddp-schedule: " << name << "=" << value
                  << ": expected true or false\n";
      return failure();
    }
  }
  return PassPipelineOptions::parseFromString(text, errorStream);
}

llvm::StringSet<> SchedulePipelineOptions::getGivenOptionNames() const {
  llvm::StringSet<> names;
  for (const auto &[name, option] : OptionsMap)
    if (option->getNumOccurrences())
      names.insert(name);
  return names;
}

#define GEN_PIPELINE_OPTIONS_DEF
#include "ddp/Pipelines/SchedulePipeline.h.inc"

static bool isGivenUnderAnyName(StringRef name,
                                const llvm::StringSet<> &givenNames) {
  if (givenNames.contains(name))
    return true;
  for (auto [field, flag] : kOptionAliases)
    if ((name == field && givenNames.contains(flag)) ||
        (name == flag && givenNames.contains(field)))
      return true;
  return false;
}

bool SchedulePipelineOptions::isGiven(StringRef name) const {
  return isGivenUnderAnyName(name, getGivenOptionNames());
}

/// `value` in quotes that MLIR's pass option parser takes as one value and
/// strips, or nullopt where none can: the parser has no escapes, ends a
/// quoted value at the next quote of its kind, and trims what it unquotes.
static std::optional<std::string> quoteOptionValue(StringRef value) {
  if (value != value.trim())
    return std::nullopt;
  for (char quote : {'"', '\''})
    if (!value.contains(quote))
      return (Twine(quote) + value + Twine(quote)).str();
  return std::nullopt;
}

std::optional<std::string> ddp::getRecordedOptionText(Attribute value) {
  if (auto flag = dyn_cast<BoolAttr>(value))
    return std::string(flag.getValue() ? "true" : "false");
  // Every digit, so that a value past int64 is rejected by the parser
  // rather than truncated into another value.
  if (auto number = dyn_cast<IntegerAttr>(value))
    return llvm::toString(number.getValue(), /*Radix=*/10,
                          /*Signed=*/!number.getType().isUnsignedInteger());
  if (auto text = dyn_cast<StringAttr>(value))
    return text.getValue().str();
  return std::nullopt;
}

LogicalResult
ddp::applyRecordedScheduleOptions(ModuleOp module,
                                  const llvm::StringSet<> &givenNames,
                                  SchedulePipelineOptions &options) {
  Attribute attr = module->getAttr(kScheduleOptionsAttrName);
  if (!attr)
    return success();
  auto recorded = dyn_cast<DictionaryAttr>(attr);
  if (!recorded)
    return module.emitError()
           << "'" << kScheduleOptionsAttrName
           << "' must be a dictionary from ddp-schedule option names to "
              "values, got "
           << attr;
  for (NamedAttribute entry : recorded) {
    StringRef name = entry.getName().getValue();
    if (!options.hasOption(name))
      return module.emitError()
             << "'" << kScheduleOptionsAttrName << "' records '" << name
             << "', which is not a ddp-schedule option";
    if (isGivenUnderAnyName(name, givenNames))
      continue;
    // A recorded depth per unit is how far ahead the units are gathered,
    // which a depth given in another form replaces.
    if (name == "fsdp-unit-prefetch" &&
        (isGivenUnderAnyName("fsdp-prefetch", givenNames) ||
         isGivenUnderAnyName("suggested-communication-unit-size", givenNames)))
      continue;
    std::optional<std::string> text = getRecordedOptionText(entry.getValue());
    if (!text)
      return module.emitError()
             << "'" << kScheduleOptionsAttrName << "' records '" << name
             << "' as " << entry.getValue()
             << "; expected a bool, an integer or a string";
    std::string value = std::move(*text);
    if (isa<StringAttr>(entry.getValue())) {
      // Unquoted, a space would end the value and start another option
      // ("h100-sxm-ib400 policy=pytorch"), overriding the command line.
      std::optional<std::string> quoted = quoteOptionValue(value);
      if (!quoted)
        return module.emitError()
               << "'" << kScheduleOptionsAttrName << "' records a value for '"
               << name << "' that ddp-schedule's option parser cannot read "
               << "as one value: " << entry.getValue()
               << "; it must not contain both kinds of quotes nor begin or "
                  "end with white space";
      value = std::move(*quoted);
    }
    // One option at a time, so that the error names it; with the parser's
    // reason where it gives one (llvm::cl prints its own to stderr).
    std::string parseErrors;
    llvm::raw_string_ostream errorStream(parseErrors);
    if (failed(options.parseFromString(
            llvm::formatv("{0}={1}", name, value).str(), errorStream))) {
      InFlightDiagnostic diag = module.emitError()
                                << "'" << kScheduleOptionsAttrName
                                << "' records a malformed value for '" << name
                                << "': " << entry.getValue();
      if (StringRef reason = StringRef(parseErrors).trim(); !reason.empty())
        diag << " (" << reason << ")";
      return diag;
    }
  }
  return success();
}

AssignBucketsOptions
ddp::getAssignBucketsOptions(const SchedulePipelineOptions &options) {
  AssignBucketsOptions assign = getAssignBucketsPassOptions(options);
  // Megatron-FSDP gathers and reduces each unit's parameters as one group;
  // ddp-shard-params gathers ddp-overlap-param-gather's gathers by unit.
  if (options.dataParallelShardingStrategy ==
      ShardingStrategy::OptimGradsParams) {
    assign.policy = BucketPolicy::Unit;
    assign.overlapParamGather = true;
  }
  return assign;
}

/// What data-parallel-sharding-strategy needs of the other options.
static llvm::Error
checkShardingStrategy(const SchedulePipelineOptions &options) {
  ShardingStrategy strategy = options.dataParallelShardingStrategy;
  // Megatron-FSDP's constraint (arguments.py L3193-3198,
  // param_and_grad_buffer.py L2498-2512 at d98e8a6).
  if (options.outerDpShardingStrategy != ShardingStrategy::NoShard &&
      strategy != ShardingStrategy::OptimGradsParams)
    return llvm::createStringError(
        "outer-dp-sharding-strategy=" +
        getShardingStrategyName(options.outerDpShardingStrategy).str() +
        " shards across the instances of a fully sharded step; give "
        "data-parallel-sharding-strategy=optim_grads_params");
  if (strategy == ShardingStrategy::NoShard)
    return llvm::Error::success();
  std::string name = getShardingStrategyName(strategy).str();
  // Megatron-FSDP runs with --use-distributed-optimizer too.
  if (!options.useDistributedOptimizer)
    return llvm::createStringError(
        "data-parallel-sharding-strategy=" + name +
        " needs use-distributed-optimizer=true (the sharded optimizer state)");
  // The default policy (megatron) gives way, and auto makes the FSDP
  // choices instead (FsdpChoice.h); another one is a conflict.
  if (strategy == ShardingStrategy::OptimGradsParams &&
      options.policy != BucketPolicy::Unit &&
      options.policy != BucketPolicy::Megatron &&
      options.policy != BucketPolicy::Auto)
    return llvm::createStringError(
        "data-parallel-sharding-strategy=optim_grads_params buckets each FSDP "
        "unit (policy=unit); drop policy=" +
        stringifyBucketPolicy(options.policy).str());
  return llvm::Error::success();
}

/// ddp-simulate's bound on moe-imbalance, in the same words.
static llvm::Error checkMoeImbalance(const SchedulePipelineOptions &options) {
  double imbalance = options.moeImbalance;
  if (imbalance >= 1 && std::isfinite(imbalance))
    return llvm::Error::success();
  std::string value;
  llvm::raw_string_ostream(value) << llvm::format("%g", imbalance);
  return llvm::createStringError(
      "moe-imbalance is the busiest rank's routed tokens over the balanced "
      "share, at least 1 (balanced), got " +
      value);
}

llvm::Error
ddp::checkSchedulePipelineOptions(const SchedulePipelineOptions &options) {
  if (llvm::Error error = checkMoeImbalance(options))
    return error;
  if (llvm::Error error = checkMemoryCapGib(options.memoryCapGib))
    return error;
  // TransformerConfig's assert (transformer_config.py L3073-3077).
  if (options.delayWgradCompute && !options.overlapMoeExpertParallelComm)
    return llvm::createStringError(kDelayWgradNeedsOverlap);
  if (llvm::Error error = checkShardingStrategy(options))
    return error;
  return checkAssignBucketsOptions(getAssignBucketsOptions(options));
}

llvm::Error ddp::checkSchedulePipelineOptionValues(
    const SchedulePipelineOptions &options) {
  if (llvm::Error error = checkMoeImbalance(options))
    return error;
  if (llvm::Error error = checkMemoryCapGib(options.memoryCapGib))
    return error;
  return checkAssignBucketsOptionValues(getAssignBucketsOptions(options));
}

llvm::Error ddp::parseGivenScheduleOptions(StringRef text,
                                           SchedulePipelineOptions &options) {
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (failed(options.parseFromString(text, errorStream)))
    return llvm::createStringError(
        errors.empty() ? "bad options '" + text.str() + "' (the reason above)"
                       : StringRef(errors).trim().str());
  if (llvm::Error error = checkSchedulePipelineOptionValues(options))
    return llvm::createStringError("ddp-schedule: " +
                                   llvm::toString(std::move(error)));
  return llvm::Error::success();
}

/// fsdp-unit-prefetch's form of depths per unit: "2,1,1".
static std::string formatUnitPrefetch(ArrayRef<unsigned> depths) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(depths, os, ",");
  return text;
}

/// Sets `values` (option name, value) in `module`'s recorded schedule
/// options, keeping the others: a choice recorded, as a log records its
/// run's, so that a later run over the module makes it again.
static void recordOptions(ModuleOp module,
                          ArrayRef<std::pair<StringRef, Attribute>> values) {
  NamedAttrList entries;
  if (auto recorded =
          module->getAttrOfType<DictionaryAttr>(kScheduleOptionsAttrName))
    entries.append(recorded.getValue());
  for (auto [name, value] : values)
    entries.set(name, value);
  module->setAttr(kScheduleOptionsAttrName,
                  entries.getDictionary(module.getContext()));
}

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
    std::set<int64_t> layers;
    for (ParamOp param : module.getOps<ParamOp>())
      if (std::optional<uint64_t> layer = param.getLayer())
        layers.insert(int64_t(*layer));
    choice.numUnits = layers.size();
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
