//===- ParamInventory.h - Parameter inventories -----------------*- C++ -*-===//
//
// A model known only by its parameters, as a PyTorch user dumps
// `named_parameters()`:
//
//   {"tokens_per_microbatch": 8192, "num_microbatches": 1,
//    "data_parallel_size": 8,
//    "params": [{"name": "layers.0.weight", "shape": [95, 95],
//                "dtype": "bf16", "shared_embedding": false,
//                "expert": false}, ...],
//    "ready_order": ["layers.0.weight", ...]}
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_PARAMINVENTORY_H
#define DDP_IMPORT_PARAMINVENTORY_H

#include "ddp/Import/StepOptions.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace ddp {

struct InventoryParam {
  std::string name;
  llvm::SmallVector<int64_t, 4> shape;
  ElementType dtype = ElementType::F32;
  bool sharedEmbedding = false;
  bool expert = false;
};

struct ParamInventory {
  int64_t tokensPerMicrobatch = 0;
  int64_t numMicrobatches = 1;
  int64_t dataParallelSize = 1;
  /// Expert parallelism: expert parameters are reduced over the
  /// data_parallel_size / expert_model_parallel_size ranks that hold the
  /// same experts.
  int64_t expertModelParallelSize = 1;
  /// Registration order.
  std::vector<InventoryParam> params;
  /// Indices into `params` in the order gradients become final; reverse
  /// registration order when the JSON has no `ready_order`.
  std::vector<size_t> readyOrder;
  OptimizerConfig optimizer;
};

/// Reads and validates an inventory; errors name the field (with its index
/// in `params`) and `sourceName`.
llvm::Expected<ParamInventory>
parseParamInventory(const llvm::json::Value &json, llvm::StringRef sourceName);

} // namespace ddp

#endif // DDP_IMPORT_PARAMINVENTORY_H
