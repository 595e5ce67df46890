//===- ScheduleOptions.cpp - ddp-schedule's options -----------------------===//
//
// The options of the ddp-schedule pipeline: parsing them, the checks of
// their values and of their combinations, and the options a module
// records (`ddp.schedule_options`), which stand for options not given.
//
//===----------------------------------------------------------------------===//

#include "ScheduleOptions.h"

#include "ddp/Pipelines/SchedulePipeline.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Support/OptionWords.h"
#include "ddp/Support/Suggest.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

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
       getValueNames(getShardingStrategyOptionValues())},
      {"outer-dp-sharding-strategy",
       getValueNames(getOuterShardingStrategyOptionValues())}};
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
                        : name == "outer-dp-sharding-strategy"
                            ? "what Megatron-FSDP shards across instances"
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

bool ddp::isGivenUnderAnyName(StringRef name,
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
std::optional<std::string> ddp::quoteOptionValue(StringRef value) {
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
  // TransformerConfig's asserts (transformer_config.py L3073-3077), as the
  // importer's (ModelConfigChecks.cpp): the shared experts' own overlap
  // stays out of the combined 1F1B, which would silently drop it.
  if (options.delayWgradCompute && !options.overlapMoeExpertParallelComm)
    return llvm::createStringError(kDelayWgradNeedsOverlap);
  if (options.sharedExpertOverlap && options.overlapMoeExpertParallelComm)
    return llvm::createStringError(
        "overlap-moe-expert-parallel-comm does not work with "
        "moe-shared-expert-overlap, as Megatron's: set one of them");
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
std::string ddp::formatUnitPrefetch(ArrayRef<unsigned> depths) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(depths, os, ",");
  return text;
}

/// Sets `values` (option name, value) in `module`'s recorded schedule
/// options, keeping the others: a choice recorded, as a log records its
/// run's, so that a later run over the module makes it again.
void ddp::recordOptions(ModuleOp module,
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
