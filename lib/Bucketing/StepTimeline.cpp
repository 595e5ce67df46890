//===- StepTimeline.cpp - The step as the auto policy replays it ----------===//

#include "ddp/Bucketing/StepTimeline.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace ddp::bucketing;

//===----------------------------------------------------------------------===//
// StepTimeline
//===----------------------------------------------------------------------===//

void StepTimeline::addCompute(double seconds) {
  if (inTail) {
    addTailCompute(seconds);
    return;
  }
  // Consecutive kernels merge: a kernel's slowed duration only depends on how
  // long communication stays in flight, which no kernel changes.
  if (!backward.empty() && backward.back().kind == Item::Compute) {
    backward.back().seconds += seconds;
    return;
  }
  backward.push_back({Item::Compute, seconds, 0, 0});
}

void StepTimeline::addBlockingCollective(unsigned stream, double seconds) {
  if (stream >= numStreams && buildError.empty())
    buildError = llvm::formatv("a collective uses stream {0} of {1}", stream,
                               numStreams);
  if (inTail && buildError.empty())
    buildError = "a synchronous collective after the backward part cannot be "
                 "replayed";
  backward.push_back({Item::Blocking, seconds, stream, 0});
}

void StepTimeline::addGradientReady(size_t gradient) {
  if (inTail && buildError.empty())
    buildError = llvm::formatv("gradient {0} becomes ready after the "
                               "optimizer started",
                               gradient);
  backward.push_back({Item::Ready, 0, 0, gradient});
}

void StepTimeline::beginTail() { inTail = true; }

void StepTimeline::addTailCompute(double seconds,
                                  llvm::ArrayRef<size_t> gradients) {
  tail.push_back(
      {seconds, std::vector<size_t>(gradients.begin(), gradients.end())});
}

llvm::Error StepTimeline::verify() const {
  if (!buildError.empty())
    return llvm::createStringError(buildError);
  if (!inTail)
    return llvm::createStringError("the timeline has no tail");
  if (!(slowdown >= 1) || !std::isfinite(slowdown))
    return llvm::createStringError(
        llvm::formatv("the compute slowdown must be at least 1, got {0}",
                      llvm::format("%g", slowdown)));
  size_t expected = 0;
  for (const Item &item : backward) {
    if (!(item.seconds >= 0) || !std::isfinite(item.seconds))
      return llvm::createStringError(
          llvm::formatv("a kernel or collective takes {0} s",
                        llvm::format("%g", item.seconds)));
    if (item.kind != Item::Ready)
      continue;
    if (item.gradient != expected)
      return llvm::createStringError(
          llvm::formatv("gradient {0} becomes ready where gradient {1} was "
                        "expected; gradients are numbered in ready order",
                        item.gradient, expected));
    ++expected;
  }
  if (expected != numGradients)
    return llvm::createStringError(llvm::formatv(
        "{0} of {1} gradients become ready", expected, numGradients));
  for (const TailItem &item : tail)
    for (size_t gradient : item.gradients)
      if (gradient >= numGradients)
        return llvm::createStringError(llvm::formatv(
            "the tail uses gradient {0} of {1}", gradient, numGradients));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// TimelineReplay
//===----------------------------------------------------------------------===//

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
      segmentBegin.push_back(itemIsCompute.size());
      continue;
    }
    bool isCompute = item.kind == StepTimeline::Item::Compute;
    itemIsCompute.push_back(isCompute);
    computePrefix.push_back(computePrefix.back() +
                            (isCompute ? item.seconds : 0));
    blockedPrefix.push_back(blockedPrefix.back() +
                            (isCompute ? 0 : item.seconds));
  }
  segmentBegin.push_back(itemIsCompute.size());
  backwardSuffix.assign(events.size() + 1, 0.0);
  for (size_t event = events.size() + 1; event-- > 0;) {
    size_t begin = segmentBegin[event], end = segmentBegin[event + 1];
    backwardSuffix[event] = computePrefix[end] - computePrefix[begin] +
                            blockedPrefix[end] - blockedPrefix[begin];
    if (event < events.size())
      backwardSuffix[event] +=
          events[event].seconds + backwardSuffix[event + 1];
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
  State state;
  state.streamFree.assign(numStreams, 0.0);
  return state;
}

static double getCommBusyUntil(const TimelineReplay::State &state) {
  double busy = 0;
  for (double free : state.streamFree)
    busy = std::max(busy, free);
  return busy;
}

void TimelineReplay::runCompute(State &state, double seconds) const {
  // Simulator::runCompute: kernels progress 1/slowdown as fast while
  // communication is in flight.
  double busy = getCommBusyUntil(state);
  double duration = seconds;
  if (busy > state.now && slowdown > 1) {
    double window = busy - state.now;
    duration = seconds * slowdown <= window
                   ? seconds * slowdown
                   : window + (seconds - window / slowdown);
  }
  state.now += duration;
}

void TimelineReplay::runSegmentBefore(size_t index, State &state) const {
  size_t begin = segmentBegin[index], end = segmentBegin[index + 1];
  if (begin == end)
    return;
  double compute = computePrefix[end] - computePrefix[begin];
  double blocked = blockedPrefix[end] - blockedPrefix[begin];
  double busy = getCommBusyUntil(state);
  if (state.now >= busy || slowdown <= 1) {
    state.now += compute + blocked;
    return;
  }
  // While communication is in flight kernels are slowed and synchronous
  // collectives of other streams take their time; find the item during which
  // the in-flight communication ends. The clock at the start of item p, all
  // kernels before it slowed, is nondecreasing in p.
  auto clockAt = [&](size_t p) {
    return state.now + slowdown * (computePrefix[p] - computePrefix[begin]) +
           (blockedPrefix[p] - blockedPrefix[begin]);
  };
  size_t low = begin, high = end;
  while (low < high) {
    size_t mid = low + (high - low + 1) / 2;
    if (clockAt(mid) <= busy)
      low = mid;
    else
      high = mid - 1;
  }
  size_t p = low;
  if (p == end) {
    state.now = clockAt(end);
    return;
  }
  double start = clockAt(p);
  double afterItem;
  if (itemIsCompute[p]) {
    double seconds = computePrefix[p + 1] - computePrefix[p];
    double window = busy - start;
    afterItem =
        window > 0 ? busy + (seconds - window / slowdown) : start + seconds;
  } else {
    afterItem = start + (blockedPrefix[p + 1] - blockedPrefix[p]);
  }
  state.now = afterItem + (computePrefix[end] - computePrefix[p + 1]) +
              (blockedPrefix[end] - blockedPrefix[p + 1]);
}

void TimelineReplay::runEvent(size_t index, State &state) const {
  const Event &event = events[index];
  if (event.kind == Event::Ready)
    return;
  // A synchronous collective queues behind what its stream already carries.
  double start = std::max(state.now, state.streamFree[event.stream]);
  state.streamFree[event.stream] = start + event.seconds;
  state.now = start + event.seconds;
}

void TimelineReplay::issueBucket(State &state, double issueSeconds,
                                 unsigned stream, double collectiveSeconds,
                                 size_t firstUse) const {
  runCompute(state, issueSeconds);
  double start = std::max(state.now, state.streamFree[stream]);
  double end = start + collectiveSeconds;
  state.streamFree[stream] = end;
  state.tailBound =
      std::max(state.tailBound, end / slowdown + tailSuffix[firstUse]);
}

double TimelineReplay::finish(const State &state) const {
  // In the tail every collective has been issued, so communication stays in
  // flight until `last`, and kernels before it are slowed. On the clock
  // h(t) = t / slowdown before `last` and last / slowdown + (t - last) after
  // it, kernels advance at full speed and waits are still maxima, so the end
  // of the tail is h^-1(max(h(start) + all tail work, max over buckets of
  // h(end) + tail work from its wait)); h(end) = end / slowdown as no bucket
  // ends after `last`.
  double last = getCommBusyUntil(state);
  auto warp = [&](double t) {
    return t <= last ? t / slowdown : last / slowdown + (t - last);
  };
  auto unwarp = [&](double v) {
    return v <= last / slowdown ? v * slowdown : last + (v - last / slowdown);
  };
  double warped =
      std::max(warp(state.now) + tailSuffix.front(), state.tailBound);
  return std::max(unwarp(warped), last);
}

void TimelineReplay::canonicalize(State &state, size_t nextEvent) const {
  for (double &free : state.streamFree)
    free = std::max(free, state.now);
  // finish() takes max(h(start of tail) + all tail work, tailBound), where
  // the tail starts no earlier than now + the backward left at full speed,
  // and h(t) >= t / slowdown whatever the end of communication.
  state.tailBound = std::max(
      state.tailBound,
      (state.now + backwardSuffix[nextEvent]) / slowdown + tailSuffix.front());
}

double TimelineReplay::getIssueTime(const Bucket &bucket) const {
  double seconds =
      costs.bucketIssueTime(costs.stream[bucket.entries.front().gradient],
                            bucket.type, bucket.paddedNumel);
  for (const BucketEntry &entry : bucket.entries)
    seconds += costs.packTime[entry.gradient];
  return seconds;
}

double TimelineReplay::getCollectiveTime(const Bucket &bucket) const {
  return costs.collectiveTime(costs.stream[bucket.entries.front().gradient],
                              bucket.type, bucket.paddedNumel);
}

size_t TimelineReplay::getFirstUse(const Bucket &bucket) const {
  size_t first = SIZE_MAX;
  for (const BucketEntry &entry : bucket.entries)
    first = std::min(first, firstUse[entry.gradient]);
  return first;
}

double TimelineReplay::evaluate(const BucketLayout &layout) const {
  // Bucket k is issued after the ready event of its last gradient and after
  // bucket k - 1 (the overlap pass keeps the layout's issue order).
  std::vector<std::vector<size_t>> issuedAt(events.size());
  size_t position = 0;
  for (auto [index, bucket] : llvm::enumerate(layout.buckets)) {
    position = std::max(position, readyEvent[getLastReadyIndex(bucket)]);
    issuedAt[position].push_back(index);
  }
  State state = initialState();
  for (size_t event = 0; event < events.size(); ++event) {
    runSegmentBefore(event, state);
    runEvent(event, state);
    for (size_t index : issuedAt[event]) {
      const Bucket &bucket = layout.buckets[index];
      issueBucket(state, getIssueTime(bucket),
                  costs.stream[bucket.entries.front().gradient],
                  getCollectiveTime(bucket), getFirstUse(bucket));
    }
  }
  runSegmentBefore(events.size(), state);
  return finish(state);
}
