//===- TimelineReplay.cpp - Layouts priced on a StepTimeline --------------===//
//
// The replay of a StepTimeline with given bucket costs: the primitives the
// optimal-layout search composes, and evaluate() of a whole layout.
//
//===----------------------------------------------------------------------===//

#include "ddp/Bucketing/StepTimeline.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>

using namespace ddp::bucketing;

TimelineReplay::TimelineReplay(const StepTimeline &timeline,
                               const BucketCosts &costs)
    : costs(costs), numStreams(timeline.numStreams),
      slowdown(timeline.slowdown) {
  std::vector<bool> bucketStream(numStreams, false);
  for (unsigned stream : costs.stream)
    bucketStream[stream] = true;

  readyEvent.assign(timeline.numGradients, 0);
  segmentBegin.push_back(0);
  for (const StepTimeline::Item &item : timeline.backward) {
    if (item.kind == StepTimeline::Item::ParamUse) {
      paramUses.push_back(
          {events.size(), work.size(), item.gradient, item.ordinal});
      continue;
    }
    bool isEvent = item.kind == StepTimeline::Item::Ready ||
                   (item.kind == StepTimeline::Item::Blocking &&
                    bucketStream[item.stream]);
    if (isEvent) {
      Event event;
      if (item.kind == StepTimeline::Item::Ready) {
        event.kind = Event::Ready;
        event.gradient = item.gradient;
        readyEvent[item.gradient] = events.size();
      } else {
        event.kind = Event::SharedCollective;
        event.stream = item.stream;
        event.seconds = item.seconds;
      }
      events.push_back(event);
      segmentBegin.push_back(work.size());
      continue;
    }
    if (item.kind == StepTimeline::Item::Compute)
      work.addKernel(item.seconds);
    else
      work.addPrivateCollective(item.seconds);
  }
  segmentBegin.push_back(work.size());
  backwardSuffix.assign(events.size() + 1, 0.0);
  for (size_t event = events.size() + 1; event-- > 0;) {
    backwardSuffix[event] =
        work.getTimeBetween(segmentBegin[event], segmentBegin[event + 1]);
    if (event < events.size())
      backwardSuffix[event] +=
          events[event].seconds + backwardSuffix[event + 1];
  }

  if (costs.distributedOptimizer) {
    // The tail as ddp-distribute-optimizer leaves it: the updates are
    // replaced by their buckets' sharded work, at the first of them.
    tail = timeline.tail;
    firstUse.assign(timeline.numGradients, tail.size());
    for (auto [position, item] : llvm::enumerate(tail))
      if (item.isUpdate && firstUse[item.gradients.front()] == tail.size())
        firstUse[item.gradients.front()] = position;
    tailSuffix.assign(tail.size() + 1, 0.0);
    for (size_t i = tail.size(); i-- > 0;)
      tailSuffix[i] =
          tailSuffix[i + 1] + (tail[i].isUpdate ? 0 : tail[i].seconds);
    anchor.assign(numStreams, SIZE_MAX);
    for (auto [gradient, stream] : llvm::enumerate(costs.stream))
      anchor[stream] = std::min(anchor[stream], firstUse[gradient]);
    return;
  }

  // The tail as the overlap pass leaves it: before the first kernel that
  // uses a reduced gradient, its unpack kernel (the cast back); the bucket's
  // wait goes before the first of them.
  std::vector<double> work;
  firstUse.assign(timeline.numGradients, SIZE_MAX);
  for (const StepTimeline::TailItem &item : timeline.tail) {
    for (size_t gradient : item.gradients) {
      if (firstUse[gradient] != SIZE_MAX)
        continue;
      firstUse[gradient] = work.size();
      work.push_back(costs.unpackTime[gradient]);
    }
    work.push_back(item.seconds);
  }
  for (size_t &position : firstUse)
    if (position == SIZE_MAX)
      position = work.size();
  tailSuffix.assign(work.size() + 1, 0.0);
  for (size_t i = work.size(); i-- > 0;)
    tailSuffix[i] = tailSuffix[i + 1] + work[i];
}

TimelineReplay::State TimelineReplay::initialState() const {
  State state{timing::StepClock(slowdown, numStreams)};
  if (costs.distributedOptimizer) {
    state.firstGatherReady.assign(numStreams,
                                  -std::numeric_limits<double>::infinity());
    state.gatherWork.assign(numStreams, 0.0);
  }
  return state;
}

void TimelineReplay::runSegmentBefore(size_t index, State &state) const {
  state.clock.runWork(work, segmentBegin[index], segmentBegin[index + 1]);
}

void TimelineReplay::runEvent(size_t index, State &state) const {
  const Event &event = events[index];
  if (event.kind == Event::Ready)
    return;
  // A synchronous collective queues behind what its stream already carries.
  state.clock.blockUntil(
      state.clock.issueCollective(event.stream, event.seconds).end);
}

double TimelineReplay::issueBucket(State &state, double issueSeconds,
                                   unsigned stream, double collectiveSeconds,
                                   size_t firstUse,
                                   const ShardedTail *sharded) const {
  state.clock.runKernel(issueSeconds);
  double end = state.clock.issueCollective(stream, collectiveSeconds).end;
  if (!sharded) {
    state.tailBound =
        std::max(state.tailBound,
                 state.clock.getTailWaitBound(end, tailSuffix[firstUse]));
    return end;
  }
  // Simulator: the asynchronous all-reduce across instances, issued right
  // after the reduce-scatter and after it (`async after`).
  if (costs.numInstances > 1)
    end = state.clock
              .issueCollective(costs.acrossInstancesStream,
                               sharded->acrossInstances, /*notBefore=*/end)
              .end;
  addShardedWork(state, end, *sharded);
  return end;
}

void TimelineReplay::addShardedWork(State &state, double end,
                                    const ShardedTail &sharded) const {
  // On the overlap model the tail is max-plus: its end is the latest of
  // (when the tail starts, or each stream's first all-gather can start)
  // plus the work after that point. The bucket's work joins every such
  // point before its position; the bucket that holds a stream's first
  // all-gather also sets when that can start.
  double total = sharded.getBeforeFirstGather() + sharded.getFromFirstGather();
  // With several instances every bucket's wait is for its all-reduce across
  // them, which can bind the tail: from it on run the bucket's work, that
  // of the buckets issued after it (later in the tail, as ready order and
  // optimizer order agree), and the kernels from its position.
  if (costs.numInstances > 1)
    state.acrossBound =
        std::max(state.acrossBound,
                 end - state.shardedWork + tailSuffix[sharded.position]);
  state.shardedWork += total;
  for (unsigned other = 0; other < numStreams; ++other) {
    if (anchor[other] == SIZE_MAX || sharded.position < anchor[other])
      continue;
    if (sharded.position > anchor[other]) {
      state.gatherWork[other] += total;
      continue;
    }
    state.gatherWork[other] += sharded.getFromFirstGather();
    state.firstGatherReady[other] = end + sharded.getBeforeFirstGather();
  }
}

double TimelineReplay::finish(const State &state) const {
  if (!costs.distributedOptimizer)
    return state.clock.finishTail(tailSuffix.front(), state.tailBound);
  assert(slowdown == 1 && "the sharded tail has a closed form without "
                          "slowdown only; evaluate() replays it");
  // Every bucket's sharded work follows the start of the tail; a stream's
  // first all-gather starts once its reduce-scatters are done and its
  // bucket's kernels before it have run; the all-gathers after it find the
  // stream idle.
  double end =
      std::max({state.tailBound, state.clock.getCommBusyUntil(),
                state.clock.getNow() + tailSuffix.front() + state.shardedWork,
                state.acrossBound + state.shardedWork});
  for (unsigned stream = 0; stream < numStreams; ++stream) {
    if (anchor[stream] == SIZE_MAX || anchor[stream] == tail.size())
      continue;
    double start = std::max(state.firstGatherReady[stream],
                            state.clock.getStreamFree(stream));
    end = std::max(end, start + state.gatherWork[stream] +
                            tailSuffix[anchor[stream]]);
  }
  return end;
}

void TimelineReplay::canonicalize(State &state, size_t nextEvent) const {
  state.clock.releaseIdleStreams();
  // finish() takes max(h(start of tail) + all tail work, tailBound), where
  // the tail starts no earlier than now + the backward left at full speed,
  // and h(t) >= t / slowdown whatever the end of communication.
  state.tailBound =
      std::max(state.tailBound,
               (state.clock.getNow() + backwardSuffix[nextEvent]) / slowdown +
                   tailSuffix.front());
}

double TimelineReplay::getIssueTime(const Bucket &bucket) const {
  double seconds =
      costs.getBucketIssueTime(costs.stream[bucket.entries.front().gradient],
                               bucket.type, bucket.paddedNumel);
  for (const BucketEntry &entry : bucket.entries)
    seconds += costs.packTime[entry.gradient];
  return seconds;
}

double TimelineReplay::getCollectiveTime(const Bucket &bucket) const {
  return costs.getCollectiveTime(costs.stream[bucket.entries.front().gradient],
                                 bucket.type, bucket.paddedNumel);
}

size_t TimelineReplay::getFirstUse(const Bucket &bucket) const {
  size_t first = SIZE_MAX;
  for (const BucketEntry &entry : bucket.entries)
    first = std::min(first, firstUse[entry.gradient]);
  return first;
}

ShardedTail TimelineReplay::getShardedTail(const Bucket &bucket) const {
  ShardedTailBuilder builder(costs);
  for (const BucketEntry &entry : bucket.entries)
    builder.add(entry.gradient);
  return builder.build(costs.stream[bucket.entries.front().gradient],
                       bucket.type, bucket.paddedNumel, getFirstUse(bucket));
}

std::vector<std::vector<size_t>>
TimelineReplay::getBucketsIssuedAt(const BucketLayout &layout) const {
  std::vector<std::vector<size_t>> issuedAt(events.size());
  size_t position = 0;
  for (auto [index, bucket] : llvm::enumerate(layout.buckets)) {
    position = std::max(position, readyEvent[getLastReadyIndex(bucket)]);
    issuedAt[position].push_back(index);
  }
  return issuedAt;
}

double TimelineReplay::evaluate(const BucketLayout &layout) const {
  if (costs.distributedOptimizer && costs.overlapParamGather)
    return evaluateWithParamGather(layout);
  std::vector<std::vector<size_t>> issuedAt = getBucketsIssuedAt(layout);
  std::vector<ShardedTail> sharded;
  if (costs.distributedOptimizer)
    for (const Bucket &bucket : layout.buckets)
      sharded.push_back(getShardedTail(bucket));
  std::vector<double> reductionEnd(layout.buckets.size());
  State state = initialState();
  for (size_t event = 0; event < events.size(); ++event) {
    runSegmentBefore(event, state);
    runEvent(event, state);
    issueBucketsAt(event, layout, issuedAt, sharded, state, reductionEnd);
  }
  runSegmentBefore(events.size(), state);
  if (!costs.distributedOptimizer)
    return finish(state);
  return replayShardedTail(layout, sharded, reductionEnd, state);
}

void TimelineReplay::issueBucketsAt(
    size_t event, const BucketLayout &layout,
    llvm::ArrayRef<std::vector<size_t>> issuedAt,
    llvm::ArrayRef<ShardedTail> sharded, State &state,
    std::vector<double> &reductionEnd) const {
  for (size_t index : issuedAt[event]) {
    const Bucket &bucket = layout.buckets[index];
    reductionEnd[index] =
        issueBucket(state, getIssueTime(bucket),
                    costs.stream[bucket.entries.front().gradient],
                    getCollectiveTime(bucket), getFirstUse(bucket),
                    sharded.empty() ? nullptr : &sharded[index]);
  }
}

double
TimelineReplay::evaluateWithParamGather(const BucketLayout &layout) const {
  std::vector<std::vector<size_t>> issuedAt = getBucketsIssuedAt(layout);
  std::vector<ShardedTail> sharded;
  for (const Bucket &bucket : layout.buckets)
    sharded.push_back(getShardedTail(bucket));

  // One all-gather per group of each bucket, as ddp-distribute-optimizer
  // leaves them (buckets in tail order, groups in their order), then in
  // ddp-overlap-param-gather's forward order: by the first op naming one of
  // their parameters, or, for a group whose parameters nothing names before
  // the tail, its shard optimizer.
  constexpr size_t kInTail = SIZE_MAX;
  std::vector<size_t> useOrdinal(readyEvent.size(), kInTail);
  for (const ParamUse &use : paramUses)
    useOrdinal[use.gradient] = use.ordinal;
  struct Gather {
    size_t bucket;
    size_t group;
    size_t firstUse;
    double end = 0;
  };
  std::vector<Gather> gathers;
  std::vector<size_t> byPosition(layout.buckets.size());
  for (size_t index = 0; index < byPosition.size(); ++index)
    byPosition[index] = index;
  llvm::stable_sort(byPosition, [&](size_t a, size_t b) {
    return sharded[a].position < sharded[b].position;
  });
  for (size_t index : byPosition) {
    // ShardedTailBuilder's groups: update classes by first gradient.
    llvm::SmallVector<unsigned, 1> classes;
    size_t first = gathers.size();
    for (const BucketEntry &entry : layout.buckets[index].entries) {
      unsigned updateClass = costs.update[entry.gradient].updateClass;
      auto *known = llvm::find(classes, updateClass);
      size_t group = known - classes.begin();
      if (known == classes.end()) {
        classes.push_back(updateClass);
        gathers.push_back({index, group, kInTail});
      }
      size_t &firstUse = gathers[first + group].firstUse;
      firstUse = std::min(firstUse, useOrdinal[entry.gradient]);
    }
  }
  llvm::stable_sort(gathers, [](const Gather &a, const Gather &b) {
    return a.firstUse < b.firstUse;
  });
  std::vector<llvm::SmallVector<size_t, 1>> gatherOf(layout.buckets.size());
  for (auto [index, gather] : llvm::enumerate(gathers)) {
    auto &groups = gatherOf[gather.bucket];
    groups.resize(std::max(groups.size(), gather.group + 1));
    groups[gather.group] = index;
  }

  State state = initialState();
  timing::StepClock &clock = state.clock;
  auto getGroup = [&](const Gather &gather) -> const ShardedGroup & {
    return sharded[gather.bucket].groups[gather.group];
  };
  // Simulator, op by op: ddp.get_param_shard, the asynchronous all-gather;
  // at the first use ddp.wait, ddp.set_params and, chained, the next issue.
  size_t nextIssue = 0, nextWait = 0;
  auto issueGather = [&]() {
    Gather &gather = gathers[nextIssue++];
    const ShardedGroup &group = getGroup(gather);
    unsigned stream =
        costs.stream[layout.buckets[gather.bucket].entries.front().gradient];
    gather.end = clock.issueCollective(stream, group.gather).end;
  };
  auto waitGather = [&]() {
    const Gather &gather = gathers[nextWait++];
    clock.blockUntil(gather.end);
    if (!costs.alignParamGather && nextIssue < gathers.size())
      issueGather();
  };
  if (costs.alignParamGather)
    while (nextIssue < gathers.size())
      issueGather();
  else if (!gathers.empty())
    issueGather();

  std::vector<double> reductionEnd(layout.buckets.size());
  size_t nextUse = 0;
  for (size_t event = 0; event <= events.size(); ++event) {
    size_t begin = segmentBegin[event];
    for (; nextUse < paramUses.size() && paramUses[nextUse].event == event;
         ++nextUse) {
      const ParamUse &use = paramUses[nextUse];
      clock.runWork(work, begin, use.workIndex);
      begin = use.workIndex;
      while (nextWait < gathers.size() &&
             gathers[nextWait].firstUse == use.ordinal)
        waitGather();
    }
    clock.runWork(work, begin, segmentBegin[event + 1]);
    if (event == events.size())
      break;
    runEvent(event, state);
    issueBucketsAt(event, layout, issuedAt, sharded, state, reductionEnd);
  }
  return replayShardedTail(
      layout, sharded, reductionEnd, state, [&](size_t bucket, size_t group) {
        size_t index = gatherOf[bucket][group];
        if (gathers[index].firstUse != kInTail)
          return;
        assert(index == nextWait && "tail gathers are waited in tail order");
        waitGather();
      });
}

double TimelineReplay::replayShardedTail(
    const BucketLayout &layout, llvm::ArrayRef<ShardedTail> sharded,
    llvm::ArrayRef<double> reductionEnd, State &state,
    llvm::function_ref<void(size_t, size_t)> beforeShardOptimizer) const {
  // Op by op, as the simulator runs the scheduled tail: a bucket's wait
  // (for its all-reduce across instances, with several), then per group
  // the cast and the shard optimizer and the all-gather (which holds the
  // compute stream).
  timing::StepClock &clock = state.clock;
  std::vector<size_t> byPosition(layout.buckets.size());
  for (size_t index = 0; index < byPosition.size(); ++index)
    byPosition[index] = index;
  llvm::stable_sort(byPosition, [&](size_t a, size_t b) {
    return sharded[a].position < sharded[b].position;
  });
  auto runBucket = [&](size_t index) {
    clock.blockUntil(reductionEnd[index]);
    unsigned stream =
        costs.stream[layout.buckets[index].entries.front().gradient];
    for (auto [number, group] : llvm::enumerate(sharded[index].groups)) {
      if (!costs.overlapParamGather) {
        clock.runKernel(group.beforeGather);
        clock.blockUntil(clock.issueCollective(stream, group.gather).end);
        continue;
      }
      // The cast and the shard optimizer (ddp.set_param_shard copies
      // nothing).
      clock.runKernel(group.cast);
      beforeShardOptimizer(index, number);
      clock.runKernel(group.beforeGather - group.cast);
    }
  };
  size_t next = 0;
  for (size_t position = 0; position <= tail.size(); ++position) {
    for (; next < byPosition.size() &&
           sharded[byPosition[next]].position == position;
         ++next)
      runBucket(byPosition[next]);
    if (position < tail.size() && !tail[position].isUpdate)
      clock.runKernel(tail[position].seconds);
  }
  return clock.getStepEnd();
}
