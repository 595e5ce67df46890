//===- OptimalLayout.cpp - The cost-model-optimal bucket layout -----------===//

#include "ddp/Bucketing/OptimalLayout.h"

#include "StreamSearch.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace ddp::bucketing;

namespace {

using StreamKey = std::pair<ElementType, std::string>;

/// The first, bounding pass of a stream's search splits only after every
/// this many gradients.
constexpr size_t kBoundingStride = 8;

StreamKey getStreamKey(const Gradient &gradient) {
  return {gradient.reduceType, gradient.group};
}

/// The split points of `stream` (indexed like StreamSearch::run's) on the
/// grid of every kBoundingStride-th, and within kBoundingStride of a cut
/// after one of `buckets` (buckets of other streams are skipped).
llvm::SmallVector<bool> getSplitsNearCuts(llvm::ArrayRef<size_t> stream,
                                          llvm::ArrayRef<Bucket> buckets) {
  size_t count = stream.size();
  llvm::SmallVector<bool> splits(count + 1, false);
  for (size_t split = kBoundingStride; split <= count;
       split += kBoundingStride)
    splits[split] = true;
  llvm::DenseMap<size_t, size_t> position;
  for (auto [index, gradient] : llvm::enumerate(stream))
    position[gradient] = index;
  for (const Bucket &bucket : buckets) {
    size_t cut = 0;
    for (const BucketEntry &entry : bucket.entries) {
      auto it = position.find(entry.gradient);
      if (it == position.end())
        break;
      cut = std::max(cut, it->second + 1);
    }
    if (cut == 0)
      continue;
    for (size_t split = cut > kBoundingStride ? cut - kBoundingStride : 1;
         split <= std::min(count, cut + kBoundingStride); ++split)
      splits[split] = true;
  }
  return splits;
}

/// The rounds of getSplitsNearCuts' search on a long stream at most.
constexpr unsigned kMaxNearCutRounds = 4;

/// One stream's search (StreamSearch::run) for a step time below
/// `bound`: on every split point, or, with the distributed optimizer on a
/// stream longer than fullShardedSearchUpTo, on the grid of every
/// kBoundingStride-th and then, while that improves, on the grid and near
/// the cuts of the best so far (kMaxNearCutRounds rounds at most). The full
/// search is quadratic in the stream's gradients with fronts of 16 to 64
/// states: 3.5 s on gpt3-175b's 1156, for 0.04 % of the step over the
/// grid's layout, which near its cuts takes ~0.2 s and finds 0.04 % faster
/// than the full search (its fronts are capped: a heuristic either way).
/// Where the cuts are too many for that to save time (more than half the
/// split points near them: the layouts of many small buckets), it searches
/// every split point. Never worse than the grid's layout, nor than `bound`.
std::pair<std::vector<Bucket>, double>
searchStream(StreamSearch &search, llvm::ArrayRef<size_t> stream,
             llvm::ArrayRef<Bucket> currentBuckets, size_t span, double bound,
             const TimelineReplay &replay, const OptimalLayoutOptions &options,
             size_t &largestFront) {
  size_t count = stream.size();
  std::pair<std::vector<Bucket>, double> best = {{}, bound};
  // A first pass on a coarse grid of split points gives a step time that
  // bounds the full search, which then drops every state that cannot beat
  // it.
  if (count > kBoundingStride) {
    best = search.run(span, bound, largestFront,
                      getSplitsNearCuts(stream, /*buckets=*/{}));
    best.second = std::min(best.second, bound);
  }
  // Buckets of fewer gradients than the grid's step cannot end on it only.
  bool nearCuts = replay.getCosts().distributedOptimizer &&
                  count > options.fullShardedSearchUpTo &&
                  span >= kBoundingStride;
  for (unsigned round = 0; round < (nearCuts ? kMaxNearCutRounds : 1);
       ++round) {
    llvm::SmallVector<bool> splits;
    // Where the stream has no layout yet and the grid found none, the
    // search at every split point does as it did.
    if (nearCuts && (!best.first.empty() || std::isfinite(bound))) {
      splits = getSplitsNearCuts(
          stream, best.first.empty() ? currentBuckets
                                     : llvm::ArrayRef<Bucket>(best.first));
      if (2 * size_t(llvm::count(splits, true)) > count)
        splits.clear();
    }
    // Ties must survive: the bound may be the optimum.
    auto [buckets, time] =
        search.run(span, best.second * (1 + 1e-12), largestFront, splits);
    // Empty when nothing beats the best so far (capped fronts may lose the
    // path to it).
    if (buckets.empty())
      break;
    bool improved = time < best.second;
    best = {std::move(buckets), time};
    if (splits.empty() || !improved)
      break;
  }
  return best;
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
      size_t count = members[key].size();
      size_t span = options.maxBucketGradients
                        ? std::min<size_t>(options.maxBucketGradients, count)
                        : count;
      auto [buckets, time] =
          searchStream(search, members[key], current.buckets, span,
                       currentTime, replay, options, result.largestFront);
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
