//===- ddp-run.cpp - Run a step on the runtime, verify a schedule ---------===//
//
//   mpirun -np 2 ddp-run step.mlir [--steps=3] [--backend=cpu]
//   mpirun -np 2 ddp-run step.mlir --verify --schedule='policy=megatron'
//   mpirun -np 2 ddp-run step.mlir --verify
//   --pass-pipeline='builtin.module(...)' mpirun -np 2 ddp-run step.mlir
//   --verify --scheduled=hand-edited.mlir
//   mpirun -np 2 ddp-run step.mlir --predict --hw=cpu-mpi-2core \
//       --trace=measured.json --predicted-trace=predicted.json
//   ddp-run step.mlir --emit-object=step.o
//
// One process per rank. The step is lowered with ddp-lower-to-runtime and
// JIT-compiled through MLIR's ExecutionEngine against libddprt; docs/ddp-run.md
// describes every option and message.
//
//===----------------------------------------------------------------------===//

#include "LoweredProgram.h"
#include "MemoryCheck.h"
#include "RuntimeSession.h"
#include "StepVerifier.h"

#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Pipelines/SchedulePipeline.h"
#include "ddp/Sim/SimOutput.h"
#include "ddp/Sim/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

using namespace mlir;
using namespace ddp;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("ddp-run options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<step.mlir>"),
                                      cl::init("-"), cl::cat(runCategory));
static cl::opt<std::string>
    backendName("backend",
                cl::desc("Runtime backend: cpu, cuda, or auto (cuda when a "
                         "GPU is present)"),
                cl::init("cpu"), cl::cat(runCategory));
static cl::opt<int> numSteps("steps", cl::desc("Steps to run"), cl::init(3),
                             cl::cat(runCategory));
static cl::opt<uint64_t>
    seed("seed",
         cl::desc("Seed of the parameters (the same on every rank) and of "
                  "the inputs (different on every rank)"),
         cl::init(1), cl::cat(runCategory));
static cl::opt<std::string>
    tracePath("trace",
              cl::desc("Write the measured Chrome trace of all ranks here"),
              cl::value_desc("file"), cl::cat(runCategory));
static cl::opt<int>
    timeoutSeconds("timeout",
                   cl::desc("Seconds a collective may take before all ranks "
                            "are ended (0: DDPRT_TIMEOUT or 60)"),
                   cl::init(0), cl::cat(runCategory));
static cl::opt<bool>
    verify("verify",
           cl::desc("Run the input (unscheduled) and the scheduled program on "
                    "the same inputs and compare every parameter bitwise "
                    "after every step, and every rank with its replicas"),
           cl::cat(runCategory));
static cl::list<std::string> scheduleOptions(
    "schedule",
    cl::desc("Schedule the input with the ddp-schedule pipeline and these "
             "options, e.g. 'policy=megatron bucket-size=4096'; repeatable, "
             "and {a,b} runs every alternative (with --verify, all are "
             "compared with the input)"),
    cl::value_desc("options"), cl::cat(runCategory));
static cl::opt<std::string>
    passPipeline("pass-pipeline",
                 cl::desc("Schedule the input with this pass pipeline, e.g. "
                          "'builtin.module(func.func(ddp-assign-buckets{"
                          "policy=megatron},ddp-bucketize))'"),
                 cl::cat(runCategory));
static cl::opt<std::string>
    scheduledFile("scheduled",
                  cl::desc("Use this file as the scheduled program (a "
                           "schedule written or edited by hand)"),
                  cl::value_desc("file"), cl::cat(runCategory));
static cl::opt<std::string>
    objectFile("emit-object",
               cl::desc("Write the (scheduled) program as an object file for "
                        "the ahead-of-time launcher instead of running it"),
               cl::value_desc("file"), cl::cat(runCategory));
static cl::opt<std::string>
    paramDumpFile("dump-params",
                  cl::desc("After the last step, rank 0 writes every "
                           "parameter here (name, dtype, numel, bytes in hex)"),
                  cl::value_desc("file"), cl::cat(runCategory));
static cl::opt<bool>
    predict("predict",
            cl::desc("Print the simulator's predicted step time next to the "
                     "measured one"),
            cl::cat(runCategory));
static cl::opt<std::string>
    hardwareProfile("hw",
                    cl::desc("Hardware profile of the prediction: a built-in "
                             "name or a JSON file"),
                    cl::init("cpu-mpi-2core"), cl::cat(runCategory));
static cl::opt<std::string> predictedTracePath(
    "predicted-trace",
    cl::desc("Write the simulator's Chrome trace of the (scheduled) program "
             "here, to lay beside --trace"),
    cl::value_desc("file"), cl::cat(runCategory));
static cl::opt<bool> memoryCheck(
    "memory-check",
    cl::desc("Refuse a run whose estimated memory (every program, every rank "
             "on this machine) exceeds what the machine has available "
             "(cpu backend)"),
    cl::init(true), cl::cat(runCategory));
static cl::opt<int> abiVersion(
    "abi-version",
    cl::desc("Pass this ABI version to ddprt_init instead of the compiler's "
             "(to test the runtime's check)"),
    cl::init(DDPRT_ABI_VERSION), cl::Hidden, cl::cat(runCategory));

/// Prints an error and ends this process.
[[noreturn]] static void fail(const llvm::Twine &message) {
  printError(message);
  std::exit(1);
}

static OwningOpRef<ModuleOp> parseFile(StringRef path, MLIRContext &context) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(path, &error);
  if (!buffer)
    fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    fail("cannot parse '" + path + "'");
  return module;
}

/// The one mesh of a module (the lowering reports the other cases).
static MeshOp getMesh(ModuleOp module) {
  auto meshes = module.getOps<MeshOp>();
  return meshes.empty() ? MeshOp() : *meshes.begin();
}

static MeshDescription describeMesh(MeshOp mesh) {
  MeshDescription description;
  for (StringRef axis : mesh.getAxisNames().getAsValueRange<StringAttr>())
    description.axes.push_back(axis.str());
  description.shape.assign(mesh.getShape().begin(), mesh.getShape().end());
  return description;
}

/// "@world(dp = 2, tp = 2)", as the IR writes it.
static std::string formatMesh(MeshOp mesh) {
  std::string text = "@" + mesh.getSymName().str() + "(";
  for (auto [index, axis] :
       llvm::enumerate(mesh.getAxisNames().getAsValueRange<StringAttr>()))
    text += (index ? ", " : "") + axis.str() + " = " +
            std::to_string(mesh.getShape()[index]);
  return text + ")";
}

/// Whether this process was started by a process manager (mpirun, srun):
/// they all tell their processes the size of the job.
static bool isUnderProcessManager() {
  for (const char *variable :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(variable))
      return true;
  return false;
}

static int32_t parseBackend(StringRef name) {
  if (name == "cpu")
    return DDPRT_BACKEND_CPU;
  if (name == "cuda")
    return DDPRT_BACKEND_CUDA;
  if (name == "auto")
    return DDPRT_BACKEND_AUTO;
  fail("unknown backend '" + name + "'; use cpu, cuda or auto");
}

/// One program as ddp-run runs it.
struct RunProgram {
  /// Its name in the summary: "unscheduled", "scheduled", "schedule 3".
  std::string role;
  /// How verify messages name it.
  std::string label;
  /// The schedule options it came from, if any.
  std::string options;
  /// Its parameters' names in the runtime are this + the IR's names.
  std::string paramPrefix;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<JitProgram> jit;
  std::vector<double> stepSeconds; // the slowest rank's, per step
  std::optional<sim::SimResult> prediction;
};

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

/// Simulates `program` on `model`; writes its trace when `tracePath` is set.
static sim::SimResult predictStep(ModuleOp program, const sim::CostModel &model,
                                  StringRef tracePath) {
  FailureOr<func::FuncOp> step = sim::findStep(program, "");
  if (failed(step))
    fail("cannot find the step to simulate");
  FailureOr<sim::SimResult> result = sim::simulateStep(*step, model);
  if (failed(result))
    fail("the simulator cannot price the step");
  if (!tracePath.empty()) {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> output =
        openOutputFile(tracePath, &error);
    if (!output)
      fail(error);
    sim::writeChromeTrace(*result, output->os());
    output->keep();
  }
  return *result;
}

/// The median of the step times, leaving out the first step (which pays
/// for first-touch allocation and communicator setup) when there are more.
static double getTypicalStepTime(std::vector<double> times) {
  if (times.size() > 1)
    times.erase(times.begin());
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// What runs: the unscheduled program (under --verify, or when there is no
/// schedule) and the distinct scheduled programs, in that order.
struct RunPlan {
  std::vector<RunProgram> programs;
  /// Schedules that gave the same program as an earlier one: its role, the
  /// earlier one's, its options.
  struct Duplicate {
    std::string role, sameAs, options;
  };
  std::vector<Duplicate> duplicates;
  size_t numSchedules = 0;
};

/// Under --verify, fails if `options` reduce 16-bit gradients in f32 where
/// that cannot equal the input's average bitwise. The step's avg pre-scales
/// each contribution by 1/n in the gradient's own type; grad-reduce-in-fp32
/// scales in f32 and rounds to 16 bits only after the sum. The two agree
/// when 1/n is a power of two and differ otherwise: the option then changes
/// what the step computes (docs/RationaleDDP.md).
static void checkFp32ReductionIsExact(ModuleOp input,
                                      const SchedulePipelineOptions &options,
                                      StringRef scheduleText) {
  if (!verify || !(options.gradReduceInFp32 || options.megatronGradReduceInFp32))
    return;
  MeshOp mesh = getMesh(input);
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
    fail("schedule '" + scheduleText +
         "' cannot be verified bitwise: grad-reduce-in-fp32 averages the " +
         element + " gradients over " + llvm::Twine(groupSize) +
         " ranks in f32, where the unscheduled step averages them in " +
         element + ", and 1/" + llvm::Twine(groupSize) +
         " rounds differently in the two (it changes what the step "
         "computes); verify it with grad-reduce-in-fp32=false");
  });
}

/// The scheduled programs: a file, the input after a pass pipeline, or the
/// input after ddp-schedule with each set of options.
static std::vector<RunProgram> buildSchedules(ModuleOp input,
                                              MLIRContext &context) {
  std::vector<RunProgram> schedules;
  auto runPipeline = [&](RunProgram &program,
                         llvm::function_ref<void(PassManager &)> populate) {
    program.module = input.clone();
    PassManager pm(&context);
    populate(pm);
    if (failed(pm.run(*program.module)))
      fail("scheduling '" + inputFile + "' failed" +
           (program.options.empty() ? "" : " with '" + program.options + "'"));
  };
  if (!scheduledFile.empty()) {
    RunProgram &program = schedules.emplace_back();
    program.label = "the scheduled program ('" + scheduledFile + "')";
    program.module = parseFile(scheduledFile, context);
  } else if (!passPipeline.empty()) {
    RunProgram &program = schedules.emplace_back();
    program.label = "the scheduled program";
    runPipeline(program, [&](PassManager &pm) {
      std::string error;
      llvm::raw_string_ostream errorStream(error);
      if (failed(parsePassPipeline(passPipeline, pm, errorStream)))
        fail("bad --pass-pipeline: " + error);
    });
  } else {
    for (const std::string &option : scheduleOptions) {
      for (std::string &expanded : expandAlternatives(option)) {
        RunProgram &program = schedules.emplace_back();
        program.options = expanded;
        program.label = "schedule '" + expanded + "'";
        runPipeline(program, [&](PassManager &pm) {
          auto options = SchedulePipelineOptions::createFromString(expanded);
          if (!options)
            fail("bad --schedule options '" + expanded + "'");
          checkFp32ReductionIsExact(input, *options, expanded);
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
    if (verify)
      program.paramPrefix = "schedule" + std::to_string(index + 1) + ":";
  }
  return schedules;
}

static RunPlan planRun(ModuleOp input, std::vector<RunProgram> schedules) {
  RunPlan plan;
  plan.numSchedules = schedules.size();
  if (verify || schedules.empty()) {
    RunProgram &reference = plan.programs.emplace_back();
    reference.role = verify ? "unscheduled" : "program";
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

/// Fails unless every scheduled program can be compared with the input: the
/// same mesh and, under --verify, the same parameters.
static void checkComparable(MeshOp mesh, ArrayRef<ParamDescription> params,
                            ArrayRef<RunProgram> programs) {
  for (const RunProgram &program : programs) {
    MeshOp other = getMesh(*program.module);
    if (other && (mesh.getAxisNames() != other.getAxisNames() ||
                  mesh.getShape() != other.getShape()))
      fail("the mesh " + formatMesh(other) + " of " + program.label +
           " differs from the input's " + formatMesh(mesh));
    if (!verify)
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

/// Ends the run before anything is allocated when every rank on this machine
/// together would need more memory than it has available.
static void checkMemory(ArrayRef<RunProgram> programs) {
  SmallVector<ModuleOp> modules;
  for (const RunProgram &program : programs)
    modules.push_back(*program.module);
  // Every program has been lowered, so every plan builds.
  std::optional<int64_t> bytesPerRank = estimateRankBytes(modules);
  if (!bytesPerRank)
    fail("cannot plan the storage of '" + inputFile + "'");
  std::optional<int64_t> available = getAvailableMemoryBytes();
  if (!available)
    return;
  if (std::optional<std::string> error =
          checkMemoryFits(*bytesPerRank, getRanksOnThisMachine(), *available))
    fail(*error);
}

/// Every program lowered; in verify mode the scheduled ones register their
/// parameters under a prefix, so that all share one runtime.
static std::vector<OwningOpRef<ModuleOp>>
lowerPrograms(ArrayRef<RunProgram> programs) {
  std::vector<OwningOpRef<ModuleOp>> lowered;
  for (const RunProgram &program : programs) {
    LowerDDPToRuntimeOptions options;
    options.abiVersion = abiVersion;
    options.paramPrefix = program.paramPrefix;
    lowered.push_back(lowerToRuntime(*program.module, options));
    if (!lowered.back())
      fail("cannot lower " + program.label + " of '" + inputFile + "'");
  }
  return lowered;
}

/// The simulator's prediction of every program; the last one's trace goes
/// to --predicted-trace.
static void predictPrograms(std::vector<RunProgram> &programs) {
  llvm::Expected<sim::HardwareProfile> profile =
      sim::lookupHardwareProfile(hardwareProfile);
  if (!profile)
    fail(llvm::toString(profile.takeError()));
  sim::CostModel model(*profile);
  for (RunProgram &program : programs)
    program.prediction = predictStep(
        *program.module, model,
        &program == &programs.back() ? predictedTracePath : StringRef());
}

/// Runs up to --steps steps of every program, each timed on this rank, and
/// compares after each step under --verify; returns the first difference.
/// Fills each program's stepSeconds with the slowest rank's times.
static std::optional<std::string> runSteps(RuntimeSession &session,
                                           std::vector<RunProgram> &programs,
                                           StepVerifier *verifier) {
  ddprt_context *context = session.getContext();
  std::optional<std::string> difference;
  // Per step and program, this rank's seconds; gathered after the last step
  // so that a trace shows the steps and nothing of the measuring.
  std::vector<uint64_t> times;
  int stepsRun = 0;
  for (int step = 1; step <= numSteps && !difference; ++step, ++stepsRun) {
    for (RunProgram &program : programs) {
      auto start = std::chrono::steady_clock::now();
      session.check(program.jit->getEntryPoints().step(context),
                    "step " + std::to_string(step) + " of " + program.label);
      session.check(ddprt_synchronize(context), "ddprt_synchronize");
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      times.push_back(llvm::bit_cast<uint64_t>(seconds));
    }
    if (verifier)
      difference = verifier->compare(step);
  }

  std::vector<uint64_t> allTimes = session.gatherFromAllRanks(times);
  for (int step = 0; step < stepsRun; ++step) {
    for (auto [index, program] : llvm::enumerate(programs)) {
      double slowest = 0;
      for (int rank = 0; rank < session.getNumRanks(); ++rank)
        slowest = std::max(
            slowest,
            llvm::bit_cast<double>(allTimes[rank * times.size() +
                                            step * programs.size() + index]));
      program.stepSeconds.push_back(slowest);
    }
  }
  return difference;
}

static void printSummary(const RunPlan &plan, MeshOp mesh, int numRanks,
                         int32_t backend) {
  size_t stepsRun = plan.programs.front().stepSeconds.size();
  llvm::outs() << "ddp-run: " << numRanks << " rank"
               << (numRanks == 1 ? "" : "s") << ", mesh " << formatMesh(mesh)
               << ", " << (backend == DDPRT_BACKEND_CUDA ? "cuda" : "cpu")
               << " backend, " << stepsRun << " step"
               << (stepsRun == 1 ? "" : "s") << "\n";
  llvm::outs() << "  step time: the slowest rank's, median of the steps"
               << (stepsRun > 1 ? " after the first" : "") << "\n";
  size_t roleWidth = 0;
  for (const RunProgram &program : plan.programs)
    roleWidth = std::max(roleWidth, program.role.size());
  for (const RunProgram &program : plan.programs) {
    double measured = getTypicalStepTime(program.stepSeconds);
    llvm::outs() << "  " << llvm::left_justify(program.role, roleWidth)
                 << llvm::formatv("  measured {0,9:f3} ms", measured * 1e3);
    if (program.prediction)
      llvm::outs() << llvm::formatv(
          "   predicted {0,9:f3} ms ({1})   measured/predicted {2:f2}",
          program.prediction->stepTime * 1e3, program.prediction->hardwareName,
          measured / program.prediction->stepTime);
    if (plan.numSchedules > 1 && !program.options.empty())
      llvm::outs() << "   " << program.options;
    llvm::outs() << "\n";
  }
  for (const RunPlan::Duplicate &duplicate : plan.duplicates)
    llvm::outs() << "  " << llvm::left_justify(duplicate.role, roleWidth)
                 << "  the same program as " << duplicate.sameAs << "   "
                 << duplicate.options << "\n";
}

static void printVerified(const RunPlan &plan, const StepVerifier &verifier) {
  if (const std::optional<std::string> &note = verifier.getNonFiniteNote())
    printWarning("verify: " + *note +
                 "; the values outgrew exact arithmetic, so bitwise equality "
                 "from here on says less (run fewer steps or use a smaller "
                 "learning rate)");
  if (plan.numSchedules == 1)
    llvm::outs() << "verify: ok: after every step the scheduled program's "
                    "parameters equal the unscheduled program's bitwise on "
                    "every rank, and every rank holds what its replicas "
                    "hold\n";
  else if (plan.numSchedules > 1)
    llvm::outs() << "verify: ok: after every step the parameters of all "
                 << plan.numSchedules << " schedules ("
                 << plan.programs.size() - 1
                 << " distinct programs) equal the unscheduled program's "
                    "bitwise on every rank, and every rank holds what its "
                    "replicas hold\n";
  else
    llvm::outs() << "verify: ok (no schedule given, so only the replicas "
                    "were compared): after every step every rank holds what "
                    "its replicas hold\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  registerDDPConversionPasses();
  registerDDPPasses();
  registerDDPSchedulePipeline();
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ddp-run: lowers a training step to the runtime and runs it, one "
      "process per rank under mpirun\n");

  if (numSteps < 1)
    fail("--steps must be at least 1");
  bool wantsSchedule = scheduleOptions.getNumOccurrences() > 0;
  if (wantsSchedule + !passPipeline.empty() + !scheduledFile.empty() > 1)
    fail("give one of --schedule, --pass-pipeline and --scheduled");
  if (!objectFile.empty() && (verify || !paramDumpFile.empty()))
    fail("--emit-object writes the program without running it; it takes "
         "no --verify or --dump-params");
  int32_t backend = parseBackend(backendName);

  DialectRegistry registry;
  registry.insert<DDPDialect, func::FuncDialect, LLVM::LLVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics quote the line they point at (the handler reads the file
  // named by the location) and leave the op out.
  llvm::SourceMgr diagnosticSources;
  SourceMgrDiagnosticHandler diagnostics(diagnosticSources, &context);
  context.printOpOnDiagnostic(false);

  OwningOpRef<ModuleOp> input = parseFile(inputFile, context);
  MeshOp mesh = getMesh(*input);
  if (!mesh)
    fail("'" + inputFile + "' has no ddp.mesh: the runtime needs one");
  std::vector<RunProgram> schedules = buildSchedules(*input, context);
  if (schedules.size() > 1 && !verify)
    fail("several schedules run together only to be compared: add --verify");
  RunPlan plan = planRun(*input, std::move(schedules));
  std::vector<RunProgram> &programs = plan.programs;
  SmallVector<ParamDescription> params = describeParams(*input);
  checkComparable(mesh, params, programs);
  std::vector<OwningOpRef<ModuleOp>> lowered = lowerPrograms(programs);
  // Buffers of the CUDA backend live on the device, which this host cannot
  // see before the runtime starts.
  if (memoryCheck && objectFile.empty() && backend != DDPRT_BACKEND_CUDA)
    checkMemory(programs);

  // Predictions come first: a profile that does not load should stop the
  // run before any rank starts the runtime.
  if (predict || !predictedTracePath.empty())
    predictPrograms(programs);

  if (!objectFile.empty()) {
    if (llvm::Error error = writeObjectFile(*lowered.back(), objectFile))
      fail(llvm::toString(std::move(error)));
    return 0;
  }

  int64_t meshRanks = mesh.getNumRanks();
  if (meshRanks > 1 && !isUnderProcessManager())
    fail("the step's mesh " + formatMesh(mesh) + " has " +
         llvm::Twine(meshRanks) +
         " ranks and ddp-run runs one process per rank, but this process "
         "was not started by mpirun; run `mpirun -np " +
         llvm::Twine(meshRanks) + " ddp-run ...`");

  for (auto [program, module] : llvm::zip_equal(programs, lowered)) {
    llvm::Expected<std::unique_ptr<JitProgram>> jit =
        JitProgram::create(*module);
    if (!jit)
      fail("cannot JIT-compile " + program.label + ": " +
           llvm::toString(jit.takeError()));
    program.jit = std::move(*jit);
  }

  // Under --verify, groups of more than 2 ranks reduce in rank order: MPI
  // picks its summation order by message size, so a gradient reduced alone
  // and inside a bucket could otherwise differ in the last bit once values
  // are no longer small integers. (Two numbers add the same either way.)
  int32_t flags = DDPRT_FLAG_RETURN_ERRORS;
  if (verify && meshRanks > 2 && backend != DDPRT_BACKEND_CUDA)
    flags |= DDPRT_FLAG_DETERMINISTIC_REDUCTIONS;

  // The first program starts the runtime with the ABI version and the mesh
  // it was compiled with; the others share the context.
  ddprt_context *runtimeContext = nullptr;
  ddprt_status initStatus = programs.front().jit->getEntryPoints().init(
      backend, flags, timeoutSeconds * 1000,
      tracePath.empty() ? nullptr : tracePath.c_str(), &runtimeContext);
  if (initStatus != DDPRT_OK)
    fail(llvm::Twine("cannot start the runtime for mesh ") + formatMesh(mesh) +
         ": " + ddprt_last_error(nullptr));

  RuntimeSession session(runtimeContext,
                         llvm::join(describeMesh(mesh).axes, ","));
  bool isLeader = session.getRank() == 0;
  int32_t chosenBackend = 0;
  session.check(ddprt_get_backend(runtimeContext, &chosenBackend),
                "ddprt_get_backend");
  for (RunProgram &program : programs)
    session.check(program.jit->getEntryPoints().setup(runtimeContext, seed),
                  "setting up " + program.label);

  std::optional<StepVerifier> verifier;
  if (verify) {
    SmallVector<Candidate> candidates;
    for (RunProgram &program : llvm::drop_begin(programs))
      candidates.push_back({program.paramPrefix, program.label});
    verifier.emplace(session, params, describeMesh(mesh), candidates);
    verifier->copyInitialValues();
  }

  std::optional<std::string> difference =
      runSteps(session, programs, verifier ? &*verifier : nullptr);
  if (isLeader)
    printSummary(plan, mesh, session.getNumRanks(), chosenBackend);

  if (!paramDumpFile.empty() && !difference && isLeader) {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> output =
        openOutputFile(paramDumpFile, &error);
    if (!output)
      fail(error);
    session.dumpParams(output->os());
    output->keep();
  }

  for (RunProgram &program : programs)
    session.check(program.jit->getEntryPoints().teardown(runtimeContext),
                  "tearing down " + program.label);
  session.finalize();

  // The summary first, then what went wrong, in that order on a terminal
  // and in a pipe alike.
  llvm::outs().flush();
  if (difference) {
    if (isLeader)
      printError("verify failed: " + *difference);
    return 1;
  }
  if (verifier && isLeader)
    printVerified(plan, *verifier);
  return 0;
}
