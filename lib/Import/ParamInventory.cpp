//===- ParamInventory.cpp - Reading parameter inventories -----------------===//

#include "ddp/Import/ParamInventory.h"

#include "JSONFields.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>

using namespace llvm;
using namespace ddp;
using namespace ddp::importer;

static constexpr StringLiteral inventoryFields[] = {
    "tokens_per_microbatch",
    "num_microbatches",
    "data_parallel_size",
    "expert_model_parallel_size",
    "params",
    "ready_order",
    "optimizer",
    "lr",
    "adam_beta1",
    "adam_beta2",
    "adam_eps"};
static constexpr StringLiteral paramFields[] = {"name", "shape", "dtype",
                                                "shared_embedding", "expert"};

static Expected<InventoryParam> parseParam(const json::Value &json,
                                           StringRef source, size_t index) {
  std::string prefix = formatv("params[{0}]", index).str();
  Expected<const json::Object *> object = readObject(json, source, prefix);
  if (!object)
    return object.takeError();
  for (const json::Object::value_type *element : json::sortedElements(**object))
    if (!is_contained(paramFields, StringRef(element->first)))
      return unknownFieldError(source, prefix + "." + element->first.str(),
                               SmallVector<StringRef>(std::begin(paramFields),
                                                      std::end(paramFields)));

  InventoryParam param;
  for (StringRef required : {"name", "shape", "dtype"})
    if (!(*object)->get(required))
      return fieldError(source, prefix + "." + required,
                        "missing required field");

  Expected<StringRef> name =
      readString(*(*object)->get("name"), source, prefix + ".name");
  if (!name)
    return name.takeError();
  if (name->empty())
    return fieldError(source, prefix + ".name", "must not be empty");
  param.name = name->str();

  const json::Array *shape = (*object)->get("shape")->getAsArray();
  if (!shape)
    return fieldError(source, prefix + ".shape",
                      "expected an array of positive integers");
  double numElements = 1;
  for (auto [dim, extent] : enumerate(*shape)) {
    std::string field = formatv("{0}.shape[{1}]", prefix, dim).str();
    Expected<int64_t> size = readInteger(extent, source, field, 1);
    if (!size)
      return size.takeError();
    // An extent of a 2-D parameter is the width of an activation.
    if (Error error = checkDimension(source, field, "the extent", *size))
      return std::move(error);
    param.shape.push_back(*size);
    numElements *= *size;
  }
  if (numElements >= double(std::numeric_limits<int64_t>::max()))
    return fieldError(
        source, prefix + ".shape",
        formatv("{0:F0} elements do not fit in a 64-bit count", numElements));

  Expected<StringRef> dtype =
      readString(*(*object)->get("dtype"), source, prefix + ".dtype");
  if (!dtype)
    return dtype.takeError();
  std::optional<ElementType> parsed = parseConfigElementType(*dtype, /*acceptAliases=*/false);
  if (!parsed)
    return fieldError(source, prefix + ".dtype",
                      "unknown dtype '" + *dtype +
                          "'; expected one of f32, f16, bf16, f64");
  param.dtype = *parsed;
  // The dialect's tensors take less than 2^63 bytes.
  double bytes = numElements * getElementBytes(param.dtype);
  if (bytes >= 0x1p63)
    return fieldError(source, prefix + ".shape",
                      formatv("{0:F0} elements of {1} take {2:F0} bytes; a "
                              "tensor must take less than 2^63",
                              numElements, *dtype, bytes));

  for (auto [key, flag] : {std::pair<StringRef, bool *>{"shared_embedding",
                                                        &param.sharedEmbedding},
                           {"expert", &param.expert}}) {
    const json::Value *value = (*object)->get(key);
    if (!value)
      continue;
    Expected<bool> parsedFlag = readBool(*value, source, prefix + "." + key);
    if (!parsedFlag)
      return parsedFlag.takeError();
    *flag = *parsedFlag;
  }
  return param;
}

/// `ready_order` must name every parameter exactly once.
static Expected<std::vector<size_t>>
parseReadyOrder(const json::Value &json, StringRef source,
                const std::vector<InventoryParam> &params) {
  const json::Array *names = json.getAsArray();
  if (!names)
    return fieldError(source, "ready_order",
                      "expected an array of parameter names");
  StringMap<size_t> indexOf;
  for (auto [index, param] : enumerate(params))
    indexOf[param.name] = index;
  std::vector<size_t> order;
  std::vector<bool> seen(params.size(), false);
  for (auto [position, entry] : enumerate(*names)) {
    std::string field = formatv("ready_order[{0}]", position).str();
    Expected<StringRef> name = readString(entry, source, field);
    if (!name)
      return name.takeError();
    auto it = indexOf.find(*name);
    if (it == indexOf.end())
      return fieldError(source, field,
                        "names '" + *name + "', which is not in params");
    if (seen[it->second])
      return fieldError(source, field, "names '" + *name + "' twice");
    seen[it->second] = true;
    order.push_back(it->second);
  }
  for (auto [index, param] : enumerate(params))
    if (!seen[index])
      return fieldError(source, "ready_order",
                        "is missing parameter '" + param.name + "'");
  return order;
}

Expected<ParamInventory> ddp::parseParamInventory(const json::Value &json,
                                                  StringRef source) {
  Expected<const json::Object *> object = readObject(json, source, "(root)");
  if (!object)
    return object.takeError();
  ParamInventory inventory;
  for (const json::Object::value_type *element :
       json::sortedElements(**object)) {
    StringRef key = element->first;
    const json::Value &value = element->second;
    if (!is_contained(inventoryFields, key))
      return unknownFieldError(
          source, key,
          SmallVector<StringRef>(std::begin(inventoryFields),
                                 std::end(inventoryFields)));
    Expected<bool> isOptimizerField =
        readOptimizerField(key, value, source, inventory.optimizer);
    if (!isOptimizerField)
      return isOptimizerField.takeError();
    if (*isOptimizerField)
      continue;
    int64_t *target =
        StringSwitch<int64_t *>(key)
            .Case("tokens_per_microbatch", &inventory.tokensPerMicrobatch)
            .Case("num_microbatches", &inventory.numMicrobatches)
            .Case("data_parallel_size", &inventory.dataParallelSize)
            .Case("expert_model_parallel_size",
                  &inventory.expertModelParallelSize)
            .Default(nullptr);
    if (!target)
      continue; // params and ready_order are read below, in that order.
    Expected<int64_t> integer = readInteger(value, source, key, 1);
    if (!integer)
      return integer.takeError();
    *target = *integer;
  }

  for (StringRef required : {"tokens_per_microbatch", "params"})
    if (!(*object)->get(required))
      return fieldError(source, required, "missing required field");
  if (Error error = checkDimension(source, "tokens_per_microbatch",
                                   "tokens_per_microbatch",
                                   inventory.tokensPerMicrobatch))
    return std::move(error);
  if (Error error = checkDataParallelSize(source, inventory.dataParallelSize))
    return std::move(error);

  const json::Array *params = (*object)->get("params")->getAsArray();
  if (!params || params->empty())
    return fieldError(source, "params",
                      "expected a non-empty array of parameters");
  StringMap<size_t> firstIndex;
  int64_t widestExtent = 0;
  for (auto [index, entry] : enumerate(*params)) {
    Expected<InventoryParam> param = parseParam(entry, source, index);
    if (!param)
      return param.takeError();
    for (int64_t extent : param->shape)
      widestExtent = std::max(widestExtent, extent);
    auto [it, inserted] = firstIndex.try_emplace(param->name, index);
    if (!inserted)
      return fieldError(source, formatv("params[{0}].name", index).str(),
                        formatv("'{0}' is already the name of params[{1}]",
                                param->name, it->second));
    inventory.params.push_back(std::move(*param));
  }

  // Activations are [tokens_per_microbatch, extent] in some parameter's
  // element type (of at most 8 bytes); they too must take less than 2^63.
  double activationBytes =
      double(inventory.tokensPerMicrobatch) * double(widestExtent) * 8.0;
  if (activationBytes >= 0x1p63)
    return fieldError(source, "tokens_per_microbatch",
                      formatv("activations of tokens_per_microbatch x the "
                              "widest extent ({0} x {1}) elements of up to 8 "
                              "bytes may take {2:F0} bytes; a tensor must "
                              "take less than 2^63",
                              inventory.tokensPerMicrobatch, widestExtent,
                              activationBytes));

  double paramPasses =
      double(inventory.params.size()) * inventory.numMicrobatches;
  if (paramPasses > double(kMaxParamPasses))
    return fieldError(source, "num_microbatches",
                      formatv("the number of params x num_microbatches is "
                              "{0:F0}, more than {1}, the most the importer "
                              "builds",
                              paramPasses, kMaxParamPasses));

  if (const json::Value *readyOrder = (*object)->get("ready_order")) {
    Expected<std::vector<size_t>> order =
        parseReadyOrder(*readyOrder, source, inventory.params);
    if (!order)
      return order.takeError();
    inventory.readyOrder = std::move(*order);
  } else {
    for (size_t index = inventory.params.size(); index-- > 0;)
      inventory.readyOrder.push_back(index);
  }

  int64_t ep = inventory.expertModelParallelSize;
  if (inventory.dataParallelSize % ep != 0)
    return fieldError(source, "expert_model_parallel_size",
                      formatv("data_parallel_size ({0}) is not divisible by "
                              "expert_model_parallel_size ({1})",
                              inventory.dataParallelSize, ep));
  return inventory;
}
