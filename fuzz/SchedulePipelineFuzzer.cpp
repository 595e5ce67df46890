//===- SchedulePipelineFuzzer.cpp - Fuzz scheduling, simulation, lowering -===//
//
// Input: one byte that chooses what runs, kOptionBytes bytes of options
// (ScheduleFuzzOptions.h), then MLIR text. Input that parses and verifies
// goes, when the first byte is below 128, through the ddp-schedule pipeline
// (which ends with the collective order check), ddp-simulate and
// ddp-lower-to-runtime; otherwise through one pass of Passes.td alone
// (getPassesFuzzedAlone()[byte % count]). The option bytes set the options
// of whatever runs. A pass may reject the input with a diagnostic; it must
// not crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "ScheduleFuzzOptions.h"

#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Dialect/DDP/Transforms/ScheduleMark.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cstdlib>
#include <optional>

using namespace mlir;
using namespace ddp::fuzz;

/// The option names `pass` accepts, read off its default instance once.
static const llvm::StringSet<> &getAcceptedOptions(const PassAlone &pass) {
  static llvm::StringMap<llvm::StringSet<>> accepted;
  auto [it, inserted] = accepted.try_emplace(pass.name);
  if (!inserted)
    return it->second;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  if (pass.name == "ddp-schedule") {
    ddp::SchedulePipelineOptions().print(os);
  } else {
    OpPassManager pm("builtin.module");
    if (failed(parsePassPipeline(getPipelineText(pass, ""), pm)))
      reportBug("a pass fuzzed alone is not registered");
    pm.printAsTextualPipeline(os);
  }
  for (const std::string &name : getPrintedOptionNames(printed))
    it->second.insert(name);
  return it->second;
}

/// The passes that run on `byte`'s choice, as a textual pipeline;
/// `scheduleOptions` receives ddp-schedule's options where it runs. A
/// module scheduled already (the seeds of the passes' own tests) skips
/// ddp-schedule, which refuses it, and is simulated and lowered as it is.
static std::string getPipeline(uint8_t choice,
                               llvm::ArrayRef<uint8_t> optionBytes,
                               bool scheduled,
                               std::optional<std::string> &scheduleOptions) {
  auto withOptions = [&](const PassAlone &pass) {
    const llvm::StringSet<> &accepted = getAcceptedOptions(pass);
    return decodeOptions(optionBytes, [&](llvm::StringRef name) {
      return accepted.contains(name);
    });
  };
  if (choice >= 128) {
    llvm::ArrayRef<PassAlone> passes = getPassesFuzzedAlone();
    const PassAlone &pass = passes[choice % passes.size()];
    return getPipelineText(pass, withOptions(pass));
  }
  PassAlone schedule{"ddp-schedule", false};
  PassAlone simulate{"ddp-simulate", false};
  PassAlone lower{"ddp-lower-to-runtime", false};
  if (scheduled)
    return getPipelineText(simulate, withOptions(simulate)) + ", " +
           getPipelineText(lower, withOptions(lower));
  const llvm::StringSet<> &accepted = getAcceptedOptions(schedule);
  bool fullySharded = llvm::StringRef(withOptions(schedule))
                          .contains("data-parallel-sharding-strategy="
                                    "optim_grads_params");
  scheduleOptions = decodeOptions(optionBytes, [&](llvm::StringRef name) {
    // ddp-schedule refuses the fully sharded step's options without it,
    // which would end most runs there.
    return accepted.contains(name) &&
           (fullySharded ||
            !llvm::is_contained(ddp::getFullyShardedOptionNames(), name));
  });
  return getSchedulePipelineText(*scheduleOptions, withOptions(simulate),
                                 withOptions(lower));
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  constexpr size_t header = 1 + kOptionBytes;
  if (size < header)
    return -1;
  static bool registered = [] {
    // The passes' tests, and so the seeds, hold ops of other dialects
    // (`test.if`), as steps may.
    getContext().allowUnregisteredDialects();
    ddp::registerDDPPasses();
    ddp::registerDDPConversionPasses();
    ddp::registerDDPSchedulePipeline();
    return true;
  }();
  (void)registered;
  // A copy: the tools read files NUL-terminated, which MLIR's lexer relies
  // on at the end of the buffer; libFuzzer's input is not.
  std::string text = asText(data + header, size - header).str();
  if (crashesUpstreamParser(text))
    return -1;
  MLIRContext *context = &getContext();
  // DDP_FUZZ_VERBOSE=1 when replaying an input: what runs, and why it stops.
  static const bool verbose = [] {
    const char *value = std::getenv("DDP_FUZZ_VERBOSE");
    return value && llvm::StringRef(value) == "1";
  }();
  std::optional<SilenceDiagnostics> silence;
  if (!verbose)
    silence.emplace(context);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(context));
  if (!module)
    return 0;

  bool scheduled =
      llvm::any_of(module->getOps<func::FuncOp>(), [](func::FuncOp func) {
        return !func.isExternal() &&
               ddp::findScheduleMark(func, ddp::ScheduleMarks::Bucketing);
      });
  std::optional<std::string> scheduleOptions;
  std::string pipeline =
      getPipeline(data[0], llvm::ArrayRef(data + 1, kOptionBytes), scheduled,
                  scheduleOptions);
  // ddp-schedule's parser rejects a value wrong on its own (a negative
  // size, hw=no-such-profile), which the tables give on purpose: the
  // user's error, reported before any pass runs.
  if (scheduleOptions) {
    ddp::SchedulePipelineOptions options;
    std::string ignored;
    llvm::raw_string_ostream sink(ignored);
    if (failed(options.parseFromString(*scheduleOptions, sink)))
      reportBug("the fuzzer's option tables give a value ddp-schedule's "
                "parser rejects");
    if (llvm::errorToBool(ddp::checkSchedulePipelineOptionValues(options)))
      return 0;
  }
  if (verbose)
    llvm::errs() << "fuzz-schedule: " << pipeline << "\n";
  PassManager pm(context);
  // An option value a pass's parser rejects (a policy it does not know) is
  // a user's error, reported by the parser; only the values the tables
  // give reach here, so that is a bug in the tables.
  std::string parseErrors;
  llvm::raw_string_ostream errors(parseErrors);
  if (failed(parsePassPipeline(pipeline, pm, errors))) {
    llvm::errs() << pipeline << "\n" << parseErrors << "\n";
    reportBug("the fuzzer's option tables give a value a pass rejects");
  }
  LogicalResult result = pm.run(*module);
  if (verbose)
    llvm::errs() << "fuzz-schedule: "
                 << (succeeded(result) ? "succeeded" : "failed") << "\n";
  return 0;
}
