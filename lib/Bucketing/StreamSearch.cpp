//===- StreamSearch.cpp - The optimal buckets of one stream ---------------===//
//
// Dynamic programming over the split points of one stream's ready order,
// keeping a Pareto front of replay states per split point (OptimalLayout.h
// says why that is exact).
//
//===----------------------------------------------------------------------===//

#include "StreamSearch.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>

using namespace ddp::bucketing;

namespace {

using State = TimelineReplay::State;

/// `a` is no worse than `b` in every component, so nothing reachable from
/// `b` beats what is reachable from `a`.
bool dominates(const State &a, const State &b) {
  if (a.clock.getNow() > b.clock.getNow() || a.tailBound > b.tailBound)
    return false;
  for (unsigned stream = 0, e = a.clock.getNumCommStreams(); stream < e;
       ++stream)
    if (a.clock.getStreamFree(stream) > b.clock.getStreamFree(stream))
      return false;
  if (a.shardedWork > b.shardedWork || a.acrossBound > b.acrossBound)
    return false;
  for (size_t stream = 0; stream < a.gatherWork.size(); ++stream)
    if (a.firstGatherReady[stream] > b.firstGatherReady[stream] ||
        a.gatherWork[stream] > b.gatherWork[stream])
      return false;
  return true;
}

/// The most states kept at a split point with the distributed optimizer.
constexpr size_t kMaxShardedFront = 16;
/// The size at which a front that is still growing is cut back to
/// kMaxShardedFront (see StreamSearch::run).
constexpr size_t kShardedFrontCutBackAt = 4 * kMaxShardedFront;

/// A state right after a bucket closing at a split point, and the split
/// point and node it was reached from.
struct Node {
  State state;
  size_t previousSplit = 0;
  size_t previousNode = 0;
};

void insertIntoFront(std::vector<Node> &front, Node node) {
  for (const Node &kept : front)
    if (dominates(kept.state, node.state))
      return;
  llvm::erase_if(front, [&](const Node &kept) {
    return dominates(node.state, kept.state);
  });
  front.push_back(std::move(node));
}

} // namespace

std::pair<std::vector<Bucket>, double> StreamSearch::run(size_t span,
                                                         double upperBound,
                                                         size_t &largestFront,
                                                         llvm::ArrayRef<bool> splitPoints) {
  const BucketCosts &costs = replay.getCosts();
  size_t count = members.size();
  const Gradient &first = gradients[members.front()];
  ElementType type = first.reduceType;
  unsigned stream = costs.stream[members.front()];
  int64_t endDivisor = getBucketEndDivisor(options.padding, first.groupSize);
  double slowdown = replay.getSlowdown();
  bool sharded = costs.distributedOptimizer;
  auto resumeEvent = [&](size_t split) {
    return split == 0 ? 0 : replay.getReadyEvent(members[split - 1]) + 1;
  };

  // What the rest of the stream adds to the tail bound at least, whatever
  // its buckets: the bucket holding members[k] ends no earlier than the
  // collective time of one bucket holding members[split..k] after the
  // stream is free (a collective's time grows with its size and is
  // subadditive: a latency plus the cheaper of two affine algorithms), and
  // is waited no later than members[k]'s first use. restBound[split] is the
  // largest of these over k, less free / slowdown.
  //
  // restCollective[split] is the collective time of one bucket holding all
  // of members[split..], which the stream's collectives from there on take
  // at least: the step ends no earlier than that after the stream is free.
  std::vector<double> restBound(count + 1,
                                -std::numeric_limits<double>::infinity());
  std::vector<double> restCollective(count + 1, 0.0);
  for (size_t split = 0; split < count; ++split) {
    int64_t cursor = 0;
    for (size_t k = split; k < count; ++k) {
      cursor = padGradientStart(options.padding, cursor) +
               gradients[members[k]].numel;
      if (k >= split + span && k + 1 < count)
        continue;
      double collective =
          costs.getCollectiveTime(stream, type, alignTo(cursor, endDivisor));
      if (k + 1 == count)
        restCollective[split] = collective;
      // The bound is the all-reduce tail's; the sharded tail's waits are
      // bounded through the stream's first all-gather instead (finish()).
      if (k < split + span && !sharded)
        restBound[split] = std::max(
            restBound[split],
            collective / slowdown +
                replay.getTailWorkFrom(replay.getFirstUse(members[k])));
    }
  }
  // A lower bound on the step time from a state right after a split: the
  // tail bound (which canonicalize() and restBound raise to what the compute
  // stream and the rest of the stream imply), and the stream's remaining
  // collectives. Exact reasoning on the overlap model (slowdown 1), where
  // the search runs.
  auto lowerBound = [&](const State &state, size_t split) {
    double streamDone =
        state.clock.getStreamFree(stream) + restCollective[split];
    double bound = std::max(state.tailBound * slowdown, streamDone);
    if (!sharded)
      return bound;
    // The sharded work only grows: the tail's start (what canonicalize()
    // put in the tail bound) plus all of it, the latest wait for an
    // all-reduce across instances plus the work after it, and the stream's
    // first all-gather, after its reduce-scatters, plus the work after it.
    return std::max({bound, state.tailBound + state.shardedWork,
                     state.acrossBound + state.shardedWork,
                     streamDone + state.gatherWork[stream] +
                         replay.getTailWorkFrom(replay.getAnchor(stream))});
  };

  // fronts[s]: states right after the bucket ending with members[s - 1] is
  // issued; fronts[0] holds the start of the step. The last split point
  // needs no front: each state there is finished at once and only the best
  // is kept.
  std::vector<std::vector<Node>> fronts(count);
  fronts[0].push_back({replay.initialState(), 0, 0});
  double best = std::numeric_limits<double>::infinity();
  Node bestLast;
  // What a bucket of members[split..end) costs, the same for every state of
  // the split point's front.
  struct Candidate {
    double issueSeconds, collectiveSeconds;
    size_t firstUse;
    ShardedTail sharded;
  };
  std::vector<Candidate> candidates;
  // The sharded work adds a dimension along which states rarely dominate
  // each other (fewer buckets: less work, later reduce-scatters); past
  // kMaxShardedFront states the most promising are kept, which makes the
  // search a heuristic on large steps.
  auto keepMostPromising = [&](size_t split) {
    std::vector<Node> &front = fronts[split];
    std::stable_sort(
        front.begin(), front.end(), [&](const Node &a, const Node &b) {
          return lowerBound(a.state, split) < lowerBound(b.state, split);
        });
    front.resize(kMaxShardedFront);
  };
  for (size_t split = 0; split < count; ++split) {
    if (fronts[split].empty())
      continue;
    largestFront = std::max(largestFront, fronts[split].size());
    if (sharded && fronts[split].size() > kMaxShardedFront)
      keepMostPromising(split);
    size_t last = std::min(count, split + span);
    candidates.clear();
    int64_t cursor = 0;
    double packSeconds = 0;
    size_t firstUse = SIZE_MAX;
    ShardedTailBuilder shardedBuilder(costs);
    for (size_t end = split + 1; end <= last; ++end) {
      size_t gradient = members[end - 1];
      cursor =
          padGradientStart(options.padding, cursor) + gradients[gradient].numel;
      packSeconds += costs.packTime[gradient];
      firstUse = std::min(firstUse, replay.getFirstUse(gradient));
      int64_t padded = alignTo(cursor, endDivisor);
      Candidate candidate{packSeconds +
                              costs.getBucketIssueTime(stream, type, padded),
                          costs.getCollectiveTime(stream, type, padded),
                          firstUse,
                          {}};
      if (sharded) {
        shardedBuilder.add(gradient);
        candidate.sharded =
            shardedBuilder.build(stream, type, padded, firstUse);
      }
      candidates.push_back(std::move(candidate));
    }

    for (size_t node = 0; node < fronts[split].size(); ++node) {
      State state = fronts[split][node].state;
      size_t event = resumeEvent(split);
      for (size_t end = split + 1; end <= last; ++end) {
        size_t ready = replay.getReadyEvent(members[end - 1]);
        runEvents(event, ready, state);
        replay.runSegmentBefore(ready, state);
        replay.runEvent(ready, state);
        event = ready + 1;

        if (!splitPoints.empty() && !splitPoints[end] && end != count)
          continue;
        const Candidate &candidate = candidates[end - split - 1];
        Node next{state, split, node};
        replay.issueBucket(next.state, candidate.issueSeconds, stream,
                           candidate.collectiveSeconds, candidate.firstUse,
                           sharded ? &candidate.sharded : nullptr);
        // This bucket's own wait bounds the step, and grows with the
        // bucket (it ends later and is needed earlier): past the bound no
        // longer bucket from this state can do better.
        if (next.state.tailBound * slowdown > upperBound)
          break;
        if (end == count) {
          double time = finishFrom(next.state, event);
          if (time < best) {
            best = time;
            bestLast = std::move(next);
          }
          continue;
        }
        // Components that cannot matter any more are raised to what the
        // future implies anyway, so that more states compare.
        replay.canonicalize(next.state, event);
        next.state.tailBound = std::max(
            next.state.tailBound,
            next.state.clock.getStreamFree(stream) / slowdown + restBound[end]);
        if (lowerBound(next.state, end) > upperBound)
          continue;
        insertIntoFront(fronts[end], std::move(next));
        // Every earlier split point adds states to this front, and each
        // insertion compares with every state kept, which made the search
        // cubic in the stream's gradients (43 s for 2000 against 1 s for
        // 1000); a front is cut back while it grows instead. Nothing refers
        // to its states before its split point is reached.
        if (sharded && fronts[end].size() > kShardedFrontCutBackAt)
          keepMostPromising(end);
      }
    }
  }

  std::vector<Bucket> buckets;
  if (best == std::numeric_limits<double>::infinity())
    return {std::move(buckets), best};
  size_t split = count;
  const Node *reached = &bestLast;
  while (split > 0) {
    std::vector<size_t> bucketMembers(members.begin() + reached->previousSplit,
                                      members.begin() + split);
    buckets.push_back(layOutBucket(gradients, bucketMembers, options.padding));
    split = reached->previousSplit;
    if (split > 0)
      reached = &fronts[split][reached->previousNode];
  }
  std::reverse(buckets.begin(), buckets.end());
  return {std::move(buckets), best};
}
