//===- Passes.h - Conversions out of the ddp dialect ------------*- C++ -*-===//

#ifndef DDP_CONVERSION_PASSES_H
#define DDP_CONVERSION_PASSES_H

// The default of LowerDDPToRuntime's abi-version option.
#include "ddp/Runtime/ddprt.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace ddp {

#define GEN_PASS_DECL
#include "ddp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ddp/Conversion/Passes.h.inc"

} // namespace ddp

#endif // DDP_CONVERSION_PASSES_H
