//===- StreamSearch.h - The optimal buckets of one stream -------*- C++ -*-===//
//
// The exact search of OptimalLayout.h for one stream, the others fixed:
// private to computeOptimalLayout (OptimalLayout.cpp), which iterates it
// over the streams.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_BUCKETING_STREAMSEARCH_H
#define DDP_LIB_BUCKETING_STREAMSEARCH_H

#include "ddp/Bucketing/OptimalLayout.h"

#include "llvm/ADT/STLExtras.h"

#include <utility>
#include <vector>

namespace ddp::bucketing {

/// The search over the split points of one stream, the buckets of every
/// other stream fixed.
class StreamSearch {
  using State = TimelineReplay::State;

public:
  StreamSearch(llvm::ArrayRef<Gradient> gradients, const TimelineReplay &replay,
               const OptimalLayoutOptions &options,
               llvm::ArrayRef<size_t> members,
               llvm::ArrayRef<Bucket> fixedBuckets)
      : gradients(gradients), replay(replay), options(options),
        members(members), fixedBuckets(fixedBuckets),
        fixedAt(replay.getNumEvents()) {
    // Fixed buckets keep their issue order; each goes after its last
    // gradient, as in a layout sorted by completion.
    for (auto [index, bucket] : llvm::enumerate(fixedBuckets)) {
      fixedAt[replay.getReadyEvent(getLastReadyIndex(bucket))].push_back(index);
      if (replay.getCosts().distributedOptimizer)
        fixedSharded.push_back(replay.getShardedTail(bucket));
    }
  }

  /// The buckets of this stream, and the replayed step time with them;
  /// buckets hold at most `span` gradients and end only where `splitPoints`
  /// is true (indexed by the number of the stream's gradients before the
  /// split; empty: anywhere), or after the last gradient. States that cannot
  /// lead to a step time below `upperBound` are dropped; when nothing beats
  /// it the result is empty.
  std::pair<std::vector<Bucket>, double>
  run(size_t span, double upperBound, size_t &largestFront,
      llvm::ArrayRef<bool> splitPoints = {});

private:
  /// Runs events [from, to), issuing the fixed buckets that follow them.
  void runEvents(size_t from, size_t to, State &state) const {
    const BucketCosts &costs = replay.getCosts();
    for (size_t event = from; event < to; ++event) {
      replay.runSegmentBefore(event, state);
      replay.runEvent(event, state);
      for (size_t index : fixedAt[event]) {
        const Bucket &bucket = fixedBuckets[index];
        replay.issueBucket(
            state, replay.getIssueTime(bucket),
            costs.stream[bucket.entries.front().gradient],
            replay.getCollectiveTime(bucket), replay.getFirstUse(bucket),
            fixedSharded.empty() ? nullptr : &fixedSharded[index]);
      }
    }
  }

  /// The step time from a state right after the stream's last bucket.
  double finishFrom(State state, size_t event) const {
    runEvents(event, replay.getNumEvents(), state);
    replay.runSegmentBefore(replay.getNumEvents(), state);
    return replay.finish(state);
  }

  llvm::ArrayRef<Gradient> gradients;
  const TimelineReplay &replay;
  const OptimalLayoutOptions &options;
  llvm::ArrayRef<size_t> members;
  llvm::ArrayRef<Bucket> fixedBuckets;
  /// With the distributed optimizer, each fixed bucket's work in the tail.
  std::vector<ShardedTail> fixedSharded;
  std::vector<std::vector<size_t>> fixedAt;
};

} // namespace ddp::bucketing

#endif // DDP_LIB_BUCKETING_STREAMSEARCH_H
