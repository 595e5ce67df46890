//===- ConvertToLLVMInterface.cpp - ddp's patterns for -convert-to-llvm ---===//
//
// -convert-to-llvm asks each loaded dialect for its patterns before it sees
// a module, so ddp's come without a plan: the program's first op that the
// driver visits plans the module then (DDPToLLVM.h).
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace ddp;

namespace {
struct DDPToLLVMInterface : public ConvertToLLVMPatternInterface {
  using ConvertToLLVMPatternInterface::ConvertToLLVMPatternInterface;

  void populateConvertToLLVMConversionPatterns(
      ConversionTarget &target, LLVMTypeConverter &converter,
      RewritePatternSet &patterns) const final {
    // Only the token: the converter is every dialect's, and a tensor is a
    // pointer only to ddp's lowering, whose replacements need no conversion.
    MLIRContext *context = &converter.getContext();
    converter.addConversion([context](TokenType) -> Type {
      return LLVM::LLVMPointerType::get(context);
    });
    populateDDPToLLVMConversionPatterns(converter, patterns);
    configureDDPToLLVMConversionTarget(target);
  }
};
} // namespace

void ddp::registerConvertDDPToLLVMInterface(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *, DDPDialect *dialect) {
    dialect->addInterfaces<DDPToLLVMInterface>();
  });
}
