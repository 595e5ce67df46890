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
// BucketCosts
//===----------------------------------------------------------------------===//

double BucketCosts::getBucketIssueTime(unsigned stream, ElementType type,
                                       int64_t paddedNumel) const {
  // Simulator: a scale reads and writes the bucket.
  return prescaled[stream]
             ? model.memoryTime(2.0 * paddedNumel * getElementBytes(type))
             : 0.0;
}

double BucketCosts::getCollectiveTime(unsigned stream, ElementType type,
                                      int64_t paddedNumel) const {
  return model.collectiveTime(sim::CollectiveKind::AllReduce,
                              double(paddedNumel) * getElementBytes(type),
                              placement[stream]);
}

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
  return State{sim::StepClock(slowdown, numStreams)};
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

void TimelineReplay::issueBucket(State &state, double issueSeconds,
                                 unsigned stream, double collectiveSeconds,
                                 size_t firstUse) const {
  state.clock.runKernel(issueSeconds);
  double end = state.clock.issueCollective(stream, collectiveSeconds).end;
  state.tailBound = std::max(
      state.tailBound, state.clock.getTailWaitBound(end, tailSuffix[firstUse]));
}

double TimelineReplay::finish(const State &state) const {
  return state.clock.finishTail(tailSuffix.front(), state.tailBound);
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
