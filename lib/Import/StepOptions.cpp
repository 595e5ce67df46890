//===- StepOptions.cpp - Element types and optimizer settings -------------===//

#include "ddp/Import/StepOptions.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace ddp;

std::optional<DType> ddp::parseDType(llvm::StringRef name, bool acceptAliases) {
  auto exact = llvm::StringSwitch<std::optional<DType>>(name)
                   .Case("f32", DType::F32)
                   .Case("f16", DType::F16)
                   .Case("bf16", DType::BF16)
                   .Case("f64", DType::F64)
                   .Default(std::nullopt);
  if (exact || !acceptAliases)
    return exact;
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Cases({"fp32", "float32", "float"}, DType::F32)
      .Cases({"fp16", "float16", "half"}, DType::F16)
      .Case("bfloat16", DType::BF16)
      .Cases({"fp64", "float64", "double"}, DType::F64)
      .Default(std::nullopt);
}

llvm::StringRef ddp::getDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  }
  llvm_unreachable("unknown dtype");
}

int64_t ddp::getDTypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F64:
    return 8;
  }
  llvm_unreachable("unknown dtype");
}

Type ddp::getDTypeElementType(MLIRContext *context, DType dtype) {
  Builder builder(context);
  switch (dtype) {
  case DType::F32:
    return builder.getF32Type();
  case DType::F16:
    return builder.getF16Type();
  case DType::BF16:
    return builder.getBF16Type();
  case DType::F64:
    return builder.getF64Type();
  }
  llvm_unreachable("unknown dtype");
}
