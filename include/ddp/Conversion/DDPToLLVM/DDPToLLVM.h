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
class DialectRegistry;
class LLVMTypeConverter;
class RewritePatternSet;
} // namespace mlir

namespace ddp {

struct ProgramLoweringOptions {
  /// Prepended to every parameter name registered with the runtime.
  std::string paramPrefix;
  /// Passed to ddprt_init.
  int32_t abiVersion = DDPRT_ABI_VERSION;
  /// Buffers whose lives do not meet share an arena's bytes
  /// (docs/Lowering.md, Storage, rule 9).
  bool reuseBuffers = true;
};

/// What the patterns consult while they lower one module: its storage plan
/// and the step's layout, decided before the conversion from the unchanged
/// IR and only read during it.
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

  const Impl &getImpl() const { return *impl; }

private:
  explicit ProgramLowering(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// `!ddp.token` becomes `!llvm.ptr`, the stack slot of its `ddprt_handle`;
/// a statically shaped tensor becomes `!llvm.ptr`, its planned storage.
void populateDDPToLLVMTypeConversions(mlir::LLVMTypeConverter &converter);

/// The program's patterns, consulting `program`: the ddp.mesh, ddp.param or
/// step func.func that the driver visits first lowers the whole program --
/// the mesh to the program's init, setup and teardown, the step to
/// ddp_program_step, each ddp op of the step to the runtime calls that run
/// it -- so that no pattern depends on another having run.
void populateDDPToLLVMConversionPatterns(
    const mlir::LLVMTypeConverter &converter, mlir::RewritePatternSet &patterns,
    const ProgramLowering &program);

/// The same patterns without a plan, for -convert-to-llvm, which makes its
/// patterns before it sees a module: the program's first op to be visited
/// plans the module then, so the mesh, parameters and step must come before
/// any other op that the conversion changes.
void populateDDPToLLVMConversionPatterns(
    const mlir::LLVMTypeConverter &converter,
    mlir::RewritePatternSet &patterns);

/// Whether the step's lowering lowers ops named `name`.
bool isLoweredInStep(mlir::OperationName name);

/// Marks the ddp dialect illegal: an op without a pattern fails the
/// conversion at its location.
void configureDDPToLLVMConversionTarget(mlir::ConversionTarget &target);

/// Registers the ddp dialect's ConvertToLLVMPatternInterface, so that
/// -convert-to-llvm lowers a ddp program (with the patterns above, without
/// a plan).
void registerConvertDDPToLLVMInterface(mlir::DialectRegistry &registry);

} // namespace ddp

#endif // DDP_CONVERSION_DDPTOLLVM_DDPTOLLVM_H
