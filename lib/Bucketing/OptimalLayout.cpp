//===- OptimalLayout.cpp - The cost-model-optimal bucket layout -----------===//

#include "ddp/Bucketing/OptimalLayout.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace ddp::bucketing;

namespace {

using State = TimelineReplay::State;

/// `a` is no worse than `b` in every component, so nothing reachable from
/// `b` beats what is reachable from `a`.
bool dominates(const State &a, const State &b) {
  if (a.now > b.now || a.tailBound > b.tailBound)
    return false;
  for (auto [freeA, freeB] : llvm::zip(a.streamFree, b.streamFree))
    if (freeA > freeB)
      return false;
  return true;
}

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
  StreamSearch(llvm::ArrayRef<Gradient> gradients,
               const TimelineReplay &replay,
               const OptimalLayoutOptions &options,
               llvm::ArrayRef<size_t> members,
               llvm::ArrayRef<Bucket> fixedBuckets)
      : gradients(gradients), replay(replay), options(options),
        members(members), fixedBuckets(fixedBuckets),
        fixedAt(replay.getNumEvents()) {
    // Fixed buckets keep their issue order; each goes after its last
    // gradient, as in a layout sorted by completion.
    for (auto [index, bucket] : llvm::enumerate(fixedBuckets))
      fixedAt[replay.getReadyEvent(getLastReadyIndex(bucket))].push_back(
          index);
  }

  /// The buckets of this stream, and the replayed step time with them.
  std::pair<std::vector<Bucket>, double> run(size_t &largestFront);

private:
  /// Runs events [from, to), issuing the fixed buckets that follow them.
  void runEvents(size_t from, size_t to, State &state) const {
    for (size_t event = from; event < to; ++event) {
      replay.runSegmentBefore(event, state);
      replay.runEvent(event, state);
      for (size_t index : fixedAt[event]) {
        const Bucket &bucket = fixedBuckets[index];
        replay.issueBucket(state, replay.getIssueTime(bucket),
                           replay.getCosts().stream[bucket.entries.front().gradient],
                           replay.getCollectiveTime(bucket),
                           replay.getFirstUse(bucket));
      }
    }
  }

  llvm::ArrayRef<Gradient> gradients;
  const TimelineReplay &replay;
  const OptimalLayoutOptions &options;
  llvm::ArrayRef<size_t> members;
  llvm::ArrayRef<Bucket> fixedBuckets;
  std::vector<std::vector<size_t>> fixedAt;
};

std::pair<std::vector<Bucket>, double>
StreamSearch::run(size_t &largestFront) {
  const BucketCosts &costs = replay.getCosts();
  size_t count = members.size();
  const Gradient &first = gradients[members.front()];
  unsigned stream = costs.stream[members.front()];
  int64_t endDivisor = getBucketEndDivisor(options.padding, first.groupSize);
  size_t span = options.maxBucketGradients ? options.maxBucketGradients : count;

  // fronts[s]: states right after the bucket ending with members[s - 1] is
  // issued; fronts[0] holds the start of the step.
  std::vector<std::vector<Node>> fronts(count + 1);
  fronts[0].push_back({replay.initialState(), 0, 0});
  auto resumeEvent = [&](size_t split) {
    return split == 0 ? 0 : replay.getReadyEvent(members[split - 1]) + 1;
  };

  for (size_t split = 0; split < count; ++split) {
    largestFront = std::max(largestFront, fronts[split].size());
    for (size_t node = 0; node < fronts[split].size(); ++node) {
      State state = fronts[split][node].state;
      size_t event = resumeEvent(split);
      int64_t cursor = 0;
      double packSeconds = 0;
      size_t firstUse = SIZE_MAX;
      size_t last = std::min(count, split + span);
      for (size_t end = split + 1; end <= last; ++end) {
        size_t gradient = members[end - 1];
        size_t ready = replay.getReadyEvent(gradient);
        runEvents(event, ready, state);
        replay.runSegmentBefore(ready, state);
        event = ready + 1;

        cursor = padGradientStart(options.padding, cursor) +
                 gradients[gradient].numel;
        packSeconds += costs.packTime[gradient];
        firstUse = std::min(firstUse, replay.getFirstUse(gradient));
        int64_t padded = alignTo(cursor, endDivisor);

        Node next{state, split, node};
        replay.issueBucket(
            next.state,
            packSeconds +
                costs.bucketIssueTime(stream, first.reduceType, padded),
            stream, costs.collectiveTime(stream, first.reduceType, padded),
            firstUse);
        insertIntoFront(fronts[end], std::move(next));
      }
    }
    // The front of a split point is complete once every earlier split point
    // has been extended; the earlier fronts are no longer needed but for
    // the way back.
  }
  largestFront = std::max(largestFront, fronts[count].size());

  double best = std::numeric_limits<double>::infinity();
  size_t bestNode = 0;
  for (auto [index, node] : llvm::enumerate(fronts[count])) {
    State state = node.state;
    runEvents(resumeEvent(count), replay.getNumEvents(), state);
    replay.runSegmentBefore(replay.getNumEvents(), state);
    double time = replay.finish(state);
    if (time < best) {
      best = time;
      bestNode = index;
    }
  }

  std::vector<Bucket> buckets;
  size_t split = count, node = bestNode;
  while (split > 0) {
    const Node &reached = fronts[split][node];
    std::vector<size_t> bucketMembers(members.begin() + reached.previousSplit,
                                      members.begin() + split);
    buckets.push_back(layOutBucket(gradients, bucketMembers, options.padding));
    split = reached.previousSplit;
    node = reached.previousNode;
  }
  std::reverse(buckets.begin(), buckets.end());
  return {std::move(buckets), best};
}

using StreamKey = std::pair<ElementType, std::string>;

StreamKey getStreamKey(const Gradient &gradient) {
  return {gradient.reduceType, gradient.group};
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

  // With several streams, each is searched with the others fixed, starting
  // from the best starting layout (issued by completion, so that every bucket
  // goes right after its last gradient) or one bucket per stream.
  BucketLayout current;
  double currentTime = std::numeric_limits<double>::infinity();
  if (streamOrder.size() > 1) {
    for (const BucketLayout &start : startingLayouts) {
      BucketLayout byCompletion = start;
      sortByCompletion(byCompletion.buckets);
      double time = replay.evaluate(byCompletion);
      if (time < currentTime) {
        currentTime = time;
        current = std::move(byCompletion);
      }
    }
    if (current.buckets.empty()) {
      for (const StreamKey &key : streamOrder)
        current.buckets.push_back(
            layOutBucket(gradients, streamMembers[key], options.padding));
      sortByCompletion(current.buckets);
      currentTime = replay.evaluate(current);
    }
  }

  for (unsigned round = 0; round < options.maxRounds; ++round) {
    bool improved = false;
    for (const StreamKey &key : streamOrder) {
      std::vector<Bucket> fixed;
      for (const Bucket &bucket : current.buckets)
        if (getStreamKey(gradients[bucket.entries.front().gradient]) != key)
          fixed.push_back(bucket);
      StreamSearch search(gradients, replay, options, streamMembers[key],
                          fixed);
      auto [buckets, time] = search.run(result.largestFront);
      // The search's time is that of the merged layout; strict improvement
      // keeps the loop finite.
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

  result.layout = std::move(current);
  result.stepTime = currentTime;
  for (const BucketLayout &start : startingLayouts) {
    double time = replay.evaluate(start);
    if (time < result.stepTime) {
      result.layout = start;
      result.stepTime = time;
      result.startingLayoutWon = true;
    }
  }
  return result;
}
