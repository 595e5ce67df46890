//===- DDPToLLVM.h - ddp to calls of libddprt, as patterns ------*- C++ -*-===//
//
// The dialect conversion behind ddp-lower-to-runtime, for passes that lower
// a ddp module together with other dialects (docs/Lowering.md,
// "Composing with other lowerings"):
//
//   auto program = ProgramLowering::plan(module, options);  // reads only
//   LLVMTypeConverter converter(context);
//   populateDDPToLLVMTypeConversions(converter);
//   RewritePatternSet patterns(context);
//   populateDDPToLLVMConversionPatterns(converter, patterns, **program);
//   populateFuncToLLVMConversionPatterns(converter, patterns);  // and others
//   LLVMConversionTarget target(*context);
//   configureDDPToLLVMConversionTarget(target);
//   applyFullConversion(module, target, std::move(patterns));
//   (*program)->finalize(module);
//
//===----------------------------------------------------------------------===//

#ifndef DDP_CONVERSION_DDPTOLLVM_DDPTOLLVM_H
#define DDP_CONVERSION_DDPTOLLVM_DDPTOLLVM_H

#include "ddp/Runtime/ddprt.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>

namespace mlir {
class ConversionTarget;
class LLVMTypeConverter;
class RewritePatternSet;
} // namespace mlir

namespace ddp {

struct ProgramLoweringOptions {
  /// Prepended to every parameter name registered with the runtime.
  std::string paramPrefix;
  /// Passed to ddprt_init.
  int32_t abiVersion = DDPRT_ABI_VERSION;
};

/// What the patterns share while they lower one module: its storage plan
/// (decided before the conversion, from the unchanged IR), the globals and
/// strings of the program and the step function being built.
class ProgramLowering {
public:
  struct Impl;

  /// Checks that `module` holds one lowerable step and plans its storage;
  /// emits an error at the offending op and fails otherwise. Reads the IR
  /// only.
  static mlir::FailureOr<std::unique_ptr<ProgramLowering>>
  plan(mlir::ModuleOp module, ProgramLoweringOptions options);
  ~ProgramLowering();

  /// After a successful conversion: moves the globals before the functions
  /// so that the module reads top-down.
  void finalize(mlir::ModuleOp module);

  Impl &getImpl() { return *impl; }

private:
  explicit ProgramLowering(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// `!ddp.token` becomes `!llvm.ptr`, the stack slot of its `ddprt_handle`;
/// a statically shaped tensor becomes `!llvm.ptr`, its planned storage.
void populateDDPToLLVMTypeConversions(mlir::LLVMTypeConverter &converter);

/// One pattern per ddp op (or op family): the mesh becomes the program's
/// init, setup and teardown, the step `func.func` becomes ddp_program_step
/// and each op of the step the runtime calls that run it.
void populateDDPToLLVMConversionPatterns(
    const mlir::LLVMTypeConverter &converter, mlir::RewritePatternSet &patterns,
    ProgramLowering &program);

/// Marks the ddp dialect illegal: an op without a pattern fails the
/// conversion at its location.
void configureDDPToLLVMConversionTarget(mlir::ConversionTarget &target);

} // namespace ddp

#endif // DDP_CONVERSION_DDPTOLLVM_DDPTOLLVM_H
