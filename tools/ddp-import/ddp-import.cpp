//===- ddp-import.cpp - Step graphs from model configs and inventories ----===//
//
//   ddp-import --preset=gpt3-175b [--set key=value ...] [-o step.mlir]
//                 [--emit-bytecode]
//   ddp-import --config=model.json [--set key=value ...]
//   ddp-import --inventory=params.json
//   ddp-import --megatron-args=train.log [--set key=value ...]
//   ddp-import --list-presets
//   ddp-import --preset=llama2-7b --print-config
//
// Prints the unscheduled step (docs/Architecture.md) as MLIR. Every error
// names the input and the field and exits with status 1.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/StepStats.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Import/Import.h"
#include "ddp/Import/MegatronArgs.h"
#include "ddp/Pipelines/SchedulePipeline.h"
#include "ddp/Support/FormatNumber.h"
#include "ddp/Support/BoundedJSON.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace ddp;

static cl::OptionCategory importCategory("ddp-import options");

static cl::opt<std::string>
    presetName("preset", cl::desc("Import a built-in model config"),
               cl::value_desc("name"), cl::cat(importCategory));
static cl::opt<std::string> configFile("config",
                                       cl::desc("Import a model config (JSON)"),
                                       cl::value_desc("file"),
                                       cl::cat(importCategory));
static cl::opt<std::string>
    inventoryFile("inventory", cl::desc("Import a parameter inventory (JSON)"),
                  cl::value_desc("file"), cl::cat(importCategory));
static cl::opt<std::string> megatronArgsFile(
    "megatron-args",
    cl::desc("Import the run whose Megatron-LM log (or argument dump) this "
             "is: the model from its arguments, its ddp-schedule options "
             "recorded on the module"),
    cl::value_desc("file"), cl::cat(importCategory));
static cl::list<std::string>
    overrides("set",
              cl::desc("Override a field of the config or inventory "
                       "(repeatable), e.g. --set num_layers=4"),
              cl::value_desc("key=value"), cl::cat(importCategory));
static cl::opt<bool> listPresets("list-presets",
                                 cl::desc("List the built-in presets and exit"),
                                 cl::cat(importCategory));
static cl::opt<bool>
    printConfig("print-config",
                cl::desc("Print the model config (after overrides) as JSON "
                         "instead of importing it"),
                cl::cat(importCategory));
static cl::opt<bool>
    quiet("quiet",
          cl::desc("Print no summary of the imported step on stderr"),
          cl::cat(importCategory));
static cl::opt<bool> emitBytecode(
    "emit-bytecode",
    cl::desc("Write the step as MLIR bytecode, which ddp-opt, ddp-plan "
             "and ddp-run read as they read text: a pipelined step of "
             "hundreds of thousands of ops is written and read about twice "
             "as fast, but its ops name no source line in diagnostics"),
    cl::cat(importCategory));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(importCategory));

static int fail(const Twine &message) {
  WithColor::error(errs(), "ddp-import") << message << "\n";
  return 1;
}

/// The exit code after printing to stdout: 1 when what was printed did not
/// reach it (`> /dev/full`).
static int finishStdout() {
  if (Error error = flushStdout())
    return fail(toString(std::move(error)));
  return 0;
}

/// Reads and parses a JSON file; a syntax error names its line and column.
static Expected<json::Value> readJSONFile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (std::error_code error = buffer.getError())
    return createStringError(error, "cannot read '%s': %s", path.str().c_str(),
                             error.message().c_str());
  Expected<json::Value> value = parseJSON((*buffer)->getBuffer());
  if (value)
    return value;
  // llvm::json reports "[line:column, byte=offset]: message"; put the
  // position where compilers put it, so editors can jump to it.
  std::string message = toString(value.takeError());
  SmallVector<StringRef, 4> groups;
  if (Regex("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$")
          .match(message, &groups))
    return createStringError(inconvertibleErrorCode(),
                             path + ":" + groups[1] + ":" + groups[2] +
                                 ": malformed JSON: " + groups[3]);
  return createStringError(inconvertibleErrorCode(),
                           path + ": malformed JSON: " + message);
}

/// The model config of a Megatron-LM run, with the overrides applied; the
/// rest of the run (its schedule options) goes to `run`. Prints the reader's
/// notes.
static Expected<json::Value> loadMegatronRun(StringRef path, MegatronRun &run) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (std::error_code error = buffer.getError()) {
    // Megatron's own flags, as pretrain_gpt.py takes them: a common slip.
    if (path.starts_with("--"))
      return createStringError(
          error,
          "cannot read '%s': %s; --megatron-args takes a file, the log of a "
          "Megatron-LM run (or its argument block, as pretrain_gpt.py prints "
          "it), not the flags themselves: run Megatron with them once and "
          "give its log, or import a preset or --config and change fields "
          "with --set",
          path.str().c_str(), error.message().c_str());
    return createStringError(error, "cannot read '%s': %s", path.str().c_str(),
                             error.message().c_str());
  }
  Expected<MegatronRun> read = readMegatronArgs((*buffer)->getBuffer(), path);
  if (!read)
    return read.takeError();
  run = std::move(*read);
  for (const std::string &note : run.notes)
    WithColor::note(errs(), "ddp-import") << note << "\n";
  if (Error error = applyOverrides(run.config, overrides))
    return std::move(error);
  return json::Value(std::move(run.config));
}

/// Rejects a run whose DDP arguments ddp-schedule would reject, naming the
/// arguments and their lines, so that the error comes at import and not at
/// the first `ddp-opt --ddp-schedule` of the step. The options are checked
/// as the pipeline checks those a module records, with its own parser and
/// checks. This is here and not in DDPImport because the importer is the
/// pipeline's input: DDPPipelines reads the attribute DDPImport records and
/// sits on every pass, the bucketing policies and the simulator, which the
/// importer library must not pull in.
static Error checkRecordedSchedule(mlir::MLIRContext &context,
                                   StringRef source, const MegatronRun &run,
                                   const ModelConfig &config) {
  mlir::OwningOpRef<mlir::ModuleOp> scratch =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  recordScheduleOptions(*scratch, run.scheduleOptions);
  // The recorded options, except those in `skipped`, checked.
  auto check = [&](const StringSet<> &skipped) -> Error {
    SchedulePipelineOptions options;
    if (mlir::failed(applyRecordedScheduleOptions(*scratch, skipped, options)))
      return createStringError(inconvertibleErrorCode(),
                               "internal error: ddp-schedule cannot read the "
                               "options recorded from " +
                                   source);
    return checkSchedulePipelineOptions(options);
  };

  auto describe = [](const MegatronRun::ArgumentSource &argument) {
    return argument.name + " " + argument.value;
  };

  if (Error error = check({})) {
    std::string reason = toString(std::move(error));
    // The arguments to blame: those without which the options pass, in the
    // order of the log.
    SmallVector<const MegatronRun::ArgumentSource *> culprits;
    for (const auto &entry : run.scheduleOptionSources) {
      StringSet<> skipped;
      skipped.insert(entry.getKey());
      if (!errorToBool(check(skipped)))
        culprits.push_back(&entry.getValue());
    }
    // No one argument alone: those the reason names (an option and the one
    // it needs, both set by the log).
    if (culprits.empty())
      for (const auto &entry : run.scheduleOptionSources)
        if (StringRef(reason).contains(entry.getKey()))
          culprits.push_back(&entry.getValue());
    llvm::sort(culprits, [](const auto *a, const auto *b) {
      return a->line < b->line;
    });
    if (culprits.empty())
      return createStringError(inconvertibleErrorCode(),
                               source + ": ddp-schedule rejects the run's "
                                        "DDP arguments: " +
                                   reason);
    std::string others;
    for (const MegatronRun::ArgumentSource *other : drop_begin(culprits))
      others +=
          formatv(" with {0} (line {1})", describe(*other), other->line).str();
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0}:{1}: {2}{3}: ddp-schedule rejects {4}: {5}", source,
                culprits.front()->line, describe(*culprits.front()), others,
                culprits.size() == 1 ? "this option" : "these options",
                reason));
  }

  // Megatron's parallel_state asserts the same: the instances are equal
  // parts of the data-parallel group (ddp-distribute-optimizer finds it on
  // the mesh, once the step is scheduled).
  auto instances = run.scheduleOptionSources.find(
      "num-distributed-optimizer-instances");
  if (instances != run.scheduleOptionSources.end()) {
    int64_t count = *run.scheduleOptions.getInteger(instances->getKey());
    if (config.dataParallelSize % count != 0)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0}:{1}: {2} does not divide data_parallel_size ({3}): "
                  "the data-parallel group is split into equal instances",
                  source, instances->getValue().line,
                  describe(instances->getValue()), config.dataParallelSize));
  }
  return Error::success();
}

/// The input as a JSON object with the overrides applied.
static Expected<json::Value> loadInput(StringRef path, StringRef &source,
                                       std::string &presetSource,
                                       MegatronRun &run) {
  if (!presetName.empty()) {
    const ModelPreset *preset = lookupModelPreset(presetName);
    if (!preset) {
      std::string names;
      for (const ModelPreset &p : getModelPresets())
        names += (names.empty() ? "" : ", ") + p.name.str();
      return createStringError(inconvertibleErrorCode(),
                               "unknown preset '" + presetName +
                                   "'; known presets: " + names);
    }
    presetSource = "preset '" + presetName + "'";
    source = presetSource;
    json::Object object = modelConfigToJSON(preset->config);
    if (Error error = applyOverrides(object, overrides))
      return std::move(error);
    return json::Value(std::move(object));
  }
  source = path;
  if (!megatronArgsFile.empty())
    return loadMegatronRun(path, run);
  Expected<json::Value> value = readJSONFile(path);
  if (!value)
    return value.takeError();
  if (!overrides.empty()) {
    json::Object *object = value->getAsObject();
    if (!object)
      return createStringError(inconvertibleErrorCode(),
                               path + ": expected a JSON object at the top");
    if (Error error = applyOverrides(*object, overrides))
      return std::move(error);
  }
  return value;
}

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  // --mlir-timing reports the time of each phase (bench/import uses it).
  mlir::registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions(importCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ddp-import: the unscheduled training step of a Megatron-style model "
      "config or a parameter inventory, as ddp dialect MLIR\n");
  mlir::DefaultTimingManager timingManager;
  mlir::applyDefaultTimingManagerCLOptions(timingManager);
  mlir::TimingScope timing = timingManager.getRootScope();

  if (listPresets) {
    for (const ModelPreset &preset : getModelPresets())
      outs() << left_justify(preset.name, 16) << preset.description << "\n";
    return finishStdout();
  }

  int numInputs = !presetName.empty() + !configFile.empty() +
                  !inventoryFile.empty() + !megatronArgsFile.empty();
  if (numInputs != 1)
    return fail("give exactly one of --preset, --config, --inventory and "
                "--megatron-args");
  bool isInventory = !inventoryFile.empty();
  if (printConfig && isInventory)
    return fail("--print-config applies to --preset, --config and "
                "--megatron-args");

  mlir::TimingScope readTiming = timing.nest("read input");
  StringRef source;
  std::string presetSource;
  MegatronRun run;
  Expected<json::Value> input = loadInput(
      isInventory ? inventoryFile
                  : (megatronArgsFile.empty() ? configFile : megatronArgsFile),
      source, presetSource, run);
  if (!input)
    return fail(toString(input.takeError()));

  mlir::MLIRContext context;
  context.loadDialect<DDPDialect, mlir::func::FuncDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (isInventory) {
    Expected<ParamInventory> inventory = parseParamInventory(*input, source);
    if (!inventory)
      return fail(toString(inventory.takeError()));
    readTiming.stop();
    mlir::TimingScope importTiming = timing.nest("import");
    module = importInventory(context, *inventory);
  } else {
    Expected<ModelConfig> config = parseModelConfig(*input, source);
    if (!config)
      return fail(toString(config.takeError()));
    if (printConfig) {
      writeJSONShortest(outs(), json::Value(modelConfigToJSON(*config)));
      outs() << "\n";
      return finishStdout();
    }
    // Only a Megatron run says how it was scheduled.
    if (!megatronArgsFile.empty())
      if (Error error = checkRecordedSchedule(context, source, run, *config))
        return fail(toString(std::move(error)));
    readTiming.stop();
    mlir::TimingScope importTiming = timing.nest("import");
    module = importModel(context, *config);
    if (!megatronArgsFile.empty())
      recordScheduleOptions(*module, run.scheduleOptions);
  }

  // The importer only builds what verifies; a failure here is a bug in it.
  mlir::TimingScope verifyTiming = timing.nest("verify");
  if (mlir::failed(mlir::verify(*module)))
    return fail("internal error: the imported step does not verify");
  verifyTiming.stop();

  // One line on stderr, so that a pipe into ddp-opt stays MLIR: what was
  // imported, at a glance.
  auto meshes = module->getOps<MeshOp>();
  if (!quiet && !meshes.empty()) {
    // Optional: a count that overflows int64 leaves the summary out.
    mlir::FailureOr<ParamCounts> counts = mlir::failure();
    {
      mlir::ScopedDiagnosticHandler quietCounts(
          &context, [](mlir::Diagnostic &) { return mlir::success(); });
      counts = countParams(*module);
    }
    MeshOp mesh = *meshes.begin();
    std::string axes;
    llvm::raw_string_ostream os(axes);
    llvm::interleave(
        llvm::zip(mesh.getAxisNames(), mesh.getShape()), os,
        [&](auto axis) {
          os << cast<mlir::StringAttr>(std::get<0>(axis)).getValue() << " "
             << std::get<1>(axis);
        },
        " x ");
    if (mlir::succeeded(counts))
      errs() << "ddp-import: " << formatCount(counts->modelParamElements)
             << " parameters (" << formatCount(counts->localParamElements)
             << " on each rank"
             << (mesh.getAxisSize("pp") > 1
                     ? ", before the pipeline stages split them"
                     : "")
             << ") in " << counts->numParams << " tensors; mesh " << axes
             << ", " << mesh.getNumRanks() << " ranks\n";
  }

  mlir::TimingScope printTiming = timing.nest("print");
  // Bytecode on a terminal is unreadable bytes.
  if (emitBytecode && outputFile == "-" &&
      sys::Process::StandardOutIsDisplayed())
    return fail("--emit-bytecode writes binary; name a file with -o, or "
                "redirect stdout");
  std::string errorMessage;
  std::unique_ptr<ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &errorMessage);
  if (!output)
    return fail(errorMessage);
  if (emitBytecode) {
    if (mlir::failed(mlir::writeBytecodeToFile(*module, output->os())))
      return fail("cannot write the step as bytecode");
  } else {
    module->print(output->os());
    output->os() << "\n";
  }
  if (Error error = finishOutputFile(*output, outputFile))
    return fail(toString(std::move(error)));
  return 0;
}
