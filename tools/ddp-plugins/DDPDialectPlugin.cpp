//===- DDPDialectPlugin.cpp - The ddp dialect for a stock mlir-opt --------===//
//
// `mlir-opt --load-dialect-plugin=libDDPDialectPlugin.so` registers the ddp
// dialect, so that an mlir-opt built without ddp parses and prints steps
// (and -convert-to-llvm finds ddp's patterns). The
// passes are in the pass plugin (DDPPassPlugin.cpp); both call into
// libDDPShared.so, which links libMLIR.so (docs/Embedding.md).
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"

#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "DDPDialect", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<ddp::DDPDialect>();
            ddp::registerConvertDDPToLLVMInterface(*registry);
          }};
}
