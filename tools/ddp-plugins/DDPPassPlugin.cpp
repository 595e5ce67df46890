//===- DDPPassPlugin.cpp - ddp's passes for a stock mlir-opt --------------===//
//
// `mlir-opt --load-pass-plugin=libDDPPassPlugin.so` registers what ddp-opt
// registers of ddp's own: its passes, its conversion to LLVM and the
// ddp-schedule pipeline. The dialect comes from the dialect plugin
// (DDPDialectPlugin.cpp); both call into libDDPShared.so, which links
// libMLIR.so (docs/Embedding.md).
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Tools/Plugins/PassPlugin.h"

#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "DDPPasses", LLVM_VERSION_STRING, []() {
            ddp::registerDDPPasses();
            ddp::registerDDPConversionPasses();
            ddp::registerDDPSchedulePipeline();
          }};
}
