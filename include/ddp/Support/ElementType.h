//===- ElementType.h - The element types of parameters and gradients -*- C++ -*-===//
//
// One enum for the floating-point element types that the importer, the cost
// model and the bucketing policies distinguish, with their names as written
// in IR, JSON and options, and their sizes. Plain LLVM Support, so that the
// bucketing library stays free of MLIR; the mapping to MLIR types is in the
// dialect (ddp/Dialect/DDP/IR/DDPOps.h).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_SUPPORT_ELEMENTTYPE_H
#define DDP_SUPPORT_ELEMENTTYPE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace ddp {

/// The values index per-type tables (a profile's peak FLOP/s).
enum class ElementType { F16 = 0, BF16 = 1, F32 = 2, F64 = 3 };
constexpr unsigned kNumElementTypes = 4;

/// `f16`, `bf16`, `f32` or `f64`.
llvm::StringRef stringifyElementType(ElementType type);
/// The inverse of stringifyElementType; nullopt for any other spelling.
std::optional<ElementType> parseElementType(llvm::StringRef name);
/// Bytes of one element.
int64_t getElementBytes(ElementType type);

/// The DDPRT_DTYPE_* of an element type (include/ddp/Runtime/ddprt.h, a C
/// header with no dependencies: the runtime's ABI is below every layer).
int32_t getRuntimeDType(ElementType type);
/// The element type of a DDPRT_DTYPE_* (the runtime reports only those).
ElementType getElementTypeOfRuntimeDType(int32_t dtype);

} // namespace ddp

#endif // DDP_SUPPORT_ELEMENTTYPE_H
