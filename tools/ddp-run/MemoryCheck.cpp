//===- MemoryCheck.cpp - Refuse a run that cannot fit in memory -----------===//

#include "MemoryCheck.h"

#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
#include "ddp/Support/CheckedCount.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdlib>
#include <limits>

using namespace mlir;
using namespace ddp;

std::optional<RankMemoryEstimate>
ddp::estimateRankBytes(ArrayRef<ModuleOp> programs,
                       bool deterministicReductions, bool reuseBuffers) {
  RankMemoryEstimate estimate;
  CheckedCount bytes;
  int64_t largestParam = 0;
  for (ModuleOp program : programs) {
    FailureOr<StoragePlan> plan = StoragePlan::build(program, reuseBuffers);
    if (failed(plan))
      return std::nullopt;
    FailureOr<RuntimeMemory> memory = estimateRuntimeMemory(*plan);
    if (failed(memory))
      return std::nullopt;
    bytes += memory->getTotalBytes();
    largestParam = std::max(largestParam, memory->largestParamBytes);
    // The programs run one after the other, each to ddprt_synchronize, and
    // a collective's scratch is freed when it completes.
    // More than int64 holds fits in no machine's memory: the check refuses.
    if (deterministicReductions)
      estimate.deterministicReductionBytes =
          std::max(estimate.deterministicReductionBytes,
                   memory->deterministicReductionBytes.value_or(
                       std::numeric_limits<int64_t>::max()));
  }
  // --verify reads a parameter of each of two programs at a time.
  if (programs.size() > 1)
    bytes += CheckedCount(largestParam) * 2;
  bytes += estimate.deterministicReductionBytes;
  estimate.bytes = bytes.getOr(std::numeric_limits<int64_t>::max());
  return estimate;
}

int64_t ddp::getRanksOnThisMachine() {
  for (const char *variable :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"}) {
    int64_t ranks = 0;
    if (const char *value = std::getenv(variable))
      if (llvm::to_integer(value, ranks) && ranks > 0)
        return ranks;
  }
  return 1;
}

std::optional<int64_t> ddp::getAvailableMemoryBytes() {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> meminfo =
      llvm::MemoryBuffer::getFileAsStream("/proc/meminfo");
  if (!meminfo)
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef> lines;
  (*meminfo)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (!line.consume_front("MemAvailable:"))
      continue;
    // "MemAvailable:   12345678 kB"
    line = line.trim();
    int64_t kib = 0;
    if (line.consume_back("kB") && !line.trim().getAsInteger(10, kib))
      return kib * 1024;
  }
  return std::nullopt;
}

std::optional<std::string>
ddp::checkMemoryFits(const RankMemoryEstimate &perRank, int64_t ranks,
                     int64_t availableBytes) {
  int64_t bytesPerRank = perRank.bytes;
  int64_t needed = 0;
  if (!llvm::MulOverflow(bytesPerRank, ranks, needed) &&
      needed <= availableBytes)
    return std::nullopt;
  std::string message =
      "the run needs about " + formatBytes(bytesPerRank) + " per rank";
  if (perRank.deterministicReductionBytes > 0)
    message += " (" + formatBytes(perRank.deterministicReductionBytes) +
               " of it the scratch of the deterministic reductions --verify "
               "uses on more than 2 ranks)";
  if (ranks > 1)
    message += " x " + std::to_string(ranks) + " ranks on this machine = " +
               (needed >= bytesPerRank ? formatBytes(needed)
                                       : std::string("more than 2^63 bytes"));
  message += ", and this machine has " + formatBytes(availableBytes) +
             " available; run fewer layers, tokens or schedules, or fewer "
             "ranks per machine (--memory-check=false runs it anyway)";
  return message;
}
