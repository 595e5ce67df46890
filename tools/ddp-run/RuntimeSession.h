//===- RuntimeSession.h - ddp-run's own use of the runtime ------*- C++ -*-===//
//
// What ddp-run does with libddprt besides running programs: report a failed
// call, gather values from every rank, read parameters back.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TOOLS_DDP_RUN_RUNTIMESESSION_H
#define DDP_TOOLS_DDP_RUN_RUNTIMESESSION_H

#include "ddp/Conversion/DDPToLLVM/RuntimeFunctions.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ddp {

/// Writes "ddp-run: error: <message>" (or warning) and a newline to stderr
/// in one write, so that the lines of ranks printing at once under mpirun
/// do not interleave.
void printError(const llvm::Twine &message);
void printWarning(const llvm::Twine &message);

/// Whether printError and printWarning print. Until each rank takes its
/// pipeline stage, every rank of a job reads and schedules the same input
/// and would print the same messages, interleaved: ranks but the first
/// print none (they still fail).
void setPrintsDiagnostics(bool prints);

/// Prints an error and ends this process.
[[noreturn]] void fail(const llvm::Twine &message);

/// Bytes of one element of a DDPRT_DTYPE_*.
inline int64_t getRuntimeElementBytes(int32_t dtype) {
  return getElementBytes(getElementTypeOfRuntimeDType(dtype));
}

/// The first of `numel` elements of `type` at `data` whose exponent bits
/// are all ones (a NaN or an Inf), or -1.
int64_t findNonFinite(const uint8_t *data, int64_t numel, ElementType type);

class RuntimeSession {
public:
  /// Takes over a context from ddp_program_init. `meshAxes` are all the
  /// mesh's axes in mesh order ("dp,tp"), the group every comparison
  /// gathers over.
  RuntimeSession(ddprt_context *context, llvm::StringRef meshAxes);

  ddprt_context *getContext() const { return context; }
  int getRank() const { return rank; }
  int getNumRanks() const { return numRanks; }

  /// Ends this rank when `status` is an error: prints the runtime's message
  /// with `what` failed; mpirun then ends the other ranks.
  void check(ddprt_status status, llvm::StringRef what) const;

  /// Every rank's `words` (the same count on every rank), concatenated in
  /// rank order.
  std::vector<uint64_t> gatherFromAllRanks(llvm::ArrayRef<uint64_t> words);

  /// Every rank's `bytes` bytes at `data` (a runtime buffer of `numel`
  /// elements of `dtype`), concatenated in rank order, in host memory.
  std::vector<uint8_t> gatherFromAllRanks(const void *data, int32_t dtype,
                                          int64_t numel);

  /// The same for `host`, `numel` elements of `dtype` in host memory.
  std::vector<uint8_t> gatherFromAllRanks(llvm::ArrayRef<uint8_t> host,
                                          int32_t dtype, int64_t numel);

  /// Rank `root`'s `host` (`numel` elements of `dtype`), on every rank.
  std::vector<uint8_t> broadcastFromRank(llvm::ArrayRef<uint8_t> host,
                                         int32_t dtype, int64_t numel,
                                         int root);

  /// The current value of a parameter, whole, in host memory. A parameter
  /// stored sharded is gathered over its group: every rank of the group
  /// must read it too.
  std::vector<uint8_t> readParam(int32_t param, int64_t bytes);
  /// One optimizer state (DDPRT_OPTIMIZER_STATE_*) this rank keeps for a
  /// parameter: the parameter's elements [begin, begin + values.size()) it
  /// covers.
  struct OptimizerState {
    int64_t begin = 0;
    std::vector<float> values;
  };
  OptimizerState readOptimizerState(int32_t param, int32_t state);
  /// Whether the runtime stores only this rank's shard of the parameter.
  bool isStoredSharded(int32_t param);
  /// Whether this rank registered a parameter named `name`.
  bool hasParam(llvm::StringRef name);

  /// Rank 0 writes every parameter of the context to `path`, one line each:
  /// `<name> <dtype> <numel> <bytes in hex, memory order>`; the AOT launcher
  /// writes the same format, so that two runs compare with `cmp`. Every rank
  /// calls it: it first completes the parameter gathers a step built with
  /// overlap-param-gather leaves to the next one (ddprt_finish_param_sync, a
  /// collective), so that the values are the whole updated parameters.
  /// Where some rank lacks a name of `order` (the input's parameters, each
  /// program's prefix before them), as a pipeline stage lacks the other
  /// stages', every name some rank holds is written in that order, each
  /// from the lowest rank that holds it, as an unpipelined run writes them;
  /// otherwise every parameter in rank 0's registration order.
  void dumpParams(llvm::StringRef path, llvm::ArrayRef<std::string> order);

  /// Waits for all work, writes the trace and ends the runtime.
  void finalize();

private:
  ddprt_context *context;
  int rank = 0;
  int numRanks = 1;
  int32_t worldGroup = -1;
};

} // namespace ddp

#endif // DDP_TOOLS_DDP_RUN_RUNTIMESESSION_H
