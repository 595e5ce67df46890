//===- RuntimeFunctions.h - Runtime entry points in LLVM IR -----*- C++ -*-===//
//
// Names and LLVM types of the entry points of libddprt, both taken from the
// ABI's one list (RuntimeFunctions.def): the name is the function's, the
// type derived from its C prototype, so that a change of the ABI changes the
// lowering with it.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_CONVERSION_DDPTOLLVM_RUNTIMEFUNCTIONS_H
#define DDP_CONVERSION_DDPTOLLVM_RUNTIMEFUNCTIONS_H

#include "ddp/Runtime/ddprt.h"
#include "ddp/Support/ElementType.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace ddp {

enum class RuntimeFunction {
#define DDPRT_ENTRY_POINT(Enumerator, Result, Function, Parameters) Enumerator,
#include "ddp/Runtime/RuntimeFunctions.def"
};

/// The symbol name of an entry point: its C function's name.
llvm::StringRef getRuntimeFunctionName(RuntimeFunction function);

/// The LLVM type of an entry point, derived from its C prototype.
mlir::LLVM::LLVMFunctionType getRuntimeFunctionType(RuntimeFunction function,
                                                    mlir::MLIRContext *context);

namespace detail {
/// The LLVM type of a C type that crosses the ABI: fixed-width integers,
/// double, pointers and void.
template <typename T> struct LLVMTypeOf;
template <> struct LLVMTypeOf<void> {
  static mlir::Type get(mlir::MLIRContext *context) {
    return mlir::LLVM::LLVMVoidType::get(context);
  }
};
template <> struct LLVMTypeOf<int32_t> {
  static mlir::Type get(mlir::MLIRContext *context) {
    return mlir::IntegerType::get(context, 32);
  }
};
template <> struct LLVMTypeOf<int64_t> {
  static mlir::Type get(mlir::MLIRContext *context) {
    return mlir::IntegerType::get(context, 64);
  }
};
template <> struct LLVMTypeOf<uint64_t> {
  static mlir::Type get(mlir::MLIRContext *context) {
    return mlir::IntegerType::get(context, 64);
  }
};
template <> struct LLVMTypeOf<double> {
  static mlir::Type get(mlir::MLIRContext *context) {
    return mlir::Float64Type::get(context);
  }
};
template <typename T> struct LLVMTypeOf<T *> {
  static mlir::Type get(mlir::MLIRContext *context) {
    return mlir::LLVM::LLVMPointerType::get(context);
  }
};

template <typename Function> struct LLVMFunctionTypeOf;
template <typename Result, typename... Args>
struct LLVMFunctionTypeOf<Result(Args...)> {
  static mlir::LLVM::LLVMFunctionType get(mlir::MLIRContext *context) {
    return mlir::LLVM::LLVMFunctionType::get(
        LLVMTypeOf<Result>::get(context), {LLVMTypeOf<Args>::get(context)...});
  }
};
} // namespace detail

/// The LLVM type of a C function type: `getLLVMFunctionType<decltype(f)>`.
template <typename Function>
mlir::LLVM::LLVMFunctionType getLLVMFunctionType(mlir::MLIRContext *context) {
  return detail::LLVMFunctionTypeOf<Function>::get(context);
}

/// The LLVM type of `ddprt_tensor`, the element of ddprt_compute's operand
/// arrays: `!llvm.struct<(ptr, i64, i32, i32)>`.
mlir::LLVM::LLVMStructType getRuntimeTensorType(mlir::MLIRContext *context);

/// Declares each runtime function of a module once ("get or define") and
/// calls it.
class RuntimeFunctionBuilder {
public:
  explicit RuntimeFunctionBuilder(mlir::ModuleOp module) : module(module) {}

  /// The declaration of `function` in the module, created with `builder`
  /// (at the module's start) on first use.
  mlir::LLVM::LLVMFuncOp getOrDefine(mlir::OpBuilder &builder,
                                     RuntimeFunction function);

  /// Calls `function` at the builder's insertion point; returns its result
  /// (the status, for every entry point but ddprt_last_error).
  mlir::Value call(mlir::OpBuilder &builder, mlir::Location loc,
                   RuntimeFunction function, mlir::ValueRange arguments);

private:
  mlir::ModuleOp module;
  llvm::DenseMap<RuntimeFunction, mlir::LLVM::LLVMFuncOp> declarations;
};

} // namespace ddp

#endif // DDP_CONVERSION_DDPTOLLVM_RUNTIMEFUNCTIONS_H
