//===- ScheduleFuzzOptionsTest.cpp - fuzz-schedule covers every option ----===//
//
// fuzz-schedule sets only the options its tables list and runs alone only
// the passes they list. These tests fail when a pass is added to Passes.td,
// or an option to a pass or to ddp-schedule, without a line in
// fuzz/ScheduleFuzzOptions.cpp (issue 25: the fuzzer's one option byte had
// fallen behind every option added since the first fuzzing round).
//
//===----------------------------------------------------------------------===//

#include "ScheduleFuzzOptions.h"

#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace ddp::fuzz;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

namespace {

class ScheduleFuzzOptionsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ddp::registerDDPPasses();
    ddp::registerDDPConversionPasses();
    ddp::registerDDPSchedulePipeline();
  }

  /// The passes Passes.td declares, by name, and whether each runs on
  /// func.func.
  static std::vector<std::pair<std::string, bool>> readDeclaredPasses() {
    std::vector<std::pair<std::string, bool>> declared;
    for (const char *file : {"/include/ddp/Dialect/DDP/Transforms/Passes.td",
                             "/include/ddp/Conversion/Passes.td"}) {
      auto buffer = llvm::MemoryBuffer::getFile(std::string(DDP_SOURCE_DIR) +
                                                file);
      EXPECT_TRUE(bool(buffer)) << file;
      if (!buffer)
        continue;
      // The anchor is optional: an op-agnostic pass runs on the module.
      llvm::Regex pass("Pass<\"([a-z0-9-]+)\"(, *\"([a-zA-Z:]+)\")?");
      llvm::StringRef text = (*buffer)->getBuffer();
      llvm::SmallVector<llvm::StringRef> match;
      while (pass.match(text, &match)) {
        declared.emplace_back(match[1].str(), match[3] == "mlir::func::FuncOp");
        text = text.substr(text.find(match[0]) + match[0].size());
      }
    }
    return declared;
  }

  /// `pass` with its default options, as printed.
  static std::string printDefault(const PassAlone &pass) {
    OpPassManager pm("builtin.module");
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    EXPECT_TRUE(
        succeeded(parsePassPipeline(getPipelineText(pass, ""), pm, errorStream)))
        << errors;
    std::string printed;
    llvm::raw_string_ostream os(printed);
    pm.printAsTextualPipeline(os);
    return printed;
  }
};

TEST_F(ScheduleFuzzOptionsTest, EveryPassOfPassesTdIsFuzzedAlone) {
  std::vector<std::pair<std::string, bool>> declared = readDeclaredPasses();
  // A count that would catch the regex matching nothing.
  EXPECT_GE(declared.size(), 11u);
  for (const auto &[name, onFunctions] : declared) {
    const PassAlone *fuzzed =
        llvm::find_if(getPassesFuzzedAlone(), [&, &name = name](const PassAlone &each) {
          return each.name == name;
        });
    ASSERT_NE(fuzzed, getPassesFuzzedAlone().end())
        << name
        << " is declared in Passes.td but fuzz-schedule never runs it: add it "
           "to getPassesFuzzedAlone() in fuzz/ScheduleFuzzOptions.cpp";
    EXPECT_EQ(fuzzed->onFunctions, onFunctions) << name;
  }
  EXPECT_EQ(declared.size(), getPassesFuzzedAlone().size());
}

TEST_F(ScheduleFuzzOptionsTest, EveryOptionOfEveryPassIsFuzzed) {
  for (const PassAlone &pass : getPassesFuzzedAlone()) {
    std::string printed = printDefault(pass);
    EXPECT_FALSE(getPrintedOptionNames(printed).empty() &&
                 printed.find('=') != std::string::npos)
        << printed;
    EXPECT_THAT(findUnfuzzedOptions(printed), IsEmpty())
        << pass.name.str()
        << " has options fuzz-schedule never sets: add them to "
           "getFuzzedOptions() in fuzz/ScheduleFuzzOptions.cpp";
  }
}

TEST_F(ScheduleFuzzOptionsTest, EveryOptionOfTheSchedulePipelineIsFuzzed) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  ddp::SchedulePipelineOptions().print(os);
  // policy, hw, dp and the rest: the print lists every option.
  EXPECT_GE(getPrintedOptionNames(printed).size(), 38u) << printed;
  EXPECT_THAT(findUnfuzzedOptions(printed), IsEmpty())
      << "ddp-schedule has options fuzz-schedule never sets: add them to "
         "getFuzzedOptions() in fuzz/ScheduleFuzzOptions.cpp";
}

// The text nests a pass once, in func.func where it runs there: wrapped in
// builtin.module(...) too, it ran on modules inside the module, of which
// there are none, and fuzz-schedule ran nothing at all.
TEST_F(ScheduleFuzzOptionsTest, PassesRunOnTheInputModule) {
  for (const PassAlone &pass : getPassesFuzzedAlone()) {
    std::string printed = printDefault(pass);
    // The pass, then its options or the end of its nest.
    std::string expected = "builtin.module(" +
                           std::string(pass.onFunctions ? "func.func(" : "") +
                           pass.name.str();
    EXPECT_EQ(printed.substr(0, expected.size()), expected) << printed;
    EXPECT_TRUE(printed.size() > expected.size() &&
                (printed[expected.size()] == '{' ||
                 printed[expected.size()] == ')'))
        << printed;
  }
}

// The same for the pipeline that runs for a first byte below 128.
TEST_F(ScheduleFuzzOptionsTest, ThePipelineRunsOnTheInputModule) {
  OpPassManager pm("builtin.module");
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  ASSERT_TRUE(succeeded(parsePassPipeline(
      getSchedulePipelineText("policy=auto", "", ""), pm, errorStream)))
      << errors;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  pm.printAsTextualPipeline(os);
  // Three passes on the module itself (ddp-schedule runs its own as a
  // dynamic pipeline), not one pass manager nested in it.
  EXPECT_EQ(printed.find("builtin.module(builtin.module"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("ddp-simulate"), std::string::npos) << printed;
  EXPECT_NE(printed.find("ddp-lower-to-runtime"), std::string::npos)
      << printed;
  EXPECT_EQ(pm.size(), 3u) << printed;
}

// The check itself: an option the tables do not list is reported.
struct OptionsWithANewOne
    : public PassPipelineOptions<OptionsWithANewOne> {
  Option<bool> listed{*this, "use-distributed-optimizer",
                      llvm::cl::desc("listed")};
  Option<int64_t> unlisted{*this, "not-in-the-fuzzer",
                           llvm::cl::desc("not listed")};
};

TEST_F(ScheduleFuzzOptionsTest, AnUnlistedOptionIsFound) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  OptionsWithANewOne().print(os);
  EXPECT_THAT(findUnfuzzedOptions(printed), ElementsAre("not-in-the-fuzzer"));
}

TEST_F(ScheduleFuzzOptionsTest, PrintedNamesSkipNestedValues) {
  EXPECT_THAT(getPrintedOptionNames("{a=1 b-c={x=2 y} d=z}"),
              ElementsAre("a", "b-c", "d"));
  EXPECT_THAT(getPrintedOptionNames("builtin.module(func.func(p{a=1}))"),
              ElementsAre("a"));
}

TEST_F(ScheduleFuzzOptionsTest, TheOptionBitsFitTheHeader) {
  EXPECT_LE(getOptionBits(), kOptionBytes * 8);
}

TEST_F(ScheduleFuzzOptionsTest, DecodesDefaultsAndEveryOption) {
  auto all = [](llvm::StringRef) { return true; };
  // Zero bits leave every option at its default; the fixed ones are set.
  std::vector<uint8_t> zero(kOptionBytes, 0);
  EXPECT_EQ(decodeOptions(zero, all), "output=/dev/null");
  // All ones set every option, to a value of its table.
  std::vector<uint8_t> ones(kOptionBytes, 0xff);
  std::string decoded = decodeOptions(ones, all);
  EXPECT_EQ(getPrintedOptionNames("{" + decoded + "}").size(),
            getFuzzedOptions().size() + getFixedOptions().size());
  // Only the options a pass accepts.
  EXPECT_EQ(decodeOptions(ones, [](llvm::StringRef name) {
              return name == "policy";
            }),
            "policy=" + getFuzzedOptions().front().values[(7 - 1) % 4].str());
}

// Every value of every table parses for every pass that has the option:
// the fuzzer treats a rejected value as a bug in its tables.
TEST_F(ScheduleFuzzOptionsTest, EveryValueParses) {
  for (const PassAlone &pass : getPassesFuzzedAlone()) {
    llvm::StringSet<> accepted;
    for (const std::string &name : getPrintedOptionNames(printDefault(pass)))
      accepted.insert(name);
    for (const FuzzedOption &option : getFuzzedOptions()) {
      if (!accepted.contains(option.name))
        continue;
      for (llvm::StringRef value : option.values) {
        OpPassManager pm("builtin.module");
        std::string errors;
        llvm::raw_string_ostream errorStream(errors);
        EXPECT_TRUE(succeeded(parsePassPipeline(
            getPipelineText(pass, (option.name + "=" + value).str()), pm,
            errorStream)))
            << errors;
      }
    }
  }
  for (const FuzzedOption &option : getFuzzedOptions())
    for (llvm::StringRef value : option.values) {
      ddp::SchedulePipelineOptions options;
      std::string printed;
      llvm::raw_string_ostream os(printed);
      options.print(os);
      llvm::SmallVector<std::string> names = getPrintedOptionNames(printed);
      if (!llvm::is_contained(names, option.name.str()))
        continue;
      EXPECT_TRUE(succeeded(
          options.parseFromString((option.name + "=" + value).str())))
          << option.name.str() << "=" << value.str();
    }
}

} // namespace
