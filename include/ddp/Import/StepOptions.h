//===- StepOptions.h - Settings shared by both importers --------*- C++ -*-===//
//
// The element types a parameter may have and the optimizer the step ends
// with. Both input formats (model configs and parameter inventories) spell
// them the same way in JSON.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_STEPOPTIONS_H
#define DDP_IMPORT_STEPOPTIONS_H

#include "ddp/Support/ElementType.h"

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace ddp {

/// Parses `f32 f16 bf16 f64`; model configs also accept Megatron's and
/// PyTorch's spellings (`fp32`, `float16`, `bfloat16`, ...) when
/// `acceptAliases` is set.
std::optional<ElementType> parseConfigElementType(llvm::StringRef name,
                                                  bool acceptAliases);

enum class OptimizerKind { Adam, SGD };

/// Megatron's `--optimizer` values: `adam`, `sgd`.
std::optional<OptimizerKind> parseOptimizerKind(llvm::StringRef name);

/// The per-parameter update at the end of the step. JSON fields use
/// Megatron's argument names: `optimizer` (`adam` or `sgd`), `lr`,
/// `adam_beta1`, `adam_beta2`, `adam_eps`.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  double lr = 1.0e-4;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1.0e-8;
};

} // namespace ddp

#endif // DDP_IMPORT_STEPOPTIONS_H
