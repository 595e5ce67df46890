//===- StepOptions.cpp - Element types and optimizer settings -------------===//

#include "ddp/Import/StepOptions.h"

#include "llvm/ADT/StringSwitch.h"

using namespace ddp;

std::optional<ElementType> ddp::parseConfigElementType(llvm::StringRef name,
                                                       bool acceptAliases) {
  std::optional<ElementType> exact = parseElementType(name);
  if (exact || !acceptAliases)
    return exact;
  return llvm::StringSwitch<std::optional<ElementType>>(name)
      .Cases({"fp32", "float32", "float"}, ElementType::F32)
      .Cases({"fp16", "float16", "half"}, ElementType::F16)
      .Case("bfloat16", ElementType::BF16)
      .Cases({"fp64", "float64", "double"}, ElementType::F64)
      .Default(std::nullopt);
}

std::optional<OptimizerKind> ddp::parseOptimizerKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<OptimizerKind>>(name)
      .Case("adam", OptimizerKind::Adam)
      .Case("sgd", OptimizerKind::SGD)
      .Default(std::nullopt);
}
