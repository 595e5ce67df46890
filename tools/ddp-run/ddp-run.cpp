//===- ddp-run.cpp - Run a step on the runtime, verify a schedule ---------===//
//
//   mpirun -np 2 ddp-run step.mlir [--steps=3] [--backend=cpu]
//   mpirun -np 2 ddp-run step.mlir --verify --schedule='policy=megatron'
//   mpirun -np 2 ddp-run step.mlir --verify \
//       --pass-pipeline='builtin.module(...)'
//   mpirun -np 2 ddp-run step.mlir --verify --scheduled=hand-edited.mlir
//   mpirun -np 2 ddp-run step.mlir --predict --hw=cpu-mpi-2core \
//       --trace=measured.json --predicted-trace=predicted.json
//   ddp-run step.mlir --emit-object=step.o
//
// One process per rank. The step is lowered with ddp-lower-to-runtime and
// JIT-compiled through MLIR's ExecutionEngine against libddprt; docs/ddp-run.md
// describes every option and message.
// This file is the driver (options, lowering, running, verifying, the
// summary); what runs and its prediction are planned in RunPlan.cpp.
//
//===----------------------------------------------------------------------===//

#include "LoweredProgram.h"
#include "MemoryCheck.h"
#include "RunPlan.h"
#include "RuntimeSession.h"
#include "StepVerifier.h"

#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Pipelines/SchedulePipeline.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>

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
/// The longest --timeout whose milliseconds fit ddprt_init's int32_t.
static constexpr int kMaxTimeoutSeconds = INT32_MAX / 1000;
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
static cl::opt<bool> compareSpeed(
    "compare-speed",
    cl::desc("Run the input (unscheduled) and the scheduled programs in one "
             "run, each for --steps steps in turn, to compare their speed: "
             "--verify's programs without its comparison, with the library "
             "GEMMs (OpenBLAS, cuBLAS) instead of the fixed-order kernel"),
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
                 cl::desc("Schedule the input with this pass pipeline, "
                          "anchored on the module, e.g. "
                          "'builtin.module(func.func(ddp-assign-buckets{"
                          "policy=megatron},ddp-bucketize))', or the passes "
                          "alone"),
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
static cl::opt<bool> reuseBuffers(
    "reuse-buffers",
    cl::desc("Let buffers whose values are never live at the same time share "
             "memory (ddp-lower-to-runtime's reuse-buffers; false allocates "
             "every buffer on its own, to compare)"),
    cl::init(true), cl::cat(runCategory));
static cl::opt<int64_t> availableMemory(
    "available-memory",
    cl::desc("Take this many bytes as what the machine has available in the "
             "memory check (to test the check)"),
    cl::Hidden, cl::cat(runCategory));
static cl::opt<int> abiVersion(
    "abi-version",
    cl::desc("Pass this ABI version to ddprt_init instead of the compiler's "
             "(to test the runtime's check)"),
    cl::init(DDPRT_ABI_VERSION), cl::Hidden, cl::cat(runCategory));

static MeshDescription describeMesh(MeshOp mesh) {
  MeshDescription description;
  for (StringRef axis : mesh.getAxisNames().getAsValueRange<StringAttr>())
    description.axes.push_back(axis.str());
  description.shape.assign(mesh.getShape().begin(), mesh.getShape().end());
  return description;
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

/// The median of the step times, leaving out the first step (which pays
/// for first-touch allocation and communicator setup) when there are more.
static double getTypicalStepTime(std::vector<double> times) {
  if (times.size() > 1)
    times.erase(times.begin());
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Ends the run before anything is allocated when every rank on this machine
/// together would need more memory than it has available.
static void checkMemory(ArrayRef<RunProgram> programs,
                        bool deterministicReductions) {
  SmallVector<ModuleOp> modules;
  for (const RunProgram &program : programs)
    modules.push_back(*program.module);
  // Every program has been lowered, so every plan builds; the estimate
  // fails only on a total past int64, reported above.
  std::optional<RankMemoryEstimate> perRank =
      estimateRankBytes(modules, deterministicReductions, reuseBuffers);
  if (!perRank)
    fail("cannot estimate the memory '" + inputFile + "' needs per rank");
  std::optional<int64_t> available = getAvailableMemoryBytes();
  if (availableMemory.getNumOccurrences())
    available = availableMemory;
  if (!available)
    return;
  if (std::optional<std::string> error =
          checkMemoryFits(*perRank, getRanksOnThisMachine(), *available))
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
    options.reuseBuffers = reuseBuffers;
    lowered.push_back(lowerToRuntime(*program.module, options));
    if (!lowered.back())
      fail("cannot lower " + program.label + " of '" + inputFile + "'");
  }
  return lowered;
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
  std::vector<uint64_t> times(size_t(numSteps) * programs.size());
  auto runStep = [&](int step, size_t index) {
    RunProgram &program = programs[index];
    auto start = std::chrono::steady_clock::now();
    session.check(program.jit->getEntryPoints().step(context),
                  "step " + std::to_string(step) + " of " + program.label);
    session.check(ddprt_synchronize(context), "ddprt_synchronize");
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    times[size_t(step - 1) * programs.size() + index] =
        llvm::bit_cast<uint64_t>(seconds);
  };
  int stepsRun = 0;
  if (compareSpeed) {
    // Each program's steps in a block of their own: alternating steps, as
    // --verify must, puts two programs' buffers through the caches in turn,
    // which made tiny's steps 1.5-2x slower than either program alone.
    for (size_t index = 0; index < programs.size(); ++index)
      for (int step = 1; step <= numSteps; ++step)
        runStep(step, index);
    stepsRun = numSteps;
  } else {
    for (int step = 1; step <= numSteps && !difference; ++step, ++stepsRun) {
      for (size_t index = 0; index < programs.size(); ++index)
        runStep(step, index);
      if (verifier)
        difference = verifier->compare(step, step == numSteps);
    }
  }
  times.resize(size_t(stepsRun) * programs.size());

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
  // The kernel decides the compute's speed, and the profiles were measured
  // with the libraries (docs/Runtime.md, "GEMM").
  llvm::outs() << "  GEMMs: "
               << (verify ? "the fixed-order kernel, which --verify needs; "
                            "slower than the library a profile is measured with"
                          : backend == DDPRT_BACKEND_CUDA
                                ? "cuBLAS"
                                : "OpenBLAS (the fixed-order kernel in a "
                                  "runtime built without it; the trace names "
                                  "each GEMM's)")
               << "\n";
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
    else if (predict)
      llvm::outs() << "   not predicted: a pipeline's reference step runs "
                      "whole on every rank";
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
                    "every rank, as does the optimizer state each rank "
                    "keeps, and every rank holds what its replicas hold\n";
  else if (plan.numSchedules > 1)
    llvm::outs() << "verify: ok: after every step the parameters of all "
                 << plan.numSchedules << " schedules ("
                 << plan.programs.size() - 1
                 << " distinct programs) equal the unscheduled program's "
                    "bitwise on every rank, as does the optimizer state each "
                    "rank keeps, and every rank holds what its replicas "
                    "hold\n";
  else
    llvm::outs() << "verify: ok (no schedule given, so only the replicas "
                    "were compared): after every step every rank holds what "
                    "its replicas hold\n";
}

/// Flushes what was printed to stdout; a failed write (`> /dev/full`) is an
/// error naming stdout rather than LLVM's abort at exit.
static void flushSummary() {
  if (llvm::Error error = flushStdout())
    fail(llvm::toString(std::move(error)));
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
  // Until each rank takes its own part (its pipeline stage, below), the
  // ranks of a job read and schedule the same input: only the first prints
  // (the others exit with the same status), where their copies of a
  // message came interleaved.
  setPrintsDiagnostics(getJobRank() == 0);

  if (numSteps < 1)
    fail("--steps must be at least 1");
  // The runtime takes milliseconds in an int32_t.
  if (timeoutSeconds < 0 || timeoutSeconds > kMaxTimeoutSeconds)
    fail("--timeout must be from 0 to " + llvm::Twine(kMaxTimeoutSeconds) +
         " seconds (0: DDPRT_TIMEOUT, else 60), got " +
         llvm::Twine(int(timeoutSeconds)));
  bool wantsSchedule = scheduleOptions.getNumOccurrences() > 0;
  if (wantsSchedule + !passPipeline.empty() + !scheduledFile.empty() > 1)
    fail("give one of --schedule, --pass-pipeline and --scheduled");
  if (!objectFile.empty() &&
      (verify || compareSpeed || !paramDumpFile.empty()))
    fail("--emit-object writes the program without running it; it takes "
         "no --verify, --compare-speed or --dump-params");
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
  std::optional<ScopedDiagnosticHandler> silenced;
  if (getJobRank() > 0)
    silenced.emplace(&context, [](Diagnostic &) { return success(); });

  OwningOpRef<ModuleOp> input = parseFile(inputFile, context);
  MeshOp mesh = getMesh(*input);
  if (!mesh)
    fail("'" + inputFile + "' has no ddp.mesh: the runtime needs one");
  // Every rank would fail to start the runtime, each with its own message
  // (and a pipeline rank beyond the mesh would take no stage): said once,
  // before any rank schedules. Instances split the mesh but keep its ranks.
  std::optional<int64_t> jobSize = getJobSize();
  if (objectFile.empty() && jobSize && *jobSize != mesh.getNumRanks())
    fail("the step's mesh " + formatMesh(mesh) + " has " +
         llvm::Twine(mesh.getNumRanks()) + " ranks, but mpirun started " +
         llvm::Twine(*jobSize) + " processes; run `mpirun -np " +
         llvm::Twine(mesh.getNumRanks()) + " ddp-run ...`");
  RunRequest request{inputFile,
                     scheduledFile,
                     passPipeline,
                     {scheduleOptions.begin(), scheduleOptions.end()},
                     verify,
                     compareSpeed};
  if (verify && compareSpeed)
    fail("--verify and --compare-speed: give one (--verify multiplies with "
         "the fixed-order kernel, which is slower than what --compare-speed "
         "measures)");
  std::vector<RunProgram> schedules = buildSchedules(*input, context, request);
  std::optional<std::string> splitBy = adoptSplitMesh(*input, schedules);
  if (schedules.size() > 1 && !request.runsUnscheduled())
    fail("several schedules run together only to be compared: add --verify "
         "or --compare-speed");
  if (compareSpeed && schedules.empty())
    fail("--compare-speed compares the input with a schedule: give "
         "--schedule, --scheduled or --pass-pipeline");
  RunPlan plan = planRun(*input, std::move(schedules), request);
  std::vector<RunProgram> &programs = plan.programs;
  SmallVector<ParamDescription> params = describeParams(*input);
  checkComparable(mesh, params, programs, request, splitBy);
  // Predictions come first: a profile that does not load should stop the
  // run before any rank starts the runtime; and a pipeline is simulated
  // whole, before each rank keeps its own stage's program.
  if (predict || !predictedTracePath.empty())
    predictPrograms(programs, hardwareProfile, predictedTracePath);
  // From here each rank has its own stage, lowering and memory: each
  // reports its own failures.
  silenced.reset();
  setPrintsDiagnostics(true);
  selectPipelineStages(programs, mesh);
  if (compareSpeed && programs.back().pipelined)
    fail("--compare-speed: a pipeline's reference step runs whole on every "
         "rank, so its time does not compare with the pipeline's; time the "
         "pipeline alone (without --compare-speed)");
  if (!objectFile.empty() && programs.back().pipelined)
    fail("--emit-object writes one program, but " + programs.back().label +
         " is a pipeline, one program per pipeline rank; run it with "
         "ddp-run under mpirun instead");
  std::vector<OwningOpRef<ModuleOp>> lowered = lowerPrograms(programs);
  // Under --verify, groups of more than 2 ranks reduce in rank order: MPI
  // picks its summation order by message size, so a gradient reduced alone
  // and inside a bucket could otherwise differ in the last bit once values
  // are no longer small integers. (Two numbers add the same either way.)
  int64_t meshRanks = mesh.getNumRanks();
  bool deterministicReductions =
      verify && meshRanks > 2 && backend != DDPRT_BACKEND_CUDA;
  // Buffers of the CUDA backend live on the device, which this host cannot
  // see before the runtime starts.
  if (memoryCheck && objectFile.empty() && backend != DDPRT_BACKEND_CUDA)
    checkMemory(programs, deterministicReductions);

  if (!objectFile.empty()) {
    if (llvm::Error error = writeObjectFile(*lowered.back(), objectFile))
      fail(llvm::toString(std::move(error)));
    return 0;
  }

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

  int32_t flags = DDPRT_FLAG_RETURN_ERRORS;
  if (deterministicReductions)
    flags |= DDPRT_FLAG_DETERMINISTIC_REDUCTIONS;
  // A GEMM split into row chunks (ddp-overlap-tp-comm) equals the whole
  // only when every element has one order of summation, which neither
  // OpenBLAS nor cuBLAS promises: the fixed-order kernel on both backends.
  // And bounded values: seeded integers, through many GEMMs, otherwise
  // overflow to NaNs, on which every program compares equal.
  if (verify)
    flags |= DDPRT_FLAG_FIXED_ORDER_GEMM | DDPRT_FLAG_BOUNDED_VALUES;

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
      candidates.push_back(
          {program.paramPrefix, program.label, program.pipelined});
    verifier.emplace(session, params, describeMesh(mesh), candidates);
    verifier->copyInitialValues();
  }

  std::optional<std::string> difference =
      runSteps(session, programs, verifier ? &*verifier : nullptr);
  if (isLeader)
    printSummary(plan, mesh, session.getNumRanks(), chosenBackend);

  // Every rank, since finishing the parameter gathers is collective.
  if (!paramDumpFile.empty() && !difference) {
    std::vector<std::string> order;
    for (const RunProgram &program : programs)
      for (const ParamDescription &param : params)
        order.push_back(program.paramPrefix + param.name);
    session.dumpParams(paramDumpFile, order);
  }

  for (RunProgram &program : programs)
    session.check(program.jit->getEntryPoints().teardown(runtimeContext),
                  "tearing down " + program.label);
  session.finalize();

  // The summary first, then what went wrong, in that order on a terminal
  // and in a pipe alike.
  flushSummary();
  if (difference) {
    if (isLeader)
      printError("verify failed: " + *difference);
    return 1;
  }
  if (verifier && isLeader)
    printVerified(plan, *verifier);
  flushSummary();
  return 0;
}
