//===- StepClock.h - The streams of a step and their timing rules -*- C++ -*-===//
//
// The one place where the timing rules of a step are written: the simulator
// runs the ops of a step's IR on a StepClock, and the `auto` bucketing
// policy's replay runs the layouts it prices on one, so that the two agree by
// construction. The rules (docs/CostModel.md, "Simulation"):
//   - the compute stream runs kernels one after another; while a collective
//     is in flight on any communication stream, kernels progress `slowdown`
//     times slower;
//   - each communication stream (one per process group) runs its collectives
//     in issue order, each from when it is issued or when the one before it
//     ends, whichever is later (NCCL serializes a communicator's operations),
//     and a collective issued after other asynchronous ops (`async after`)
//     not before they end;
//   - a synchronous collective, and a wait, hold the compute stream until the
//     collective ends;
//   - the step ends when the last stream goes idle.
// Times are seconds from the start of the step. Plain C++ on LLVM Support.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TIMING_STEPCLOCK_H
#define DDP_TIMING_STEPCLOCK_H

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ddp::timing {

/// Compute-stream work whose timing depends on the communication streams only
/// through the slowdown: kernels, and synchronous collectives on streams that
/// carry nothing else (so each starts as soon as it is issued), in order.
/// Kept as prefix sums so that a StepClock runs any range of it in
/// O(log size).
class ComputeStreamWork {
public:
  /// A kernel taking `seconds` with nothing beside it.
  void addKernel(double seconds);
  /// A synchronous collective taking `seconds` on a stream of its own.
  void addPrivateCollective(double seconds);

  /// The number of items; ranges of items are [begin, end) in [0, size()].
  size_t size() const { return itemIsKernel.size(); }
  /// The time of items [begin, end) with no communication in flight.
  double getTimeBetween(size_t begin, size_t end) const {
    return getKernelTime(begin, end) + getBlockedTime(begin, end);
  }
  /// The time of the kernels, and of the collectives, of items [begin, end).
  double getKernelTime(size_t begin, size_t end) const {
    return kernelPrefix[end] - kernelPrefix[begin];
  }
  double getBlockedTime(size_t begin, size_t end) const {
    return blockedPrefix[end] - blockedPrefix[begin];
  }

private:
  friend class StepClock;

  /// Prefix sums of kernel time and of time held by collectives.
  std::vector<double> kernelPrefix{0.0}, blockedPrefix{0.0};
  std::vector<bool> itemIsKernel;
};

/// The compute stream's clock and when each communication stream is free.
class StepClock {
public:
  explicit StepClock(double slowdown = 1, unsigned numCommStreams = 0)
      : slowdown(slowdown), streamFree(numCommStreams, 0.0) {}

  /// Adds a communication stream, free from the start; returns its index.
  unsigned addCommStream() {
    streamFree.push_back(0.0);
    return streamFree.size() - 1;
  }
  unsigned getNumCommStreams() const { return streamFree.size(); }

  double getSlowdown() const { return slowdown; }
  /// The compute stream's clock: when its next op is issued.
  double getNow() const { return now; }
  /// When communication stream `stream` has run all it was given.
  double getStreamFree(unsigned stream) const { return streamFree[stream]; }
  /// When the last communication stream goes idle. The work queued on each
  /// stream after `now` is contiguous (all of it was issued by `now`), so
  /// communication is in flight throughout [now, getCommBusyUntil()).
  double getCommBusyUntil() const { return commBusyUntil; }
  /// When the last stream goes idle.
  double getStepEnd() const { return std::max(now, commBusyUntil); }

  /// Runs a kernel that takes `seconds` with nothing beside it; returns how
  /// long it took.
  double runKernel(double seconds);

  struct Interval {
    double start;
    double end;
  };
  /// Issues a collective that takes `seconds` on `stream`, not to start
  /// before `notBefore` (the end of asynchronous ops it is issued after,
  /// which are in flight until then); returns when it runs.
  Interval issueCollective(unsigned stream, double seconds,
                           double notBefore = 0);

  /// Holds the compute stream until `time`; returns how long it was held (0
  /// when `time` has passed).
  double blockUntil(double time);

  /// Runs items [begin, end) of `work`: runKernel on each kernel and
  /// issueCollective + blockUntil on each collective, in closed form.
  void runWork(const ComputeStreamWork &work, size_t begin, size_t end);

  /// The end of the step when, every collective issued, the compute stream
  /// runs `tailWork` seconds of kernels and the waits of the collectives in
  /// flight: `waitBound` is the largest, over those collectives, of
  /// getTailWaitBound(end of the collective, kernels from its wait on).
  double finishTail(double tailWork, double waitBound) const;
  /// A collective's term of finishTail's `waitBound`.
  double getTailWaitBound(double collectiveEnd, double workAfterWait) const {
    return collectiveEnd / slowdown + workAfterWait;
  }

  /// Makes every stream that is free before `now` free at `now`: nothing can
  /// start on it earlier, so no future changes, and clocks compare more
  /// often.
  void releaseIdleStreams();

private:
  double slowdown;
  double now = 0;
  double commBusyUntil = 0;
  llvm::SmallVector<double, 4> streamFree;
};

} // namespace ddp::timing

#endif // DDP_TIMING_STEPCLOCK_H
