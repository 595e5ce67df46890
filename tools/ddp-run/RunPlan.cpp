//===- RunPlan.cpp - What ddp-run runs, and its predicted time -----------===//
//
// RunPlan.h; docs/ddp-run.md describes the options and messages.
//
//===----------------------------------------------------------------------===//

#include "RunPlan.h"

#include "RuntimeSession.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/Transforms/BucketAttributes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Import/MegatronArgs.h"
#include "ddp/Pipelines/SchedulePipeline.h"
#include "ddp/Sim/PipelineSimulator.h"
#include "ddp/Sim/SimOutput.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>

using namespace mlir;
using namespace ddp;

OwningOpRef<ModuleOp> ddp::parseFile(StringRef path, MLIRContext &context) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(path, &error);
  if (!buffer)
    fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  // Parsing verifies too: the error above says whether the text or an op
  // is wrong.
  if (!module)
    fail("'" + path + "' is not a valid module (the error above says where)");
  return module;
}

MeshOp ddp::getMesh(ModuleOp module) {
  auto meshes = module.getOps<MeshOp>();
  return meshes.empty() ? MeshOp() : *meshes.begin();
}

std::string ddp::formatMesh(MeshOp mesh) {
  std::string text = "@" + mesh.getSymName().str() + "(";
  for (auto [index, axis] :
       llvm::enumerate(mesh.getAxisNames().getAsValueRange<StringAttr>()))
    text += (index ? ", " : "") + axis.str() + " = " +
            std::to_string(mesh.getShape()[index]);
  return text + ")";
}

/// Expands every `{a,b,...}` in `text` into each of its alternatives: the
/// cartesian product, leftmost group varying slowest.
static SmallVector<std::string> expandAlternatives(StringRef text) {
  size_t open = text.find('{');
  if (open == StringRef::npos)
    return {text.str()};
  size_t close = text.find('}', open);
  if (close == StringRef::npos)
    fail("unbalanced '{' in --schedule '" + text + "'");
  SmallVector<StringRef> alternatives;
  text.slice(open + 1, close).split(alternatives, ',');
  SmallVector<std::string> tails =
      expandAlternatives(text.drop_front(close + 1));
  SmallVector<std::string> expanded;
  for (StringRef alternative : alternatives)
    for (const std::string &tail : tails)
      expanded.push_back(
          (text.take_front(open) + alternative.trim() + tail).str());
  return expanded;
}

/// Writes a predicted trace to `path` with `write`; ends the run on error.
static void writeTraceFile(StringRef path,
                           llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(path, &error);
  if (!output)
    fail(error);
  write(output->os());
  if (llvm::Error error = finishOutputFile(*output, path))
    fail(llvm::toString(std::move(error)));
}

/// Simulates `program` on `model`; writes its trace when `tracePath` is set.
static sim::SimResult predictStep(ModuleOp program, const timing::CostModel &model,
                                  StringRef tracePath) {
  FailureOr<func::FuncOp> step = sim::findStepToSimulate(program, "");
  if (failed(step))
    fail("cannot find the step to simulate");
  FailureOr<sim::SimResult> result = sim::simulateStep(*step, model);
  if (failed(result))
    fail("the simulator cannot price the step");
  if (!tracePath.empty())
    writeTraceFile(tracePath, [&](llvm::raw_ostream &os) {
      sim::writeChromeTrace(*result, os);
    });
  return *result;
}

/// Simulates the stage programs of the pipeline `program` together: its
/// step is when the last rank's ends, as the slowest rank's measured step
/// is. Writes its trace (a process per rank) when `tracePath` is set.
static sim::SimResult predictPipeline(ModuleOp program,
                                      const timing::CostModel &model,
                                      StringRef tracePath) {
  sim::SimOptions options;
  options.recordEvents = !tracePath.empty();
  FailureOr<sim::PipelineSimResult> result =
      sim::simulatePipeline(program, model, options);
  if (failed(result))
    fail("the simulator cannot price the pipeline");
  if (!tracePath.empty())
    writeTraceFile(tracePath, [&](llvm::raw_ostream &os) {
      sim::writePipelineChromeTrace(*result, os);
    });
  sim::SimResult step;
  step.stepTime = result->stepTime;
  step.hardwareName = model.getProfile().name;
  return step;
}

/// Whether `program` is a pipelined step not yet split into stage programs
/// (the reference a pipelined run is compared with: every rank runs it
/// whole, and the simulator prices a pipeline only once split).
static bool isUnsplitPipeline(ModuleOp program) {
  return llvm::any_of(program.getOps<func::FuncOp>(), isUnsplitPipelineStep);
}

/// Why reducing 16-bit gradients in f32 (grad-reduce-in-fp32, when
/// `options` ask for it) cannot equal the input's average bitwise, if it
/// cannot. The step's avg pre-scales each contribution by 1/n in the
/// gradient's own type; grad-reduce-in-fp32 scales in f32 and rounds to 16
/// bits only after the sum. The two agree when 1/n is a power of two and
/// differ otherwise: the option then changes what the step computes
/// (docs/RationaleDDP.md).
static std::optional<std::string>
whyFp32ReductionIsInexact(ModuleOp input, const AssignBucketsOptions &options) {
  if (!options.gradReduceInFp32)
    return std::nullopt;
  MeshOp mesh = getMesh(input);
  std::optional<std::string> why;
  input.walk([&](AllReduceOp reduce) {
    auto type = cast<RankedTensorType>(reduce.getResult().getType());
    int64_t groupSize = getGroupSize(mesh, reduce.getAxes());
    if (reduce.getReduction() != Reduction::Avg ||
        type.getElementType().getIntOrFloatBitWidth() >= 32 ||
        llvm::isPowerOf2_64(uint64_t(groupSize)))
      return WalkResult::advance();
    std::string element;
    llvm::raw_string_ostream os(element);
    os << type.getElementType();
    why = "grad-reduce-in-fp32 averages the " + element + " gradients over " +
          std::to_string(groupSize) +
          " ranks in f32, where the unscheduled step averages them in " +
          element + ", and 1/" + std::to_string(groupSize) +
          " rounds differently in the two (it changes what the step "
          "computes)";
    return WalkResult::interrupt();
  });
  return why;
}

/// Why splitting the data-parallel group into distributed-optimizer
/// instances (when `options` ask for it) cannot equal the input's one
/// reduction bitwise, if it cannot. The deterministic reduction adds ranks in
/// pairs, so a reduce-scatter within instances of m consecutive ranks
/// followed by an all-reduce across them adds in the same order only when m
/// is a power of two; 16-bit partial sums are rounded once per level unless
/// reduced in f32; and `avg` scales by 1/m and 1/k instead of 1/n.
static std::optional<std::string>
whyInstancesAreInexact(ModuleOp input, const AssignBucketsOptions &options) {
  int64_t numInstances = options.numDistributedOptimizerInstances;
  if (!options.useDistributedOptimizer || numInstances <= 1)
    return std::nullopt;
  MeshOp mesh = getMesh(input);
  std::optional<std::string> why;
  input.walk([&](AllReduceOp reduce) {
    int64_t groupSize = getGroupSize(mesh, reduce.getAxes());
    if (reduce.getReduction() != Reduction::Avg || groupSize < 1 ||
        groupSize % numInstances != 0)
      return WalkResult::advance();
    int64_t instanceSize = groupSize / numInstances;
    auto type = cast<RankedTensorType>(reduce.getResult().getType());
    if (!llvm::isPowerOf2_64(uint64_t(instanceSize)))
      why = "instances of " + std::to_string(instanceSize) +
            " ranks are not a power of two, so the deterministic reduction "
            "(in pairs of ranks) adds the " +
            std::to_string(groupSize) + " contributions in another order";
    else if (instanceSize > 1 &&
             type.getElementType().getIntOrFloatBitWidth() < 32 &&
             !options.gradReduceInFp32)
      why = "each instance's partial sums are rounded to 16 bits before the "
            "reduction across instances, where the unscheduled step rounds "
            "once";
    else if (options.averageInCollective &&
             !llvm::isPowerOf2_64(uint64_t(numInstances)))
      why = "average-in-collective scales by 1/" +
            std::to_string(instanceSize) + " and 1/" +
            std::to_string(numInstances) +
            " where the unscheduled step "
            "scales by 1/" +
            std::to_string(groupSize);
    return why ? WalkResult::interrupt() : WalkResult::advance();
  });
  return why;
}

/// Why a schedule with `options` cannot equal the input bitwise, if it
/// cannot.
static std::optional<std::string>
whyNotVerifiable(ModuleOp input, const AssignBucketsOptions &options) {
  if (std::optional<std::string> why =
          whyFp32ReductionIsInexact(input, options))
    return why;
  return whyInstancesAreInexact(input, options);
}

static std::string formatOption(StringRef name, bool value) {
  return (name + "=" + (value ? "true" : "false")).str();
}

/// Under --verify, fails if the schedule `scheduleText` cannot equal the
/// input bitwise with `effective`, the options the pipeline will use (those
/// given over those the input records); `given` are the ones given alone.
/// The refusal names the recorded options that made the difference, and a
/// grad-reduce-in-fp32 to verify with only when that one can be verified.
static void checkVerifiable(ModuleOp input,
                            const AssignBucketsOptions &effective,
                            const AssignBucketsOptions &given,
                            StringRef scheduleText) {
  std::optional<std::string> why = whyNotVerifiable(input, effective);
  if (!why)
    return;
  std::string message =
      "schedule '" + scheduleText.str() + "' cannot be verified bitwise";
  SmallVector<std::string> recorded;
  if (effective.gradReduceInFp32 != given.gradReduceInFp32)
    recorded.push_back(
        formatOption("grad-reduce-in-fp32", effective.gradReduceInFp32));
  if (effective.averageInCollective != given.averageInCollective)
    recorded.push_back(
        formatOption("average-in-collective", effective.averageInCollective));
  if (effective.useDistributedOptimizer != given.useDistributedOptimizer)
    recorded.push_back(formatOption("use-distributed-optimizer",
                                    effective.useDistributedOptimizer));
  if (effective.numDistributedOptimizerInstances !=
      given.numDistributedOptimizerInstances)
    recorded.push_back(
        "num-distributed-optimizer-instances=" +
        std::to_string(effective.numDistributedOptimizerInstances));
  if (!recorded.empty())
    message += " (with " + llvm::join(recorded, ", ") + " from the input's " +
               kScheduleOptionsAttrName.str() + ")";
  // The one option a refusal can point to: whether it helps depends on
  // everything else.
  AssignBucketsOptions flipped = effective;
  flipped.gradReduceInFp32 = !effective.gradReduceInFp32;
  std::optional<std::string> whyFlipped = whyNotVerifiable(input, flipped);
  std::string setting =
      formatOption("grad-reduce-in-fp32", effective.gradReduceInFp32);
  std::string other =
      formatOption("grad-reduce-in-fp32", flipped.gradReduceInFp32);
  if (!whyFlipped)
    fail(message + ": " + *why + "; verify it with " + other);
  if (*whyFlipped == *why)
    fail(message + ": " + *why);
  fail(message + " with either setting of grad-reduce-in-fp32: with " +
       setting + ", " + *why + "; with " + other + ", " + *whyFlipped);
}

/// The options ddp-schedule will schedule `input` with when given `given`:
/// the options `input` records in ddp.schedule_options, overridden by those
/// `given` names (as the pipeline merges them).
static AssignBucketsOptions
getEffectiveOptions(ModuleOp input, const SchedulePipelineOptions &given,
                    const RunRequest &request, StringRef scheduleText) {
  SchedulePipelineOptions effective;
  effective.copyOptionValuesFrom(given);
  if (failed(applyRecordedScheduleOptions(input, given.getGivenOptionNames(),
                                          effective)))
    fail("scheduling '" + request.inputFile + "' failed with '" + scheduleText +
         "'");
  return getAssignBucketsOptions(effective);
}

/// The top-level elements of a textual pass pipeline: `a{x=1},f.g(b,c)`
/// gives `a{x=1}` and `f.g(b,c)`.
static SmallVector<StringRef> splitPipelineList(StringRef text) {
  SmallVector<StringRef> elements;
  int depth = 0;
  size_t start = 0;
  for (size_t index = 0; index < text.size(); ++index) {
    char c = text[index];
    if (c == '(' || c == '{')
      ++depth;
    else if (c == ')' || c == '}')
      --depth;
    else if (c == ',' && depth == 0) {
      elements.push_back(text.slice(start, index).trim());
      start = index + 1;
    }
  }
  elements.push_back(text.drop_front(start).trim());
  return elements;
}

/// The op a pipeline element `<op-name>(...)` nests its passes on; nullopt
/// for a pass (`name` or `name{options}`).
static std::optional<StringRef> getNestedOpName(StringRef element) {
  size_t open = element.find_first_of("({");
  if (open == StringRef::npos || element[open] != '(')
    return std::nullopt;
  return element.take_front(open).rtrim();
}

/// Fills `pm`, which runs on the input's module, with --pass-pipeline
/// `text`: either anchored on the module as mlir-opt takes it
/// ('builtin.module(...)' or 'any(...)'), or a list of passes run on the
/// module, `<op>(...)` running its passes on each such op of the module
/// ('func.func(...),ddp-verify-collective-order'). A list element nested on
/// an op the module does not hold would run nothing, silently (parsed as a
/// list, 'builtin.module(...)' nests a second module pass manager that finds
/// no module inside the module): that is an error.
static void addPassPipeline(StringRef text, ModuleOp input, PassManager &pm) {
  text = text.trim();
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  SmallVector<StringRef> elements = splitPipelineList(text);
  std::optional<StringRef> anchor = getNestedOpName(elements.front());
  if (elements.size() == 1 && (anchor == ModuleOp::getOperationName() ||
                               anchor == OpPassManager::getAnyOpAnchorName())) {
    FailureOr<OpPassManager> parsed = parsePassPipeline(text, errorStream);
    if (failed(parsed))
      fail("bad --pass-pipeline: " + error);
    static_cast<OpPassManager &>(pm) = std::move(*parsed);
    return;
  }
  llvm::SetVector<StringRef> heldOps;
  for (Operation &op : input.getBody()->getOperations())
    heldOps.insert(op.getName().getStringRef());
  for (StringRef element : elements) {
    std::optional<StringRef> opName = getNestedOpName(element);
    if (opName && !heldOps.contains(*opName))
      fail("--pass-pipeline '" + text + "' nests passes on '" + *opName +
           "', but the step's module holds no '" + *opName + "' (it holds " +
           llvm::join(heldOps, ", ") +
           "), so they would never run; anchor the whole pipeline on the "
           "module ('builtin.module(...)') or list the passes to run on it");
  }
  if (failed(parsePassPipeline(text, pm, errorStream)))
    fail("bad --pass-pipeline: " + error);
}

std::vector<RunProgram> ddp::buildSchedules(ModuleOp input,
                                            MLIRContext &context,
                                            const RunRequest &request) {
  std::vector<RunProgram> schedules;
  auto runPipeline = [&](RunProgram &program,
                         llvm::function_ref<void(PassManager &)> populate) {
    program.module = input.clone();
    auto pm = PassManager::on<ModuleOp>(&context);
    populate(pm);
    if (failed(pm.run(*program.module)))
      fail("scheduling '" + request.inputFile + "' failed" +
           (program.options.empty() ? "" : " with '" + program.options + "'"));
  };
  if (!request.scheduledFile.empty()) {
    RunProgram &program = schedules.emplace_back();
    program.label = "the scheduled program ('" + request.scheduledFile + "')";
    program.module = parseFile(request.scheduledFile, context);
  } else if (!request.passPipeline.empty()) {
    RunProgram &program = schedules.emplace_back();
    program.label = "the scheduled program";
    runPipeline(program, [&](PassManager &pm) {
      addPassPipeline(request.passPipeline, input, pm);
    });
  } else {
    for (const std::string &option : request.scheduleOptions) {
      for (std::string &expanded : expandAlternatives(option)) {
        RunProgram &program = schedules.emplace_back();
        program.options = expanded;
        program.label = "schedule '" + expanded + "'";
        runPipeline(program, [&](PassManager &pm) {
          // The words ddp-opt's --ddp-schedule and ddp-plan's --options
          // use, then the options' own checks, before any work.
          auto options = std::make_unique<SchedulePipelineOptions>();
          if (llvm::Error error = parseGivenScheduleOptions(expanded, *options))
            fail("--schedule: " + llvm::toString(std::move(error)));
          if (request.verify)
            checkVerifiable(
                input, getEffectiveOptions(input, *options, request, expanded),
                getAssignBucketsOptions(*options), expanded);
          populateDDPSchedulePipeline(pm, *options);
        });
      }
    }
  }
  for (auto [index, program] : llvm::enumerate(schedules)) {
    program.role = schedules.size() == 1
                       ? "scheduled"
                       : "schedule " + std::to_string(index + 1);
    if (schedules.size() == 1 && !program.options.empty())
      program.label = "the scheduled program";
    if (request.runsUnscheduled())
      program.paramPrefix = "schedule" + std::to_string(index + 1) + ":";
  }
  return schedules;
}

std::optional<std::string> ddp::adoptSplitMesh(ModuleOp input,
                                               ArrayRef<RunProgram> schedules) {
  MeshOp mesh = getMesh(input);
  if (!mesh)
    return std::nullopt;
  for (const RunProgram &program : schedules) {
    MeshOp split = getMesh(*program.module);
    if (!split || split.getShape().size() != mesh.getShape().size() + 1)
      continue;
    for (auto [index, axis] :
         llvm::enumerate(mesh.getAxisNames().getAsRange<StringAttr>())) {
      auto instanceAxis = StringAttr::get(input.getContext(),
                                          axis.getValue() + "_replicate");
      auto shardAxis =
          StringAttr::get(input.getContext(), axis.getValue() + "_shard");
      int64_t numInstances = split.getAxisSize(instanceAxis.getValue());
      if (numInstances < 1 || mesh.getShape()[index] % numInstances != 0)
        continue;
      // Only the exact split counts; checkComparable refuses anything else.
      ModuleOp candidate = input.clone();
      MeshOp candidateMesh = getMesh(candidate);
      splitMeshAxis(candidate, candidateMesh, axis, numInstances, instanceAxis,
                    shardAxis);
      bool same = candidateMesh.getAxisNames() == split.getAxisNames() &&
                  candidateMesh.getShape() == split.getShape();
      candidate.erase();
      if (!same)
        continue;
      splitMeshAxis(input, mesh, axis, numInstances, instanceAxis, shardAxis);
      return program.label;
    }
  }
  return std::nullopt;
}

RunPlan ddp::planRun(ModuleOp input, std::vector<RunProgram> schedules,
                     const RunRequest &request) {
  RunPlan plan;
  plan.numSchedules = schedules.size();
  if (request.runsUnscheduled() || schedules.empty()) {
    RunProgram &reference = plan.programs.emplace_back();
    reference.role = request.runsUnscheduled() ? "unscheduled" : "program";
    reference.label = "the unscheduled program";
    reference.module = input.clone();
  }
  // Options that change nothing for this step (grad-reduce-in-fp32 on f32
  // gradients, say) give the same program: it runs once.
  llvm::StringMap<std::string> distinct;
  for (RunProgram &program : schedules) {
    std::string text;
    llvm::raw_string_ostream os(text);
    program.module->print(os);
    auto [first, inserted] = distinct.try_emplace(text, program.role);
    if (inserted)
      plan.programs.push_back(std::move(program));
    else
      plan.duplicates.push_back({program.role, first->second, program.options});
  }
  return plan;
}

void ddp::checkComparable(MeshOp mesh, ArrayRef<ParamDescription> params,
                          ArrayRef<RunProgram> programs,
                          const RunRequest &request,
                          const std::optional<std::string> &splitBy) {
  llvm::StringSet<> names;
  for (const ParamDescription &param : params)
    names.insert(param.name);
  for (const RunProgram &program : programs) {
    MeshOp other = getMesh(*program.module);
    if (other && (mesh.getAxisNames() != other.getAxisNames() ||
                  mesh.getShape() != other.getShape())) {
      // The runtime starts with one mesh for every program of the run.
      if (splitBy)
        fail("the mesh " + formatMesh(other) + " of " + program.label +
             " differs from " + formatMesh(mesh) + ", which " + *splitBy +
             " splits the input's mesh into for its distributed-optimizer "
             "instances; the programs of one run share one mesh, so verify "
             "schedules that split it differently in separate runs");
      fail("the mesh " + formatMesh(other) + " of " + program.label +
           " differs from the input's " + formatMesh(mesh));
    }
    // The runtime holds every program's parameters under one namespace:
    // a schedule's are registered as its prefix + their name.
    if (!program.paramPrefix.empty())
      for (const ParamDescription &param : params)
        if (names.contains(program.paramPrefix + param.name))
          fail("the input's parameter @\"" + program.paramPrefix + param.name +
               "\" has the name under which " + program.label + "'s copy of @" +
               param.name +
               " is registered beside the unscheduled program's ('" +
               program.paramPrefix + "' and its name); rename it");
    if (!request.verify)
      continue;
    SmallVector<ParamDescription> actual = describeParams(*program.module);
    for (const ParamDescription &param : params) {
      auto same = llvm::find_if(actual, [&](const ParamDescription &other) {
        return other.name == param.name && other.shape == param.shape &&
               other.elementType == param.elementType;
      });
      if (same == actual.end())
        fail(program.label + " has no parameter @" + param.name +
             " of the unscheduled program's shape and type; a schedule "
             "keeps every parameter");
    }
    if (actual.size() != params.size())
      fail(program.label + " has " + llvm::Twine(actual.size()) +
           " parameters, the unscheduled program " +
           llvm::Twine(params.size()));
  }
}

void ddp::predictPrograms(std::vector<RunProgram> &programs,
                          StringRef hardwareProfile,
                          StringRef predictedTracePath) {
  llvm::Expected<timing::HardwareProfile> profile =
      timing::lookupHardwareProfile(hardwareProfile);
  if (!profile)
    fail(llvm::toString(profile.takeError()));
  timing::CostModel model(*profile);
  for (RunProgram &program : programs) {
    StringRef tracePath =
        &program == &programs.back() ? predictedTracePath : StringRef();
    if (sim::hasPipelineStages(*program.module))
      program.prediction = predictPipeline(*program.module, model, tracePath);
    else if (!isUnsplitPipeline(*program.module))
      program.prediction = predictStep(*program.module, model, tracePath);
  }
}

int64_t ddp::getJobRank() {
  for (const char *variable :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char *value = std::getenv(variable)) {
      int64_t rank = 0;
      if (!llvm::StringRef(value).getAsInteger(10, rank))
        return rank;
    }
  return 0;
}

std::optional<int64_t> ddp::getJobSize() {
  for (const char *variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *value = std::getenv(variable)) {
      int64_t size = 0;
      if (!llvm::StringRef(value).getAsInteger(10, size))
        return size;
    }
  return std::nullopt;
}

void ddp::selectPipelineStages(std::vector<RunProgram> &programs,
                               MeshOp mesh) {
  // Ranks lie row-major on the mesh, the first axis slowest.
  int64_t rank = getJobRank(), stage = -1;
  ArrayRef<int64_t> shape = mesh.getShape();
  for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
    if (cast<StringAttr>(mesh.getAxisNames()[i]).getValue() == "pp")
      stage = rank % shape[i];
    rank /= shape[i];
  }
  for (RunProgram &program : programs) {
    bool hasStages = llvm::any_of(
        program.module->getOps<func::FuncOp>(),
        [](func::FuncOp func) { return getPipelineStage(func).has_value(); });
    if (!hasStages)
      continue;
    if (stage < 0)
      fail(program.label + " holds pipeline stage programs, but the mesh " +
           formatMesh(mesh) + " has no pp axis to run them on");
    PassManager pm(program.module->getContext());
    ExtractPipelineStageOptions options;
    options.rank = stage;
    pm.addPass(createExtractPipelineStage(options));
    if (failed(pm.run(*program.module)))
      fail("cannot take pipeline rank " + llvm::Twine(stage) + "'s program of " +
           program.label);
    program.pipelined = true;
  }
}
