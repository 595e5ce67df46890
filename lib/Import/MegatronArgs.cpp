//===- MegatronArgs.cpp - Megatron-LM's argument dump as input ------------===//

#include "ddp/Import/MegatronArgs.h"

#include "ddp/Import/ModelConfig.h"

#include "MegatronArgTables.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Regex.h"

using namespace llvm;
using namespace ddp;
using namespace ddp::importer;

// The lines `_print_args("arguments", args)` prints around the arguments.
static constexpr StringLiteral kTitleLine =
    "------------------------ arguments ------------------------";
static constexpr StringLiteral kEndLine =
    "-------------------- end of arguments ---------------------";
/// `_print_args` pads every name with dots to this column; a name at least
/// this long is followed by two spaces and no dots.
static constexpr size_t kDotsColumn = 48;

namespace {
struct Argument {
  StringRef value;
  unsigned line;
};

/// The argument block, and what reading it found.
class ArgumentReader {
public:
  explicit ArgumentReader(StringRef source) : source(source) {}

  Error parse(StringRef log);
  Expected<MegatronRun> map();

private:
  Error lineError(unsigned line, const Twine &message) const {
    return createStringError(inconvertibleErrorCode(),
                             source + ":" + Twine(line) + ": " + message);
  }
  Error valueError(StringRef name, const Argument &argument,
                   StringRef expected) const {
    return lineError(argument.line,
                     formatv("argument '{0}': expected {1}, got '{2}'", name,
                             expected, argument.value));
  }
  /// The argument, marked as read; null when the block does not have it.
  const Argument *lookup(StringRef name);
  /// Absent or `None` give nullopt.
  Expected<std::optional<int64_t>> getInteger(StringRef name);
  Expected<std::optional<double>> getNumber(StringRef name);
  Expected<std::optional<bool>> getBool(StringRef name);
  /// Sets `into[key]` to argument `name`, read by `get`, when the block
  /// gives it a value (not absent, not None).
  template <typename T>
  Error copyArgument(StringRef name,
                     Expected<std::optional<T>> (ArgumentReader::*get)(StringRef),
                     json::Object &into, StringRef key);

  Error mapModel(MegatronRun &run);
  Error mapVocabulary(MegatronRun &run);
  Error mapBatch(MegatronRun &run);
  Error mapSchedule(MegatronRun &run);
  Error checkLayout(MegatronRun &run);

  StringRef source;
  StringMap<Argument> arguments;
  StringSet<> read;
  unsigned titleLine = 0;
  /// `new size` of Megatron's " > padded vocab ..." line after the block.
  std::optional<int64_t> paddedVocabFromLog;
  /// The title line of a second argument block, which is not read.
  std::optional<unsigned> nextBlockLine;
};
} // namespace

Error ArgumentReader::parse(StringRef log) {
  SmallVector<StringRef> lines;
  log.split(lines, '\n');
  // The newline that ends the last line does not start another; a log
  // without it was cut off (a copy of a log still being written).
  bool cutOff = !lines.empty() && !lines.back().empty();
  if (!cutOff && !lines.empty())
    lines.pop_back();
  auto lineText = [&](size_t index) { return lines[index].rtrim('\r'); };

  // A launcher may prefix every line of a rank (`[rank0]: `, `0: `); the
  // prefix of the title line is expected on every line of the block.
  size_t index = 0;
  StringRef prefix;
  for (; index < lines.size(); ++index) {
    StringRef text = lineText(index).rtrim();
    if (text.ends_with(kTitleLine)) {
      prefix = text.drop_back(kTitleLine.size());
      break;
    }
  }
  if (index == lines.size())
    return createStringError(inconvertibleErrorCode(),
                             source + ": no Megatron argument block (a line '" +
                                 kTitleLine + "')");
  titleLine = index + 1;

  for (++index;; ++index) {
    if (index == lines.size())
      return lineError(titleLine,
                       Twine("the argument block has no end line '") +
                           kEndLine + "'" +
                           (cutOff ? "; the log ends without a newline, in "
                                     "the block: give the whole log"
                                   : ""));
    unsigned line = index + 1;
    StringRef text = lineText(index);
    if (!text.consume_front(prefix))
      return lineError(line, "expected an argument line with the prefix '" +
                                 prefix + "' of the block's title line");
    if (text.rtrim() == kEndLine)
      break;
    auto malformed = [&](const Twine &what) {
      if (cutOff && index + 1 == lines.size())
        return lineError(line, "the log ends inside the argument block, in "
                               "the middle of this line (no newline ends "
                               "it); give the whole log");
      return lineError(line, "malformed argument line: " + what +
                                 "; expected '  NAME ..... VALUE'");
    };
    if (!text.consume_front("  "))
      return malformed("it does not start with two spaces");
    StringRef name =
        text.take_while([](char c) { return isAlnum(c) || c == '_'; });
    if (name.empty() || isDigit(name.front()))
      return malformed("no argument name");
    text = text.drop_front(name.size());
    if (!text.consume_front(" "))
      return malformed("no space after '" + name + "'");
    size_t numDots = std::min(text.find_first_not_of('.'), text.size());
    if (numDots == 0 && name.size() < kDotsColumn)
      return malformed("no dots after '" + name + "'");
    if (!text.drop_front(numDots).starts_with(" "))
      return malformed("no space between the dots and the value of '" + name +
                       "'");
    Argument argument{text.drop_front(numDots + 1), line};
    auto [it, inserted] = arguments.try_emplace(name, argument);
    if (!inserted)
      return lineError(line, formatv("argument '{0}' given twice (first on "
                                     "line {1})",
                                     name, it->second.line));
  }

  // Megatron builds the tokenizer after printing the arguments and prints
  // the padded vocabulary size then; the block often has vocab_size None.
  Regex paddedVocab("> padded vocab \\(size: [0-9]+\\) with [0-9]+ dummy "
                    "tokens \\(new size: ([0-9]+)\\)");
  // A log of several runs (a restart appended to it) has several blocks;
  // the first run is the one read, up to the next block.
  for (++index; index < lines.size(); ++index) {
    if (lineText(index).rtrim().ends_with(kTitleLine)) {
      nextBlockLine = index + 1;
      break;
    }
    SmallVector<StringRef, 2> groups;
    int64_t size;
    // The substring test keeps the regex off the many other lines of a
    // long log.
    if (!paddedVocabFromLog && lines[index].contains("> padded vocab") &&
        paddedVocab.match(lines[index], &groups) &&
        !groups[1].getAsInteger(10, size))
      paddedVocabFromLog = size;
  }
  return Error::success();
}

const Argument *ArgumentReader::lookup(StringRef name) {
  auto it = arguments.find(name);
  if (it == arguments.end())
    return nullptr;
  read.insert(name);
  return &it->second;
}

Expected<std::optional<int64_t>> ArgumentReader::getInteger(StringRef name) {
  const Argument *argument = lookup(name);
  if (!argument || argument->value == "None")
    return std::nullopt;
  int64_t value;
  if (StringRef(argument->value).getAsInteger(10, value))
    return valueError(name, *argument, "an integer or None");
  return value;
}

Expected<std::optional<double>> ArgumentReader::getNumber(StringRef name) {
  const Argument *argument = lookup(name);
  if (!argument || argument->value == "None")
    return std::nullopt;
  double value;
  if (StringRef(argument->value).getAsDouble(value))
    return valueError(name, *argument, "a number or None");
  return value;
}

Expected<std::optional<bool>> ArgumentReader::getBool(StringRef name) {
  const Argument *argument = lookup(name);
  if (!argument)
    return std::nullopt;
  if (argument->value == "True")
    return true;
  if (argument->value == "False")
    return false;
  return valueError(name, *argument, "True or False");
}

template <typename T>
Error ArgumentReader::copyArgument(
    StringRef name, Expected<std::optional<T>> (ArgumentReader::*get)(StringRef),
    json::Object &into, StringRef key) {
  Expected<std::optional<T>> value = (this->*get)(name);
  if (!value)
    return value.takeError();
  if (*value)
    into[key] = **value;
  return Error::success();
}

Error ArgumentReader::mapModel(MegatronRun &run) {
  for (StringRef name : integerConfigArgs)
    if (Error error =
            copyArgument(name, &ArgumentReader::getInteger, run.config, name))
      return error;
  for (StringRef name : boolConfigArgs)
    if (Error error =
            copyArgument(name, &ArgumentReader::getBool, run.config, name))
      return error;
  for (StringRef name : numberConfigArgs)
    if (Error error =
            copyArgument(name, &ArgumentReader::getNumber, run.config, name))
      return error;

  // Megatron prints num_query_groups (default 1) even without GQA.
  Expected<std::optional<bool>> gqa = getBool("group_query_attention");
  if (!gqa)
    return gqa.takeError();
  Expected<std::optional<int64_t>> groups = getInteger("num_query_groups");
  if (!groups)
    return groups.takeError();
  if (gqa->value_or(false) && *groups)
    run.config["num_query_groups"] = **groups;

  // None is a dense model.
  if (Error error = copyArgument("num_experts", &ArgumentReader::getInteger,
                                 run.config, "num_experts"))
    return error;

  // A function pointer, not a function_ref: the table outlives the lambdas
  // it is initialised from.
  struct StringArg {
    StringLiteral name;
    bool (*isKnown)(StringRef);
    StringLiteral expected;
  } stringArgs[] = {
      {"normalization",
       [](StringRef value) { return parseNormalization(value).has_value(); },
       "LayerNorm or RMSNorm"},
      {"position_embedding_type",
       [](StringRef value) {
         return parsePositionEmbedding(value).has_value();
       },
       "learned_absolute, rope or none"},
      {"optimizer",
       [](StringRef value) { return parseOptimizerKind(value).has_value(); },
       "adam or sgd"},
      {"recompute_granularity",
       [](StringRef value) {
         return parseRecomputeGranularity(value).has_value();
       },
       "full, selective or None"},
      {"recompute_method",
       [](StringRef value) {
         return value == "None" || parseRecomputeMethod(value).has_value();
       },
       "uniform, block or None"},
  };
  for (const StringArg &arg : stringArgs) {
    const Argument *argument = lookup(arg.name);
    if (!argument)
      continue;
    if (!arg.isKnown(argument->value))
      return valueError(arg.name, *argument, arg.expected);
    // None is Megatron's unset.
    if (argument->value != "None")
      run.config[arg.name] = argument->value.str();
  }
  // The token dispatcher and the capacity, read with experts only: Megatron
  // prints its defaults for a dense model too.
  if (run.config.get("num_experts")) {
    if (const Argument *dispatcher = lookup("moe_token_dispatcher_type")) {
      if (!parseMoEDispatcher(dispatcher->value))
        return valueError("moe_token_dispatcher_type", *dispatcher,
                          "allgather or alltoall (flex is not modelled)");
      run.config["moe_token_dispatcher_type"] = dispatcher->value.str();
    }
    if (Error error = copyArgument("moe_expert_capacity_factor",
                                   &ArgumentReader::getNumber, run.config,
                                   "moe_expert_capacity_factor"))
      return error;
    if (Error error = copyArgument("moe_pad_expert_input_to_capacity",
                                   &ArgumentReader::getBool, run.config,
                                   "moe_pad_expert_input_to_capacity"))
      return error;
    for (StringRef name :
         {"moe_shared_expert_overlap", "overlap_moe_expert_parallel_comm",
          "delay_wgrad_compute"})
      if (Error error = copyArgument(name, &ArgumentReader::getBool,
                                     run.config, name))
        return error;
    // Megatron core_r0.10-0.12 print moe_ffn_hidden_size = ffn_hidden_size
    // for a dense model too: these are read with experts only.
    // Megatron prints expert_tensor_parallel_size = tensor_model_parallel_size
    // for a dense model too (arguments.py sets it when unset).
    for (StringRef name :
         {"moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
          "expert_tensor_parallel_size"})
      if (Error error = copyArgument(name, &ArgumentReader::getInteger,
                                     run.config, name))
        return error;
  } else {
    for (StringRef name :
         {"moe_token_dispatcher_type", "moe_expert_capacity_factor",
          "moe_pad_expert_input_to_capacity", "moe_shared_expert_overlap",
          "overlap_moe_expert_parallel_comm", "delay_wgrad_compute",
          "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
          "expert_tensor_parallel_size"})
      lookup(name);
  }
  if (Error error = copyArgument("recompute_num_layers",
                                 &ArgumentReader::getInteger, run.config,
                                 "recompute_num_layers"))
    return error;
  // recompute_modules, printed as a Python list (None: Megatron's default,
  // core_attn), read with selective recomputation only.
  if (const Argument *modules = lookup("recompute_modules");
      modules && modules->value != "None") {
    if (run.config.getString("recompute_granularity") == "selective") {
      json::Array names;
      SmallVector<StringRef> items;
      modules->value.trim().trim("[]").split(items, ',', -1, false);
      for (StringRef item : items)
        if (StringRef name = item.trim().trim("'\""); !name.empty())
          names.push_back(name.str());
      run.config["recompute_modules"] = std::move(names);
    } else {
      run.notes.push_back(formatv(
          "{0}:{1}: recompute_modules {2} is left out: Megatron reads it "
          "with recompute_granularity selective only",
          source, modules->line, modules->value));
    }
  }
  // Megatron ignores a method and a layer count without a granularity
  // (launch scripts often leave them set); so does the import, saying so.
  if (!run.config.get("recompute_granularity"))
    for (StringRef name : {"recompute_method", "recompute_num_layers"})
      if (run.config.erase(name))
        run.notes.push_back(formatv(
            "{0}:{1}: {2} {3} is left out: recompute_granularity is None, "
            "so Megatron recomputes nothing",
            source, lookup(name)->line, name, lookup(name)->value));
  // ddp.sgd is plain SGD; Megatron's SGD keeps a momentum buffer.
  if (const Argument *momentum = lookup("sgd_momentum");
      momentum && run.config.getString("optimizer") == "sgd" &&
      momentum->value != "0.0")
    run.notes.push_back(formatv("{0}:{1}: sgd_momentum {2} is left out: the "
                                "step's SGD has no momentum",
                                source, momentum->line, momentum->value));

  // Megatron derives params_dtype from these flags.
  Expected<std::optional<bool>> bf16 = getBool("bf16");
  if (!bf16)
    return bf16.takeError();
  Expected<std::optional<bool>> fp16 = getBool("fp16");
  if (!fp16)
    return fp16.takeError();
  if (bf16->value_or(false) && fp16->value_or(false))
    return lineError(lookup("fp16")->line, "bf16 and fp16 are both True");
  run.config["params_dtype"] = bf16->value_or(false)   ? "bf16"
                               : fp16->value_or(false) ? "f16"
                                                       : "f32";
  // Derived above, so read: the note on unread arguments leaves it out.
  lookup("params_dtype");
  return Error::success();
}

Error ArgumentReader::mapVocabulary(MegatronRun &run) {
  // padded_vocab_size is a multiple of make_vocab_size_divisible_by x TP,
  // so the importer's padding keeps it.
  Expected<std::optional<int64_t>> padded = getInteger("padded_vocab_size");
  if (!padded)
    return padded.takeError();
  Expected<std::optional<int64_t>> vocab = getInteger("vocab_size");
  if (!vocab)
    return vocab.takeError();
  std::optional<int64_t> size =
      padded->has_value() ? *padded
                          : (vocab->has_value() ? *vocab : paddedVocabFromLog);
  // --set vocab_size=N may still give it; without it parseModelConfig
  // reports the missing field after this note.
  if (!size) {
    run.notes.push_back(
        formatv("{0}:{1}: the argument block has no padded_vocab_size and "
                "vocab_size None, and the log has no ' > padded vocab' line; "
                "give the size with --set vocab_size=N",
                source, titleLine));
    return Error::success();
  }
  run.config["vocab_size"] = *size;
  return Error::success();
}

Error ArgumentReader::mapBatch(MegatronRun &run) {
  if (!arguments.contains("data_parallel_size"))
    return lineError(titleLine, "the argument block has no data_parallel_size");
  Expected<std::optional<int64_t>> global = getInteger("global_batch_size");
  if (!global)
    return global.takeError();
  if (!*global)
    return Error::success();
  int64_t micro = run.config.getInteger("micro_batch_size").value_or(1);
  int64_t dp = run.config.getInteger("data_parallel_size").value_or(1);
  // Both are at least 1 here unless the block says otherwise, which
  // parseModelConfig reports; avoid dividing by them then.
  if (micro < 1 || dp < 1)
    return Error::success();
  // The product of two sizes the log gives may not fit in int64 (a modulo
  // by its wrapped value divided by zero); then no int64 global batch is a
  // multiple of it.
  int64_t perStep;
  bool overflows = MulOverflow(micro, dp, perStep);
  if (**global < 1 || overflows || **global % perStep != 0)
    return lineError(arguments.find("global_batch_size")->second.line,
                     formatv("global_batch_size ({0}) is not a positive "
                             "multiple of micro_batch_size x "
                             "data_parallel_size ({1} x {2}{3})",
                             **global, micro, dp,
                             overflows ? ", more than 2^63 - 1" : ""));
  run.config["num_microbatches"] = **global / perStep;
  return Error::success();
}

Error ArgumentReader::mapSchedule(MegatronRun &run) {
  // Megatron-FSDP's strategy counts only with use_megatron_fsdp
  // (distributed_data_parallel_config.py; docs/FullySharded.md).
  Expected<std::optional<bool>> megatronFsdp = getBool("use_megatron_fsdp");
  if (!megatronFsdp)
    return megatronFsdp.takeError();
  // The inner strategy and the outer one of hybrid FSDP
  // (arguments.py L3193-3198 at d98e8a6: no_shard or optim).
  struct StrategyArg {
    StringLiteral megatronName, optionName;
    ArrayRef<StringRef> values;
    StringLiteral valueList;
  };
  static const StringRef innerValues[] = {"no_shard", "optim", "optim_grads",
                                          "optim_grads_params"};
  static const StringRef outerValues[] = {"no_shard", "optim"};
  const StrategyArg strategies[] = {
      {"data_parallel_sharding_strategy", "data-parallel-sharding-strategy",
       innerValues, "no_shard, optim, optim_grads or optim_grads_params"},
      {"outer_dp_sharding_strategy", "outer-dp-sharding-strategy",
       outerValues, "no_shard or optim"}};
  for (const StrategyArg &arg : strategies) {
    const Argument *strategy = lookup(arg.megatronName);
    if (!strategy || !megatronFsdp->value_or(false))
      continue;
    if (!is_contained(arg.values, StringRef(strategy->value)))
      return valueError(arg.megatronName, *strategy, arg.valueList);
    run.scheduleOptions[arg.optionName] = strategy->value.str();
    run.scheduleOptionSources[arg.optionName] = {
        arg.megatronName.str(), strategy->value.str(), strategy->line};
  }
  for (const ScheduleArg &arg : scheduleArgs) {
    Error error =
        arg.isInteger
            ? copyArgument(arg.megatronName, &ArgumentReader::getInteger,
                           run.scheduleOptions, arg.optionName)
            : copyArgument(arg.megatronName, &ArgumentReader::getBool,
                           run.scheduleOptions, arg.optionName);
    if (error)
      return error;
    if (run.scheduleOptions.get(arg.optionName)) {
      const Argument &argument = arguments.find(arg.megatronName)->second;
      run.scheduleOptionSources[arg.optionName] = {
          arg.megatronName.str(), argument.value.str(), argument.line};
    }
  }
  // The model config's field too, which the import checks against the
  // virtual size as Megatron does (blocking interleaved calls need more
  // than 2 stages, arguments.py L1000-1010 at d98e8a6), rather than leave
  // ddp-schedule to find the two sends in one batch.
  if (const json::Value *overlap = run.scheduleOptions.get("overlap-p2p-comm"))
    run.config["overlap_p2p_comm"] = *overlap;
  return Error::success();
}

Error ArgumentReader::checkLayout(MegatronRun &run) {
  for (const UnsupportedArg &arg : unsupportedArgs)
    if (const Argument *argument = lookup(arg.name);
        argument && argument->value != arg.defaultValue)
      return lineError(argument->line, formatv("{0} is {1}: {2}", arg.name,
                                               argument->value, arg.reason));
  const Argument *experts = lookup("num_experts");
  bool hasExperts = experts && experts->value != "None";
  for (const LeftOutArg &arg : leftOutArgs)
    if (const Argument *argument = lookup(arg.name);
        argument && argument->value != arg.defaultValue &&
        (hasExperts || !arg.onlyWithExperts))
      run.notes.push_back(formatv("{0}:{1}: {2} {3} is left out: {4}", source,
                                  argument->line, arg.name, argument->value,
                                  arg.consequence));
  return Error::success();
}

Expected<MegatronRun> ArgumentReader::map() {
  MegatronRun run;
  if (nextBlockLine)
    run.notes.push_back(formatv("{0}:{1}: another argument block (another "
                                "run); only the first, on line {2}, is read",
                                source, *nextBlockLine, titleLine));
  if (Error error = checkLayout(run))
    return std::move(error);
  if (Error error = mapModel(run))
    return std::move(error);
  if (Error error = mapVocabulary(run))
    return std::move(error);
  if (Error error = mapBatch(run))
    return std::move(error);
  if (Error error = mapSchedule(run))
    return std::move(error);

  SmallVector<StringRef> unknown;
  for (const auto &entry : arguments)
    if (!read.contains(entry.getKey()) &&
        !is_contained(irrelevantArgs, entry.getKey()))
      unknown.push_back(entry.getKey());
  if (!unknown.empty()) {
    llvm::sort(unknown);
    std::string names;
    raw_string_ostream os(names);
    interleaveComma(unknown, os);
    run.notes.push_back(formatv("{0}: ignored {1} argument{2} ddp-import does "
                                "not read: {3}",
                                source, unknown.size(),
                                unknown.size() == 1 ? "" : "s", names));
  }
  return run;
}

Expected<MegatronRun> ddp::readMegatronArgs(StringRef log, StringRef source) {
  ArgumentReader reader(source);
  if (Error error = reader.parse(log))
    return std::move(error);
  return reader.map();
}

void ddp::recordScheduleOptions(mlir::ModuleOp module,
                                const json::Object &options) {
  mlir::Builder builder(module.getContext());
  // What the importer recorded from the model config stays unless
  // `options` gives the same option.
  SmallVector<mlir::NamedAttribute> entries;
  if (auto recorded =
          module->getAttrOfType<mlir::DictionaryAttr>(kScheduleOptionsAttrName))
    for (mlir::NamedAttribute entry : recorded)
      if (!options.get(entry.getName().getValue()))
        entries.push_back(entry);
  for (const auto &[name, value] : options) {
    mlir::Attribute attr;
    if (std::optional<bool> flag = value.getAsBoolean())
      attr = builder.getBoolAttr(*flag);
    else if (std::optional<int64_t> integer = value.getAsInteger())
      attr = builder.getI64IntegerAttr(*integer);
    else if (std::optional<StringRef> text = value.getAsString())
      attr = builder.getStringAttr(*text);
    else
      llvm_unreachable("schedule options are flags, integers and names");
    entries.push_back(builder.getNamedAttr(name.str(), attr));
  }
  module->setAttr(kScheduleOptionsAttrName, builder.getDictionaryAttr(entries));
}
