//===- MegatronArgs.cpp - Megatron-LM's argument dump as input ------------===//

#include "ddp/Import/MegatronArgs.h"

#include "ddp/Import/ModelConfig.h"

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

// The lines `_print_args("arguments", args)` prints around the arguments.
static constexpr StringLiteral kTitleLine =
    "------------------------ arguments ------------------------";
static constexpr StringLiteral kEndLine =
    "-------------------- end of arguments ---------------------";
/// `_print_args` pads every name with dots to this column; a name at least
/// this long is followed by two spaces and no dots.
static constexpr size_t kDotsColumn = 48;

namespace {
/// Megatron arguments read straight into the model config field of the
/// same name. `None` leaves the field to its default.
constexpr StringLiteral integerConfigArgs[] = {
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "kv_channels",
    "seq_length",
    "max_position_embeddings",
    "micro_batch_size",
    "make_vocab_size_divisible_by",
    "tensor_model_parallel_size",
    "data_parallel_size",
    "expert_model_parallel_size",
    "moe_router_topk",
};
constexpr StringLiteral boolConfigArgs[] = {
    "swiglu",          "untie_embeddings_and_output_weights",
    "add_bias_linear", "sequence_parallel",
    "squared_relu",
};
constexpr StringLiteral numberConfigArgs[] = {
    "hidden_dropout", "lr", "adam_beta1", "adam_beta2", "adam_eps",
};

/// A Megatron argument and the ddp-schedule option it sets.
struct ScheduleArg {
  StringLiteral megatronName, optionName;
  bool isInteger;
};
constexpr ScheduleArg scheduleArgs[] = {
    {"overlap_grad_reduce", "overlap-grad-reduce", false},
    {"overlap_param_gather", "overlap-param-gather", false},
    {"use_distributed_optimizer", "use-distributed-optimizer", false},
    {"ddp_bucket_size", "bucket-size", true},
    {"ddp_num_buckets", "num-buckets", true},
    {"ddp_average_in_collective", "average-in-collective", false},
    {"accumulate_allreduce_grads_in_fp32", "grad-reduce-in-fp32", false},
    {"check_for_nan_in_loss_and_grad", "check-for-nan-in-grad", false},
    {"align_param_gather", "align-param-gather", false},
    {"num_distributed_optimizer_instances",
     "num-distributed-optimizer-instances", true},
    {"ddp_pad_buckets_for_high_nccl_busbw", "pad-buckets-for-high-nccl-busbw",
     false},
    // The tensor-parallel overlap (ddp-overlap-tp-comm).
    {"tp_comm_overlap", "tp-comm-overlap", false},
    {"tp_comm_overlap_ag", "tp-comm-overlap-ag", false},
    {"tp_comm_overlap_rs", "tp-comm-overlap-rs", false},
    {"tp_comm_overlap_rs_dgrad", "tp-comm-overlap-rs-dgrad", false},
    {"tp_comm_bulk_dgrad", "tp-comm-bulk-dgrad", false},
    {"tp_comm_bulk_wgrad", "tp-comm-bulk-wgrad", false},
};

/// Arguments whose effect the step does not model; a value other than the
/// default gets a note saying what was left out.
struct LeftOutArg {
  StringLiteral name, defaultValue, consequence;
  /// Whether the argument matters only with experts.
  bool onlyWithExperts = false;
};
constexpr LeftOutArg leftOutArgs[] = {
    {"recompute_granularity", "None",
     "the step does not recompute activations"},
    {"fp8", "None", "the step computes in the parameters' dtype"},
    {"rampup_batch_size", "None", "the step has the final global batch size"},
    {"add_qkv_bias", "False", "the step has biases only with add_bias_linear"},
    {"moe_token_dispatcher_type", "allgather",
     "the step dispatches tokens to the experts with all-gathers",
     /*onlyWithExperts=*/true},
};

/// Arguments that decide the step's layout when they differ from the
/// default; the step cannot express them, so they are errors.
struct UnsupportedArg {
  StringLiteral name, defaultValue, reason;
};
constexpr UnsupportedArg unsupportedArgs[] = {
    {"pipeline_model_parallel_size", "1",
     "pipeline parallelism splits the layers into stages the dialect cannot "
     "express yet; the step of one stage would be wrong"},
    {"virtual_pipeline_model_parallel_size", "None",
     "interleaved pipeline stages need pipeline parallelism, which the "
     "dialect cannot express yet"},
    {"num_layers_per_virtual_pipeline_stage", "None",
     "interleaved pipeline stages need pipeline parallelism, which the "
     "dialect cannot express yet"},
    {"context_parallel_size", "1",
     "context parallelism splits the sequence and widens the gradient "
     "reduction group, which the dialect cannot express yet"},
    {"use_torch_fsdp2", "False",
     "fully sharded data parallelism gathers parameters per layer, a step "
     "the importer does not build"},
};

/// Megatron arguments that do not change the step: data, logging,
/// checkpointing, initialization, kernels, the learning-rate schedule and
/// the precision settings already covered by bf16/fp16. They are read
/// silently; any other argument is listed in one note.
constexpr StringLiteral irrelevantArgs[] = {
    "add_position_embedding",
    "adlr_autoresume",
    "adlr_autoresume_interval",
    "align_grad_reduce",
    "apply_layernorm_1p",
    "apply_query_key_layer_scaling",
    "apply_residual_connection_post_layernorm",
    "apply_rope_fusion",
    "async_save",
    "async_tensor_model_parallel_allreduce",
    "attention_dropout",
    "attention_softmax_in_fp32",
    "barrier_with_L1_time",
    "bias_dropout_fusion",
    "bias_gelu_fusion",
    "bias_swiglu_fusion",
    "calculate_per_token_loss",
    "check_weight_hash_across_dp_replicas_interval",
    "ckpt_format",
    "clip_grad",
    "consumed_train_samples",
    "consumed_valid_samples",
    "cross_entropy_loss_fusion",
    "data_cache_path",
    "data_parallel_random_init",
    "data_path",
    "dataloader_type",
    "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers",
    "decoder_num_layers",
    "decoder_seq_length",
    "decoupled_lr",
    "decoupled_min_lr",
    "defer_embedding_wgrad_compute",
    "deterministic_mode",
    "distribute_saved_activations",
    "distributed_backend",
    "distributed_timeout_minutes",
    "empty_unused_memory_level",
    "encoder_num_layers",
    "encoder_seq_length",
    "end_weight_decay",
    "eval_interval",
    "eval_iters",
    "exit_duration_in_mins",
    "exit_interval",
    "exit_on_missing_checkpoint",
    "exit_signal_handler",
    "fp16_lm_cross_entropy",
    "fp32_residual_connection",
    "gradient_accumulation_fusion",
    "head_lr_mult",
    "hysteresis",
    "init_method_std",
    "init_method_xavier_uniform",
    "initial_loss_scale",
    "iteration",
    "lazy_mpu_init",
    "load",
    "local_rank",
    "log_interval",
    "log_memory_to_tensorboard",
    "log_num_zeros_in_grad",
    "log_params_norm",
    "log_throughput",
    "log_timers_to_tensorboard",
    "log_validation_ppl_to_tensorboard",
    "loss_scale",
    "loss_scale_window",
    "lr_decay_iters",
    "lr_decay_samples",
    "lr_decay_style",
    "lr_warmup_fraction",
    "lr_warmup_init",
    "lr_warmup_iters",
    "lr_warmup_samples",
    "manual_gc",
    "masked_softmax_fusion",
    "merge_file",
    "min_loss_scale",
    "min_lr",
    "mmap_bin_files",
    "moe_aux_loss_coeff",
    "moe_grouped_gemm",
    "moe_router_load_balancing_type",
    "no_load_optim",
    "no_load_rng",
    "no_save_optim",
    "no_save_rng",
    "norm_epsilon",
    "num_dataset_builder_threads",
    "num_workers",
    "overlap_p2p_comm",
    "overlap_param_gather_with_optimizer_step",
    "override_opt_param_scheduler",
    "perform_initialization",
    "pipeline_model_parallel_split_rank",
    "profile",
    "profile_ranks",
    "profile_step_end",
    "profile_step_start",
    "rank",
    "recompute_method",
    "recompute_num_layers",
    "reset_attention_mask",
    "reset_position_ids",
    "rotary_base",
    "rotary_interleaved",
    "rotary_percent",
    "save",
    "save_interval",
    "seed",
    "split",
    "standalone_embedding_stage",
    "start_weight_decay",
    "tensorboard_dir",
    "tensorboard_log_interval",
    "tensorboard_queue_size",
    "timing_log_level",
    "timing_log_option",
    "tokenizer_model",
    "tokenizer_type",
    "tp_comm_overlap_cfg",
    "tp_comm_split_ag",
    "tp_comm_split_rs",
    "train_data_path",
    "train_iters",
    "train_samples",
    "transformer_impl",
    "use_checkpoint_args",
    "use_cpu_initialization",
    "use_dist_ckpt",
    "use_flash_attn",
    "use_mcore_models",
    "use_rotary_position_embeddings",
    "valid_data_path",
    "vocab_file",
    "wandb_exp_name",
    "wandb_project",
    "wandb_save_dir",
    "weight_decay",
    "weight_decay_incr_style",
    "world_size",
    "yaml_cfg",
};

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
  // The newline that ends the last line does not start another.
  if (!lines.empty() && lines.back().empty())
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
                           kEndLine + "'");
    unsigned line = index + 1;
    StringRef text = lineText(index);
    if (!text.consume_front(prefix))
      return lineError(line, "expected an argument line with the prefix '" +
                                 prefix + "' of the block's title line");
    if (text.rtrim() == kEndLine)
      break;
    auto malformed = [&](const Twine &what) {
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

  struct StringArg {
    StringLiteral name;
    function_ref<bool(StringRef)> isKnown;
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
  };
  for (const StringArg &arg : stringArgs) {
    const Argument *argument = lookup(arg.name);
    if (!argument)
      continue;
    if (!arg.isKnown(argument->value))
      return valueError(arg.name, *argument, arg.expected);
    run.config[arg.name] = argument->value.str();
  }
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
  return Error::success();
}

Error ArgumentReader::checkLayout(MegatronRun &run) {
  for (const UnsupportedArg &arg : unsupportedArgs)
    if (const Argument *argument = lookup(arg.name);
        argument && argument->value != arg.defaultValue)
      return lineError(argument->line, formatv("{0} is {1}: {2}", arg.name,
                                               argument->value, arg.reason));
  // Expert layers may have a tensor-parallel size of their own; the
  // importer splits them over tensor_model_parallel_size.
  const Argument *experts = lookup("num_experts");
  bool hasExperts = experts && experts->value != "None";
  const Argument *expertTensorParallel = lookup("expert_tensor_parallel_size");
  const Argument *tensorParallel = lookup("tensor_model_parallel_size");
  if (hasExperts && expertTensorParallel &&
      expertTensorParallel->value != "None" &&
      (!tensorParallel || expertTensorParallel->value != tensorParallel->value))
    return lineError(
        expertTensorParallel->line,
        formatv("expert_tensor_parallel_size is {0}, not "
                "tensor_model_parallel_size: the importer splits experts "
                "over tensor_model_parallel_size",
                expertTensorParallel->value));
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
  SmallVector<mlir::NamedAttribute> entries;
  for (const auto &[name, value] : options) {
    mlir::Attribute attr;
    if (std::optional<bool> flag = value.getAsBoolean())
      attr = builder.getBoolAttr(*flag);
    else if (std::optional<int64_t> integer = value.getAsInteger())
      attr = builder.getI64IntegerAttr(*integer);
    else
      llvm_unreachable("schedule options are flags and integers");
    entries.push_back(builder.getNamedAttr(name.str(), attr));
  }
  module->setAttr(kScheduleOptionsAttrName, builder.getDictionaryAttr(entries));
}
