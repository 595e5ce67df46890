//===- MemoryCheck.h - Refuse a run that cannot fit in memory ---*- C++ -*-===//
//
// ddp-run estimates what every program it runs will allocate (all of them
// share one runtime under --verify) and what the ranks on this machine
// together need, before any rank allocates: a run too large for the machine
// is refused with both numbers instead of being killed by the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TOOLS_DDP_RUN_MEMORYCHECK_H
#define DDP_TOOLS_DDP_RUN_MEMORYCHECK_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ddp {

/// What one rank allocates to run some programs in one runtime context.
struct RankMemoryEstimate {
  int64_t bytes = 0;
  /// The part of `bytes` that is the deterministic reductions' scratch.
  int64_t deterministicReductionBytes = 0;
};

/// What one rank allocates to run `programs` in one runtime context, the
/// scratch of DDPRT_FLAG_DETERMINISTIC_REDUCTIONS included when
/// `deterministicReductions`; nullopt (with the error emitted) when one of
/// them cannot be lowered.
std::optional<RankMemoryEstimate>
estimateRankBytes(llvm::ArrayRef<mlir::ModuleOp> programs,
                  bool deterministicReductions, bool reuseBuffers);

/// The processes of this job on this machine (Open MPI's, MPICH's or PMI's
/// local size; 1 outside mpirun).
int64_t getRanksOnThisMachine();

/// MemAvailable from /proc/meminfo, if it can be read.
std::optional<int64_t> getAvailableMemoryBytes();

/// An error message when `ranks` ranks of `perRank` each do not fit in
/// `availableBytes`; nullopt when they do.
std::optional<std::string> checkMemoryFits(const RankMemoryEstimate &perRank,
                                           int64_t ranks,
                                           int64_t availableBytes);

} // namespace ddp

#endif // DDP_TOOLS_DDP_RUN_MEMORYCHECK_H
