//===- ModelConfig.cpp - Reading and writing model configs ----------------===//

#include "ddp/Import/ModelConfig.h"

#include "JSONFields.h"
#include "ddp/Support/BoundedJSON.h"
#include "ddp/Support/FormatNumber.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;
using namespace ddp;
using namespace ddp::importer;

//===----------------------------------------------------------------------===//
// Derived sizes
//===----------------------------------------------------------------------===//

int64_t ModelConfig::getFfnHiddenSize() const {
  // validateModelConfig bounds hiddenSize first, so 8 x hiddenSize fits.
  if (ffnHiddenSize > 0)
    return ffnHiddenSize;
  // Megatron's arguments.py: SwiGLU keeps the parameter count of a 4h GELU
  // MLP by using 2/3 of the width, rounded down to a multiple of 64.
  if (swiglu)
    return (4 * hiddenSize * 2 / 3) / 64 * 64;
  return 4 * hiddenSize;
}

int64_t ModelConfig::getNumQueryGroups() const {
  return numQueryGroups > 0 ? numQueryGroups : numAttentionHeads;
}

int64_t ModelConfig::getKvChannels() const {
  return kvChannels > 0 ? kvChannels : hiddenSize / numAttentionHeads;
}

int64_t ModelConfig::getMaxPositionEmbeddings() const {
  return maxPositionEmbeddings > 0 ? maxPositionEmbeddings : seqLength;
}

int64_t ModelConfig::getPaddedVocabSize() const {
  int64_t multiple = makeVocabSizeDivisibleBy * tensorModelParallelSize;
  return (vocabSize + multiple - 1) / multiple * multiple;
}

int64_t ModelConfig::getVirtualPipelineSize() const {
  if (virtualPipelineModelParallelSize > 0)
    return virtualPipelineModelParallelSize;
  if (std::optional<int64_t> derived = getDerivedVirtualPipelineSize())
    return std::max<int64_t>(1, *derived);
  return 1;
}

int64_t ModelConfig::getLayersForPipelineSplit() const {
  return countSplitLayers(numLayers, accountForEmbeddingInPipelineSplit,
                          accountForLossInPipelineSplit);
}

std::optional<int64_t> ModelConfig::getDerivedVirtualPipelineSize() const {
  // Megatron's arguments.py L953-975 at d98e8a6: the layers per stage, the
  // embedding and the loss counted as layers where the split accounts for
  // them, over the layers per virtual stage; validateModelConfig checks
  // that both divide.
  if (numLayersPerVirtualPipelineStage <= 0 || pipelineModelParallelSize <= 0)
    return std::nullopt;
  return getLayersForPipelineSplit() / pipelineModelParallelSize /
         numLayersPerVirtualPipelineStage;
}

ParallelSizes ModelConfig::getParallelSizes() const {
  ParallelSizes sizes;
  sizes.tensor = tensorModelParallelSize;
  sizes.data = dataParallelSize;
  sizes.pipeline = pipelineModelParallelSize;
  if (isMoE()) {
    sizes.expert = expertModelParallelSize;
    sizes.expertTensor = getExpertTensorParallelSize();
  }
  return sizes;
}

PipelineShape ModelConfig::getPipelineShape() const {
  return {pipelineModelParallelSize, getVirtualPipelineSize(), numMicrobatches,
          microbatchGroupSizePerVpStage};
}

LayerSplitConfig ModelConfig::getLayerSplitConfig() const {
  LayerSplitConfig split;
  split.numLayers = numLayers;
  split.stages = pipelineModelParallelSize;
  split.virtualStages = getVirtualPipelineSize();
  if (decoderFirstPipelineNumLayers > 0)
    split.firstStageLayers = decoderFirstPipelineNumLayers;
  if (decoderLastPipelineNumLayers > 0)
    split.lastStageLayers = decoderLastPipelineNumLayers;
  split.accountForEmbedding = accountForEmbeddingInPipelineSplit;
  split.accountForLoss = accountForLossInPipelineSplit;
  return split;
}

//===----------------------------------------------------------------------===//
// The fields
//===----------------------------------------------------------------------===//

namespace {
/// An integer field. Fields with `minValue` 1 and `required` false are
/// derived from others when absent (stored as 0).
struct IntegerField {
  StringLiteral name;
  int64_t ModelConfig::*member;
  int64_t minValue;
  bool required;
};
struct BoolField {
  StringLiteral name;
  bool ModelConfig::*member;
};
} // namespace

static const IntegerField integerFields[] = {
    {"num_layers", &ModelConfig::numLayers, 1, true},
    {"hidden_size", &ModelConfig::hiddenSize, 1, true},
    {"ffn_hidden_size", &ModelConfig::ffnHiddenSize, 1, false},
    {"num_attention_heads", &ModelConfig::numAttentionHeads, 1, true},
    {"num_query_groups", &ModelConfig::numQueryGroups, 1, false},
    {"kv_channels", &ModelConfig::kvChannels, 1, false},
    {"seq_length", &ModelConfig::seqLength, 1, true},
    {"max_position_embeddings", &ModelConfig::maxPositionEmbeddings, 1, false},
    {"micro_batch_size", &ModelConfig::microBatchSize, 1, false},
    {"num_microbatches", &ModelConfig::numMicrobatches, 1, false},
    {"vocab_size", &ModelConfig::vocabSize, 1, true},
    {"make_vocab_size_divisible_by", &ModelConfig::makeVocabSizeDivisibleBy, 1,
     false},
    {"tensor_model_parallel_size", &ModelConfig::tensorModelParallelSize, 1,
     false},
    {"data_parallel_size", &ModelConfig::dataParallelSize, 1, false},
    {"pipeline_model_parallel_size", &ModelConfig::pipelineModelParallelSize,
     1, false},
    {"virtual_pipeline_model_parallel_size",
     &ModelConfig::virtualPipelineModelParallelSize, 1, false},
    {"num_layers_per_virtual_pipeline_stage",
     &ModelConfig::numLayersPerVirtualPipelineStage, 1, false},
    {"microbatch_group_size_per_vp_stage",
     &ModelConfig::microbatchGroupSizePerVpStage, 1, false},
    {"decoder_first_pipeline_num_layers",
     &ModelConfig::decoderFirstPipelineNumLayers, 1, false},
    {"decoder_last_pipeline_num_layers",
     &ModelConfig::decoderLastPipelineNumLayers, 1, false},
    {"num_experts", &ModelConfig::numExperts, 0, false},
    {"moe_router_topk", &ModelConfig::moeRouterTopk, 1, false},
    {"expert_model_parallel_size", &ModelConfig::expertModelParallelSize, 1,
     false},
    {"expert_tensor_parallel_size", &ModelConfig::expertTensorParallelSize, 1,
     false},
    {"moe_ffn_hidden_size", &ModelConfig::moeFfnHiddenSize, 1, false},
    {"moe_shared_expert_intermediate_size",
     &ModelConfig::moeSharedExpertIntermediateSize, 1, false},
    {"wgrad_deferral_limit", &ModelConfig::wgradDeferralLimit, 0, false},
};

static const BoolField boolFields[] = {
    {"untie_embeddings_and_output_weights",
     &ModelConfig::untieEmbeddingsAndOutputWeights},
    {"swiglu", &ModelConfig::swiglu},
    {"squared_relu", &ModelConfig::squaredRelu},
    {"add_bias_linear", &ModelConfig::addBiasLinear},
    {"sequence_parallel", &ModelConfig::sequenceParallel},
    {"account_for_embedding_in_pipeline_split",
     &ModelConfig::accountForEmbeddingInPipelineSplit},
    {"account_for_loss_in_pipeline_split",
     &ModelConfig::accountForLossInPipelineSplit},
    {"overlap_p2p_comm", &ModelConfig::overlapP2PComm},
    {"deallocate_pipeline_outputs", &ModelConfig::deallocatePipelineOutputs},
    {"defer_embedding_wgrad_compute",
     &ModelConfig::deferEmbeddingWgradCompute},
    {"moe_shared_expert_overlap", &ModelConfig::moeSharedExpertOverlap},
    {"overlap_moe_expert_parallel_comm",
     &ModelConfig::overlapMoeExpertParallelComm},
    {"delay_wgrad_compute", &ModelConfig::delayWgradCompute},
};

static constexpr StringLiteral otherFields[] = {
    "normalization", "position_embedding_type",
    "params_dtype",  "hidden_dropout",
    "optimizer",     "lr",
    "adam_beta1",    "adam_beta2",
    "adam_eps",      "recompute_granularity",
    "recompute_method", "recompute_num_layers", "recompute_modules",
    "moe_token_dispatcher_type", "moe_expert_capacity_factor",
    "moe_pad_expert_input_to_capacity", "pipeline_schedule"};

static SmallVector<StringRef> getKnownFields() {
  SmallVector<StringRef> names;
  for (const IntegerField &field : integerFields)
    names.push_back(field.name);
  for (const BoolField &field : boolFields)
    names.push_back(field.name);
  for (StringRef name : otherFields)
    names.push_back(name);
  return names;
}

static StringRef getNormalizationName(Normalization normalization) {
  return normalization == Normalization::LayerNorm ? "LayerNorm" : "RMSNorm";
}

static StringRef getPositionEmbeddingName(PositionEmbedding embedding) {
  switch (embedding) {
  case PositionEmbedding::LearnedAbsolute:
    return "learned_absolute";
  case PositionEmbedding::Rope:
    return "rope";
  case PositionEmbedding::None:
    return "none";
  }
  llvm_unreachable("unknown position embedding");
}

std::optional<Normalization> ddp::parseNormalization(StringRef name) {
  return StringSwitch<std::optional<Normalization>>(name)
      .Case("LayerNorm", Normalization::LayerNorm)
      .Case("RMSNorm", Normalization::RMSNorm)
      .Default(std::nullopt);
}

std::optional<PositionEmbedding> ddp::parsePositionEmbedding(StringRef name) {
  return StringSwitch<std::optional<PositionEmbedding>>(name)
      .Case("learned_absolute", PositionEmbedding::LearnedAbsolute)
      .Case("rope", PositionEmbedding::Rope)
      .Case("none", PositionEmbedding::None)
      .Default(std::nullopt);
}

/// Reads one of the fields that are not plain integers or flags.
static Error readOtherField(StringRef key, const json::Value &value,
                            StringRef source, ModelConfig &config) {
  Expected<bool> isOptimizerField =
      readOptimizerField(key, value, source, config.optimizer);
  if (!isOptimizerField)
    return isOptimizerField.takeError();
  if (*isOptimizerField)
    return Error::success();
  Expected<bool> isRecomputeField =
      readRecomputeField(key, value, source, config.recompute);
  if (!isRecomputeField)
    return isRecomputeField.takeError();
  if (*isRecomputeField)
    return Error::success();
  Expected<bool> isMoEField =
      readMoEDispatchField(key, value, source, config.moe);
  if (!isMoEField)
    return isMoEField.takeError();
  if (*isMoEField)
    return Error::success();

  if (key == "hidden_dropout") {
    Expected<double> number = readNumber(value, source, key);
    if (!number)
      return number.takeError();
    if (!(*number >= 0.0 && *number < 1.0))
      return fieldError(
          source, key,
          formatv("expected a probability in [0, 1), got {0}",
                  formatShortest(*number)));
    config.hiddenDropout = *number;
    return Error::success();
  }

  Expected<StringRef> name = readString(value, source, key);
  if (!name)
    return name.takeError();
  if (key == "normalization") {
    std::optional<Normalization> normalization = parseNormalization(*name);
    if (!normalization)
      return fieldError(source, key,
                        "unknown normalization '" + *name +
                            "'; expected 'LayerNorm' or 'RMSNorm'");
    config.normalization = *normalization;
    return Error::success();
  }
  if (key == "position_embedding_type") {
    std::optional<PositionEmbedding> embedding = parsePositionEmbedding(*name);
    if (!embedding)
      return fieldError(source, key,
                        "unknown position embedding '" + *name +
                            "'; expected 'learned_absolute', 'rope' or 'none'");
    config.positionEmbeddingType = *embedding;
    return Error::success();
  }
  if (key == "pipeline_schedule") {
    std::optional<PipelineScheduleKind> kind = parsePipelineScheduleKind(*name);
    if (!kind)
      return fieldError(source, key,
                        "unknown pipeline schedule '" + *name +
                            "'; expected '1f1b', 'interleaved', 'gpipe' or "
                            "'zb-h1'");
    config.pipelineSchedule = *kind;
    return Error::success();
  }
  assert(key == "params_dtype" && "every other field is handled above");
  std::optional<ElementType> dtype = parseConfigElementType(*name, /*acceptAliases=*/true);
  if (!dtype)
    return fieldError(source, key,
                      "unknown dtype '" + *name +
                          "'; expected one of f32, f16, bf16, f64");
  config.paramsDtype = *dtype;
  return Error::success();
}

Expected<ModelConfig> ddp::parseModelConfig(const json::Value &json,
                                            StringRef source) {
  Expected<const json::Object *> object = readObject(json, source, "(root)");
  if (!object)
    return object.takeError();

  ModelConfig config;
  // Sorted, so that of several bad fields the same one is reported each time.
  for (const json::Object::value_type *element :
       json::sortedElements(**object)) {
    StringRef name = element->first;
    const json::Value &value = element->second;
    if (const IntegerField *field = find_if(
            integerFields, [&](const auto &f) { return f.name == name; });
        field != std::end(integerFields)) {
      Expected<int64_t> integer =
          readInteger(value, source, name, field->minValue);
      if (!integer)
        return integer.takeError();
      config.*(field->member) = *integer;
      continue;
    }
    if (const BoolField *field =
            find_if(boolFields, [&](const auto &f) { return f.name == name; });
        field != std::end(boolFields)) {
      Expected<bool> flag = readBool(value, source, name);
      if (!flag)
        return flag.takeError();
      config.*(field->member) = *flag;
      continue;
    }
    if (!is_contained(otherFields, name))
      return unknownFieldError(source, name, getKnownFields());
    if (Error error = readOtherField(name, value, source, config))
      return std::move(error);
  }

  for (const IntegerField &field : integerFields)
    if (field.required && !(*object)->get(field.name))
      return fieldError(source, field.name, "missing required field");

  if (Error error = validateModelConfig(config, source))
    return std::move(error);
  return config;
}

json::Object ddp::modelConfigToJSON(const ModelConfig &config) {
  json::Object object;
  for (const IntegerField &field : integerFields) {
    int64_t value = config.*(field.member);
    // A derived field that was never set stays absent, so that overriding
    // what it derives from keeps deriving it.
    if (field.minValue > 0 && value == 0)
      continue;
    object[field.name] = value;
  }
  for (const BoolField &field : boolFields)
    object[field.name] = config.*(field.member);
  object["normalization"] = getNormalizationName(config.normalization);
  object["position_embedding_type"] =
      getPositionEmbeddingName(config.positionEmbeddingType);
  object["params_dtype"] = stringifyElementType(config.paramsDtype);
  object["hidden_dropout"] = config.hiddenDropout;
  if (config.pipelineSchedule)
    object["pipeline_schedule"] =
        stringifyPipelineScheduleKind(*config.pipelineSchedule);
  writeOptimizerFields(config.optimizer, object);
  writeRecomputeFields(config.recompute, object);
  writeMoEDispatchFields(config.moe, object);
  return object;
}

//===----------------------------------------------------------------------===//
// Overrides
//===----------------------------------------------------------------------===//

Error ddp::applyOverrides(json::Object &object,
                          ArrayRef<std::string> overrides) {
  for (StringRef assignment : overrides) {
    auto [key, text] = assignment.split('=');
    key = key.trim();
    if (key.empty() || !assignment.contains('='))
      return createStringError(inconvertibleErrorCode(),
                               "--set '" + assignment +
                                   "': expected key=value");
    Expected<json::Value> value = parseJSON(text);
    if (value) {
      object[key] = std::move(*value);
      continue;
    }
    // Bare words (`--set normalization=RMSNorm`) are strings.
    consumeError(value.takeError());
    object[key] = text.str();
  }
  return Error::success();
}
