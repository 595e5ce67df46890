//===- ddp-opt.cpp - The ddp optimizer driver ------------------------------===//
//
// MlirOptMain with the ddp dialect, its passes, only the upstream dialects a
// step is written in (builtin and func) or may hold besides ddp ops (arith,
// lowered with it by ddp-lower-to-runtime), and the generic cleanups an
// embedder may run after a schedule, so that tests can show they keep it.
//
// The output file is opened here rather than by MlirOptMain(argc, argv, ...),
// which keeps it without looking at its write errors: a full disk ended
// ddp-opt with "LLVM ERROR: IO failure on output stream", naming no file.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Pipelines/SchedulePipeline.h"
#include "ddp/Support/OptionWords.h"
#include "ddp/Support/OutputFile.h"
#include "ddp/Support/Suggest.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <cstdio>
#include <mutex>

static llvm::cl::opt<std::string> progressMode(
    "progress",
    llvm::cl::desc("Progress lines on stderr for a long run: auto (when "
                   "stderr is a terminal), on or off"),
    llvm::cl::init("auto"));
static llvm::cl::opt<double> progressAfter(
    "progress-after",
    llvm::cl::desc("Seconds before the first progress line (default 2)"),
    llvm::cl::init(2.0), llvm::cl::Hidden);

namespace {
/// A line on stderr as each pass starts, once the passes have run for
/// --progress-after seconds (parsing the input comes before): a terminal
/// overwrites it in place, so that an 11 s schedule of a 85 MB step shows
/// where it is without scrolling.
class ProgressInstrumentation : public mlir::PassInstrumentation {
public:
  ProgressInstrumentation(bool terminal, double after)
      : terminal(terminal), after(after) {}
  ~ProgressInstrumentation() override {
    if (terminal && shown)
      llvm::errs() << "\r\033[K";
  }
  // On a terminal the line goes when its pass ends, so that what a pass
  // prints (a report, a diagnostic) starts on a line of its own.
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    clear(pass);
  }
  void runAfterPassFailed(mlir::Pass *pass, mlir::Operation *op) override {
    clear(pass);
  }
  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    // The adaptors that run a nested pipeline on each function have no
    // name of their own; the passes they run show.
    if (elapsed < after || pass->getArgument().empty())
      return;
    std::string where;
    if (auto symbol = op->getAttrOfType<mlir::StringAttr>(
            mlir::SymbolTable::getSymbolAttrName()))
      where = (" on @" + symbol.getValue()).str();
    std::lock_guard<std::mutex> lock(mutex);
    shown = true;
    llvm::errs() << (terminal ? "\r\033[K" : "")
                 << llvm::format("ddp-opt: [%.1f s] ", elapsed)
                 << pass->getArgument() << where << (terminal ? "" : "\n");
  }

private:
  void clear(mlir::Pass *pass) {
    if (!terminal || pass->getArgument().empty())
      return;
    std::lock_guard<std::mutex> lock(mutex);
    if (shown)
      llvm::errs() << "\r\033[K";
    shown = false;
  }

  bool terminal;
  double after;
  bool shown = false;
  std::mutex mutex;
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
};
} // namespace

/// The passes a command line names with their option text: `--<pass>=<opts>`
/// and the `<pass>{<opts>}` of a `--pass-pipeline`.
static std::vector<std::pair<std::string, std::string>>
getPassesWithOptions(llvm::ArrayRef<std::string> args) {
  std::vector<std::pair<std::string, std::string>> passes;
  static const llvm::Regex inPipeline("([a-z0-9-]+)\\{([^}]*)\\}");
  for (llvm::StringRef arg : args) {
    arg = arg.ltrim('-');
    auto [name, options] = arg.split('=');
    if (name == "pass-pipeline" || name == "p") {
      llvm::StringRef rest = options;
      llvm::SmallVector<llvm::StringRef, 3> groups;
      while (inPipeline.match(rest, &groups)) {
        passes.emplace_back(groups[1].str(), groups[2].str());
        rest = rest.substr(rest.find(groups[0]) + groups[0].size());
      }
    } else if (mlir::PassInfo::lookup(name)) {
      passes.emplace_back(name.str(), options.str());
    }
  }
  return passes;
}

/// The option names of pass `name` (a fresh one's textual form lists them).
static std::vector<std::string> getPassOptionNames(llvm::StringRef name) {
  const mlir::PassInfo *info = mlir::PassInfo::lookup(name);
  if (!info)
    return {};
  mlir::OpPassManager scratch(mlir::OpPassManager::Nesting::Implicit);
  if (mlir::failed(info->addToPipeline(
          scratch, "", [](const llvm::Twine &) { return mlir::failure(); })))
    return {};
  std::string text;
  llvm::raw_string_ostream os(text);
  scratch.printAsTextualPipeline(os);
  std::vector<std::string> names;
  static const llvm::Regex option("[{ ]([a-z0-9-]+)=");
  llvm::StringRef rest = text;
  llvm::SmallVector<llvm::StringRef, 2> groups;
  while (option.match(rest, &groups)) {
    names.push_back(groups[1].str());
    rest = rest.substr(rest.find(groups[0]) + groups[0].size() - 1);
  }
  return names;
}

namespace {
/// One option of a pass of Passes.td (ddp-tblgen -gen-pass-option-table).
struct PassOptionInfo {
  const char *pass, *option, *type;
  /// Lists the values of an option that takes one of a list, or nullptr.
  void (*values)(ddp::OptionValueNames &);
};
const PassOptionInfo kPassOptions[] = {
#define GEN_PASS_OPTION_TABLE
#include "ddp/Dialect/DDP/Transforms/PassOptionTable.h.inc"
};
} // namespace

/// What a value that llvm::cl rejected (in a line of its own, printed
/// already) should have been: for the first value given to a pass that its
/// option does not take, the values it does take.
static std::optional<std::string>
explainRejectedValue(llvm::ArrayRef<std::string> args) {
  for (auto &[pass, options] : getPassesWithOptions(args))
    for (auto [name, value] : ddp::splitOptionWords(options))
      for (const PassOptionInfo &info : kPassOptions) {
        if (pass != info.pass || name != info.option)
          continue;
        std::string given = ("--" + pass + ": " + name + "=" + value).str();
        llvm::StringRef type = info.type;
        if (info.values) {
          ddp::OptionValueNames names;
          info.values(names);
          if (!llvm::is_contained(names.names, value))
            return given + " is not one of its values (" +
                   llvm::join(names.names, ", ") + ")" +
                   ddp::didYouMean(value, names.names);
        } else if (type == "bool") {
          if (!ddp::isBoolOptionValue(value))
            return given + ": expected true or false";
        } else if (type.contains("int") || type == "unsigned") {
          int64_t integer;
          if (value.getAsInteger(0, integer))
            return given + ": expected an integer";
        }
      }
  return std::nullopt;
}

/// A pass option error in words that name the pass, the option and the fix.
/// MLIR reports it at no location ("<unknown>:0:"), and without a reason
/// where llvm::cl printed one already.
static std::string explainPassOptionError(llvm::StringRef message,
                                          llvm::ArrayRef<std::string> args) {
  llvm::StringRef unknown = message;
  if (unknown.consume_front("<Pass-Options-Parser>: no such option ")) {
    unknown = unknown.take_until(llvm::isSpace);
    // The pass whose option text names the option.
    llvm::Regex named("(^|[ {])" + llvm::Regex::escape(unknown) + "(=|$| )");
    for (auto &[pass, options] : getPassesWithOptions(args)) {
      if (!named.match(options))
        continue;
      std::vector<std::string> names = getPassOptionNames(pass);
      if (names.empty() || llvm::is_contained(names, unknown))
        continue;
      llvm::SmallVector<llvm::StringRef> candidates(names.begin(),
                                                    names.end());
      std::string list;
      llvm::raw_string_ostream os(list);
      llvm::interleaveComma(candidates, os);
      return ("--" + pass + " has no option '" + unknown + "'" +
              ddp::didYouMean(unknown, candidates) + " (its options: " + list +
              ")")
          .str();
    }
    return ("no pass given has an option '" + unknown + "'").str();
  }
  // A rejected value: llvm::cl said why above, and MLIR adds nothing, or,
  // in a --pass-pipeline, which passes it failed to add.
  if (message.trim().empty() || message.trim().starts_with("failed to add `")) {
    if (std::optional<std::string> explained = explainRejectedValue(args))
      return *explained;
    if (message.trim().empty())
      return "bad pass options (the reason above); ddp-opt --help lists each "
             "pass's options and their values";
  }
  return message.str();
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<ddp::DDPDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
  ddp::registerDDPConversionPasses();
  registry.insert<mlir::LLVM::LLVMDialect>();
  // -convert-to-llvm finds each dialect's patterns through these.
  mlir::registerPass([] { return mlir::createConvertToLLVMPass(); });
  ddp::registerConvertDDPToLLVMInterface(registry);
  mlir::registerConvertFuncToLLVMInterface(registry);
  mlir::arith::registerConvertArithToLLVMInterface(registry);
  ddp::registerDDPPasses();
  ddp::registerDDPSchedulePipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSCCPPass();
  mlir::registerSymbolDCEPass();
  // An error at a step function would print the whole function after it
  // (MLIR's default); ddp's messages name the op and where it is, so the
  // IR is printed only on request (--mlir-print-op-on-diagnostic).
  mlir::registerMLIRContextCLOptions();
  if (llvm::cl::Option *option =
          llvm::cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic"))
    static_cast<llvm::cl::opt<bool> *>(option)->setInitialValue(false);
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv,
      "ddp optimizer driver: schedules the communication of a data-parallel "
      "training step\n",
      registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // An error at no location (a bad pass option, found when the pipeline is
  // built or when a pass starts): one line that names the pass and the
  // option, in place of MLIR's "<unknown>:0: error:". The handler lives as
  // long as MlirOptMain's context.
  std::vector<std::string> args(argv + 1, argv + argc);
  bool terminal = llvm::sys::Process::StandardErrIsDisplayed();
  bool progress = progressMode == "on" || (progressMode == "auto" && terminal);
  if (progressMode != "on" && progressMode != "off" && progressMode != "auto") {
    llvm::WithColor::error(llvm::errs(), "ddp-opt")
        << "--progress=" << progressMode << ": expected auto, on or off\n";
    return EXIT_FAILURE;
  }
  // Under -verify-diagnostics every error must reach the verifier.
  bool rewriteErrors = !config.shouldVerifyDiagnostics();
  config.setPassPipelineSetupFn([original = config, args, progress, terminal,
                                 rewriteErrors](mlir::PassManager &pm) {
    if (progress)
      pm.addInstrumentation(
          std::make_unique<ProgressInstrumentation>(terminal, progressAfter));
    if (rewriteErrors)
      pm.getContext()->getDiagEngine().registerHandler(
          [args](mlir::Diagnostic &diagnostic) {
            if (!llvm::isa<mlir::UnknownLoc>(diagnostic.getLocation()) ||
                diagnostic.getSeverity() != mlir::DiagnosticSeverity::Error)
              return mlir::failure();
            llvm::WithColor::error(llvm::errs(), "ddp-opt")
                << explainPassOptionError(diagnostic.str(), args) << "\n";
            for (const mlir::Diagnostic &note : diagnostic.getNotes())
              llvm::WithColor::note(llvm::errs(), "ddp-opt")
                  << note.str() << "\n";
            return mlir::success();
          });
    return original.setupPassPipeline(pm);
  });
  // What prints a list and exits writes no output file: MlirOptMain's own.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));
  // Where MlirOptMain has it, after the options.
  llvm::InitLLVM initLLVM(argc, argv);

  // As MlirOptMain: a tool that waits for a terminal seems to hang.
  if (inputFile == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  // A model config, a Megatron-LM argument dump or an inventory given by
  // mistake: the parser's "expected operation name in quotes" names no fix.
  // (MLIR text never starts with '{' but for a `{-#` metadata block.)
  llvm::StringRef text = input->getBuffer().ltrim();
  if ((text.starts_with("{") && !text.starts_with("{-#")) ||
      text.starts_with("[")) {
    llvm::WithColor::error(llvm::errs(), "ddp-opt")
        << "'" << inputFile
        << "' is JSON, not MLIR: ddp-import makes a step from a model config "
           "(--config), a Megatron-LM log (--megatron-args) or a parameter "
           "inventory (--inventory)\n";
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  if (llvm::Error error = ddp::finishOutputFile(*output, outputFile)) {
    llvm::WithColor::error(llvm::errs(), "ddp-opt")
        << llvm::toString(std::move(error)) << "\n";
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
