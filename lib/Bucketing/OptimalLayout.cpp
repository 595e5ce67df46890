//===- OptimalLayout.cpp - The cost-model-optimal bucket layout -----------===//

#include "ddp/Bucketing/OptimalLayout.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <map>

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

/// The search over the split points of one stream, the buckets of every
/// other stream fixed.
class StreamSearch {
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
  /// buckets hold at most `span` gradients. States that cannot lead to a
  /// step time below `upperBound` are dropped; when nothing beats it the
  /// result is empty.
  std::pair<std::vector<Bucket>, double>
  run(size_t span, double upperBound, size_t &largestFront, size_t stride = 1);

private:
  /// Runs events [from, to), issuing the fixed buckets that follow them.
  void runEvents(size_t from, size_t to, State &state) const {
    const BucketCosts &costs = replay.getCosts();
    for (size_t event = from; event < to; ++event) {
      replay.runSegmentBefore(event, state);
      replay.runEvent(event, state);
      for (size_t index : fixedAt[event]) {
        const Bucket &bucket = fixedBuckets[index];
        replay.issueBucket(state, replay.getIssueTime(bucket),
                           costs.stream[bucket.entries.front().gradient],
                           replay.getCollectiveTime(bucket),
                           replay.getFirstUse(bucket),
                           fixedSharded.empty() ? nullptr
                                                : &fixedSharded[index]);
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

std::pair<std::vector<Bucket>, double> StreamSearch::run(size_t span,
                                                         double upperBound,
                                                         size_t &largestFront,
                                                         size_t stride) {
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
    std::stable_sort(front.begin(), front.end(),
                     [&](const Node &a, const Node &b) {
                       return lowerBound(a.state, split) <
                              lowerBound(b.state, split);
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
      Candidate candidate{
          packSeconds + costs.getBucketIssueTime(stream, type, padded),
          costs.getCollectiveTime(stream, type, padded), firstUse, {}};
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

        if (end % stride != 0 && end != count)
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
        next.state.tailBound =
            std::max(next.state.tailBound,
                     next.state.clock.getStreamFree(stream) / slowdown +
                         restBound[end]);
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

using StreamKey = std::pair<ElementType, std::string>;

/// The first, bounding pass of a stream's search splits only after every
/// this many gradients.
constexpr size_t kBoundingStride = 8;

StreamKey getStreamKey(const Gradient &gradient) {
  return {gradient.reduceType, gradient.group};
}

/// The stream-by-stream search on `replay`, from `current`.
BucketLayout searchStreams(llvm::ArrayRef<Gradient> gradients,
                           const TimelineReplay &replay,
                           const OptimalLayoutOptions &options,
                           const std::vector<StreamKey> &streamOrder,
                           std::map<StreamKey, std::vector<size_t>> &members,
                           BucketLayout current, OptimalLayoutResult &result) {
  double currentTime = current.buckets.empty()
                           ? std::numeric_limits<double>::infinity()
                           : replay.evaluate(current);
  for (unsigned round = 0; round < options.maxRounds; ++round) {
    bool improved = false;
    for (const StreamKey &key : streamOrder) {
      std::vector<Bucket> fixed;
      for (const Bucket &bucket : current.buckets)
        if (getStreamKey(gradients[bucket.entries.front().gradient]) != key)
          fixed.push_back(bucket);
      StreamSearch search(gradients, replay, options, members[key], fixed);
      // A first pass on a coarse grid of split points gives a step time that
      // bounds the full search, which then drops every state that cannot
      // beat it.
      size_t count = members[key].size();
      size_t span = options.maxBucketGradients
                        ? std::min<size_t>(options.maxBucketGradients, count)
                        : count;
      double bound = currentTime;
      if (count > kBoundingStride) {
        auto [buckets, time] =
            search.run(span, bound, result.largestFront, kBoundingStride);
        bound = std::min(bound, time);
      }
      // Ties must survive: the bound may be the optimum.
      auto [buckets, time] =
          search.run(span, bound * (1 + 1e-12), result.largestFront);
      // Strict improvement keeps the loop finite.
      if (time < currentTime) {
        BucketLayout next;
        next.buckets = std::move(fixed);
        llvm::append_range(next.buckets, buckets);
        sortByCompletion(next.buckets);
        current = std::move(next);
        currentTime = replay.evaluate(current);
        improved = true;
      }
    }
    result.rounds = round + 1;
    if (!improved || streamOrder.size() == 1)
      break;
  }
  result.searchStepTime = currentTime;
  return current;
}

/// How far refine() moves a boundary, in gradients.
constexpr size_t kRefineReach = 16;

/// Whether refine() also tries cuts 2^j gradients from a boundary beyond
/// kRefineReach, for every j: moves of any size in O(log) candidates.
enum class Reach { Near, Geometric };

/// Whether `cut` (a bucket of the pair ending after `cut` of its `size`
/// gradients) is a candidate near `boundary`.
static bool isCandidateCut(size_t cut, size_t boundary, size_t size,
                           Reach reach) {
  if (cut == boundary)
    return false;
  size_t distance = cut > boundary ? cut - boundary : boundary - cut;
  if (distance <= kRefineReach || cut == size)
    return true;
  return reach == Reach::Geometric && llvm::isPowerOf2_64(distance);
}

/// Re-cuts each pair of consecutive buckets of one stream at the boundary
/// (or merge) that shortens the replay most, while any does.
unsigned refine(llvm::ArrayRef<Gradient> gradients,
                const TimelineReplay &replay,
                const OptimalLayoutOptions &options, BucketLayout &layout,
                double &time, Reach reach = Reach::Near) {
  unsigned moves = 0;
  for (unsigned sweep = 0; sweep < options.maxRefinementSweeps; ++sweep) {
    bool improved = false;
    for (size_t index = 0; index + 1 < layout.buckets.size(); ++index) {
      StreamKey key = getStreamKey(
          gradients[layout.buckets[index].entries.front().gradient]);
      // The next bucket of the same stream.
      size_t next = index + 1;
      while (next < layout.buckets.size() &&
             getStreamKey(
                 gradients[layout.buckets[next].entries.front().gradient]) !=
                 key)
        ++next;
      if (next == layout.buckets.size())
        continue;
      std::vector<size_t> joined;
      for (size_t bucket : {index, next})
        for (const BucketEntry &entry : layout.buckets[bucket].entries)
          joined.push_back(entry.gradient);
      // Cuts near the current one, and no cut at all (a merge).
      BucketLayout best;
      double bestTime = time;
      size_t boundary = layout.buckets[index].entries.size();
      for (size_t cut = 1; cut <= joined.size(); ++cut) {
        if (!isCandidateCut(cut, boundary, joined.size(), reach))
          continue;
        BucketLayout candidate = layout;
        candidate.buckets.erase(candidate.buckets.begin() + next);
        std::vector<size_t> head(joined.begin(), joined.begin() + cut);
        std::vector<size_t> tail(joined.begin() + cut, joined.end());
        candidate.buckets[index] =
            layOutBucket(gradients, head, options.padding);
        if (!tail.empty())
          candidate.buckets.insert(
              candidate.buckets.begin() + index + 1,
              layOutBucket(gradients, tail, options.padding));
        sortByCompletion(candidate.buckets);
        double candidateTime = replay.evaluate(candidate);
        if (candidateTime < bestTime) {
          bestTime = candidateTime;
          best = std::move(candidate);
        }
      }
      if (bestTime < time) {
        time = bestTime;
        layout = std::move(best);
        ++moves;
        improved = true;
      }
    }
    if (!improved)
      break;
  }
  return moves;
}

/// Each stream's gradients, in ready order, cut into `count` buckets of
/// about equal elements (fewer if the stream has fewer gradients).
BucketLayout layOutEvenly(llvm::ArrayRef<Gradient> gradients,
                          const std::map<StreamKey, std::vector<size_t>> &members,
                          size_t count, const PaddingOptions &padding) {
  BucketLayout layout;
  for (const auto &[key, stream] : members) {
    int64_t total = 0;
    for (size_t gradient : stream)
      total += gradients[gradient].numel;
    std::vector<size_t> bucket;
    int64_t filled = 0;
    size_t made = 0;
    for (auto [index, gradient] : llvm::enumerate(stream)) {
      bucket.push_back(gradient);
      filled += gradients[gradient].numel;
      size_t left = stream.size() - index - 1;
      // Close the bucket once it holds its share of the elements.
      bool full = double(filled) * count >= double(total) * (made + 1);
      if (left == 0 || (made + 1 < count && full)) {
        layout.buckets.push_back(layOutBucket(gradients, bucket, padding));
        bucket.clear();
        ++made;
      }
    }
  }
  sortByCompletion(layout.buckets);
  return layout;
}

/// With overlap-param-gather the search's model keeps the all-gathers in
/// the tail, but the step gathers every bucket in the forward, chained
/// (each issued at the previous one's wait) or all at once: how long the
/// forward waits depends on the layout in a way the search does not see
/// (many small buckets hide behind the compute between their first uses,
/// one large bucket is waited for whole). So layouts of 1 to 64 even
/// buckets per stream, and the result so far, are replayed with the
/// gathers in the forward; the best is refined with moves of any size.
unsigned searchForwardGathers(llvm::ArrayRef<Gradient> gradients,
                              const TimelineReplay &replay,
                              const std::map<StreamKey, std::vector<size_t>> &members,
                              const OptimalLayoutOptions &options,
                              BucketLayout &layout, double &time) {
  size_t largest = 0;
  for (const auto &[key, stream] : members)
    largest = std::max(largest, stream.size());
  for (size_t count : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}) {
    if (count > largest)
      break;
    BucketLayout even = layOutEvenly(gradients, members, count, options.padding);
    double evenTime = replay.evaluate(even);
    if (evenTime < time) {
      time = evenTime;
      layout = std::move(even);
    }
  }
  return refine(gradients, replay, options, layout, time, Reach::Geometric);
}

/// Buckets of each stream are contiguous runs of its ready order.
bool isContiguousPerStream(llvm::ArrayRef<Gradient> gradients,
                           const BucketLayout &layout) {
  std::vector<const Bucket *> byFirst;
  for (const Bucket &bucket : layout.buckets)
    byFirst.push_back(&bucket);
  llvm::sort(byFirst, [](const Bucket *a, const Bucket *b) {
    return a->entries.front().gradient < b->entries.front().gradient;
  });
  std::map<StreamKey, std::vector<size_t>> order;
  for (auto [index, gradient] : llvm::enumerate(gradients))
    order[getStreamKey(gradient)].push_back(index);
  std::map<StreamKey, size_t> position;
  for (const Bucket *bucket : byFirst) {
    StreamKey key = getStreamKey(gradients[bucket->entries.front().gradient]);
    for (const BucketEntry &entry : bucket->entries)
      if (order[key][position[key]++] != entry.gradient)
        return false;
  }
  return true;
}

} // namespace

llvm::Expected<OptimalLayoutResult> ddp::bucketing::computeOptimalLayout(
    llvm::ArrayRef<Gradient> gradients, const TimelineReplay &replay,
    const OptimalLayoutOptions &options,
    llvm::ArrayRef<BucketLayout> startingLayouts) {
  if (llvm::Error error = validateGradients(gradients))
    return std::move(error);
  OptimalLayoutResult result;
  if (gradients.empty())
    return result;

  std::map<StreamKey, std::vector<size_t>> streamMembers;
  std::vector<StreamKey> streamOrder;
  for (auto [index, gradient] : llvm::enumerate(gradients)) {
    auto [it, inserted] = streamMembers.try_emplace(getStreamKey(gradient));
    if (inserted)
      streamOrder.push_back(it->first);
    it->second.push_back(index);
  }

  // The search runs on the overlap model, where it is exact.
  TimelineReplay search = replay.withoutSlowdown();
  // With several streams each is searched with the others fixed, starting
  // from the best starting layout (issued by completion, so that every
  // bucket goes right after its last gradient) or one bucket per stream.
  BucketLayout start;
  if (streamOrder.size() > 1) {
    double startTime = std::numeric_limits<double>::infinity();
    for (const BucketLayout &layout : startingLayouts) {
      BucketLayout byCompletion = layout;
      sortByCompletion(byCompletion.buckets);
      double time = search.evaluate(byCompletion);
      if (time < startTime) {
        startTime = time;
        start = std::move(byCompletion);
      }
    }
    if (start.buckets.empty()) {
      for (const StreamKey &key : streamOrder)
        start.buckets.push_back(
            layOutBucket(gradients, streamMembers[key], options.padding));
      sortByCompletion(start.buckets);
    }
  }
  result.layout = searchStreams(gradients, search, options, streamOrder,
                                streamMembers, std::move(start), result);
  result.stepTime = replay.evaluate(result.layout);

  // On the full replay, a starting layout may be faster; boundary moves may
  // recover some of what the slowdown changes.
  for (const BucketLayout &layout : startingLayouts) {
    double time = replay.evaluate(layout);
    if (time < result.stepTime) {
      result.layout = layout;
      result.stepTime = time;
      result.startingLayoutWon = true;
    }
  }
  if (!isContiguousPerStream(gradients, result.layout))
    return result;
  if (replay.getSlowdown() > 1)
    result.refinements =
        refine(gradients, replay, options, result.layout, result.stepTime);
  if (replay.getCosts().overlapParamGather)
    result.refinements +=
        searchForwardGathers(gradients, replay, streamMembers, options,
                             result.layout, result.stepTime);
  return result;
}
