//===- Import.h - Step graphs from configs and inventories ------*- C++ -*-===//
//
// Builds the unscheduled step of docs/Architecture.md: a module with one
// ddp.mesh, the ddp.params in registration order and a func.func @step that
// runs every microbatch's forward and backward, marks each gradient ready,
// all-reduces it over its data-parallel group and applies the optimizer.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_IMPORT_H
#define DDP_IMPORT_IMPORT_H

#include "ddp/Import/ModelConfig.h"
#include "ddp/Import/ParamInventory.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace ddp {

/// The module attribute where the importer keeps a pipelined model's config
/// (modelConfigToJSON, as a JSON string): the pipeline planner imports the
/// model again at other virtual sizes from it (docs/Pipeline.md#auto).
constexpr llvm::StringLiteral kModelConfigAttrName = "ddp.model_config";

/// The config recorded in `module`'s ddp.model_config; nullopt when the
/// module records none, an error when what it records does not parse.
llvm::Expected<std::optional<ModelConfig>>
getRecordedModelConfig(mlir::ModuleOp module);

/// The step of one rank of a transformer trained with tensor, sequence,
/// expert and data parallelism as Megatron-LM runs it. `config` must have
/// been validated (parseModelConfig does it). The context must have the ddp
/// and func dialects loaded or loadable.
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext &context,
                                              const ModelConfig &config);

/// The step of one rank of a model known by its parameter inventory.
mlir::OwningOpRef<mlir::ModuleOp>
importInventory(mlir::MLIRContext &context, const ParamInventory &inventory);

} // namespace ddp

#endif // DDP_IMPORT_IMPORT_H
