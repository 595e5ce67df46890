//===- RuntimeFunctions.cpp - The runtime's entry points in LLVM IR -------===//

#include "ddp/Conversion/DDPToLLVM/RuntimeFunctions.h"

#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstddef>

using namespace mlir;
using namespace ddp;

// getRuntimeTensorType spells the layout of ddprt_tensor as LLVM sees it.
static_assert(offsetof(ddprt_tensor, data) == 0 &&
                  offsetof(ddprt_tensor, numel) == 8 &&
                  offsetof(ddprt_tensor, dtype) == 16 &&
                  offsetof(ddprt_tensor, reserved) == 20 &&
                  sizeof(ddprt_tensor) == 24,
              "ddprt_tensor is no longer {ptr, i64, i32, i32}");

StringRef ddp::getRuntimeFunctionName(RuntimeFunction function) {
  switch (function) {
#define DDPRT_ENTRY_POINT(Enumerator, Result, Function, Parameters)            \
  case RuntimeFunction::Enumerator:                                            \
    return #Function;
#include "ddp/Runtime/RuntimeFunctions.def"
  }
  llvm_unreachable("unknown runtime function");
}

LLVM::LLVMFunctionType ddp::getRuntimeFunctionType(RuntimeFunction function,
                                                   MLIRContext *context) {
  switch (function) {
#define DDPRT_ENTRY_POINT(Enumerator, Result, Function, Parameters)            \
  case RuntimeFunction::Enumerator:                                            \
    return getLLVMFunctionType<decltype(Function)>(context);
#include "ddp/Runtime/RuntimeFunctions.def"
  }
  llvm_unreachable("unknown runtime function");
}

LLVM::LLVMStructType ddp::getRuntimeTensorType(MLIRContext *context) {
  Type i32 = IntegerType::get(context, 32);
  return LLVM::LLVMStructType::getLiteral(
      context, {LLVM::LLVMPointerType::get(context),
                IntegerType::get(context, 64), i32, i32});
}

LLVM::LLVMFuncOp RuntimeFunctionBuilder::getOrDefine(OpBuilder &builder,
                                                      RuntimeFunction function) {
  auto [it, inserted] = declarations.try_emplace(function);
  if (!inserted)
    return it->second;
  LLVM::LLVMFunctionType type =
      getRuntimeFunctionType(function, module.getContext());
  FailureOr<LLVM::LLVMFuncOp> declaration = LLVM::lookupOrCreateFn(
      builder, module, getRuntimeFunctionName(function), type.getParams(),
      type.getReturnType(), type.isVarArg());
  // lookupOrCreateFn fails only on a function of that name with another
  // type; StoragePlan::build rejects a module that declares one.
  if (failed(declaration))
    llvm::report_fatal_error("runtime function declared with the wrong type");
  it->second = *declaration;
  return *declaration;
}

Value RuntimeFunctionBuilder::call(OpBuilder &builder, Location loc,
                                   RuntimeFunction function,
                                   ValueRange arguments) {
  LLVM::LLVMFuncOp callee = getOrDefine(builder, function);
  auto call = LLVM::CallOp::create(builder, loc, callee, arguments);
  return call.getNumResults() ? call.getResult() : Value();
}
