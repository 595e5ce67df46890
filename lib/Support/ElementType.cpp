//===- ElementType.cpp - The element types of parameters and gradients ----===//

#include "ddp/Support/ElementType.h"

#include "ddp/Runtime/ddprt.h"

#include "llvm/Support/ErrorHandling.h"

using namespace ddp;

llvm::StringRef ddp::stringifyElementType(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::F32:
    return "f32";
  case ElementType::F64:
    return "f64";
  }
  llvm_unreachable("unknown element type");
}

std::optional<ElementType> ddp::parseElementType(llvm::StringRef name) {
  for (unsigned i = 0; i < kNumElementTypes; ++i)
    if (stringifyElementType(static_cast<ElementType>(i)) == name)
      return static_cast<ElementType>(i);
  return std::nullopt;
}

int64_t ddp::getElementBytes(ElementType type) {
  switch (type) {
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  case ElementType::F32:
    return 4;
  case ElementType::F64:
    return 8;
  }
  llvm_unreachable("unknown element type");
}

int32_t ddp::getRuntimeDType(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return DDPRT_DTYPE_F16;
  case ElementType::BF16:
    return DDPRT_DTYPE_BF16;
  case ElementType::F32:
    return DDPRT_DTYPE_F32;
  case ElementType::F64:
    return DDPRT_DTYPE_F64;
  }
  llvm_unreachable("unknown element type");
}

ElementType ddp::getElementTypeOfRuntimeDType(int32_t dtype) {
  switch (dtype) {
  case DDPRT_DTYPE_F16:
    return ElementType::F16;
  case DDPRT_DTYPE_BF16:
    return ElementType::BF16;
  case DDPRT_DTYPE_F32:
    return ElementType::F32;
  case DDPRT_DTYPE_F64:
    return ElementType::F64;
  }
  llvm_unreachable("not a DDPRT_DTYPE_*");
}
