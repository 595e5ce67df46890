//===- OptimalLayout.h - The cost-model-optimal bucket layout ---*- C++ -*-===//
//
// The `auto` policy: bucket boundaries that minimise the step time replayed
// by TimelineReplay (the simulator's rules), found by dynamic programming
// over the split points of the ready order.
//
// Buckets of one stream (gradients that may share a bucket: one element type,
// one group) are contiguous runs of its ready order. The state of the replay
// right after a bucket is issued -- the compute clock, when each
// communication stream becomes free, and the bound the tail's waits put on
// the step -- is all the future depends on, and everything after is
// nondecreasing in each of its components. So for every split point the
// search keeps the states that no other state beats in every component (a
// Pareto front), extends each by every possible next bucket, and the best
// final state is the optimum over all contiguous layouts: exact, not a sweep
// of sizes. Streams sharing a step are optimised one at a time with the
// others fixed, until no stream improves.
//
// The search runs on the overlap model: compute is not slowed down by
// communication in flight. With a slowdown the fronts grow with the number
// of distinct compute clocks, so the search's result, the starting layouts
// and their single-boundary neighbours are compared on the full replay
// instead. See docs/Bucketing.md.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_BUCKETING_OPTIMALLAYOUT_H
#define DDP_BUCKETING_OPTIMALLAYOUT_H

#include "ddp/Bucketing/StepTimeline.h"

namespace ddp::bucketing {

struct OptimalLayoutOptions {
  /// Padding applied to every bucket (the distributed optimizer's).
  PaddingOptions padding;
  /// The most gradients a bucket may hold; 0 for no limit. Bounds the search
  /// to O(gradients x this) on very large graphs; the result is then optimal
  /// among layouts whose buckets respect it.
  size_t maxBucketGradients = 0;
  /// With the distributed optimizer (fronts capped, the search a heuristic
  /// on large steps), the longest stream searched at every split point;
  /// longer ones are searched on a grid of every 8th split point and then at
  /// every split point within 8 of the grid's cuts. docs/Bucketing.md.
  size_t fullShardedSearchUpTo = 512;
  /// Rounds of stream-by-stream improvement when several streams share the
  /// step; a single stream needs one.
  unsigned maxRounds = 8;
  /// Sweeps of single-boundary moves on the full replay after the search
  /// (only useful with a slowdown).
  unsigned maxRefinementSweeps = 4;
};

struct OptimalLayoutResult {
  BucketLayout layout;
  /// The replayed step time of `layout` (with the slowdown).
  double stepTime = 0;
  /// The optimum of the search on the overlap model (no slowdown).
  double searchStepTime = 0;
  /// Rounds the stream-by-stream search ran.
  unsigned rounds = 0;
  /// Largest Pareto front kept at a split point.
  size_t largestFront = 0;
  /// Set when a starting layout replayed faster than the search's result and
  /// was returned instead (possible only with a slowdown, several streams,
  /// or starting layouts that are not contiguous in ready order).
  bool startingLayoutWon = false;
  /// Boundary moves that improved the result on the full replay.
  unsigned refinements = 0;
};

/// Minimises the replayed step time over the bucket boundaries of every
/// stream. `startingLayouts` (e.g. the megatron and pytorch layouts) seed the
/// search when several streams share the step, and the result is never
/// slower than any of them on the replay.
llvm::Expected<OptimalLayoutResult>
computeOptimalLayout(llvm::ArrayRef<Gradient> gradients,
                     const TimelineReplay &replay,
                     const OptimalLayoutOptions &options,
                     llvm::ArrayRef<BucketLayout> startingLayouts = {});

} // namespace ddp::bucketing

#endif // DDP_BUCKETING_OPTIMALLAYOUT_H
