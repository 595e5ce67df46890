//===- DDPDialect.h - The ddp dialect, its types and attributes -*- C++ -*-===//

#ifndef DDP_DIALECT_DDP_IR_DDPDIALECT_H
#define DDP_DIALECT_DDP_IR_DDPDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h.inc"
#include "ddp/Dialect/DDP/IR/DDPEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "ddp/Dialect/DDP/IR/DDPTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ddp/Dialect/DDP/IR/DDPAttrs.h.inc"

namespace ddp {
/// The module attribute that records the schedule a step was configured
/// with: a dictionary from ddp-schedule option names (`overlap-grad-reduce`,
/// `bucket-size`, ...) to their values. The importer writes it, the
/// schedule pipeline reads it.
constexpr llvm::StringLiteral kScheduleOptionsAttrName = "ddp.schedule_options";
} // namespace ddp

#endif // DDP_DIALECT_DDP_IR_DDPDIALECT_H
