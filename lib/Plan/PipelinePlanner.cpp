//===- PipelinePlanner.cpp - auto's choice of a pipeline schedule ---------===//
//
// The search is exhaustive over what can change the bubble (the schedule
// and the virtual size), then local (the p2p calls and the group size
// around the best): the virtual sizes of a stage are few (its layers'
// divisors), and each candidate is a whole import, schedule and
// simulation, seconds at GPT-3's size. The candidates of each round are
// independent, so they run at once, each in an MLIRContext of its own that
// shares the caller's thread pool: one candidate's uniqued attributes and
// diagnostics are not another's, and its passes' own parallel work runs on
// the same threads (docs/Pipeline.md#auto).
//
//===----------------------------------------------------------------------===//

#include "ddp/Plan/PipelinePlanner.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Import/Import.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ThreadPool.h"

#include <atomic>
#include <mutex>

using namespace mlir;
using namespace ddp;
using namespace ddp::plan;

std::string PipelineChoice::describe() const {
  std::string text = stringifyPipelineScheduleKind(schedule).str();
  if (schedule == PipelineScheduleKind::Interleaved)
    text += llvm::formatv(" v={0} group={1}", virtualSize, microbatchGroupSize)
                .str();
  else if (virtualSize > 1)
    // A configured virtual size under a schedule given for every candidate
    // (refused): named, so that it is not taken for the one-chunk choice.
    text += llvm::formatv(" v={0}", virtualSize).str();
  if (overlapP2PComm)
    text += " overlap-p2p-comm";
  return text;
}

bool PipelineChoice::operator==(const PipelineChoice &other) const {
  return schedule == other.schedule && virtualSize == other.virtualSize &&
         microbatchGroupSize == other.microbatchGroupSize &&
         overlapP2PComm == other.overlapP2PComm;
}

PipelineChoice ddp::plan::getConfiguredChoice(const ModelConfig &config) {
  PipelineChoice choice;
  choice.virtualSize = config.getVirtualPipelineSize();
  choice.schedule = config.getPipelineScheduleKind();
  if (choice.schedule == PipelineScheduleKind::Interleaved) {
    choice.microbatchGroupSize =
        config.getPipelineShape().getMicrobatchGroupSize();
    // Megatron's training arguments overlap the interleaved calls unless
    // told not to; 1F1B's calls block (ModelImporter records the same).
    choice.overlapP2PComm = config.overlapP2PComm;
  }
  // ZB-H1 exchanges early (ddp-pipeline-stages).
  if (choice.schedule == PipelineScheduleKind::ZeroBubbleH1)
    choice.overlapP2PComm = true;
  return choice;
}

static PipelineChoice makeInterleaved(int64_t virtualSize, int64_t group,
                                      bool overlap) {
  PipelineChoice choice;
  choice.schedule = PipelineScheduleKind::Interleaved;
  choice.virtualSize = virtualSize;
  choice.microbatchGroupSize = group;
  choice.overlapP2PComm = overlap;
  return choice;
}

static void addOnce(std::vector<PipelineChoice> &choices,
                    const PipelineChoice &choice) {
  if (!llvm::is_contained(choices, choice))
    choices.push_back(choice);
}

std::vector<PipelineChoice>
ddp::plan::getFirstPipelineChoices(const ModelConfig &config) {
  std::vector<PipelineChoice> choices{getConfiguredChoice(config)};
  PipelineChoice oneFOneB;
  addOnce(choices, oneFOneB);
  oneFOneB.overlapP2PComm = true;
  addOnce(choices, oneFOneB);
  // ZB-H1, which exchanges early (as 1F1B with overlap-p2p-comm), where it
  // runs: at least as many microbatches as stages.
  if (config.numMicrobatches >= config.pipelineModelParallelSize) {
    PipelineChoice zeroBubble;
    zeroBubble.schedule = PipelineScheduleKind::ZeroBubbleH1;
    zeroBubble.overlapP2PComm = true;
    addOnce(choices, zeroBubble);
  }
  // An uneven split fixes its stages' layers; its virtual size is the one
  // the config gives.
  bool uneven = config.decoderFirstPipelineNumLayers > 0 ||
                config.decoderLastPipelineNumLayers > 0 ||
                config.accountForEmbeddingInPipelineSplit ||
                config.accountForLossInPipelineSplit;
  int64_t stages = config.pipelineModelParallelSize;
  if (uneven || config.numLayers % stages != 0)
    return choices;
  int64_t layersPerStage = config.numLayers / stages;
  for (int64_t v = 2; v <= layersPerStage; ++v)
    if (layersPerStage % v == 0)
      addOnce(choices, makeInterleaved(v, stages, true));
  return choices;
}

std::vector<PipelineChoice>
ddp::plan::getRefinedPipelineChoices(const ModelConfig &config,
                                     const PipelineChoice &best) {
  std::vector<PipelineChoice> choices;
  // ZB-H1's exchanges are early whatever the flag says.
  if (best.schedule == PipelineScheduleKind::ZeroBubbleH1)
    return choices;
  PipelineChoice toggled = best;
  toggled.overlapP2PComm = !best.overlapP2PComm;
  addOnce(choices, toggled);
  if (best.schedule != PipelineScheduleKind::Interleaved)
    return choices;
  int64_t stages = config.pipelineModelParallelSize;
  for (int64_t group : {2 * stages, config.numMicrobatches})
    if (group != best.microbatchGroupSize && group >= stages &&
        group <= config.numMicrobatches)
      addOnce(choices, makeInterleaved(best.virtualSize, group,
                                       best.overlapP2PComm));
  return choices;
}

/// `recorded` (the module's ddp.schedule_options as the user's import left
/// them) with `choice`'s options over it, so that they hold unless the
/// given options name them.
static DictionaryAttr withChoice(MLIRContext &context, DictionaryAttr recorded,
                                 const PipelineChoice &choice) {
  Builder builder(&context);
  NamedAttrList entries;
  if (recorded)
    entries.append(recorded.getValue());
  entries.set("pipeline-schedule",
              builder.getStringAttr(stringifyPipelineScheduleKind(choice.schedule)));
  entries.set("overlap-p2p-comm", builder.getBoolAttr(choice.overlapP2PComm));
  if (choice.schedule == PipelineScheduleKind::Interleaved)
    entries.set("microbatch-group-size",
                builder.getI64IntegerAttr(choice.microbatchGroupSize));
  else
    entries.erase("microbatch-group-size");
  return entries.getDictionary(&context);
}

/// Imports, schedules and simulates `choice` in a context of its own, made
/// from `registry` and run on `pool` (serially without one).
/// `recordedOptions` is the user's ddp.schedule_options as text (empty
/// without them), `scheduleOptions` the given ones.
static PipelineCandidate
evaluate(const DialectRegistry &registry, llvm::ThreadPoolInterface *pool,
         const ModelConfig &base, StringRef recordedOptions,
         const PipelineChoice &choice, StringRef scheduleOptions,
         const timing::CostModel &model) {
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  if (pool)
    context.setThreadPool(*pool);
  // A refusal is the first error's message: an error at the module must
  // not print its 400k ops into a note first.
  context.printOpOnDiagnostic(false);
  PipelineCandidate candidate;
  candidate.choice = choice;
  ModelConfig config = base;
  config.virtualPipelineModelParallelSize = choice.virtualSize;
  config.numLayersPerVirtualPipelineStage = 0;
  bool interleaved = choice.schedule == PipelineScheduleKind::Interleaved;
  config.microbatchGroupSizePerVpStage =
      interleaved ? choice.microbatchGroupSize : 0;
  config.overlapP2PComm = choice.overlapP2PComm;
  // ZB-H1 is built at import (its W passes and their sums); the others only
  // order what the import built, but a configured schedule must agree.
  config.pipelineSchedule = choice.schedule;
  if (llvm::Error error = validateModelConfig(config, "this choice")) {
    candidate.refusal = llvm::toString(std::move(error));
    return candidate;
  }
  // The first error of a refused candidate is its reason, not the user's
  // error: the search goes on.
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == DiagnosticSeverity::Error &&
        candidate.refusal.empty())
      candidate.refusal = diagnostic.str();
    return success();
  });
  // The options parse here as they did in planPipeline; the recorded ones
  // printed there parse into this context.
  SchedulePipelineOptions options;
  if (llvm::Error error = parseGivenScheduleOptions(scheduleOptions, options))
    llvm::report_fatal_error(llvm::Twine("options that parsed once did not "
                                         "parse again: ") +
                             llvm::toString(std::move(error)));
  // A given group orders the interleaved candidates' microbatches; the
  // other schedules have none, and would refuse it.
  if (choice.schedule != PipelineScheduleKind::Interleaved)
    options.microbatchGroupSize = 0;
  DictionaryAttr recorded;
  if (!recordedOptions.empty()) {
    recorded = dyn_cast_or_null<DictionaryAttr>(
        parseAttribute(recordedOptions, &context));
    if (!recorded) {
      candidate.refusal = "the module's recorded options did not read back";
      return candidate;
    }
  }
  OwningOpRef<ModuleOp> module = importModel(context, config);
  if (!module) {
    if (candidate.refusal.empty())
      candidate.refusal = "the importer refused it";
    return candidate;
  }
  (*module)->setAttr(kScheduleOptionsAttrName,
                     withChoice(context, recorded, choice));
  if (failed(runDDPSchedule(*module, options))) {
    if (candidate.refusal.empty())
      candidate.refusal = "the schedule refused it";
    return candidate;
  }
  sim::SimOptions simOptions;
  simOptions.recordEvents = false;
  FailureOr<sim::PipelineSimResult> result =
      sim::simulatePipeline(*module, model, simOptions);
  if (failed(result)) {
    if (candidate.refusal.empty())
      candidate.refusal = "the simulator refused it";
    return candidate;
  }
  candidate.peakMemoryBytes = result->getMemoryBytes(result->getMemoryPeakRank());
  double capacity = model.getProfile().memoryCapacity;
  candidate.fits = capacity <= 0 || candidate.peakMemoryBytes <= capacity;
  // No events were recorded (they would name this context's ops), and the
  // ops the results name go with it.
  for (sim::SimResult &stage : result->stages)
    for (auto &ready : stage.gradReady)
      ready.op = nullptr;
  candidate.result = std::move(*result);
  return candidate;
}

/// The fastest candidate that fits, else the one that needs the least
/// memory; the earlier of equals (the configured one comes first).
static std::optional<size_t>
chooseBest(const std::vector<PipelineCandidate> &candidates) {
  std::optional<size_t> best;
  auto better = [&](const PipelineCandidate &a, const PipelineCandidate &b) {
    if (a.fits != b.fits)
      return a.fits;
    if (a.fits)
      return a.result->stepTime < b.result->stepTime;
    return a.peakMemoryBytes < b.peakMemoryBytes;
  };
  for (auto [index, candidate] : llvm::enumerate(candidates))
    if (candidate.result && (!best || better(candidate, candidates[*best])))
      best = index;
  return best;
}

llvm::Expected<PipelinePlan> ddp::plan::planPipeline(
    MLIRContext &context, const ModelConfig &config,
    DictionaryAttr recordedOptions, StringRef scheduleOptions,
    const timing::CostModel &model,
    llvm::function_ref<void(const llvm::Twine &)> progress) {
  SchedulePipelineOptions options;
  if (llvm::Error error = parseGivenScheduleOptions(scheduleOptions, options))
    return std::move(error);
  // Every candidate would write its own layout there, several at once.
  if (!options.printBucketLayout.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "print-bucket-layout: each candidate pipeline has its own layout; "
        "print the chosen one with ddp-opt --ddp-schedule and its options");
  // What the given options set holds for every candidate: the configured
  // choice takes it, and auto explores only what they leave open.
  llvm::StringSet<> given = options.getGivenOptionNames();
  std::optional<PipelineScheduleKind> givenSchedule;
  if (given.contains("pipeline-schedule") && !options.pipelineSchedule.empty())
    givenSchedule = parsePipelineScheduleKind(options.pipelineSchedule);
  // A given 1f1b or gpipe runs one chunk per stage, a given interleaved
  // several; the configured choice keeps its virtual size either way (the
  // schedule says what is wrong with it).
  auto constrain = [&](PipelineChoice choice,
                       bool configured) -> std::optional<PipelineChoice> {
    if (givenSchedule && *givenSchedule != choice.schedule) {
      bool interleaved = *givenSchedule == PipelineScheduleKind::Interleaved;
      if (!configured && interleaved != (choice.virtualSize > 1))
        return std::nullopt;
      choice.schedule = *givenSchedule;
      choice.microbatchGroupSize =
          interleaved ? config.pipelineModelParallelSize : 0;
    }
    if (given.contains("microbatch-group-size") &&
        choice.schedule == PipelineScheduleKind::Interleaved)
      choice.microbatchGroupSize = options.microbatchGroupSize
                                       ? int64_t(options.microbatchGroupSize)
                                       : config.pipelineModelParallelSize;
    if (given.contains("overlap-p2p-comm"))
      choice.overlapP2PComm = options.overlapP2PComm;
    if (choice.schedule == PipelineScheduleKind::ZeroBubbleH1)
      choice.overlapP2PComm = true;
    return choice;
  };
  std::string recordedText;
  if (recordedOptions) {
    llvm::raw_string_ostream os(recordedText);
    recordedOptions.print(os);
  }
  llvm::ThreadPoolInterface *pool =
      context.isMultithreadingEnabled() ? &context.getThreadPool() : nullptr;
  PipelinePlan plan;
  // Each round's candidates at once; `progress` hears of each as it
  // starts, in the candidates' order (the line of a later one that starts
  // first is held back until the earlier ones' are out).
  auto run = [&](ArrayRef<PipelineChoice> choices) {
    size_t first = plan.candidates.size();
    // The round's choices apart from their slots, which are written as
    // each finishes, maybe while another thread announces it.
    std::vector<PipelineChoice> round;
    for (const PipelineChoice &each : choices) {
      std::optional<PipelineChoice> constrained =
          constrain(each, first == 0 && round.empty());
      if (!constrained || llvm::is_contained(round, *constrained) ||
          llvm::any_of(plan.candidates, [&](const PipelineCandidate &c) {
            return c.choice == *constrained;
          }))
        continue;
      round.push_back(*constrained);
    }
    size_t count = round.size();
    plan.candidates.resize(first + count);
    std::mutex progressMutex;
    std::vector<bool> started(count, false);
    size_t announced = 0;
    auto evaluateOne = [&](size_t index) {
      const PipelineChoice &choice = round[index];
      {
        std::lock_guard<std::mutex> lock(progressMutex);
        started[index] = true;
        for (; announced < count && started[announced]; ++announced)
          progress(llvm::formatv("candidate {0}: {1}", first + announced + 1,
                                 round[announced].describe()));
      }
      plan.candidates[first + index] =
          evaluate(context.getDialectRegistry(), pool, config, recordedText,
                   choice, scheduleOptions, model);
    };
    if (!pool || count == 1) {
      for (size_t index = 0; index < count; ++index)
        evaluateOne(index);
      return;
    }
    // As many workers as the pool has threads, each taking the next
    // candidate until none is left: a thread that waits on its candidate's
    // own parallel passes runs other queued tasks meanwhile (LLVM's pool
    // does), and a task per candidate would let it start every candidate
    // of the round at once, each holding its step.
    std::atomic<size_t> next(0);
    auto work = [&] {
      for (size_t index = next++; index < count; index = next++)
        evaluateOne(index);
    };
    llvm::ThreadPoolTaskGroup group(*pool);
    size_t workers = std::min<size_t>(count, pool->getMaxConcurrency());
    for (size_t worker = 0; worker < workers; ++worker)
      group.async(work);
    group.wait();
  };
  run(getFirstPipelineChoices(config));
  if (std::optional<size_t> best = chooseBest(plan.candidates))
    run(getRefinedPipelineChoices(config, plan.candidates[*best].choice));
  plan.configured = 0;
  plan.best = chooseBest(plan.candidates);
  return plan;
}
