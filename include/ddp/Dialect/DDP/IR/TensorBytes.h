//===- TensorBytes.h - The size of a tensor in bytes ------------*- C++ -*-===//
//
// One rule for the tensor sizes that the simulator, the schedule model, the
// step statistics and the lowering count. Apart from DDPOps.h so that a
// change to it rebuilds only its users.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_IR_TENSORBYTES_H
#define DDP_DIALECT_DDP_IR_TENSORBYTES_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"

namespace ddp {

/// Bytes of `numElements` elements of `type` (an element or shaped type),
/// counted as f32 for an element type the dialect does not carry, so that
/// the simulator prices unverified IR too. Verified ddp tensors fit in int64
/// (getTensorSizeInBytes).
inline int64_t getTensorBytes(int64_t numElements, mlir::Type type) {
  return numElements *
         getElementBytes(getElementTypeOf(type).value_or(ElementType::F32));
}

/// Bytes of a statically shaped tensor type, as above.
inline int64_t getTensorBytes(mlir::Type type) {
  return getTensorBytes(getNumElements(type), type);
}

/// Bytes of a statically shaped tensor value, as above.
inline int64_t getTensorBytes(mlir::Value tensor) {
  return getTensorBytes(tensor.getType());
}

} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_TENSORBYTES_H
