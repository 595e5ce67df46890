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

#endif // DDP_DIALECT_DDP_IR_DDPDIALECT_H
