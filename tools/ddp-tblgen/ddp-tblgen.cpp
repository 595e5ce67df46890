//===- ddp-tblgen.cpp - ddp's TableGen backend ----------------------------===//
//
// -gen-pipeline-options: the options struct of a pass pipeline from the
// options its passes declare in Passes.td, so that each is declared once
// (docs/Extending.md, "A pipeline option"). mlir-tblgen declares a pass's
// options only as members of the pass itself, which a PassPipelineOptions
// struct cannot reuse.
//
// -gen-pass-option-table: every pass option's pass, argument, type and, for
// one that takes a value from a list, that list, so that a tool can say
// what a rejected value should have been (llvm::cl only says it is wrong).
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/Pass.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

using namespace llvm;
using mlir::tblgen::Pass;
using mlir::tblgen::PassOption;

static cl::opt<bool> genPipelineOptions(
    "gen-pipeline-options",
    cl::desc("Generate the options struct of each PipelineOptions record"));
static cl::opt<bool> genPassOptionTable(
    "gen-pass-option-table",
    cl::desc("Generate the table of every pass's options and their values"));

namespace {
/// One option of the pipeline, as its struct declares it.
struct PipelineOption {
  std::string cppName, type, defaultValue, description, flags;
};

/// The pipeline's options by argument, in declaration order.
using OptionTable = MapVector<StringRef, PipelineOption>;
} // namespace

static std::string getOptionDeclaration(StringRef argument,
                                        const PipelineOption &option) {
  std::string init = option.defaultValue.empty()
                         ? ""
                         : formatv(", ::llvm::cl::init({0})",
                                   option.defaultValue)
                               .str();
  std::string flags = option.flags.empty() ? "" : ", " + option.flags;
  return formatv("  Option<{0}> {1}{{*this, \"{2}\", "
                 "::llvm::cl::desc(R\"PO({3})PO\"){4}{5}};\n",
                 option.type, option.cppName, argument, option.description,
                 init, flags)
      .str();
}

/// Adds the options of `passRecord`, the first declaration of an argument
/// standing for every pass that shares it.
static void addPassOptions(const Record &pipeline, const Record *passRecord,
                           OptionTable &table) {
  Pass pass(passRecord);
  for (const PassOption &option : pass.getOptions()) {
    if (option.isListOption())
      PrintFatalError(pipeline.getLoc(),
                      "list options are not supported: " +
                          option.getArgument());
    PipelineOption entry{option.getCppVariableName().str(),
                         option.getType().str(),
                         option.getDefaultValue().value_or("").str(),
                         option.getDescription().str(),
                         option.getAdditionalFlags().value_or("").str()};
    auto [it, inserted] = table.insert({option.getArgument(), entry});
    // One struct member stands for both: they must agree on its value and
    // on how it parses (an enum's value list is an additional flag).
    if (!inserted && (it->second.type != entry.type ||
                      it->second.defaultValue != entry.defaultValue ||
                      it->second.flags != entry.flags))
      PrintFatalError(passRecord->getLoc(),
                      "option '" + option.getArgument() +
                          "' differs in type, default or parser flags from "
                          "the one of an earlier pass of " +
                          pipeline.getName());
  }
}

static void emitPipeline(const Record &pipeline, raw_ostream &os) {
  StringRef structName = pipeline.getName();
  OptionTable table;
  std::vector<const Record *> passes =
      pipeline.getValueAsListOfDefs("passes");
  for (const Record *pass : passes)
    addPassOptions(pipeline, pass, table);
  for (const Record *def : pipeline.getValueAsListOfDefs("defaults")) {
    StringRef argument = def->getValueAsString("argument");
    if (!table.count(argument))
      PrintFatalError(def->getLoc(), "no pass option '" + argument + "'");
    table[argument].defaultValue = def->getValueAsString("defaultValue");
  }
  auto addOwn = [&](StringRef argument, PipelineOption entry,
                    const Record *def) {
    if (!table.insert({argument, std::move(entry)}).second)
      PrintFatalError(def->getLoc(), "option '" + argument +
                                         "' is declared twice");
  };
  for (const Record *def : pipeline.getValueAsListOfDefs("options")) {
    PassOption option(def);
    addOwn(option.getArgument(),
           {option.getCppVariableName().str(), option.getType().str(),
            option.getDefaultValue().value_or("").str(),
            option.getDescription().str(),
            option.getAdditionalFlags().value_or("").str()},
           def);
  }
  // Each alias: its own option (the aliased one's type and default) and
  // the aliased option's member.
  std::vector<const Record *> aliases =
      pipeline.getValueAsListOfDefs("aliases");
  StringMap<std::pair<const Record *, std::string>> aliasOf;
  for (const Record *def : aliases) {
    StringRef of = def->getValueAsString("aliasOf");
    auto it = table.find(of);
    if (it == table.end())
      PrintFatalError(def->getLoc(), "no option '" + of + "' to alias");
    bool negated = def->getValueAsBit("negated");
    if (negated && it->second.type != "bool")
      PrintFatalError(def->getLoc(), "a negated alias needs a bool option");
    PipelineOption entry = it->second;
    std::string aliased = entry.cppName;
    entry.cppName = def->getValueAsString("cppName").str();
    entry.description = def->getValueAsString("description").str();
    if (negated)
      entry.defaultValue = "false";
    aliasOf[of] = {def, entry.cppName};
    addOwn(def->getValueAsString("argument"), std::move(entry), def);
  }

  os << "#ifdef GEN_PIPELINE_OPTIONS_DECL\n";
  for (const auto &[argument, option] : table)
    os << getOptionDeclaration(argument, option);
  os << "#undef GEN_PIPELINE_OPTIONS_DECL\n#endif\n\n";

  os << "#ifdef GEN_PIPELINE_OPTIONS_DEF\n";
  // A negated alias is merged by `and`, whichever is given: no override.
  os << "/// The options given a second name, by option and alias: giving "
        "either\n/// overrides a value recorded for the other.\n"
     << "static constexpr std::pair<::llvm::StringLiteral, "
        "::llvm::StringLiteral>\n    kOptionAliases[] = {\n";
  for (const Record *def : aliases)
    if (!def->getValueAsBit("negated"))
      os << formatv("        {{\"{0}\", \"{1}\"},\n",
                    def->getValueAsString("aliasOf"),
                    def->getValueAsString("argument"));
  os << "};\n";
  for (const Record *passRecord : passes) {
    Pass pass(passRecord);
    if (pass.getOptions().empty())
      continue;
    StringRef name = passRecord->getName();
    os << formatv("\n/// The options of {0} that `options` give.\n"
                  "[[maybe_unused]] static {1}Options\nget{1}PassOptions("
                  "const {2} &options) {{\n  {1}Options pass;\n",
                  pass.getArgument(), name, structName);
    for (const PassOption &option : pass.getOptions()) {
      StringRef argument = option.getArgument();
      std::string value =
          formatv("options.{0}.getValue()", table[argument].cppName).str();
      auto alias = aliasOf.find(argument);
      if (alias != aliasOf.end()) {
        // The option wins when given; a negated alias turns it off.
        std::string other =
            formatv("options.{0}.getValue()", alias->second.second).str();
        value = alias->second.first->getValueAsBit("negated")
                    ? formatv("{0} && !{1}", value, other).str()
                    : formatv("options.{0}.hasValue() ? {1} : {2}",
                              table[argument].cppName, value, other)
                          .str();
      }
      os << formatv("  pass.{0} = {1};\n", option.getCppVariableName(),
                    value);
    }
    os << "  return pass;\n}\n";
  }
  os << "#undef GEN_PIPELINE_OPTIONS_DEF\n#endif\n";
}

static bool emitPipelineOptions(raw_ostream &os, const RecordKeeper &records) {
  emitSourceFileHeader("Pass pipeline options", os, records);
  for (const Record *pipeline :
       records.getAllDerivedDefinitions("PipelineOptions"))
    emitPipeline(*pipeline, os);
  return false;
}

/// Entries `{"pass", "option", "type", values}` for an array of a struct
/// the includer declares; `values` applies the option's llvm::cl value list
/// to a ddp::OptionValueNames, or is nullptr for an option of a plain type.
static bool emitPassOptionTable(raw_ostream &os, const RecordKeeper &records) {
  emitSourceFileHeader("Pass option table", os, records);
  static constexpr StringLiteral kPlainTypes[] = {
      "bool",     "int",     "unsigned", "int64_t", "uint64_t",
      "int32_t",  "double",  "float",    "std::string", "::std::string"};
  os << "#ifdef GEN_PASS_OPTION_TABLE\n";
  for (const Record *passRecord :
       records.getAllDerivedDefinitions("PassBase")) {
    Pass pass(passRecord);
    for (const PassOption &option : pass.getOptions()) {
      StringRef type = option.getType();
      std::optional<StringRef> flags = option.getAdditionalFlags();
      std::string values = "nullptr";
      // An option of another type parses with the llvm::cl::values its
      // flags give, and nothing else may be in them.
      if (!option.isListOption() && flags && !is_contained(kPlainTypes, type))
        values = formatv("[](::ddp::OptionValueNames &names) {{ ({0}).apply("
                         "names); }",
                         *flags)
                     .str();
      os << formatv("{{\"{0}\", \"{1}\", \"{2}\", {3}},\n",
                    pass.getArgument(), option.getArgument(),
                    option.isListOption() ? "list" : type, values);
    }
  }
  os << "#undef GEN_PASS_OPTION_TABLE\n#endif\n";
  return false;
}

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv);
  if (genPipelineOptions == genPassOptionTable) {
    errs() << argv[0]
           << ": give one of -gen-pipeline-options, -gen-pass-option-table\n";
    return 1;
  }
  return TableGenMain(argv[0], genPipelineOptions ? &emitPipelineOptions
                                                  : &emitPassOptionTable);
}
