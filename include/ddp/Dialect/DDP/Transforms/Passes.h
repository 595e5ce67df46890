//===- Passes.h - Passes of the ddp dialect ---------------------*- C++ -*-===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_PASSES_H
#define DDP_DIALECT_DDP_TRANSFORMS_PASSES_H

#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace ddp {

#define GEN_PASS_DECL
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"

} // namespace ddp

#endif // DDP_DIALECT_DDP_TRANSFORMS_PASSES_H
