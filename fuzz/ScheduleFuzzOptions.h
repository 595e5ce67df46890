//===- ScheduleFuzzOptions.h - What fuzz-schedule runs, and how -*- C++ -*-===//
//
// fuzz-schedule runs the ddp-schedule pipeline (then ddp-simulate and
// ddp-lower-to-runtime), or one pass of Passes.td alone, with options that
// bytes of the input choose. The tables here list every option of the
// pipeline and of those passes: a unit test (unittests/Fuzz) fails when a
// pass or an option is added without being listed, so that the fuzzer's
// coverage cannot fall behind the options users have.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_FUZZ_SCHEDULEFUZZOPTIONS_H
#define DDP_FUZZ_SCHEDULEFUZZOPTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <utility>

namespace ddp::fuzz {

/// Bytes of option bits at the start of a fuzz-schedule input, after the
/// byte that chooses what runs. Room for the options still to come.
constexpr size_t kOptionBytes = 17;

/// An option the input chooses: a code of getBits() bits, 0 for the
/// default of whatever runs, k for values[(k - 1) % values.size()].
struct FuzzedOption {
  llvm::StringRef name;
  llvm::SmallVector<llvm::StringRef, 8> values;
  unsigned getBits() const;
};
llvm::ArrayRef<FuzzedOption> getFuzzedOptions();

/// Options set to one value on every run: outputs that would otherwise
/// print to stdout.
llvm::ArrayRef<std::pair<llvm::StringRef, llvm::StringRef>> getFixedOptions();

/// The bits getFuzzedOptions() takes in all (at most kOptionBytes x 8).
unsigned getOptionBits();

/// A pass of Passes.td, run alone on the input.
struct PassAlone {
  llvm::StringRef name;
  /// Anchored on func.func (else on the module).
  bool onFunctions;
};
llvm::ArrayRef<PassAlone> getPassesFuzzedAlone();

/// The options that `bytes` (kOptionBytes of them; missing bytes read as 0)
/// choose and the fixed ones, as `name=value` separated by spaces, for the
/// option names `accepts` takes.
std::string decodeOptions(llvm::ArrayRef<uint8_t> bytes,
                          llvm::function_ref<bool(llvm::StringRef)> accepts);

/// The option names of a printed pass or options struct (`{a=1 b=x}`, as
/// mlir::detail::PassOptions::print and Pass::printAsTextualPipeline write
/// them), in order.
llvm::SmallVector<std::string> getPrintedOptionNames(llvm::StringRef printed);

/// The names in `printed` that neither table lists.
llvm::SmallVector<std::string> findUnfuzzedOptions(llvm::StringRef printed);

/// What runs for a first byte below 128: ddp-schedule, ddp-simulate and
/// ddp-lower-to-runtime with these options, as getPipelineText writes it.
std::string getSchedulePipelineText(llvm::StringRef scheduleOptions,
                                    llvm::StringRef simulateOptions,
                                    llvm::StringRef lowerOptions);

/// `pass` with `options` as the passes of a textual pipeline that
/// mlir::parsePassPipeline adds to a pass manager on builtin.module (nested
/// in func.func where the pass runs there). Not wrapped in
/// `builtin.module(...)`: that overload would nest it in a second module
/// pass manager, which finds no module inside the module and runs nothing.
std::string getPipelineText(const PassAlone &pass, llvm::StringRef options);

} // namespace ddp::fuzz

#endif // DDP_FUZZ_SCHEDULEFUZZOPTIONS_H
