//===- JSONFields.cpp - Reading typed fields of the input JSON ------------===//

#include "JSONFields.h"
#include "MegatronArgTables.h"

#include "ddp/Bucketing/BucketLayout.h"
#include "ddp/Support/FormatNumber.h"
#include "ddp/Support/Suggest.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;
using namespace ddp;

Error importer::fieldError(StringRef source, const Twine &field,
                           const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           source + ": field '" + field + "': " + message);
}

/// The value as the user wrote it, for messages.
static std::string render(const json::Value &value) {
  std::string out;
  raw_string_ostream os(out);
  os << value;
  return out;
}

Expected<int64_t> importer::readInteger(const json::Value &value,
                                        StringRef source, const Twine &field,
                                        int64_t minValue) {
  std::optional<int64_t> integer = value.getAsInteger();
  StringRef expected = minValue > 0    ? "a positive integer"
                       : minValue == 0 ? "a non-negative integer"
                                       : "an integer";
  if (!integer || *integer < minValue)
    return fieldError(source, field,
                      Twine("expected ") + expected + ", got " + render(value));
  return *integer;
}

Expected<bool> importer::readBool(const json::Value &value, StringRef source,
                                  const Twine &field) {
  if (std::optional<bool> flag = value.getAsBoolean())
    return *flag;
  return fieldError(source, field,
                    "expected true or false, got " + render(value));
}

Expected<double> importer::readNumber(const json::Value &value,
                                      StringRef source, const Twine &field) {
  std::optional<double> number = value.getAsNumber();
  if (!number || !std::isfinite(*number))
    return fieldError(source, field, "expected a number, got " + render(value));
  return *number;
}

Expected<StringRef> importer::readString(const json::Value &value,
                                         StringRef source, const Twine &field) {
  if (std::optional<StringRef> string = value.getAsString())
    return *string;
  return fieldError(source, field, "expected a string, got " + render(value));
}

Expected<const json::Object *> importer::readObject(const json::Value &value,
                                                    StringRef source,
                                                    const Twine &field) {
  if (const json::Object *object = value.getAsObject())
    return object;
  return fieldError(source, field,
                    "expected a JSON object, got " + render(value));
}

Expected<bool> importer::readOptimizerField(StringRef key,
                                            const json::Value &value,
                                            StringRef source,
                                            OptimizerConfig &optimizer) {
  if (key == "optimizer") {
    Expected<StringRef> name = readString(value, source, key);
    if (!name)
      return name.takeError();
    std::optional<OptimizerKind> kind = parseOptimizerKind(*name);
    if (!kind)
      return fieldError(source, key,
                        "unknown optimizer '" + *name +
                            "'; expected 'adam' or 'sgd'");
    optimizer.kind = *kind;
    return true;
  }
  double *target = StringSwitch<double *>(key)
                       .Case("lr", &optimizer.lr)
                       .Case("adam_beta1", &optimizer.beta1)
                       .Case("adam_beta2", &optimizer.beta2)
                       .Case("adam_eps", &optimizer.eps)
                       .Default(nullptr);
  if (!target)
    return false;
  Expected<double> number = readNumber(value, source, key);
  if (!number)
    return number.takeError();
  // The ranges the ddp.sgd and ddp.adam verifiers accept.
  bool isBeta = key.starts_with("adam_beta");
  if (isBeta ? !(*number >= 0.0 && *number < 1.0) : !(*number > 0.0))
    return fieldError(source, key,
                      formatv("expected a number in {0}, got {1}",
                              isBeta ? "[0, 1)" : "(0, inf)",
                              formatShortest(*number)));
  *target = *number;
  return true;
}

void importer::writeOptimizerFields(const OptimizerConfig &optimizer,
                                    json::Object &object) {
  object["optimizer"] = optimizer.kind == OptimizerKind::Adam ? "adam" : "sgd";
  object["lr"] = optimizer.lr;
  object["adam_beta1"] = optimizer.beta1;
  object["adam_beta2"] = optimizer.beta2;
  object["adam_eps"] = optimizer.eps;
}

Expected<bool> importer::readRecomputeField(StringRef key,
                                            const json::Value &value,
                                            StringRef source,
                                            RecomputeConfig &recompute) {
  if (key == "recompute_num_layers") {
    Expected<int64_t> layers = readInteger(value, source, key, 0);
    if (!layers)
      return layers.takeError();
    recompute.numLayers = *layers;
    return true;
  }
  if (key == "recompute_modules") {
    // A list of names, or one string of them separated by commas or
    // spaces (--set recompute_modules=mlp,layernorm).
    std::vector<std::string> names;
    auto add = [&](StringRef text) {
      SmallVector<StringRef> words;
      text.split(words, ',', -1, /*KeepEmpty=*/false);
      for (StringRef word : words) {
        SmallVector<StringRef> parts;
        word.split(parts, ' ', -1, /*KeepEmpty=*/false);
        for (StringRef part : parts)
          names.push_back(part.trim().str());
      }
    };
    if (const json::Array *list = value.getAsArray()) {
      for (const json::Value &entry : *list) {
        std::optional<StringRef> name = entry.getAsString();
        if (!name)
          return fieldError(source, key,
                            "expected a list of module names, e.g. "
                            "[\"core_attn\", \"mlp\"]");
        add(*name);
      }
    } else if (std::optional<StringRef> text = value.getAsString()) {
      add(*text);
    } else {
      return fieldError(source, key,
                        "expected a list of module names, e.g. "
                        "[\"core_attn\", \"mlp\"]");
    }
    recompute.modules = std::move(names);
    return true;
  }
  if (key != "recompute_granularity" && key != "recompute_method")
    return false;
  Expected<StringRef> name = readString(value, source, key);
  if (!name)
    return name.takeError();
  if (key == "recompute_method") {
    std::optional<RecomputeMethod> method = parseRecomputeMethod(*name);
    if (!method)
      return fieldError(source, key,
                        "unknown recompute method '" + *name +
                            "'; expected 'uniform' or 'block'");
    recompute.method = *method;
    return true;
  }
  std::optional<RecomputeGranularity> granularity =
      parseRecomputeGranularity(*name);
  if (!granularity)
    return fieldError(source, key,
                      "unknown recompute granularity '" + *name +
                          "'; expected 'full', 'selective' or 'none'");
  recompute.granularity = *granularity;
  return true;
}

void importer::writeRecomputeFields(const RecomputeConfig &recompute,
                                    json::Object &object) {
  if (recompute.granularity == RecomputeGranularity::None)
    return;
  object["recompute_granularity"] =
      stringifyRecomputeGranularity(recompute.granularity);
  if (recompute.method)
    object["recompute_method"] = stringifyRecomputeMethod(*recompute.method);
  if (recompute.numLayers)
    object["recompute_num_layers"] = *recompute.numLayers;
  if (recompute.modules) {
    json::Array names;
    for (const std::string &name : *recompute.modules)
      names.push_back(name);
    object["recompute_modules"] = std::move(names);
  }
}

Error importer::checkDimension(StringRef source, const Twine &field,
                               StringRef what, double size) {
  if (size <= double(kMaxDimension))
    return Error::success();
  return fieldError(source, field,
                    formatv("{0} is {1:F0}, more than {2}, the largest tensor "
                            "dimension the importer builds",
                            what, size, kMaxDimension));
}

Error importer::checkDataParallelSize(StringRef source, int64_t size) {
  if (size <= bucketing::kMaxGroupSize)
    return Error::success();
  return fieldError(source, "data_parallel_size",
                    formatv("data_parallel_size is {0}, more than {1}, the "
                            "most ranks the scheduling passes reduce "
                            "gradients over (NCCL and MPI number ranks with "
                            "an int)",
                            size, bucketing::kMaxGroupSize));
}

/// What to use instead of `key`, a field the config does not have: the
/// known field it misspells, or where a Megatron argument of that name goes
/// in ddp; empty when nothing is near.
static std::string suggestField(StringRef key,
                                ArrayRef<StringRef> knownFields) {
  // Megatron's command line spells its arguments with dashes.
  std::string underscored = key.str();
  llvm::replace(underscored, '-', '_');
  StringRef name = underscored;
  if (name != key && llvm::is_contained(knownFields, name))
    return "fields are spelled with underscores: '" + underscored + "'";
  // Where a Megatron argument goes, for the model config's fields only (an
  // inventory has none of these).
  if (llvm::is_contained(knownFields, "params_dtype")) {
    for (const importer::ScheduleArg &arg : importer::scheduleArgs)
      if (name == arg.megatronName)
        return "it is an option of the schedule, not of the model: give " +
               arg.optionName.str() +
               " to ddp-opt --ddp-schedule or ddp-plan --options";
    if (name == "bf16" || name == "fp16")
      return "the parameters' type is the field params_dtype (bf16, f16, "
             "f32, f64)";
    if (name == "global_batch_size")
      return "a step is one data-parallel rank's share of the global batch: "
             "set num_microbatches (global_batch_size / (micro_batch_size x "
             "data_parallel_size))";
  }
  if (std::optional<StringRef> nearest = findClosestName(name, knownFields))
    return "did you mean '" + nearest->str() + "'?";
  return "";
}

Error importer::unknownFieldError(StringRef source, StringRef key,
                                  ArrayRef<StringRef> knownFields) {
  std::string suggestion = suggestField(key, knownFields);
  if (!suggestion.empty())
    return fieldError(source, key, "unknown field; " + suggestion);
  std::string known;
  raw_string_ostream os(known);
  interleaveComma(knownFields, os);
  return fieldError(source, key, "unknown field; known fields are " + known);
}

Expected<bool> importer::readMoEDispatchField(StringRef key,
                                              const json::Value &value,
                                              StringRef source,
                                              MoEDispatchConfig &moe) {
  if (key == "moe_expert_capacity_factor") {
    Expected<double> factor = readNumber(value, source, key);
    if (!factor)
      return factor.takeError();
    // TransformerConfig.__post_init__ takes a negative factor as None,
    // dropless (transformer_config.py L1836-1838).
    if (*factor < 0.0) {
      moe.capacityFactor.reset();
      return true;
    }
    if (!(*factor > 0.0 && *factor <= 1e6))
      return fieldError(source, key,
                        formatv("expected a positive number up to 1e6, or a "
                                "negative one (or no field) for dropless "
                                "routing, got {0}",
                                formatShortest(*factor)));
    moe.capacityFactor = *factor;
    return true;
  }
  if (key == "moe_pad_expert_input_to_capacity") {
    Expected<bool> pad = readBool(value, source, key);
    if (!pad)
      return pad.takeError();
    moe.padToCapacity = *pad;
    return true;
  }
  if (key != "moe_token_dispatcher_type")
    return false;
  Expected<StringRef> name = readString(value, source, key);
  if (!name)
    return name.takeError();
  std::optional<MoEDispatcher> dispatcher = parseMoEDispatcher(*name);
  if (!dispatcher)
    return fieldError(source, key,
                      "unknown token dispatcher '" + *name +
                          "'; expected 'allgather' or 'alltoall' (Megatron's "
                          "'flex' is not modelled)");
  moe.dispatcher = *dispatcher;
  return true;
}

void importer::writeMoEDispatchFields(const MoEDispatchConfig &moe,
                                      json::Object &object) {
  if (moe.dispatcher != MoEDispatcher::AllGather)
    object["moe_token_dispatcher_type"] = stringifyMoEDispatcher(moe.dispatcher);
  if (moe.capacityFactor)
    object["moe_expert_capacity_factor"] = *moe.capacityFactor;
  if (moe.padToCapacity)
    object["moe_pad_expert_input_to_capacity"] = true;
}
