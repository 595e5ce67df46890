//===- DDPDialect.cpp - The ddp dialect -----------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ddp;

#include "ddp/Dialect/DDP/IR/DDPDialect.cpp.inc"
#include "ddp/Dialect/DDP/IR/DDPEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "ddp/Dialect/DDP/IR/DDPTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ddp/Dialect/DDP/IR/DDPAttrs.cpp.inc"

void DDPDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ddp/Dialect/DDP/IR/DDPOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "ddp/Dialect/DDP/IR/DDPTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ddp/Dialect/DDP/IR/DDPAttrs.cpp.inc"
      >();
}
