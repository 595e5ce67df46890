//===- MegatronArgs.h - Megatron-LM's argument dump as input ----*- C++ -*-===//
//
// Megatron-LM prints every argument at startup (megatron/training/
// arguments.py, `_print_args`):
//
//   ------------------------ arguments ------------------------
//     accumulate_allreduce_grads_in_fp32 .............. False
//     bf16 ............................................ True
//     ...
//   -------------------- end of arguments ---------------------
//
// readMegatronArgs finds that block in a training log and maps it onto the
// fields of a model config and onto the ddp-schedule options of the run.
// docs/Importer.md lists the mapping.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_MEGATRONARGS_H
#define DDP_IMPORT_MEGATRONARGS_H

#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace ddp {

struct MegatronRun {
  /// Model config fields, as parseModelConfig reads them.
  llvm::json::Object config;
  /// ddp-schedule option name to value (a bool, an integer or a string).
  llvm::json::Object scheduleOptions;
  /// The argument each entry of scheduleOptions was read from, so that an
  /// option ddp-schedule rejects can be traced to its line of the log.
  struct ArgumentSource {
    std::string name, value;
    unsigned line;
  };
  llvm::StringMap<ArgumentSource> scheduleOptionSources;
  /// What the step leaves out or ignores, one sentence each.
  std::vector<std::string> notes;
};

/// Reads the first argument block of a Megatron-LM log. Errors name
/// `source` and the line: no block, no end line, a malformed argument line,
/// a value of the wrong kind for an argument the importer reads, and
/// layouts the step cannot express (pipeline or context parallelism).
llvm::Expected<MegatronRun> readMegatronArgs(llvm::StringRef log,
                                             llvm::StringRef source);

/// Sets kScheduleOptionsAttrName on `module` to `options`.
void recordScheduleOptions(mlir::ModuleOp module,
                           const llvm::json::Object &options);

} // namespace ddp

#endif // DDP_IMPORT_MEGATRONARGS_H
