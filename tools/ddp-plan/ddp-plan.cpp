//===- ddp-plan.cpp - The configured schedule of a step against auto ------===//
//
//   ddp-import --megatron-args=train.log -o step.mlir
//   ddp-plan step.mlir [--options="..."] [--hw=h100-sxm-ib400] [--svg=plan.svg]
//            [--step=NAME] [--jobs=N]
//
// Schedules two copies of an imported step with the ddp-schedule pipeline:
// the configured schedule (the options recorded in the module's
// ddp.schedule_options, overridden by --options) and the same with
// policy=auto. Simulates both on one hardware profile and prints a table:
// step time, exposed communication, model state per rank and the options
// that differ; --svg draws both timelines on one time axis
// (docs/CostModel.md#comparing-a-schedule-with-auto-ddp-plan). A pipelined
// step gets the pipeline schedule auto chooses (the schedule, virtual size,
// group size and p2p calls, from the model config ddp-import records)
// against the configured one, every pipeline rank simulated, with each
// rank's memory (docs/Pipeline.md#auto).
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/ActivationMemory.h"
#include "ddp/Dialect/DDP/Analysis/StepStats.h"
#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/IR/StepLookup.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Dialect/DDP/Transforms/ScheduleMark.h"
#include "ddp/Import/Import.h"
#include "ddp/Pipelines/SchedulePipeline.h"
#include "ddp/Plan/PipelinePlanReport.h"
#include "ddp/Plan/PipelinePlanner.h"
#include "ddp/Sim/PipelineSimulator.h"
#include "ddp/Sim/SimOutput.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

using namespace llvm;
using namespace mlir;
using namespace ddp;

static cl::OptionCategory planCategory("ddp-plan options");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<imported step (.mlir)>"),
                                      cl::init("-"), cl::cat(planCategory));
static cl::opt<std::string> scheduleOptions(
    "options",
    cl::desc("ddp-schedule options of the configured schedule, over the "
             "ones the module records (e.g. \"overlap-param-gather=false\")"),
    cl::value_desc("options"), cl::init(""), cl::cat(planCategory));
static cl::opt<std::string> hardware(
    "hw",
    cl::desc("Hardware profile to schedule for and simulate on (built-in "
             "name or JSON file)"),
    cl::value_desc("profile"), cl::init("h100-sxm-ib400"),
    cl::cat(planCategory));
static cl::opt<std::string>
    svgPath("svg",
            cl::desc("Write both timelines to this SVG file (not for a "
                     "pipelined step yet)"),
            cl::value_desc("file"), cl::init(""), cl::cat(planCategory));
static cl::opt<std::string>
    stepName("step",
             cl::desc("The function to simulate (default: the only function "
                      "with a body), as ddp-simulate's 'step' option"),
             cl::value_desc("name"), cl::init(""), cl::cat(planCategory));

static cl::opt<double> moeImbalance(
    "moe-imbalance",
    cl::desc("MoE routing imbalance: the busiest expert-parallel rank's "
             "routed tokens over the balanced share, as ddp-simulate's "
             "moe-imbalance (1: balanced)"),
    cl::value_desc("factor"), cl::init(1.0), cl::cat(planCategory));

static cl::opt<unsigned> numJobs(
    "jobs",
    cl::desc("Threads to plan on: a pipelined step's candidate schedules "
             "are planned this many at once, each holding its own copy of "
             "the step (0: one per core; 1: one at a time, the least "
             "memory)"),
    cl::value_desc("n"), cl::init(0), cl::cat(planCategory));

static int fail(const Twine &message) {
  WithColor::error(errs(), "ddp-plan") << message << "\n";
  return 1;
}

static void progress(const Twine &message) {
  errs() << "ddp-plan: " << message << "\n";
}

namespace {
/// One of the two schedules compared.
struct Plan {
  StringRef name;
  SchedulePipelineOptions options;
  OwningOpRef<ModuleOp> module;
  sim::SimResult result;
  double bytesPerRank = 0;
  /// What the step holds for its backwards at its peak; 0 without the
  /// importer's activation model.
  double activationBytes = 0;
  /// Fully sharded units' gathered parameters at their peak.
  double gatheredBytes = 0;
  /// Buckets in the step's layout (`ddp.buckets`).
  int64_t numBuckets = 0;
  /// Weight-gradient GEMMs, and those ddp-schedule-compute delayed (what
  /// wgrad-schedule=auto chose; the option alone does not say).
  int64_t wgradGemms = 0, delayedWgrads = 0;
  /// The row slices ddp-split-batch cut the step's spans into (batch-split
  /// auto's choice; 1: none).
  int64_t batchSplit = 1;
  /// The options after the recorded ones were applied, by name (in name
  /// order, as the table lists them).
  std::map<std::string, std::string> effectiveOptions;
  /// The module's ddp.schedule_options as given, before the schedule
  /// recorded its own (the profile it was scheduled for).
  DictionaryAttr recordedOptions;
};
} // namespace

/// `options` as name to value, from the pipeline's own printer (`{a=1 b=2}`;
/// no value of a recorded or compared option holds a space).
static std::map<std::string, std::string>
getOptionValues(const SchedulePipelineOptions &options) {
  std::string text;
  raw_string_ostream os(text);
  options.print(os);
  std::map<std::string, std::string> values;
  SmallVector<StringRef> entries;
  StringRef(text).trim().drop_front().drop_back().split(entries, ' ', -1,
                                                        false);
  for (StringRef entry : entries) {
    auto [name, value] = entry.split('=');
    values[name.str()] = value.str();
  }
  return values;
}

/// Schedules `plan.module` with `plan.options` and simulates it on `model`.
static LogicalResult runPlan(Plan &plan, const timing::CostModel &model) {
  progress("scheduling the " + plan.name + " schedule");
  SchedulePipelineOptions effective;
  effective.copyOptionValuesFrom(plan.options);
  if (failed(applyRecordedScheduleOptions(
          *plan.module, plan.options.getGivenOptionNames(), effective)))
    return failure();
  plan.effectiveOptions = getOptionValues(effective);

  if (failed(runDDPSchedule(*plan.module, plan.options)))
    return failure();
  // What the pipeline chose and recorded (policy=auto's batch-level MoE
  // overlap) is part of the schedule the table compares.
  SchedulePipelineOptions decided;
  decided.copyOptionValuesFrom(plan.options);
  if (failed(applyRecordedScheduleOptions(
          *plan.module, plan.options.getGivenOptionNames(), decided)))
    return failure();
  plan.effectiveOptions = getOptionValues(decided);

  progress("simulating the " + plan.name + " schedule");
  FailureOr<func::FuncOp> step =
      sim::findStepToSimulate(*plan.module, stepName);
  if (failed(step))
    return failure();
  // Of the step the table simulates.
  step->walk([&](GemmOp gemm) {
    if (gemm.getPhase() != GemmPhase::Wgrad)
      return;
    ++plan.wgradGemms;
    plan.delayedWgrads += isDelayedWgrad(gemm);
  });
  plan.batchSplit = getBatchSplit(*step).value_or(1);
  sim::SimOptions simOptions;
  simOptions.recordEvents = !svgPath.empty();
  simOptions.moeImbalance = moeImbalance;
  FailureOr<sim::SimResult> result =
      sim::simulateStep(*step, model, simOptions);
  if (failed(result))
    return failure();
  plan.result = std::move(*result);
  if (auto buckets = (*step)->getAttrOfType<ArrayAttr>(kBucketsAttrName))
    plan.numBuckets = buckets.size();
  FailureOr<ModelState> state = computeModelState(*plan.module);
  if (failed(state))
    return failure();
  plan.bytesPerRank = state->getBytesPerRank();
  if (std::optional<ActivationBytes> bytes =
          getActivationBytes(*plan.module))
    if (std::optional<ActivationPeak> peak =
            computeActivationPeak(*step, *bytes))
      plan.activationBytes = double(peak->bytes);
  plan.gatheredBytes = double(getGatheredUnitPeakBytes(*step));
  return success();
}

/// The peak throughput MFU is counted against: the profile's for the
/// element type of most of the step's parameters.
static double getModelPeakFlops(ModuleOp module,
                                const timing::HardwareProfile &profile) {
  std::map<ElementType, int64_t> elements;
  for (ParamOp param : module.getOps<ParamOp>())
    if (std::optional<ElementType> type = getElementTypeOf(param.getType()))
      elements[*type] += param.getTensorType().getNumElements();
  ElementType most = ElementType::BF16;
  int64_t count = -1;
  for (auto [type, number] : elements)
    if (number > count)
      std::tie(most, count) = std::make_pair(type, number);
  return profile.getPeakFlops(most);
}

static void printTable(const Plan &configured, const Plan &automatic,
                       const timing::CostModel &model, raw_ostream &os) {
  auto row = [&](StringRef label, const Twine &left, const Twine &right) {
    os << format("%-28s %18s %18s\n", label.str().c_str(), left.str().c_str(),
                 right.str().c_str());
  };
  auto ms = [](double seconds) {
    return formatv("{0:f3}", seconds * 1e3).str();
  };
  auto gib = [](double bytes) {
    return formatv("{0:f2}", bytes / double(1ull << 30)).str();
  };
  const sim::SimResult &a = configured.result, &b = automatic.result;
  os << "@" << a.stepName << " on " << a.hardwareName << ", " << a.numRanks
     << " ranks\n";
  row("", configured.name, automatic.name);
  row("step time (ms)", ms(a.stepTime), ms(b.stepTime));
  row("exposed communication (ms)", ms(a.exposedCommTime),
      ms(b.exposedCommTime));
  // By process group: data-parallel, tensor-parallel, expert-parallel, ...
  auto exposedOver = [](const sim::SimResult &r) {
    std::map<std::string, double> byGroup;
    for (const sim::StreamInfo &stream : llvm::drop_begin(r.streams))
      byGroup[llvm::join(stream.axes, ",")] += stream.exposedTime;
    return byGroup;
  };
  std::map<std::string, double> exposedA = exposedOver(a),
                                exposedB = exposedOver(b);
  std::set<std::string> groups;
  for (const auto &[group, time] : exposedA)
    groups.insert(group);
  for (const auto &[group, time] : exposedB)
    groups.insert(group);
  for (const std::string &group : groups)
    row("  over [" + group + "] (ms)", ms(exposedA[group]),
        ms(exposedB[group]));
  row("communication (ms)", ms(a.commTime), ms(b.commTime));
  row("buckets", Twine(configured.numBuckets), Twine(automatic.numBuckets));
  row("collectives", Twine(a.numCollectives), Twine(b.numCollectives));
  // Model FLOPs per GPU: the step's flops (no recomputation) over its time.
  // Three significant digits below 1 (a small step's 0.0227, not 0.0).
  auto tflops = [](const sim::SimResult &r) {
    double value = r.stepTime > 0 ? r.flops / r.stepTime / 1e12 : 0;
    char text[32];
    std::snprintf(text, sizeof(text),
                  value >= 1 || value == 0 ? "%.1f" : "%.3g", value);
    return std::string(text);
  };
  double peak = getModelPeakFlops(*configured.module, model.getProfile());
  auto mfu = [&](const sim::SimResult &r) {
    double value =
        r.stepTime > 0 && peak > 0 ? 100 * r.flops / r.stepTime / peak : 0;
    char text[32];
    std::snprintf(text, sizeof(text),
                  value >= 1 || value == 0 ? "%.1f" : "%.3g", value);
    return std::string(text);
  };
  row("TFLOP/s per GPU", tflops(a), tflops(b));
  row("MFU (%)", mfu(a), mfu(b));
  row("model state per rank (GiB)", gib(configured.bytesPerRank),
      gib(automatic.bytesPerRank));
  bool withActivations = configured.activationBytes > 0;
  bool withGathered =
      configured.gatheredBytes > 0 || automatic.gatheredBytes > 0;
  if (withActivations)
    row("activations per rank (GiB)", gib(configured.activationBytes),
        gib(automatic.activationBytes));
  if (withGathered)
    row("gathered units per rank (GiB)", gib(configured.gatheredBytes),
        gib(automatic.gatheredBytes));
  if (withActivations || withGathered) {
    row("memory per rank (GiB)",
        gib(configured.bytesPerRank + configured.activationBytes +
            configured.gatheredBytes),
        gib(automatic.bytesPerRank + automatic.activationBytes +
            automatic.gatheredBytes));
  }
  os << "options that differ:\n";
  bool any = false;
  for (const auto &[name, left] : configured.effectiveOptions) {
    const std::string &right = automatic.effectiveOptions.at(name);
    if (left == right)
      continue;
    row("  " + name, left, right);
    any = true;
  }
  if (configured.delayedWgrads != automatic.delayedWgrads) {
    auto delayed = [](const Plan &plan) {
      return std::to_string(plan.delayedWgrads) + " of " +
             std::to_string(plan.wgradGemms);
    };
    row("  wgrads delayed (wgrad-schedule)", delayed(configured),
        delayed(automatic));
    any = true;
  }
  if (configured.batchSplit != automatic.batchSplit) {
    row("  batch split (row slices)", Twine(configured.batchSplit),
        Twine(automatic.batchSplit));
    any = true;
  }
  if (!any)
    os << "  (none)\n";
  // What the module recorded (a Megatron log's flags) and both plans
  // applied, unless --options gave the option.
  if (DictionaryAttr recorded = configured.recordedOptions) {
    os << "recorded options applied (" << kScheduleOptionsAttrName << "):";
    bool anyRecorded = false;
    for (NamedAttribute entry : recorded) {
      std::string value =
          getRecordedOptionText(entry.getValue()).value_or("?");
      os << " " << entry.getName().getValue() << "=" << value;
      if (configured.options.isGiven(entry.getName().getValue()))
        os << " (--options overrides it)";
      anyRecorded = true;
    }
    os << (anyRecorded ? "\n" : " none\n");
  }
  if (b.stepTime > 0)
    os << formatv("auto / configured step time: {0:f3}\n",
                  b.stepTime / a.stepTime);
  // Whether a plan fits the device (docs/Pipeline.md#memory-per-rank).
  double capacity = model.getProfile().memoryCapacity;
  for (const Plan *plan : {&configured, &automatic}) {
    double needed =
        plan->bytesPerRank + plan->activationBytes + plan->gatheredBytes;
    if (capacity > 0 && needed > capacity)
      os << formatv("warning: the {0} plan needs {1} per rank ({2}), more "
                    "than the device's {3}; {4}\n",
                    plan->name, formatBytes(std::llround(needed)),
                    withGathered
                        ? (withActivations
                               ? "model state, activations and gathered units"
                               : "model state and gathered units")
                        : (withActivations ? "model state and activations"
                                           : "model state"),
                    formatBytes(std::llround(capacity)),
                    sim::describeMemoryRemedies(*plan->module));
  }
}

/// A pipelined step whose module records no model config: the configured
/// schedule alone, every pipeline rank simulated.
static int planConfiguredPipeline(Plan &plan, const timing::CostModel &model) {
  progress("scheduling the " + plan.name + " schedule");
  if (failed(runDDPSchedule(*plan.module, plan.options)))
    return 1;
  progress("simulating the pipeline");
  FailureOr<sim::PipelineSimResult> result =
      sim::simulatePipeline(*plan.module, model);
  if (failed(result))
    return 1;
  raw_ostream &os = outs();
  os << "the configured schedule; policy=auto chooses a pipeline's schedule "
        "from the model config that ddp-import records ('"
     << kModelConfigAttrName << "'), which this module lacks\n";
  sim::printPipelineSummary(*result, model, os);
  if (Error error = flushStdout())
    return fail(toString(std::move(error)));
  return 0;
}

/// A pipelined step: auto's choice of the schedule, the virtual size, the
/// group size and the p2p calls against the configured ones, each imported
/// again from the module's recorded config (docs/Pipeline.md#auto).
static int planPipeline(Plan &plan, const timing::CostModel &model) {
  Expected<std::optional<ModelConfig>> config =
      getRecordedModelConfig(*plan.module);
  if (!config)
    return fail(toString(config.takeError()));
  if (!*config)
    return planConfiguredPipeline(plan, model);
  std::string optionsText = scheduleOptions;
  if (!plan.options.getGivenOptionNames().contains("hw")) {
    if (StringRef(hardware).contains('"'))
      return fail("--hw: a profile path with '\"' cannot be passed on to "
                  "the schedule; rename the file");
    optionsText += " hw=\"" + hardware + "\"";
  }
  auto recorded =
      (*plan.module)->getAttrOfType<DictionaryAttr>(kScheduleOptionsAttrName);
  MLIRContext &context = *plan.module->getContext();
  // Each candidate is imported again from the config: the user's step is
  // not needed any more, and its memory goes to the candidates.
  plan.module = nullptr;
  Expected<plan::PipelinePlan> pipelinePlan = plan::planPipeline(
      context, **config, recorded, optionsText, model,
      [](const Twine &message) { progress(message); });
  if (!pipelinePlan)
    return fail("--options: " + toString(pipelinePlan.takeError()));
  raw_ostream &os = outs();
  plan::printPipelineCandidates(*pipelinePlan, model, os);
  if (!pipelinePlan->best)
    return fail("no pipeline schedule of this model could be simulated; the "
                "configured one was refused: " +
                pipelinePlan->candidates[pipelinePlan->configured].refusal);
  plan::printPipelineChoice(*pipelinePlan, os);
  sim::printPipelineSummary(
      *pipelinePlan->candidates[*pipelinePlan->best].result, model, os);
  if (Error error = flushStdout())
    return fail(toString(std::move(error)));
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(planCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ddp-plan: the configured schedule of an imported step against "
      "policy=auto, simulated\n");

  // Validate the options before the (long) work.
  Expected<timing::HardwareProfile> profile = timing::lookupHardwareProfile(hardware);
  if (!profile)
    return fail(toString(profile.takeError()));
  timing::CostModel model(std::move(*profile));
  if (!(moeImbalance >= 1) || !std::isfinite(double(moeImbalance)))
    return fail(formatv("--moe-imbalance is the busiest rank's routed tokens "
                        "over the balanced share, at least 1 (balanced), "
                        "got {0}",
                        double(moeImbalance)));
  // Opened now, so that a path it cannot write stops it before the work.
  std::string error;
  std::unique_ptr<ToolOutputFile> svgFile;
  if (!svgPath.empty()) {
    svgFile = openOutputFile(svgPath, &error);
    if (!svgFile)
      return fail(error);
  }

  DialectRegistry registry;
  registry.insert<DDPDialect, func::FuncDialect, arith::ArithDialect>();
  // Before the context, which runs its work on it (and the plans, whose
  // modules the context owns). A pipelined step's candidates share it
  // (ddp::plan::planPipeline).
  std::optional<DefaultThreadPool> threads;
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  if (numJobs != 1) {
    threads.emplace(hardware_concurrency(numJobs));
    context.setThreadPool(*threads);
  }
  // Messages name the op and where it is; the IR is not printed after them.
  context.printOpOnDiagnostic(false);
  Plan configured, automatic;
  configured.name = "configured";
  automatic.name = "auto";
  for (Plan *plan : {&configured, &automatic}) {
    // In ddp-opt's --ddp-schedule words, before the work.
    if (llvm::Error error =
            parseGivenScheduleOptions(scheduleOptions, plan->options))
      return fail("--options: " + toString(std::move(error)));
    // The profile the step is simulated on is the one it is scheduled for.
    if (!plan->options.getGivenOptionNames().contains("hw"))
      plan->options.hardware = hardware;
    // auto makes its MoE overlap choices at the imbalance it is simulated at.
    if (!plan->options.getGivenOptionNames().contains("moe-imbalance"))
      plan->options.moeImbalance = moeImbalance;
  }
  automatic.options.policy = BucketPolicy::Auto;

  std::unique_ptr<MemoryBuffer> input = openInputFile(inputFile, &error);
  if (!input)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  progress("reading " + inputFile);
  configured.module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!configured.module)
    return 1;
  // A pipeline is several programs, which the comparison of one step's
  // schedules below does not simulate.
  bool pipelined =
      sim::hasPipelineStages(*configured.module) ||
      llvm::any_of(configured.module->getOps<func::FuncOp>(),
                   isUnsplitPipelineStep);
  if (pipelined && svgFile)
    return fail("--svg: ddp-plan does not draw a pipeline's timelines yet; "
                "plan it without --svg");
  // A pipelined step is simulated as its stage programs, once split.
  if (pipelined && sim::hasPipelineStages(*configured.module))
    return fail("'" + inputFile +
                "' holds the stage programs of a scheduled pipeline; "
                "ddp-plan schedules the step itself, so give it the "
                "unscheduled step (ddp-import's output)");
  FailureOr<func::FuncOp> step = failure();
  if (pipelined) {
    SmallVector<func::FuncOp> withBody;
    if (func::FuncOp found = findStep(*configured.module, stepName, withBody))
      step = found;
    else if (!stepName.empty())
      return fail("--step: '" + inputFile + "' has no function named '" +
                  stepName + "' with a body");
    else
      return fail("'" + inputFile + "' has " + Twine(withBody.size()) +
                  " functions with a body; give the pipelined step with "
                  "--step");
  } else {
    step = sim::findStepToSimulate(*configured.module, stepName);
  }
  if (failed(step))
    return 1;
  if (std::optional<std::pair<Location, std::string>> mark =
          findScheduleMark(*step, ScheduleMarks::Any)) {
    emitError(mark->first)
        << "'@" << step->getSymName()
        << "' is scheduled already: " << mark->second
        << "; ddp-plan schedules the step itself, so give it the unscheduled "
           "step (ddp-import's output)";
    return 1;
  }
  if (pipelined) {
    // The pipeline planner prices its candidates on balanced routing.
    if (moeImbalance != 1.0)
      return fail("--moe-imbalance is not applied to a pipelined step's "
                  "candidates yet; schedule it with ddp-opt --ddp-schedule "
                  "and simulate the result with --ddp-simulate="
                  "moe-imbalance=F");
    return planPipeline(configured, model);
  }
  automatic.module = configured.module->clone();
  configured.recordedOptions =
      (*configured.module)
          ->getAttrOfType<DictionaryAttr>(kScheduleOptionsAttrName);

  for (Plan *plan : {&configured, &automatic})
    if (failed(runPlan(*plan, model)))
      return 1;

  printTable(configured, automatic, model, outs());
  if (Error error = flushStdout())
    return fail(toString(std::move(error)));

  if (svgFile) {
    progress("writing " + svgPath);
    sim::TimelinePanel panels[] = {{configured.name, &configured.result},
                                   {automatic.name, &automatic.result}};
    sim::writeTimelineSvg(panels, svgFile->os());
    if (Error error = finishOutputFile(*svgFile, svgPath))
      return fail(toString(std::move(error)));
  }
  return 0;
}
