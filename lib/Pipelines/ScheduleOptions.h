//===- ScheduleOptions.h - ddp-schedule's options, inside -------*- C++ -*-===//
//
// What the schedule pipeline's pass shares with ScheduleOptions.cpp beyond
// the public interface (ddp/Pipelines/SchedulePipeline.h).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_PIPELINES_SCHEDULEOPTIONS_H
#define DDP_LIB_PIPELINES_SCHEDULEOPTIONS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>
#include <utility>

namespace ddp {

/// Whether option `name` is among `givenNames`, under its own name or its
/// Megatron alias.
bool isGivenUnderAnyName(llvm::StringRef name,
                         const llvm::StringSet<> &givenNames);

/// `value` in quotes that MLIR's pass option parser takes as one value, or
/// nullopt where none can.
std::optional<std::string> quoteOptionValue(llvm::StringRef value);

/// fsdp-unit-prefetch's form of depths per unit: "2,1,1".
std::string formatUnitPrefetch(llvm::ArrayRef<unsigned> depths);

/// Sets `values` (option name, value) in `module`'s recorded schedule
/// options, keeping the others.
void recordOptions(mlir::ModuleOp module,
                   llvm::ArrayRef<std::pair<llvm::StringRef, mlir::Attribute>>
                       values);

} // namespace ddp

#endif // DDP_LIB_PIPELINES_SCHEDULEOPTIONS_H
